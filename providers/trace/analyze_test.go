package trace

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/testtool"
	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/providerstest"
	"github.com/flameox/flameox/providers/trace/chrome"
	"github.com/flameox/flameox/providers/trace/chrome/chrometest"
	"github.com/flameox/flameox/providers/trace/tracemodel"
	"github.com/flameox/flameox/providers/trace/tracemodel/tracemodeltest"
)

// pageAll pages every row through the families' harness (providerstest.Rows: contiguous
// pages of limit rows, Observed with its look-ahead, the same rows as one page, an
// OffsetError past the end) and decodes each row into T with exact numbers; the metrics
// are the first page's.
func pageAll[T any](t *testing.T, rows providers.Rows, limit int64) ([]T, map[string]any) {
	t.Helper()
	first, err := rows.Page(context.Background(), 0, limit, nil)
	if err != nil {
		t.Fatalf("first page: %v", err)
	}
	return decodeRows[T](t, providerstest.Rows(t, rows, limit)), first.Metrics
}

// pageOnce pages rows once from the start in steps of limit, as one client's request
// does: for rows of a converted export, which is removed once its last page is read.
func pageOnce[T any](t *testing.T, rows providers.Rows, limit int64) []T {
	t.Helper()
	var raws []json.RawMessage
	for offset := int64(0); ; {
		p, err := rows.Page(context.Background(), offset, limit, nil)
		if err != nil {
			t.Fatalf("page at %d: %v", offset, err)
		}
		raws = append(raws, p.Rows...)
		offset += int64(len(p.Rows))
		if !p.More {
			return decodeRows[T](t, raws)
		}
	}
}

// decodeRows decodes each row into T, numbers as json.Number; nil for no rows.
func decodeRows[T any](t *testing.T, raws []json.RawMessage) []T {
	t.Helper()
	var out []T
	for _, r := range raws {
		var v T
		dec := json.NewDecoder(bytes.NewReader(r))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	return out
}

type idRow struct {
	ID       int64  `json:"id"`
	ParentID *int64 `json:"parent_id"`
	Ts       json.Number
	Dur      json.Number
}

// TestSummarizeAndWindowAgainstPython pages summarize_trace and inspect_trace_window over
// a generated trace (Chrome end order, B/E roots) and compares ids, order, parents and
// the window predicate with Python's reading of the same file.
func TestSummarizeAndWindowAgainstPython(t *testing.T) {
	var buf bytes.Buffer
	if err := chrometest.WriteTrace(&buf, 1500, 5, 7); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "gen.json")
	if err := writeFile(path, buf.Bytes()); err != nil {
		t.Fatal(err)
	}
	tr := chrometest.PythonTruth(t, path, 100000)
	type ps struct{ id, ts, dur, parent, depth int64 }
	var want []ps
	for _, s := range tr.Slices {
		n := tr.Nest[strconv.FormatInt(s[0], 10)]
		want = append(want, ps{s[0], s[1], s[2], n[0], n[1]})
	}
	in := providers.Input{Path: path, Format: gen.FormatChromeTrace}

	a, err := summarize(context.Background(), &providers.Request[gen.TraceSliceFields]{Fields: &gen.TraceSliceFields{}, Inputs: []providers.Input{in}})
	if err != nil {
		t.Fatal(err)
	}
	got, metrics := pageAll[idRow](t, a.Rows, 37)
	pos := slices.DeleteFunc(slices.Clone(want), func(s ps) bool { return s.dur <= 0 })
	sort.Slice(pos, func(i, j int) bool {
		a, b := pos[i], pos[j]
		if a.ts != b.ts {
			return a.ts < b.ts
		}
		if a.depth != b.depth {
			return a.depth < b.depth
		}
		return a.id < b.id
	})
	if metrics["slice_count"] != int64(len(pos)) {
		t.Errorf("slice_count %v, Python counts %d", metrics["slice_count"], len(pos))
	}
	type cmpRow struct{ ID, Parent int64 }
	var g, w []cmpRow
	for _, r := range got {
		p := int64(-1)
		if r.ParentID != nil {
			p = *r.ParentID
		}
		g = append(g, cmpRow{r.ID, p})
	}
	for _, s := range pos {
		w = append(w, cmpRow{s.id, s.parent})
	}
	if d := cmp.Diff(w, g); d != "" {
		t.Errorf("summarize_trace rows differ from Python (-want +got):\n%s", d)
	}

	// A window in the middle of the trace: ts < end and ts + dur > start, by ts and id.
	start, end := pos[len(pos)/3].ts, pos[len(pos)/2].ts
	fields := &gen.WindowFields{StartNS: json.Number(strconv.FormatInt(start, 10)), EndNS: strconv.FormatInt(end, 10)}
	a, err = window(context.Background(), &providers.Request[gen.WindowFields]{Fields: fields, Inputs: []providers.Input{in}})
	if err != nil {
		t.Fatal(err)
	}
	wrows, _ := pageAll[idRow](t, a.Rows, 50)
	var wg, ww []int64
	for _, r := range wrows {
		wg = append(wg, r.ID)
	}
	in2 := slices.DeleteFunc(slices.Clone(want), func(s ps) bool { return !(s.ts < end && s.ts+s.dur > start) })
	sort.Slice(in2, func(i, j int) bool {
		if in2[i].ts != in2[j].ts {
			return in2[i].ts < in2[j].ts
		}
		return in2[i].id < in2[j].id
	})
	for _, s := range in2 {
		ww = append(ww, s.id)
	}
	if len(ww) == 0 {
		t.Fatal("the window selects nothing; the test proves nothing")
	}
	if d := cmp.Diff(ww, wg); d != "" {
		t.Errorf("inspect_trace_window rows differ from Python (-want +got):\n%s", d)
	}
}

func TestWindowBounds(t *testing.T) {
	for _, tt := range []struct {
		name       string
		start, end any
		field      string
	}{
		{"end before start", "20", json.Number("10"), "end_ns"},
		{"zero end", json.Number("0"), json.Number("0"), "end_ns"},
		{"negative", json.Number("-1"), json.Number("5"), "start_ns"},
		{"fraction", json.Number("1.5"), json.Number("5"), "start_ns"},
		{"beyond int64", "1", "9223372036854775808", "end_ns"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := window(context.Background(), &providers.Request[gen.WindowFields]{
				Fields: &gen.WindowFields{StartNS: tt.start, EndNS: tt.end}, Inputs: []providers.Input{{Format: gen.FormatChromeTrace}}})
			fe, ok := err.(*providers.FieldError)
			if !ok || len(fe.Field) != 1 || fe.Field[0] != tt.field {
				t.Fatalf("got %v, want a FieldError on %s", err, tt.field)
			}
		})
	}
}

func TestOverlapsDoesNotOverflow(t *testing.T) {
	const max = int64(^uint64(0) >> 1)
	for _, tt := range []struct {
		ts, dur, start, end int64
		want                bool
	}{
		{10, 5, 12, 20, true},
		{10, 2, 12, 20, false}, // ends exactly at start
		{12, 0, 12, 20, false}, // zero length at start
		{13, 0, 12, 20, true},
		{20, 5, 12, 20, false}, // starts at the exclusive end
		{max - 1, max, max - 2, max, true},
		{-max, max, 0, 10, false},
	} {
		if got := overlaps(tt.ts, tt.dur, tt.start, tt.end); got != tt.want {
			t.Errorf("overlaps(%d, %d, %d, %d) = %v, want %v", tt.ts, tt.dur, tt.start, tt.end, got, tt.want)
		}
	}
}

func TestEventKind(t *testing.T) {
	for _, tt := range []struct{ name, cat, want string }{
		{"aten::mm", "cpu_op", "operator"},
		{"autograd::engine::evaluate_function: MmBackward0", "cpu_op", "operator"},
		{"ProfilerStep#3", "user_annotation", "profiler_step"},
		{"ampere_sgemm", "kernel", "kernel"},
		{"Memcpy HtoD", "gpu_memcpy", "memcpy"},
		{"Memset", "gpu_memset", "memset"},
		{"cudaLaunchKernel", "cuda_runtime", "runtime"},
		{"RunTask", "toplevel", ""},
	} {
		if got := eventKind(&tracemodel.Nested{Event: tracemodel.Event{Name: tt.name, Category: tt.cat}}); got != tt.want {
			t.Errorf("eventKind(%q, %q) = %q, want %q", tt.name, tt.cat, got, tt.want)
		}
	}
}

func TestRocprofCommand(t *testing.T) {
	o := &gen.Rocprofv3Provider{Kind: "rocprofv3"}
	o.ApplyDefaults()
	got := rocprofCommand(o, &providers.Executable{Path: "/opt/rocm/bin/rocprofv3"},
		providers.Case{Argv: []string{"./app", "--n", "3"}, Executable: providers.Executable{Path: "/work/app"}}, "/scratch/x")
	want := []string{"/opt/rocm/bin/rocprofv3", "--output-format", "pftrace", "-o", "rocprofv3", "-d", "/scratch/x/rocprof",
		"--kernel-trace", "--", "/work/app", "--n", "3"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("rocprofv3 argv (-want +got):\n%s", d)
	}
	if _, err := rocprofCollector.Options(map[string]any{"kind": "rocprofv3", "kernel_trace": false}); err == nil {
		t.Error("no trace kind on was accepted")
	} else if fe, ok := err.(*providers.FieldError); !ok || len(fe.Accepted) != 6 {
		t.Errorf("got %v, want a FieldError listing the six trace kinds", err)
	}
	if _, err := rocprofCollector.Options(map[string]any{"kind": "rocprofv3", "kernel_trace": false, "hip_trace": true}); err != nil {
		t.Errorf("hip_trace alone: %v", err)
	}
}

func TestTorchConfigIsCompactAndSorted(t *testing.T) {
	o := &gen.TorchProfilerProvider{Kind: "torch-profiler"}
	o.ApplyDefaults()
	o.RecordShapes = true
	want := `{"activities":["cpu"],"mode":"sdk","profile_memory":false,"record_shapes":true,"schedule":{"active":1,"repeat":1,"skip_first":0,"wait":0,"warmup":1},"with_flops":false,"with_modules":false,"with_stack":false}`
	if got := torchConfig(o); got != want {
		t.Errorf("config\n got %s\nwant %s", got, want)
	}
}

// namesTruth prints, for every event of a Trace Event file that begins a thread slice
// (X with a positive dur, or B), its index with the thread and process names its pid
// and tid carry in the file's M thread_name and process_name events (null without one),
// and null names for async (b) slices. Integers and strings holding integers are one id,
// as the decoder reads them.
const namesTruth = `
import sys, json, gzip
path = sys.argv[1]
raw = gzip.open(path).read() if path.endswith('.gz') else open(path, 'rb').read()
doc = json.loads(raw)
evs = doc['traceEvents'] if isinstance(doc, dict) else doc
def ident(v):
    if isinstance(v, bool): return repr(v)
    if isinstance(v, int): return v
    if isinstance(v, str):
        try: return int(v)
        except ValueError: return 's:' + v
    return repr(v)
threads, procs = {}, {}
for e in evs:
    if isinstance(e, dict) and e.get('ph') == 'M' and isinstance(e.get('args'), dict) and isinstance(e['args'].get('name'), str):
        if e.get('name') == 'thread_name': threads[(ident(e.get('pid', 0)), ident(e.get('tid', 0)))] = e['args']['name']
        if e.get('name') == 'process_name': procs[ident(e.get('pid', 0))] = e['args']['name']
out = {}
for i, e in enumerate(evs):
    if not isinstance(e, dict): continue
    ph, pid, tid = e.get('ph'), ident(e.get('pid', 0)), ident(e.get('tid', 0))
    if (ph == 'X' and float(e.get('dur', 0)) > 0) or ph == 'B':
        out[i] = [threads.get((pid, tid)), procs.get(pid)]
    elif ph == 'b':
        out[i] = [None, procs.get(pid)]
print(json.dumps(out))
`

type nameRow struct {
	ID          int64   `json:"id"`
	ThreadName  *string `json:"thread_name"`
	ProcessName *string `json:"process_name"`
}

// TestSummarizeNamesAgainstPython pages summarize_trace over corpus traces (through the
// pipelined read when more than one CPU runs Go code) and checks every row's thread and
// process names against Python's reading of the file's metadata events.
func TestSummarizeNamesAgainstPython(t *testing.T) {
	py := testtool.Require(t, "python3")
	for _, c := range []struct {
		name   string
		format gen.Format
	}{
		{"h200__torch-mlp-train.pt.trace.json", gen.FormatPytorch},
		{"hta__kineto-simple-add-a100.pt.trace.json.gz", gen.FormatPytorch},
		{"speedscope__chrome116-devtools-trace.json", gen.FormatChromeTrace},
		{"speedscope__trace_event_multiprocess.json", gen.FormatChromeTrace},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := corpusFile(t, c.name)
			out, err := exec.Command(py, "-c", namesTruth, path).Output()
			if err != nil {
				t.Fatalf("python3: %v", err)
			}
			var want map[string][2]*string
			if err := json.Unmarshal(out, &want); err != nil {
				t.Fatal(err)
			}
			in := providers.Input{Path: path, Format: c.format}
			a, err := summarize(context.Background(), &providers.Request[gen.TraceSliceFields]{Fields: &gen.TraceSliceFields{}, Inputs: []providers.Input{in}})
			if err != nil {
				t.Fatal(err)
			}
			rows, _ := pageAll[nameRow](t, a.Rows, 1000)
			named := 0
			for _, r := range rows {
				w, ok := want[strconv.FormatInt(r.ID, 10)]
				if !ok {
					t.Fatalf("row %d begins no slice in Python's reading", r.ID)
				}
				if diff := cmp.Diff(w, [2]*string{r.ThreadName, r.ProcessName}); diff != "" {
					t.Fatalf("row %d names (-python +flameox):\n%s", r.ID, diff)
				}
				if r.ThreadName != nil {
					named++
				}
			}
			if len(rows) == 0 {
				t.Fatal("no rows")
			}
			t.Logf("%d rows, %d with a thread name", len(rows), named)
		})
	}
}

// TestReadTruncatedGzip reads a gzip trace cut inside its deflate data and inside its
// trailer (the content then decompresses whole, but its checksum is missing) through
// the read-ahead reader: each is a DecodeError naming the byte it stopped at, never a
// trace read as truncated at an event boundary; the whole file reads every slice.
func TestReadTruncatedGzip(t *testing.T) {
	var raw bytes.Buffer
	if err := chrometest.WriteStepTrace(&raw, 2<<20); err != nil {
		t.Fatal(err)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(raw.Bytes())
	zw.Close()
	want := decodeCount(t, raw.Bytes())
	for _, cut := range []int{gz.Len() / 3, gz.Len() - 9, gz.Len() - 4, gz.Len()} {
		p := filepath.Join(t.TempDir(), "t.json.gz")
		if err := os.WriteFile(p, gz.Bytes()[:cut], 0o644); err != nil {
			t.Fatal(err)
		}
		n := 0
		_, err := read(context.Background(), providers.Input{Index: 1, Path: p, Format: gen.FormatChromeTrace}, nil,
			func(*tracemodel.Nested) error { n++; return nil })
		if cut == gz.Len() {
			if err != nil || n != want {
				t.Errorf("whole file: %d slices, %v; want %d", n, err, want)
			}
			continue
		}
		var de *providers.DecodeError
		if !errors.As(err, &de) || de.Source != 1 || !strings.Contains(de.Message, "could not be read past byte") {
			t.Errorf("cut at %d of %d bytes: %d slices, %v", cut, gz.Len(), n, err)
		}
	}
}

// decodeCount is the number of slices chrome.Decode delivers for b.
func decodeCount(t *testing.T, b []byte) int {
	t.Helper()
	rec := tracemodeltest.NewRecorder()
	if _, err := chrome.Decode(context.Background(), bytes.NewReader(b), 0, chrome.Limits{}, rec); err != nil {
		t.Fatal(err)
	}
	return len(rec.Slices)
}

// TestCallGraphParents: the call graph aggregates each slice under the parent the trace
// family reports for it, also after a misnested slice (which is nobody's parent) and
// after a slice released out of order (which has none), where a stack rebuilt from the
// parent ids lost the open ancestors of the slices that followed.
func TestCallGraphParents(t *testing.T) {
	type edge struct {
		Parent, Child string
		Count         int64
	}
	unordered := func() []byte {
		// P holds more children than the Nester's window, then a slice starting before
		// the released ones (out of order), then ten more of P's children.
		var b bytes.Buffer
		b.WriteString(`[{"ph":"X","name":"P","ts":0,"dur":10000000,"pid":1,"tid":1}`)
		n := tracemodel.DefaultNesterOptions.Window + 4464
		for i := 1; i <= n; i++ {
			b.WriteString(`,{"ph":"X","name":"c","ts":` + strconv.Itoa(i*10) + `,"dur":5,"pid":1,"tid":1}`)
		}
		b.WriteString(`,{"ph":"X","name":"late","ts":1,"dur":5,"pid":1,"tid":1}`)
		for i := 1; i <= 10; i++ {
			b.WriteString(`,{"ph":"X","name":"after","ts":` + strconv.Itoa((n+i)*10) + `,"dur":5,"pid":1,"tid":1}`)
		}
		b.WriteString("]")
		return b.Bytes()
	}
	for _, tc := range []struct {
		name  string
		trace []byte
		want  []edge
	}{
		{"nested", []byte(`[
{"ph":"X","name":"A","ts":0,"dur":100,"pid":1,"tid":1},
{"ph":"X","name":"B","ts":10,"dur":40,"pid":1,"tid":1},
{"ph":"X","name":"D","ts":45,"dur":3,"pid":1,"tid":1},
{"ph":"X","name":"E","ts":85,"dur":5,"pid":1,"tid":1}]`),
			[]edge{{"A", "B", 1}, {"A", "E", 1}, {"B", "D", 1}}},
		// C starts in B and ends after it: its parent is A (the innermost slice that
		// contains it), and D, inside B and C, stays B's child.
		{"misnested", []byte(`[
{"ph":"X","name":"A","ts":0,"dur":100,"pid":1,"tid":1},
{"ph":"X","name":"B","ts":10,"dur":40,"pid":1,"tid":1},
{"ph":"X","name":"C","ts":40,"dur":40,"pid":1,"tid":1},
{"ph":"X","name":"D","ts":45,"dur":3,"pid":1,"tid":1},
{"ph":"X","name":"E","ts":85,"dur":5,"pid":1,"tid":1}]`),
			[]edge{{"A", "B", 1}, {"A", "C", 1}, {"A", "E", 1}, {"B", "D", 1}}},
		{"unordered", unordered(), []edge{{"P", "c", int64(tracemodel.DefaultNesterOptions.Window + 4464)}, {"P", "after", 10}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "trace.json")
			if err := writeFile(path, tc.trace); err != nil {
				t.Fatal(err)
			}
			in := providers.Input{Path: path, Format: gen.FormatChromeTrace}
			g, err := callGraph(context.Background(), &providers.Request[gen.NoFields]{Fields: &gen.NoFields{}, Inputs: []providers.Input{in}})
			if err != nil {
				t.Fatal(err)
			}
			rows, _ := pageAll[gen.TraceCallEdgeRow](t, g.Rows, 1000)
			got := []edge{}
			var children int64
			for _, r := range rows {
				got = append(got, edge{r.Parent, r.Child, r.SampleCount})
				children += r.SampleCount
			}
			less := func(a, b edge) int { return strings.Compare(a.Parent+"\x00"+a.Child, b.Parent+"\x00"+b.Child) }
			slices.SortFunc(got, less)
			slices.SortFunc(tc.want, less)
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("edges (-want +got):\n%s", d)
			}
			if g.Metrics["child_slice_count"] != children {
				t.Errorf("child_slice_count %v, edges count %d", g.Metrics["child_slice_count"], children)
			}
			// Every slice is a child but the roots: A, or P and the late slice (which the
			// Nester releases without a parent).
			roots := int64(1)
			if tc.name == "unordered" {
				roots = 2
			}
			if g.Metrics["slice_count"] != children+roots {
				t.Errorf("slice_count %v, want %d", g.Metrics["slice_count"], children+roots)
			}
		})
	}
}
