package chrome

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/flameox/flameox/internal/testtool"
	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/trace/chrome/chrometest"
	"github.com/flameox/flameox/providers/trace/tracemodel"
	"github.com/flameox/flameox/providers/trace/tracemodel/tracemodeltest"
)

// TestDecodeChromeCorpus compares the decoder and the Nester with Python's reading of
// the same files.
func TestDecodeChromeCorpus(t *testing.T) {
	for _, name := range chrometest.CorpusTraces {
		t.Run(name, func(t *testing.T) {
			want := chrometest.PythonTruth(t, testtool.Corpus(t, name), 20000)
			rec := tracemodeltest.NewRecorder()
			var nested []tracemodel.Nested
			n := tracemodel.NewNester(tracemodel.NesterOptions{}, rec, func(x *tracemodel.Nested) error {
				nested = append(nested, *x)
				return nil
			})
			tee := &teeSink{rec, n}
			st, err := Decode(context.Background(), chrometest.OpenCorpus(t, name), 0, Limits{}, tee)
			if err != nil {
				t.Fatal(err)
			}
			if err := n.Flush(); err != nil {
				t.Fatal(err)
			}
			if len(rec.Errs) > 0 {
				t.Fatal(rec.Errs)
			}
			if diff := cmp.Diff(want.Stats, *st); diff != "" {
				t.Errorf("stats (-python +go):\n%s", diff)
			}
			if got := int64(len(rec.Threads) + len(rec.Procs)); got > want.Names {
				t.Errorf("names: %d distinct, python counted %d name events", got, want.Names)
			}
			var xpos int64
			got := map[int64][3]int64{}
			for _, e := range rec.Slices {
				if e.Phase == "X" && e.Dur > 0 {
					xpos++
				}
				got[e.ID] = [3]int64{e.ID, e.TS, e.Dur}
			}
			if xpos != want.XPosDur {
				t.Errorf("X with dur > 0: %d, python %d", xpos, want.XPosDur)
			}
			wantSlices := map[int64][3]int64{}
			for _, s := range want.Slices {
				wantSlices[s[0]] = s
			}
			if diff := cmp.Diff(wantSlices, got); diff != "" {
				t.Errorf("slices [id ts dur] (-python +go):\n%s", diff)
			}
			if n.Unordered() != 0 {
				t.Errorf("unordered %d", n.Unordered())
			}
			// Real traces hold a few improperly nested slices (Kineto, JAX); the nesting
			// below still matches Python's containment check.
			t.Logf("overlaps %d", n.Overlaps())
			if len(nested) != len(rec.Slices) {
				t.Fatalf("nested %d slices of %d", len(nested), len(rec.Slices))
			}
			for i := 1; i < len(nested); i++ {
				a, b := nested[i-1], nested[i]
				if b.TS < a.TS || b.TS == a.TS && (b.Dur > a.Dur || b.Dur == a.Dur && b.ID < a.ID) { // the Nester's order: (TS, -Dur, ID)
					t.Fatalf("released out of order: %d before %d", a.ID, b.ID)
				}
			}
			sameNesting(t, want, nested)
		})
	}
}

// sameNesting compares each slice's parent and depth with Python's.
func sameNesting(t *testing.T, want *chrometest.Truth, nested []tracemodel.Nested) {
	t.Helper()
	if !want.HaveNest {
		t.Fatal("python computed no nesting")
	}
	got := map[string][2]int64{}
	for _, x := range nested {
		got[strconv.FormatInt(x.ID, 10)] = [2]int64{x.ParentID, int64(x.Depth)}
	}
	if diff := cmp.Diff(want.Nest, got); diff != "" {
		t.Errorf("nesting id: [parent depth] (-python +go):\n%s", diff)
	}
}

// teeSink hands everything to two sinks (a recorder and a Nester) and announces opens
// to the second.
type teeSink struct {
	a tracemodel.Sink
	b *tracemodel.Nester
}

func (s *teeSink) Slice(e *tracemodel.Event) error {
	if err := s.a.Slice(e); err != nil {
		return err
	}
	return s.b.Slice(e)
}
func (s *teeSink) Track(t tracemodel.Track)               { s.a.Track(t); s.b.Track(t) }
func (s *teeSink) ThreadName(pid, tid int64, name string) { s.a.ThreadName(pid, tid, name) }
func (s *teeSink) ProcessName(pid int64, name string)     { s.a.ProcessName(pid, name) }
func (s *teeSink) Open(id, track, ts int64)               { s.b.Open(id, track, ts) }
func (s *teeSink) Close(id int64)                         { s.b.Close(id) }

func decodeString(t testing.TB, src string, lim Limits) (*tracemodeltest.Recorder, *tracemodel.Stats, error) {
	t.Helper()
	return decodeBoth(t, []byte(src), 3, lim)
}

// decodeBoth decodes src with Decode into a recorder, which it returns
// with the counts and the error, and fails t when DecodeStaged differs from it in
// any call on its sink (Open and Close included, in order), count or error: the staged
// read must be the plain one, failures included.
func decodeBoth(t testing.TB, src []byte, source int, lim Limits) (*tracemodeltest.Recorder, *tracemodel.Stats, error) {
	t.Helper()
	rec := tracemodeltest.NewRecorder()
	st, err := Decode(context.Background(), bytes.NewReader(src), source, lim, rec)
	sameStaged(t, fmt.Sprintf("%.300q", src), func() io.Reader { return bytes.NewReader(src) }, lim, 0)
	return rec, st, err
}

func TestDecodeChromeArgsAndNumbers(t *testing.T) {
	src := `{"schemaVersion":1,"deviceProperties":[{"id":0}],"traceEvents":[
{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":"7","tid":"main","ts":1700000000000000.123,"dur":1.5e1,
 "args":{"External id":12,"Input Dims":[[64, 1024], [1024,  32]],"File":"a\u00e9.py","line":3,"Bytes":-4096,
 "correlation":99,"device":1,"stream":7,"Other":{"x":[1,2,{"y":null}]},"Line":4.5}},
{"ph":"X","name":"round","pid":1,"tid":1,"ts":0.0005,"dur":0.0015},
{"ph":"X","name":"round2","pid":1,"tid":1,"ts":0.0025,"dur":0.00250001},
{"ph":"X","name":"neg","pid":1,"tid":1,"ts":-1.25e-3},
{"ph":"M","name":"thread_name","pid":"7","tid":"main","args":{"name":"Main"}},
{"ph":"M","name":"process_name","pid":"7","args":{"name":"proc"}},
{"ph":"M","name":"process_sort_index","pid":"7","args":{"sort_index":1}},
{"ph":"b","cat":"c","name":"req","id":"0x1","pid":1,"tid":2,"ts":10},
{"ph":"b","cat":"c","name":"req2","id2":{"local":"0x1"},"pid":1,"tid":2,"ts":11},
{"ph":"n","cat":"c","name":"mark","id":"0x1","pid":1,"tid":2,"ts":11},
{"ph":"e","cat":"c","name":"req","id":"0x1","pid":1,"tid":3,"ts":20,"args":{"correlation_id":5}},
{"ph":"e","cat":"c","name":"req2","id2":{"local":"0x1"},"pid":1,"tid":3,"ts":21},
{"ph":"B","name":"outer","pid":1,"tid":1,"ts":1,"args":{"file":"f"}},
{"ph":"E","pid":1,"tid":1,"ts":3,"args":{"file":"g","line":9}},
{"ph":"E","pid":1,"tid":1,"ts":4},
{"ph":"C","name":"ctr","pid":1,"ts":1,"args":{"v":1}},
{"ph":"s","id":1,"pid":1,"tid":1,"ts":1},{"ph":"P","pid":1,"tid":1,"ts":1},{"name":"nophase"}
],"metadata":{"x":"y"},"displayTimeUnit":"ms"}`
	rec, st, err := decodeString(t, src, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	ptr := func(v int64) *int64 { return &v }
	str := func(v string) *string { return &v }
	hashMain := hashIdent([]byte("main"))
	want := []tracemodel.Event{
		{ID: 0, TS: 1700000000000000123, Dur: 15000, Track: 0, Name: "aten::mm", Category: "cpu_op", Phase: "X",
			Args: tracemodel.Args{Filename: str("aé.py"), Line: ptr(3), InputShapes: str("[[64,1024],[1024,32]]"), AllocationBytes: ptr(-4096),
				CorrelationID: ptr(99), Device: ptr(1), Stream: ptr(7), ExternalID: ptr(12)}},
		{ID: 1, TS: 0, Dur: 2, Track: 1, Name: "round", Phase: "X"},
		{ID: 2, TS: 2, Dur: 3, Track: 1, Name: "round2", Phase: "X"},
		{ID: 3, TS: -1, Dur: 0, Track: 1, Name: "neg", Phase: "X"},
		// "0x1" and local "0x1" are distinct scopes, each closed by its own e.
		{ID: 7, TS: 10000, Dur: 10000, Track: 2, Name: "req", Category: "c", Phase: "b", Args: tracemodel.Args{CorrelationID: ptr(5)}},
		{ID: 8, TS: 11000, Dur: 10000, Track: 3, Name: "req2", Category: "c", Phase: "b"},
		// The B's args win; the E's fill those the B lacks.
		{ID: 12, TS: 1000, Dur: 2000, Track: 1, Name: "outer", Phase: "B", Args: tracemodel.Args{Filename: str("f"), Line: ptr(9)}},
	}
	if diff := cmp.Diff(want, rec.Slices); diff != "" {
		t.Errorf("slices (-want +got):\n%s", diff)
	}
	wantTracks := []tracemodel.Track{{ID: 0, PID: 7, TID: hashMain}, {ID: 1, PID: 1, TID: 1},
		{ID: 2, PID: 1, TID: 2, Name: "req", Async: true}, {ID: 3, PID: 1, TID: 2, Name: "req2", Async: true}}
	if diff := cmp.Diff(wantTracks, rec.Tracks); diff != "" {
		t.Errorf("tracks (-want +got):\n%s", diff)
	}
	if rec.Threads[[2]int64{7, hashMain}] != "Main" || rec.Procs[7] != "proc" {
		t.Errorf("names: %v %v", rec.Threads, rec.Procs)
	}
	wantSt := tracemodel.Stats{Events: 19, Slices: 7, UnmatchedEnds: 1, Instants: 1, Counters: 1, Flows: 1, Metadata: 1, Ignored: 2}
	if diff := cmp.Diff(wantSt, *st); diff != "" {
		t.Errorf("stats (-want +got):\n%s", diff)
	}
}

func TestScaleDecimal(t *testing.T) {
	for _, c := range []struct {
		in    string
		want  int64
		exact bool
		ok    bool
	}{
		{"0", 0, true, true},
		{"-0.0", 0, true, true},
		{"1", 1000, true, true},
		{"1700000000000000.123", 1700000000000000123, true, true},
		{"1.7e15", 1700000000000000000, true, true},
		{"17E-1", 1700, true, true},
		{"0.0005", 0, false, true},
		{"0.0015", 2, false, true},
		{"0.0025", 2, false, true},
		{"0.00250001", 3, false, true},
		{"-0.0015", -2, false, true},
		{"0.0004999", 0, false, true},
		{"1e-300", 0, false, true},
		{"0e999999999", 0, true, true},
		{"9223372036854775.807", 9223372036854775807, true, true},
		{"9223372036854775.808", 0, false, false},
		{"-9223372036854775.808", -9223372036854775808, true, true},
		{"-9223372036854775.809", 0, false, false},
		{"1e16", 0, false, false},
		{"123456789012345678901234567890e-30", 123, false, true},
		{"0.0000001", 0, false, true},
	} {
		v, exact, ok, _ := scaleDecimal([]byte(c.in), 3, nil)
		if v != c.want || exact != c.exact || ok != c.ok {
			t.Errorf("%s: %d %v %v, want %d %v %v", c.in, v, exact, ok, c.want, c.exact, c.ok)
		}
	}
}

func TestDecodeChromeTruncatedAndMalformed(t *testing.T) {
	for _, c := range []struct {
		src       string
		truncated bool
		events    int64
		err       string // substring of a DecodeError message; "" for success
	}{
		{`[`, true, 0, ""},
		{`[{"ph":"X","ts":1}`, true, 1, ""},
		{`[{"ph":"X","ts":1},`, true, 1, ""},
		{`[{"ph":"X","ts":1},]`, false, 1, ""},
		{"\ufeff[]", false, 0, ""},
		{`[{"ph":"X","ts":1}`, true, 1, ""},
		{`{"traceEvents":[{"ph":"X","ts":1}`, false, 0, "the input ends inside"},
		{`{"traceEvents":[]`, false, 0, "the input ends inside the document"},
		{``, false, 0, "empty"},
		{`  `, false, 0, "empty"},
		{`"x"`, false, 0, "not a Trace Event JSON array or object"},
		{`{"a":1}`, false, 0, "no traceEvents"},
		{`{"traceEvents":{}}`, false, 0, "not an array"},
		{`[1]`, false, 0, "event 0 is not an object"},
		{`[{"ph":"X","ts":1},{"ph":"X","ts":2,}]`, false, 0, "event 1 is not valid JSON"},
		{`[{"ph":"X","ts":01}]`, false, 0, "event 0 is not valid JSON"},
		{`[{"ph":"X","ts":"1"}]`, false, 0, "event 0: ts is not a number"},
		{`[{"ph":"X","ts":1,"dur":-1}]`, false, 1, ""},
		{`[{"ph":"X"}]`, false, 0, "has no ts"},
		// The earliest event's failure is the read's, a dispatching one before a
		// parsing one (as the staged read must keep it).
		{`[{"ph":"X"},{"ph":"X","ts":01}]`, false, 0, "event 0 (ph X) has no ts"},
		{`[{"ph":"X","ts":1e20}]`, false, 0, "outside the int64"},
		{`[{"ph":"B","ts":5},{"ph":"E","ts":4}]`, false, 2, ""},
		{`[{"ph":"X","ts":1,"args":{"a":tru}}]`, false, 0, "not valid JSON"},
		{`[{"ph":"X","ts":1,"name":"a\x"}]`, false, 0, "not valid JSON"},
		{`[] x`, false, 0, "data after the trace"},
		{`[{"ph":"X","ts":1}] ]`, false, 0, "data after the trace"},
	} {
		_, st, err := decodeString(t, c.src, Limits{})
		if c.err == "" {
			if err != nil {
				t.Errorf("%q: %v", c.src, err)
				continue
			}
			if st.Truncated != c.truncated || st.Events != c.events {
				t.Errorf("%q: truncated %v events %d, want %v %d", c.src, st.Truncated, st.Events, c.truncated, c.events)
			}
			continue
		}
		var de *providers.DecodeError
		if !errors.As(err, &de) || !strings.Contains(de.Message, c.err) || de.Source != 3 {
			t.Errorf("%q: %#v, want a DecodeError with %q", c.src, err, c.err)
		}
	}
}

// TestDecodeChromeEveryTruncation cuts a small trace at every byte and flips single
// bytes: each must decode or fail with a typed error whose message holds no library
// text.
func TestDecodeChromeEveryTruncation(t *testing.T) {
	testtool.Short(t, "decodes a trace cut at every byte")
	b, err := io.ReadAll(chrometest.OpenCorpus(t, "speedscope__trace_event_multiprocess.json"))
	if err != nil {
		t.Fatal(err)
	}
	obj := []byte(`{"traceEvents":[{"ph":"X","name":"a\"\u00e9","ts":1.5,"dur":2,"pid":"p","args":{"Input Dims":[[1,2]],"x":[true,false,null]}},{"ph":"B","ts":2},{"ph":"E","ts":3}],"metadata":{"k":[1,{"v":"w"}]}}`)
	check := func(src []byte) {
		_, _, err := decodeBoth(t, src, 1, Limits{})
		if err == nil {
			return
		}
		var de *providers.DecodeError
		var le *providers.LimitError
		if !errors.As(err, &de) && !errors.As(err, &le) {
			t.Fatalf("%q: untyped error %v", src, err)
		}
		if strings.Contains(err.Error(), "json") || strings.Contains(err.Error(), "/") {
			t.Fatalf("%q: message %q", src, err)
		}
	}
	for _, src := range [][]byte{b, obj} {
		for i := 0; i <= len(src); i++ {
			check(src[:i])
		}
		for i := 0; i < len(src); i++ {
			for _, c := range []byte{'"', '{', '}', '[', ']', ',', ':', '\\', 'x', '0', 0} {
				mut := bytes.Clone(src)
				mut[i] = c
				check(mut)
			}
		}
	}
}

// TestDecodeChromeReadsThroughSmallReads feeds the decoder one byte per Read, so every
// token straddles a refill.
func TestDecodeChromeReadsThroughSmallReads(t *testing.T) {
	for _, name := range []string{"h200__torch-mlp-train.pt.trace.json", "speedscope__chrome116-devtools-trace.json"} {
		b, _ := io.ReadAll(chrometest.OpenCorpus(t, name))
		r1 := tracemodeltest.NewRecorder()
		st1, err := Decode(context.Background(), bytes.NewReader(b), 0, Limits{}, r1)
		if err != nil {
			t.Fatal(err)
		}
		r2 := tracemodeltest.NewRecorder()
		st2, err := Decode(context.Background(), iotestOneByte{bytes.NewReader(b)}, 0, Limits{}, r2)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(st1, st2); diff != "" {
			t.Error(diff)
		}
		if diff := cmp.Diff(r1.Slices, r2.Slices); diff != "" {
			t.Error(diff)
		}
	}
}

type iotestOneByte struct{ r io.Reader }

func (o iotestOneByte) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	return o.r.Read(p[:1])
}

func TestDecodeChromeLimits(t *testing.T) {
	deep := `[{"ph":"X","ts":1,"args":{"a":` + strings.Repeat("[", 10) + strings.Repeat("]", 10) + `}}]`
	for _, c := range []struct {
		name string
		src  string
		lim  Limits
		unit string
	}{
		{"depth", deep, Limits{MaxDepth: 8}, "levels"},
		{"open", `[{"ph":"B","ts":1},{"ph":"B","ts":2},{"ph":"B","ts":3}]`, Limits{MaxOpenPerTrack: 2}, "slices"},
		{"tracks", `[{"ph":"X","ts":1,"tid":1},{"ph":"X","ts":1,"tid":2},{"ph":"X","ts":1,"tid":3}]`, Limits{MaxTracks: 2}, "tracks"},
		{"string", `[{"ph":"X","ts":1,"name":"` + strings.Repeat("n", 20) + `"}]`, Limits{MaxStringBytes: 10}, "bytes"},
		{"events", `[{},{},{}]`, Limits{MaxEvents: 2}, "events"},
		{"number", `[{"ts":1` + strings.Repeat("0", 5000) + `}]`, Limits{}, "bytes"},
	} {
		_, _, err := decodeString(t, c.src, c.lim)
		var le *providers.LimitError
		if !errors.As(err, &le) || le.Unit != c.unit || le.Source != 3 {
			t.Errorf("%s: %#v, want a LimitError in %s", c.name, err, c.unit)
		}
	}
	// Within the bounds, the same inputs decode.
	if _, _, err := decodeString(t, deep, Limits{MaxDepth: 16}); err != nil {
		t.Error(err)
	}
}

func TestDecodeChromeCancel(t *testing.T) {
	var buf bytes.Buffer
	if err := chrometest.WriteTrace(&buf, 5000, 4, 1); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Decode(ctx, &buf, 0, Limits{}, tracemodeltest.NewRecorder())
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("%v", err)
	}
}

type failingReader struct{ err error }

func (f failingReader) Read([]byte) (int, error) { return 0, f.err }

func TestDecodeChromeReadErrors(t *testing.T) {
	le := &providers.LimitError{Message: "too big"}
	_, err := Decode(context.Background(), io.MultiReader(strings.NewReader(`[{"ph":"X","ts":1},`), failingReader{le}), 0, Limits{}, tracemodeltest.NewRecorder())
	if err != le {
		t.Errorf("%v, want the reader's LimitError", err)
	}
	_, err = Decode(context.Background(), io.MultiReader(strings.NewReader(`[{"ph":"X","ts":1},`), failingReader{errors.New("gzip: invalid checksum")}), 4, Limits{}, tracemodeltest.NewRecorder())
	var de *providers.DecodeError
	if !errors.As(err, &de) || strings.Contains(de.Message, "gzip") || de.Source != 4 {
		t.Errorf("%#v, want a DecodeError without the library text", err)
	}
}

// TestDecodeChromeKeySpellings checks that keys are matched by their decoded text,
// whichever path reads them: escaped keys are the same keys, and keys that only share
// a prefix or bytes with one (a NUL after "ph", a longer name) are other keys.
func TestDecodeChromeKeySpellings(t *testing.T) {
	plain := `[{"ph":"X","name":"n","cat":"c","pid":1,"tid":2,"ts":5,"dur":3,"args":{"External id":4,"Input Dims":[[1, 2]],"correlation":6}},
{"ph":"X","name":"m","pid":1,"tid":2,"ts":9,"dur":1}]`
	escaped := `[{"\u0070h":"X","nam\u0065":"n","\u0063at":"c","pid":1,"t\u0069d":2,"ts":5,"du\u0072":3,"args":{"External\u0020id":4,"Input Dims":[[1,2]],"correlatio\u006e":6}},
{"ph" : "X", "name" : "m", "pid" : 1, "tid" : 2, "ts" : 9, "dur" : 1, "a_key_longer_than_sixteen_bytes": {"ph": "B"}}]`
	want, wantSt, err := decodeString(t, plain, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	got, gotSt, err := decodeString(t, escaped, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want.Slices, got.Slices); diff != "" {
		t.Errorf("escaped keys (-plain +escaped):\n%s", diff)
	}
	if diff := cmp.Diff(wantSt, gotSt); diff != "" {
		t.Errorf("escaped keys' stats (-plain +escaped):\n%s", diff)
	}
	if len(want.Slices) != 2 || want.Slices[0].Args.CorrelationID == nil || *want.Slices[0].Args.InputShapes != "[[1,2]]" {
		t.Fatalf("plain trace read as %+v", want.Slices)
	}
	lookalikes := `[{"ph\u0000":"X","ph ":"X","phx":"X","name":"n","pid":1,"tid":2,"ts":5,"dur":3},
{"PH":"X","ts":1},{"p":"X","ts":1},{"tsx":1,"ph":"X","ts":2,"args":{"External id ":4,"correlation_idx":5}}]`
	rec, st, err := decodeString(t, lookalikes, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if st.Ignored != 3 || st.Slices != 1 || rec.Slices[0].TS != 2000 || rec.Slices[0].Args != (tracemodel.Args{}) {
		t.Errorf("lookalike keys: stats %+v, slices %+v", st, rec.Slices)
	}
}

// decoded is what one decoding delivered: slices, tracks, names, counts and the error.
type decoded struct {
	rec *tracemodeltest.Recorder
	st  *tracemodel.Stats
	err string
}

// decodeWith decodes b with the fast event path on or off.
func decodeWith(b []byte, lim Limits, fast bool) decoded {
	defer func(old bool) { fastEvents = old }(fastEvents)
	fastEvents = fast
	rec := tracemodeltest.NewRecorder()
	st, err := Decode(context.Background(), bytes.NewReader(b), 0, lim, rec)
	msg := ""
	if err != nil {
		msg = err.Error()
		if de, ok := err.(*providers.DecodeError); ok {
			msg += fmt.Sprint(de.Details)
		}
	}
	return decoded{rec, st, msg}
}

// sameDecoding fails on any difference between two decodings (-want +got).
func sameDecoding(t *testing.T, what string, want, got decoded) {
	t.Helper()
	if got.err != want.err {
		t.Fatalf("%s: error %q, want %q", what, got.err, want.err)
	}
	if diff := cmp.Diff(want.rec.Slices, got.rec.Slices); diff != "" {
		t.Fatalf("%s: slices (-want +got):\n%s", what, diff)
	}
	if diff := cmp.Diff(want.rec.Tracks, got.rec.Tracks); diff != "" {
		t.Fatalf("%s: tracks (-want +got):\n%s", what, diff)
	}
	if diff := cmp.Diff([]any{want.rec.Threads, want.rec.Procs, want.st}, []any{got.rec.Threads, got.rec.Procs, got.st}); diff != "" {
		t.Fatalf("%s: names and stats (-want +got):\n%s", what, diff)
	}
}

// decodeBothPaths decodes b with and without the fast event path and fails on any
// difference in slices, tracks, names, counts or error.
func decodeBothPaths(t *testing.T, b []byte, lim Limits) {
	t.Helper()
	sameDecoding(t, "fast path against the general one", decodeWith(b, lim, false), decodeWith(b, lim, true))
}

// TestChromeFastPathMatchesSlow checks the decoder's fast event path against the
// general one on the corpus traces, a generated one, and edge cases of each field.
func TestChromeFastPathMatchesSlow(t *testing.T) {
	for _, name := range chrometest.CorpusTraces {
		t.Run(name, func(t *testing.T) {
			b, err := io.ReadAll(chrometest.OpenCorpus(t, name)) // skips without the corpus
			if err != nil {
				t.Fatal(err)
			}
			decodeBothPaths(t, b, Limits{})
		})
	}
	var gen bytes.Buffer
	if err := chrometest.WriteStepTrace(&gen, 1<<20); err != nil {
		t.Fatal(err)
	}
	decodeBothPaths(t, gen.Bytes(), Limits{})
	for i, src := range chromeEdgeCases() {
		decodeBothPaths(t, []byte(src), Limits{})
		// Small bounds: the paths must agree on which bound fails and where.
		decodeBothPaths(t, []byte(src), Limits{MaxDepth: 4, MaxStringBytes: 2})
		decodeBothPaths(t, []byte(src), Limits{MaxDepth: 4}) // keys fit, depth binds
		if t.Failed() {
			t.Fatalf("case %d", i)
		}
	}
}

// chromeEdgeCases are small traces with an edge case of each field, valid or not.
func chromeEdgeCases() []string {
	var cases []string
	for _, src := range []string{
		`[{"ph":"X","name":"a\"b","cat":"c\\d","pid":"12","tid":"x\u0041","ts":1.5,"dur":2}]`,
		`[{"ph":"X","name":1,"cat":[1,{"a":null}],"pid":null,"tid":-3,"ts":1e3,"dur":0.0015,"id":"7","scope":"s"}]`,
		`[{"ph":"X","ts":1.23456,"dur":1E2,"pid":1.0,"tid":"1.5","args":{"line":4.0,"Line":4.5,"Bytes":"9","File":7,"name":{"x":1}}}]`,
		`[{"ph":"X","ts":5,"args":{"Input Dims":[[1, 2], [ ]],"correlation":-9223372036854775808,"device":9223372036854775808}}]`,
		`[{"ph":"X","ts":5,"args":{"Input Dims":[[1.5]],"stream":01}}]`,
		`[{"ph":"X","ts":5,"args":{"Input Dims":"abc"}}]`,
		`[{"ph":"X","ts":5,"args":{"Input Dims":[[1],]}}]`,
		`[{"ph":"X","ts":5,"args":[1,2]},{"ph":"X","ts":6,"args":{}},{}]`,
		`[{"ph":"b","cat":"c","id":12,"pid":1,"tid":1,"ts":1},{"ph":"e","cat":"c","id":12,"pid":1,"tid":1,"ts":2}]`,
		`[{"ph":"b","cat":"c","id2":{"global":"0x1"},"pid":1,"tid":1,"ts":1},{"ph":"e","cat":"c","id2":{"global":"0x1"},"pid":2,"tid":1,"ts":3}]`,
		"[ {\n \"ph\" : \"X\" ,\t\"ts\" :\r 5 , \"dur\": 1 , \"x\": [ true , false , null , \"s\\\"\" , { } , [ ] ] } ]",
		`[{"ph":"X","ts":5,"x":tru}]`,
		`[{"ph":"X","ts":5,"x":[1,]}]`,
		`[{"ph":"X","ts":5,"x":{"a":1,}}]`,
		`[{"ph":"X","ts":5,"x":{"a" 1}}]`,
		`[{"ph":"X","ts":5,"x":-}]`,
		`[{"ph":"X","ts":5,"dur":-1}]`,
		`[{"ph":"X","ts":"5"}]`,
		`[{"ph":"X","ts":5 "dur":1}]`,
		`[{"ph":"X","ts":5,}]`,
		`[{"ph":"X","ts":5]`,
		`[{"ph":"X","ts":5,"args":{"a":1]"b":2}}]`,
		`[{"ph":"X","ts":5,"args":{"a":1,}}]`,
		`[{"ph":"X","ts":5,"args":{"a" 1}}]`,
		`[{"ph":"X","ts":5,"args":{"line":1 "b":2}}]`,
		`[{"ph":"X","ts":5,"args":{"a":1}]`,
		`[{"ph":"X","ts":5,"args":{1:2}}]`,
		`[{"ph":"X","ts":5,"x":[[[[[[1]]]]]]}]`,
		`[{"ph":"M","name":"thread_name","pid":1,"tid":2,"args":{"name":"t"}},{"ph":"M","name":"process_name","pid":1,"args":{"name":"p\u00e9"}}]`,
		`[{"ph":"X","name":"\xff\xfe","ts":1}]`,
		`[{"ph":"X","ts":9223372036854775.807,"dur":0.001}]`,
		`[{"ph":"X","ts":5,"args":{"External id":1,"External id":2,"Input Dims":[[1]],"Input Dims":[[2]]},"args":{"line":3}}]`,
		// Keys and strings longer than the small bound's two bytes, where values are
		// skipped, kept or matched.
		`[{"ph":"X","ts":5,"x":{"abc":1},"y":["abc",{"de":"fgh"}]}]`,
		`[{"ph":"X","ts":5,"args":{"abc":{"def":"ghi"},"File":"abc","Input Dims":[[1]]}}]`,
		`[{"ph":"b","cat":"abc","ts":5,"pid":"abc","tid":1,"id":"abc","scope":"abc"}]`,
		`[{"ph":"b","cat":"c","ts":5,"pid":1,"tid":1,"id2":{"local":"abc","xyz":[1]}}]`,
		// id2 in the forms the fast path reads and the ones it leaves to the general path.
		`[{"ph":"b","cat":"c","ts":1,"pid":1,"tid":1,"id2":{"local":"0x3"}},{"ph":"e","cat":"c","ts":2,"pid":1,"tid":1,"id2":{"local":"0x3"}}]`,
		`[{"ph":"b","cat":"c","ts":1,"pid":1,"tid":1,"id2":{"local":7}},{"ph":"e","cat":"c","ts":2,"pid":2,"tid":1,"id2":{"local":7}}]`,
		`[{"ph":"b","cat":"c","ts":1,"pid":1,"tid":1,"id":"7","id2":{"global":"7"}},{"ph":"e","cat":"c","ts":2,"pid":1,"tid":1,"id":"7"}]`,
		`[{"ph":"b","cat":"c","ts":1,"pid":1,"tid":1,"id2":{"local":"1","global":"2"}},{"ph":"e","cat":"c","ts":2,"pid":3,"tid":1,"id2":{"global":"2"}}]`,
		`[{"ph":"b","cat":"c","ts":1,"id2":5},{"ph":"b","cat":"c","ts":1,"id2":{}},{"ph":"b","cat":"c","ts":1,"id2":[1,{"local":1}]}]`,
		`[{"ph":"b","cat":"c","ts":1,"id2":{"local":{"a":[1]}}},{"ph":"b","cat":"c","ts":1,"id2":{"local":null,"other":{"b":{}}}}]`,
		`[{"ph":"b","cat":"c","ts":1,"id2":{"loc\u0061l":"1"}},{"ph":"b","cat":"c","ts":1,"id2":{"local":"a\"b"}}]`,
		`[{"ph":"b","cat":"c","ts":1,"id2":{"local":1,}}]`,
		`[{"ph":"b","cat":"c","ts":1,"id2":{"local" 1}}]`,
		`[{"ph":"b","cat":"c","ts":1,"id2":{"local":1]}]`,
		`[{"ph":"b","cat":"c","ts":1,"id2":{"local":01}}]`,
		`[{"ph":"b","cat":"c","ts":1,"id2":{"x":[1]}},{"ph":"b","cat":"c","ts":1,"id2":{"x":[[1]]}},{"ph":"b","cat":"c","ts":1,"id2":{"x":[[[1]]]}}]`,
	} {
		cases = append(cases, src)
	}
	// Numbers at and past the bound on a number's text (maxNumberBytes), wherever a
	// value is skipped or kept as text.
	for _, n := range []int{maxNumberBytes, maxNumberBytes + 1} {
		long := strings.Repeat("7", n-2) + ".5"
		for _, tmpl := range []string{
			`[{"ph":"X","ts":5,"x":%s}]`,
			`[{"ph":"X","ts":5,"x":[1,{"y":%s}]}]`,
			`[{"ph":"X","ts":5,"args":{"a":%s}}]`,
			`[{"ph":"X","ts":5,"args":{"line":%s}}]`,
			`[{"ph":"X","ts":5,"args":{"Input Dims":[[%s]]}}]`,
			`[{"ph":"b","cat":"c","ts":5,"pid":1,"tid":1,"id":%s}]`,
			`[{"ph":"b","cat":"c","ts":5,"pid":1,"tid":1,"id2":{"local":%s}}]`,
			`[{"ph":"X","ts":5,"pid":%s}]`,
			`[{"ph":"X","ts":%s}]`,
			`[{"ph":"X","ts":5,"name":%s}]`,
		} {
			cases = append(cases, fmt.Sprintf(tmpl, long))
		}
		// An integer, which Input Dims take (the decimal above stops their reader).
		cases = append(cases, fmt.Sprintf(`[{"ph":"X","ts":5,"args":{"Input Dims":[[1,%s]]}}]`, strings.Repeat("7", n)))
	}
	return cases
}

// TestDecodeAnyBufferSize decodes the corpus traces, a generated one and the edge cases
// with the scanner's buffer cut down to a few bytes, so that a buffer boundary falls at
// every place of every event (and the fast path mostly gives way to the general one):
// what is read, and every error with its place, must not depend on where the input's
// reads end.
func TestDecodeAnyBufferSize(t *testing.T) {
	inputs := map[string][]byte{}
	if _, err := os.Stat(testtool.CorpusDir()); err == nil { // else without the corpus
		for _, name := range chrometest.CorpusTraces {
			b, err := io.ReadAll(chrometest.OpenCorpus(t, name))
			if err != nil {
				t.Fatal(err)
			}
			inputs[name] = b
		}
	}
	var gen bytes.Buffer
	if err := chrometest.WriteStepTrace(&gen, 256<<10); err != nil {
		t.Fatal(err)
	}
	inputs["generated"] = gen.Bytes()
	for i, src := range chromeEdgeCases() {
		inputs[fmt.Sprintf("edge case %d", i)] = []byte(src)
	}
	defer func(old int) { scanBufSize = old }(scanBufSize)
	def := scanBufSize
	for name, b := range inputs {
		for _, lim := range []Limits{{}, {MaxDepth: 4}} {
			scanBufSize = def
			want := decodeWith(b, lim, true)
			for _, size := range []int{1, 2, 3, 7, 64, 1000} {
				scanBufSize = size
				sameDecoding(t, fmt.Sprintf("%s, %d-byte buffer, limits %+v", name, size, lim), want, decodeWith(b, lim, true))
			}
		}
	}
}

// TestLongNumberAnywhere decodes events with numbers at and past maxNumberBytes (in
// Input Dims, an id, a skipped value) at the start of the input and straddling the
// scanner's first buffer: the result must not depend on where the event falls.
func TestLongNumberAnywhere(t *testing.T) {
	for _, n := range []int{maxNumberBytes, maxNumberBytes + 1} {
		long := strings.Repeat("7", n)
		for _, ev := range []string{
			`{"ph":"X","ts":5,"dur":1,"args":{"Input Dims":[[` + long + `]]}}`,
			`{"ph":"b","cat":"c","ts":5,"id":` + long + `}`,
			`{"ph":"X","ts":5,"dur":1,"x":[` + long + `]}`,
		} {
			var msgs []string
			for _, pad := range []int{0, scanBufSize - 200} {
				src := "[" + strings.Repeat(" ", pad) + ev + "]"
				_, err := Decode(context.Background(), strings.NewReader(src), 0, Limits{}, tracemodeltest.NewRecorder())
				msg := "ok"
				if err != nil {
					msg = err.Error()
				}
				msgs = append(msgs, msg)
				decodeBothPaths(t, []byte(src), Limits{})
			}
			if msgs[0] != msgs[1] {
				t.Errorf("%d digits in %.40s...: %q at the start, %q across the buffer", n, ev, msgs[0], msgs[1])
			}
		}
	}
}

// TestChromeInvalidIntervals: an X with a negative dur and an E before its B are no
// slices; they are counted, the E still closes its B (the next E closes the B below),
// and the trace's other slices are read.
func TestChromeInvalidIntervals(t *testing.T) {
	rec, st, err := decodeString(t, `[
{"ph":"X","name":"neg","ts":10,"dur":-1,"pid":1,"tid":1},
{"ph":"B","name":"outer","ts":1,"pid":1,"tid":1},
{"ph":"B","name":"inner","ts":5,"pid":1,"tid":1},
{"ph":"E","ts":4,"pid":1,"tid":1},
{"ph":"E","ts":9,"pid":1,"tid":1},
{"ph":"X","name":"ok","ts":20,"dur":2,"pid":1,"tid":1}]`, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range rec.Slices {
		got = append(got, fmt.Sprintf("%s %d %d", s.Name, s.TS, s.Dur))
	}
	want := []string{"outer 1000 8000", "ok 20000 2000"}
	if fmt.Sprint(got) != fmt.Sprint(want) || st.InvalidIntervals != 2 || st.UnmatchedEnds != 0 || st.UnfinishedBegins != 0 {
		t.Errorf("slices %q (want %q), invalid %d, unmatched %d, unfinished %d", got, want, st.InvalidIntervals, st.UnmatchedEnds, st.UnfinishedBegins)
	}
}
