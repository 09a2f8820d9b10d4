package xctrace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/trace/tracemodel"
	"github.com/flameox/flameox/providers/trace/xctrace/xctracetest"
)

// The fixtures are real `xctrace export` output with the baselines Microsoft's
// independent reader made of them (xctracetest).

// recorder records what Decode delivers.
type recorder struct {
	slices    []tracemodel.Event
	tracks    map[int64]tracemodel.Track
	threads   map[[2]int64]string
	processes map[int64]string
}

func newRecorder() *recorder {
	return &recorder{tracks: map[int64]tracemodel.Track{}, threads: map[[2]int64]string{}, processes: map[int64]string{}}
}

func (s *recorder) Slice(e *tracemodel.Event) error { s.slices = append(s.slices, *e); return nil }
func (s *recorder) Track(t tracemodel.Track) {
	if _, dup := s.tracks[t.ID]; dup {
		panic(fmt.Sprintf("track %d announced twice", t.ID))
	}
	s.tracks[t.ID] = t
}
func (s *recorder) ThreadName(pid, tid int64, name string) { s.threads[[2]int64{pid, tid}] = name }
func (s *recorder) ProcessName(pid int64, name string)     { s.processes[pid] = name }

func decodeFixture(t *testing.T, name string) (*recorder, *tracemodel.Stats, *Info) {
	t.Helper()
	s := newRecorder()
	st, info, err := Decode(context.Background(), xctracetest.Open(t, name), 0, Limits{}, s)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return s, st, info
}

// TestThermal: one device-thermal-state interval, its label the thermal state,
// as Microsoft's reader has it (start 0, duration 4531561613 ns, Nominal).
func TestThermal(t *testing.T) {
	s, st, info := decodeFixture(t, "trace_thermal.xml")
	want := xctracetest.Baseline(t, "trace_thermal_baseline.xml", "Thermal")
	if len(want) != 1 || len(s.slices) != 1 {
		t.Fatalf("baseline %v, slices %+v", want, s.slices)
	}
	e := s.slices[0]
	if e.TS != xctracetest.Atoi(t, want[0][0]) || e.Dur != xctracetest.Atoi(t, want[0][1]) || e.Name != want[0][2] ||
		e.Category != "device-thermal-state-intervals" || e.ID != 0 || e.Phase != "X" {
		t.Errorf("slice %+v, want %v", e, want[0])
	}
	if tr := s.tracks[e.Track]; !tr.Async || tr.Name != "device-thermal-state-intervals" {
		t.Errorf("track %+v", tr)
	}
	if st.Events != 1 || st.Slices != 1 || st.Instants != 0 || st.InvalidIntervals != 0 {
		t.Errorf("stats %+v", st)
	}
	if len(info.Tables) != 1 || info.Tables[0].Kind != Intervals || info.Tables[0].Run != 1 || info.Runs != 1 {
		t.Errorf("info %+v", info)
	}
}

// TestDisplayVsync: 1,599 display-vsyncs-interval rows, almost all written as
// references to earlier values; each becomes the slice Microsoft's reader lists (start,
// duration, display name), in the same order.
func TestDisplayVsync(t *testing.T) {
	s, st, _ := decodeFixture(t, "display_vsync_trace.xml.gz")
	want := xctracetest.Baseline(t, "display_vsync_trace_baseline.xml.gz", "Display Vsync Interval")
	if len(want) != 1599 || len(s.slices) != len(want) || st.Slices != 1599 || st.Events != 1599 {
		t.Fatalf("%d baseline rows, %d slices, stats %+v", len(want), len(s.slices), st)
	}
	for i, w := range want {
		e := s.slices[i]
		// Baseline columns: start, end, duration, display name, colour, label, event, count.
		if e.TS != xctracetest.Atoi(t, w[0]) || e.TS+e.Dur != xctracetest.Atoi(t, w[1]) || e.Dur != xctracetest.Atoi(t, w[2]) || e.Name != w[3] || e.ID != int64(i) {
			t.Fatalf("row %d: slice %+v, baseline %v", i, e, w)
		}
	}
	// Two displays, no thread: one track for the table.
	if len(s.tracks) != 1 {
		t.Errorf("tracks %+v", s.tracks)
	}
}

// TestVirtualMemory: 1,914 virtual-memory intervals with their thread (tid, and
// the process nested in it, later written as references) and operation, as Microsoft's
// reader lists them; the backtraces' frames are read past.
func TestVirtualMemory(t *testing.T) {
	s, st, _ := decodeFixture(t, "trace_memory.xml.gz")
	want := xctracetest.Baseline(t, "trace_memory_baseline.xml.gz", "Memory")
	if len(want) != 1914 || len(s.slices) != len(want) || st.InvalidIntervals != 0 {
		t.Fatalf("%d baseline rows, %d slices, stats %+v", len(want), len(s.slices), st)
	}
	for i, w := range want {
		e := s.slices[i]
		tr := s.tracks[e.Track]
		// Baseline columns: start, duration, tid, operation, pid, process, ...
		if e.TS != xctracetest.Atoi(t, w[0]) || e.Dur != xctracetest.Atoi(t, w[1]) || tr.TID != xctracetest.Atoi(t, w[2]) || e.Name != w[3] ||
			tr.PID != xctracetest.Atoi(t, w[4]) || s.processes[tr.PID] != w[5] || tr.Async {
			t.Fatalf("row %d: slice %+v on %+v (process %q), baseline %v", i, e, tr, s.processes[tr.PID], w)
		}
		if s.threads[[2]int64{tr.PID, tr.TID}] == "" {
			t.Fatalf("row %d: thread %d of %d has no name", i, tr.TID, tr.PID)
		}
	}
	if got := s.threads[[2]int64{3189, 195656}]; got != "_dispatch_workloop_worker_thread  0x2fc48 (DTServiceHub, pid: 3189)" {
		t.Errorf("thread name %q", got)
	}
}

// TestSignpostEvents: os-signpost rows are events (a time, no duration): counted
// as instants, not slices; their references, including one to a process defined inside
// a thread, resolve.
func TestSignpostEvents(t *testing.T) {
	s, st, info := decodeFixture(t, "os_signpost_trace.xml")
	if len(s.slices) != 0 || st.Events != 6 || st.Instants != 6 || info.Tables[0].Kind != Points || info.Tables[0].Schema != "os-signpost" {
		t.Errorf("slices %d, stats %+v, info %+v", len(s.slices), st, info)
	}
}

// exportDoc wraps nodes in an export document.
func exportDoc(nodes ...string) string {
	return `<?xml version="1.0"?>` + "\n<trace-query-result>\n" + strings.Join(nodes, "\n") + "\n</trace-query-result>\n"
}

const signpostSchema = `<schema name="os-signpost-interval"><col><mnemonic>start</mnemonic><engineering-type>start-time</engineering-type></col>` +
	`<col><mnemonic>duration</mnemonic><engineering-type>duration</engineering-type></col>` +
	`<col><mnemonic>layout-qualifier</mnemonic><engineering-type>layout-id</engineering-type></col>` +
	`<col><mnemonic>name</mnemonic><engineering-type>string</engineering-type></col>` +
	`<col><mnemonic>thread</mnemonic><engineering-type>thread</engineering-type></col>` +
	`<col><mnemonic>process</mnemonic><engineering-type>process</engineering-type></col></schema>`

// TestStructure: the documented shape (xctrace's interning, sentinels, several
// nodes and runs, a node without a schema) on small documents written here.
func TestStructure(t *testing.T) {
	doc := exportDoc(
		`<node xpath='//trace-toc[1]/run[1]/data[1]/table[4]'>`+signpostSchema+
			`<row><start-time id="1" fmt="00:00.000.100">100</start-time><duration id="2" fmt="50 ns">50</duration><layout-id id="3">0</layout-id>`+
			`<string id="4" fmt="load">load</string><thread id="5" fmt="Main Thread 0x1 (app, pid: 7)"><tid id="6">1</tid><process id="7" fmt="app (7)"><pid id="8">7</pid></process></thread><process ref="7"/></row>`+
			`<row><start-time id="9">120</start-time><duration id="10">10</duration><layout-id ref="3"/><string id="11">parse</string><thread ref="5"/><process ref="7"/></row>`+
			`<row><start-time ref="9"/><sentinel/><layout-id ref="3"/><string ref="4"/><thread ref="5"/><process ref="7"/></row>`+
			`<row><start-time id="12">200</start-time><duration ref="2"/><layout-id ref="3"/><sentinel/><sentinel/><process ref="7"/></row>`+
			`</node>`,
		`<node xpath='//trace-toc[1]/run[2]/data[1]/table[1]'><row><start-time>5</start-time><duration>7</duration><state>Running</state></row></node>`,
		`<node xpath='//trace-toc[1]/run[1]/data[1]/table[9]'><schema name="time-profile"><col><mnemonic>time</mnemonic><engineering-type>sample-time</engineering-type></col></schema>`+
			`<row><sample-time id="13">1</sample-time></row><row><sample-time ref="13"/></row></node>`)
	s := newRecorder()
	st, info, err := Decode(context.Background(), strings.NewReader(doc), 3, Limits{}, s)
	if err != nil {
		t.Fatal(err)
	}
	type got struct {
		id, ts, dur int64
		name, cat   string
		pid, tid    int64
		async       bool
	}
	var gs []got
	for _, e := range s.slices {
		tr := s.tracks[e.Track]
		gs = append(gs, got{e.ID, e.TS, e.Dur, e.Name, e.Category, tr.PID, tr.TID, tr.Async})
	}
	want := []got{
		{0, 100, 50, "load", "os-signpost-interval", 7, 1, false},
		{1, 120, 10, "parse", "os-signpost-interval", 7, 1, false},
		// Row 2 has no duration (invalid); row 3 no thread: its process's track, and no name.
		{3, 200, 50, "", "os-signpost-interval", 7, -1, true},
		// A node without a schema: the element names are the engineering types.
		{4, 5, 7, "Running", "", -1, -1, true},
	}
	if !slices.Equal(gs, want) {
		t.Errorf("slices\n got %+v\nwant %+v", gs, want)
	}
	if s.threads[[2]int64{7, 1}] != "Main Thread 0x1 (app, pid: 7)" || s.processes[7] != "app (7)" {
		t.Errorf("names %v %v", s.threads, s.processes)
	}
	if st.Events != 7 || st.Slices != 4 || st.InvalidIntervals != 1 || st.Instants != 2 {
		t.Errorf("stats %+v", st)
	}
	if info.Runs != 2 || len(info.Tables) != 3 || info.Tables[1].Run != 2 || info.Tables[2].Kind != Points || info.Tables[0].Invalid != 1 {
		t.Errorf("info %+v", info)
	}
}

// TestMalformed: what is not a readable export fails typed, and no entity is
// expanded.
func TestMalformed(t *testing.T) {
	row := `<row><start-time id="1">1</start-time><duration id="2">2</duration></row>`
	node := func(rows string) string {
		return `<node><schema name="x"><col><engineering-type>start-time</engineering-type></col><col><engineering-type>duration</engineering-type></col></schema>` + rows + `</node>`
	}
	deep := strings.Repeat("<a>", 100) + strings.Repeat("</a>", 100)
	cases := []struct {
		name, doc string
		limit     bool
		want      string
	}{
		{"empty", "", false, "no <trace-query-result>"},
		{"text", "hello", false, "text outside"},
		{"json", `{"traceEvents":[]}`, false, "text outside"},
		{"toc", `<?xml version="1.0"?><trace-toc><run number="1"/></trace-toc>`, false, "table of contents"},
		{"cut", exportDoc(node(row))[:120], false, "cut export"},
		{"dangling", exportDoc(node(`<row><start-time ref="9"/><duration id="2">2</duration></row>`)), false, `refers to id "9"`},
		{"mismatched", `<trace-query-result><node></trace-query-result>`, false, "malformed XML"},
		{"entity", `<!DOCTYPE r [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]>` +
			exportDoc(node(`<row><start-time>1</start-time><duration>2</duration><string>&b;</string></row>`)), false, "malformed XML"},
		{"depth", exportDoc(`<node><row>` + deep + `</row></node>`), true, "levels of element nesting"},
	}
	for _, c := range cases {
		_, _, err := Decode(context.Background(), strings.NewReader(c.doc), 2, Limits{}, newRecorder())
		var de *providers.DecodeError
		var le *providers.LimitError
		switch {
		case c.limit && !errors.As(err, &le):
			t.Errorf("%s: %v, want a LimitError", c.name, err)
		case !c.limit && !errors.As(err, &de):
			t.Errorf("%s: %v, want a DecodeError", c.name, err)
		case !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "source 2"):
			t.Errorf("%s: %q, want %q", c.name, err, c.want)
		}
	}
}

// TestBounds: the interned values, their labels, the tracks, the tables and the
// columns are bounded, each with a LimitError naming its bound.
func TestBounds(t *testing.T) {
	var rows strings.Builder
	for i := range 50 {
		fmt.Fprintf(&rows, `<row><start-time id="%d">%d</start-time><duration id="%d">1</duration><thread id="%d" fmt="t"><tid id="%d">%d</tid></thread><string id="%d" fmt="%s">x</string></row>`,
			6*i+1, i, 6*i+2, 6*i+3, 6*i+4, i, 6*i+5, strings.Repeat("n", 100))
	}
	schema := `<schema name="s"><col><engineering-type>start-time</engineering-type></col><col><engineering-type>duration</engineering-type></col>` +
		`<col><engineering-type>thread</engineering-type></col><col><engineering-type>string</engineering-type></col></schema>`
	doc := exportDoc(`<node>` + schema + rows.String() + `</node>`)
	cols := exportDoc(`<node><schema>` + strings.Repeat(`<col><engineering-type>string</engineering-type></col>`, 20) + `</schema></node>`)
	for _, c := range []struct {
		doc  string
		lim  Limits
		want string
	}{
		{doc, Limits{MaxValues: 100}, "100 values with an id"},
		{doc, Limits{MaxValueBytes: 1000}, "1000 bytes of value labels"},
		{doc, Limits{MaxTracks: 10}, "10 tracks"},
		{exportDoc(`<node/><node/><node/>`), Limits{MaxTables: 2}, "2 tables"},
		{cols, Limits{MaxColumns: 10}, "10 columns"},
	} {
		_, _, err := Decode(context.Background(), strings.NewReader(c.doc), 0, c.lim, newRecorder())
		var le *providers.LimitError
		if !errors.As(err, &le) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want a LimitError with %q", c.lim, err, c.want)
		}
	}
	if _, _, err := Decode(context.Background(), strings.NewReader(doc), 0, Limits{}, newRecorder()); err != nil {
		t.Errorf("within the default bounds: %v", err)
	}
}

// TestCancelled: a cancelled read stops with the context's error.
func TestCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var rows strings.Builder
	for range 5000 {
		rows.WriteString(`<row><start-time>1</start-time><duration>2</duration></row>`)
	}
	_, _, err := Decode(ctx, strings.NewReader(exportDoc(`<node>`+rows.String()+`</node>`)), 0, Limits{}, newRecorder())
	if !errors.Is(err, context.Canceled) {
		t.Errorf("%v", err)
	}
}

// FuzzDecode: any input reads to slices or to a typed failure, within the bounds.
func FuzzDecode(f *testing.F) {
	for _, name := range []string{"trace_thermal.xml", "os_signpost_trace.xml"} {
		b, err := os.ReadFile(xctracetest.Path(name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(exportDoc(`<node><schema name="s"><col><engineering-type>start-time</engineering-type></col><col><engineering-type>duration</engineering-type></col>` +
		`<col><engineering-type>thread</engineering-type></col></schema><row><start-time id="1">5</start-time><duration id="2">3</duration>` +
		`<thread id="3"><tid id="4">1</tid><process id="5"><pid id="6">2</pid></process></thread></row><row><start-time ref="1"/><duration ref="2"/><thread ref="3"/></row></node>`)))
	f.Fuzz(func(t *testing.T, b []byte) {
		s := newRecorder()
		st, _, err := Decode(context.Background(), strings.NewReader(string(b)), 0, Limits{MaxValues: 1 << 12, MaxTracks: 64}, s)
		var de *providers.DecodeError
		var le *providers.LimitError
		if err != nil && !errors.As(err, &de) && !errors.As(err, &le) {
			t.Fatalf("untyped failure %T: %v", err, err)
		}
		if err == nil && int64(len(s.slices)) != st.Slices {
			t.Fatalf("%d slices delivered, %d counted", len(s.slices), st.Slices)
		}
		for _, e := range s.slices {
			if e.Dur < 0 || e.TS < 0 {
				t.Fatalf("slice %+v", e)
			}
			if _, ok := s.tracks[e.Track]; !ok {
				t.Fatalf("slice on an unannounced track %d", e.Track)
			}
		}
	})
}
