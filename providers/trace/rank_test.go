package trace

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/providers"
)

// rankTruth ranks a Trace Event file's X slices by (name, cat) with Python's json
// (decimals from their text): count, exact ns total, self (duration less the children on
// the same pid/tid, nested by containment with a stack), max, and for kernel, gpu_memcpy
// and gpu_memset slices the launching operator by summed duration: the innermost
// operator (aten::, autograd::, torch::) containing the CPU slice of the same correlation
// id on its thread, else the operator with the same External id that starts last, then
// is shortest (the innermost on its thread); and the distinct streams. Filters: argv[2] is a
// category or "", argv[3] a name substring or "", argv[4] a minimum duration in ns.
// With argv[5] "launches" it prints each GPU slice's launching operator by event
// ordinal instead of the rows.
const rankTruth = `
import sys, json, gzip
from decimal import Decimal, ROUND_HALF_EVEN
path, cat_f, name_f, min_f = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
doc = json.loads((gzip.open if path.endswith('.gz') else open)(path, 'rb').read(), parse_float=Decimal)
events = doc['traceEvents'] if isinstance(doc, dict) else doc
ns = lambda v: int((Decimal(str(v)) * 1000).quantize(Decimal(1), rounding=ROUND_HALF_EVEN))
sl = []
for i, e in enumerate(events):
    if e.get('ph') == 'X' and ns(e.get('dur', 0)) > 0:
        sl.append(dict(i=i, ts=ns(e['ts']), dur=ns(e['dur']), name=e.get('name', ''), cat=e.get('cat', ''),
                       track=(e.get('pid', 0), e.get('tid', 0)), args=e.get('args') or {}, kids=0))
is_op = lambda s: s['name'].startswith(('aten::', 'autograd::', 'torch::'))
ops = {}
for s in sl:
    x = s['args'].get('External id')
    if is_op(s) and x is not None:
        o = ops.get(x)
        if o is None or (s['ts'], -s['dur']) > (o['ts'], -o['dur']):
            ops[x] = s
gpu = ('kernel', 'gpu_memcpy', 'gpu_memset')
corr = {}
stacks = {}
for s in sorted(sl, key=lambda s: (s['ts'], -s['dur'], s['i'])):
    st = stacks.setdefault(s['track'], [])
    while st and not (st[-1]['ts'] <= s['ts'] and s['ts'] + s['dur'] <= st[-1]['ts'] + st[-1]['dur']):
        st.pop()
    if st:
        st[-1]['kids'] += s['dur']
    st.append(s)
    c = s['args'].get('correlation')
    if c is not None and s['cat'] not in gpu:
        inner = [p for p in st if is_op(p)]
        if inner:
            corr[c] = inner[-1]
rows = {}
for s in sl:
    if cat_f and s['cat'] != cat_f or name_f and name_f not in s['name'] or s['dur'] < min_f:
        continue
    r = rows.setdefault((s['name'], s['cat']), dict(operation=s['name'] or '<unnamed>', span_kind=s['cat'] or '<uncategorized>',
        call_count=0, total=0, self=0, max=0, launchers={}, streams=set()))
    r['call_count'] += 1
    r['total'] += s['dur']
    r['self'] += max(s['dur'] - s['kids'], 0)
    r['max'] = max(r['max'], s['dur'])
    if s['cat'] in gpu:
        if 'stream' in s['args']:
            r['streams'].add(s['args']['stream'])
        o = corr.get(s['args'].get('correlation')) or ops.get(s['args'].get('External id'))
        if o is not None:
            r['launchers'][o['name']] = r['launchers'].get(o['name'], 0) + s['dur']
out = []
for r in sorted(rows.values(), key=lambda r: (-r['total'], -r['call_count'], r['operation'], r['span_kind'])):
    kind_total = sum(q['total'] for q in rows.values() if q['span_kind'] == r['span_kind'])
    lo = sorted(r['launchers'].items(), key=lambda kv: (-kv[1], kv[0]))
    q, rem = divmod(r['total'], r['call_count'])
    mean = q + (1 if 2 * rem > r['call_count'] or (2 * rem == r['call_count'] and q % 2) else 0)
    out.append(dict(operation=r['operation'], span_kind=r['span_kind'], call_count=r['call_count'],
        total_duration_ns=r['total'], self_duration_ns=r['self'], mean_duration_ns=mean, max_duration_ns=r['max'],
        share_of_kind=r['total'] / kind_total, launch_op_name=lo[0][0] if lo else None,
        launch_op_count=len(lo) or None, streams=sorted(r['streams']) or None))
if len(sys.argv) > 5 and sys.argv[5] == 'launches':
    # Each GPU slice's (event ordinal's) launching operator instead of the rows.
    out = {}
    for s in sl:
        if s['cat'] in gpu:
            o = corr.get(s['args'].get('correlation')) or ops.get(s['args'].get('External id'))
            out[str(s['i'])] = o['name'] if o else None
print(json.dumps(out))
`

// rankRow is the part of a ranked row the truth computes.
type rankRow struct {
	Operation       string  `json:"operation"`
	SpanKind        string  `json:"span_kind"`
	CallCount       int64   `json:"call_count"`
	TotalDurationNS int64   `json:"total_duration_ns"`
	SelfDurationNS  int64   `json:"self_duration_ns"`
	MeanDurationNS  int64   `json:"mean_duration_ns"`
	MaxDurationNS   int64   `json:"max_duration_ns"`
	ShareOfKind     float64 `json:"share_of_kind"`
	LaunchOpName    *string `json:"launch_op_name"`
	LaunchOpCount   *int64  `json:"launch_op_count"`
	Streams         []int64 `json:"streams"`
}

func operationsReq(in providers.Input, f gen.TraceSliceFields) *providers.Request[gen.TraceSliceFields] {
	return &providers.Request[gen.TraceSliceFields]{Fields: &f, Inputs: []providers.Input{in}}
}

// TestSliceOperationsAgainstPython ranks the corpus torch.profiler traces and compares
// every row with Python's reading of the same file, unfiltered and filtered.
func TestSliceOperationsAgainstPython(t *testing.T) {
	for _, name := range []string{"hta__kineto-simple-add-a100.pt.trace.json.gz", "h200__torch-mlp-train.pt.trace.json"} {
		path := corpusFile(t, name)
		for _, c := range []struct {
			name   string
			fields gen.TraceSliceFields
			args   []string
		}{
			{"all", gen.TraceSliceFields{}, []string{"", "", "0"}},
			{"kernels", gen.TraceSliceFields{Category: []string{"kernel"}}, []string{"kernel", "", "0"}},
			{"aten over 10us", gen.TraceSliceFields{NameContains: ptr("aten::"), MinDurationNS: ptr(int64(10000))}, []string{"", "aten::", "10000"}},
		} {
			t.Run(name+"/"+c.name, func(t *testing.T) {
				var want []rankRow
				if err := json.Unmarshal(python3(t, rankTruth, append([]string{path}, c.args...)...), &want); err != nil {
					t.Fatal(err)
				}
				a, err := summarizeOperations(context.Background(), operationsReq(providers.Input{Path: path, Format: gen.FormatPytorch}, c.fields))
				if err != nil {
					t.Fatal(err)
				}
				got, _ := pageAll[rankRow](t, a.Rows, 50)
				m := a.Metrics
				if len(want) == 0 {
					t.Fatal("the truth ranks no row")
				}
				if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b float64) bool { return math.Abs(a-b) <= 0.5e-4 })); diff != "" {
					t.Errorf("rows (-python +flameox):\n%s", diff)
				}
				if m["operation_count"] != len(want) {
					t.Errorf("operation_count %v, want %d", m["operation_count"], len(want))
				}
			})
		}
	}
}

// TestTopKernelAnswer is the agent's question "which GPU kernel took the most time, how
// often was it launched, and which operator launched it": one call, under 20 KB of text.
func TestTopKernelAnswer(t *testing.T) {
	path := corpusFile(t, "hta__kineto-simple-add-a100.pt.trace.json.gz")
	var want []rankRow
	if err := json.Unmarshal(python3(t, rankTruth, path, "kernel", "", "0"), &want); err != nil {
		t.Fatal(err)
	}
	a, err := summarizeOperations(context.Background(), operationsReq(providers.Input{Path: path, Format: gen.FormatPytorch},
		gen.TraceSliceFields{EventKind: []string{"kernel"}}))
	if err != nil {
		t.Fatal(err)
	}
	p, err := a.Rows.Page(context.Background(), 0, 5, nil)
	if err != nil {
		t.Fatal(err)
	}
	text, err := json.Marshal(map[string]any{"rows": p.Rows, "metrics": a.Metrics, "limitations": a.Limitations})
	if err != nil {
		t.Fatal(err)
	}
	if len(text) >= 20<<10 {
		t.Errorf("the answer is %d bytes, want under 20 KB", len(text))
	}
	var top gen.TraceOperationRow
	if err := json.Unmarshal(p.Rows[0], &top); err != nil {
		t.Fatal(err)
	}
	if top.LaunchOpName == nil || want[0].LaunchOpName == nil {
		t.Fatalf("top kernel %.80q has no launching operator (python: %v)", top.Operation, want[0].LaunchOpName)
	}
	if top.Operation != want[0].Operation || top.CallCount != want[0].CallCount || *top.LaunchOpName != *want[0].LaunchOpName {
		t.Errorf("top kernel %.80q x%d by %v, want %.80q x%d by %v", top.Operation, top.CallCount, *top.LaunchOpName,
			want[0].Operation, want[0].CallCount, *want[0].LaunchOpName)
	}
	if top.EventKind == nil || *top.EventKind != "kernel" {
		t.Errorf("event_kind %v, want kernel", top.EventKind)
	}
}

// TestSliceOperationsSelfAndLaunch checks self time, launch linking (an operator after
// its kernel in start order, nested operators, two launchers) and demangling on a
// written trace.
func TestSliceOperationsSelfAndLaunch(t *testing.T) {
	trace := `{"traceEvents":[
{"ph":"X","cat":"cpu_op","name":"aten::linear","pid":1,"tid":1,"ts":0,"dur":100,"args":{"External id":1}},
{"ph":"X","cat":"cpu_op","name":"aten::addmm","pid":1,"tid":1,"ts":10,"dur":50,"args":{"External id":1}},
{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":20,"dur":10,"args":{"External id":1}},
{"ph":"X","cat":"kernel","name":"_ZN2at6native4gemmEv","pid":0,"tid":7,"ts":40,"dur":30,"args":{"External id":1,"stream":7}},
{"ph":"X","cat":"kernel","name":"_ZN2at6native4gemmEv","pid":0,"tid":8,"ts":150,"dur":5,"args":{"External id":2,"stream":8}},
{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":160,"dur":20,"args":{"External id":2}},
{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":200,"dur":0,"args":{"External id":3}}
]}`
	path := filepath.Join(t.TempDir(), "t.json")
	if err := os.WriteFile(path, []byte(trace), 0o644); err != nil {
		t.Fatal(err)
	}
	a, err := summarizeOperations(context.Background(), operationsReq(providers.Input{Path: path, Format: gen.FormatPytorch}, gen.TraceSliceFields{}))
	if err != nil {
		t.Fatal(err)
	}
	rows, _ := pageAll[gen.TraceOperationRow](t, a.Rows, 10)
	m := a.Metrics
	byName := map[string]gen.TraceOperationRow{}
	for _, r := range rows {
		byName[r.Operation] = r
	}
	k, ok := byName["at::native::gemm()"]
	if !ok {
		t.Fatalf("no demangled kernel row in %v", rows)
	}
	if k.MangledName == nil || *k.MangledName != "_ZN2at6native4gemmEv" || k.CallCount != 2 || fmt.Sprint(k.TotalDurationNS) != "35000" {
		t.Errorf("kernel row %+v", k)
	}
	// 30 us launched by the innermost aten::addmm, 5 by aten::mm (found after the kernel).
	if k.LaunchOpName == nil || *k.LaunchOpName != "aten::addmm" || k.LaunchOpCount == nil || *k.LaunchOpCount != 2 {
		t.Errorf("launch %v x%v, want aten::addmm of 2", k.LaunchOpName, k.LaunchOpCount)
	}
	if !cmp.Equal(k.Streams, []int64{7, 8}) || k.ShareOfKind == nil || *k.ShareOfKind != 1 {
		t.Errorf("streams %v share %v", k.Streams, k.ShareOfKind)
	}
	for name, self := range map[string]string{"aten::linear": "50000", "aten::addmm": "40000", "cudaLaunchKernel": "10000", "aten::mm": "20000"} {
		if got := fmt.Sprint(byName[name].SelfDurationNS); got != self {
			t.Errorf("%s self %v, want %v", name, got, self)
		}
	}
	// aten::mm's zero-duration call is not a slice.
	if byName["aten::mm"].CallCount != 1 || m["slice_count"] != int64(6) {
		t.Errorf("aten::mm calls %d, slice_count %v", byName["aten::mm"].CallCount, m["slice_count"])
	}
	if rows[0].Operation != "aten::linear" {
		t.Errorf("first row %q, want aten::linear (the largest total)", rows[0].Operation)
	}
}

// TestTraceFilters applies the filters to the four operations that take them, on every
// trace family, and checks what an emptied population says.
func TestTraceFilters(t *testing.T) {
	kineto := providers.Input{Path: corpusFile(t, "hta__kineto-simple-add-a100.pt.trace.json.gz"), Format: gen.FormatPytorch}
	otlp := providers.Input{Path: corpusFile(t, "otlp__trace.json"), Format: gen.FormatOtlp}
	nsys := providers.Input{Path: corpusFile(t, nsysCorpus), Format: gen.FormatNsysSqlite}
	ctx := context.Background()
	type slim struct {
		Name     string  `json:"name"`
		Category *string `json:"category"`
		Dur      int64   `json:"dur"`
		Kind     string  `json:"event_kind"`
	}
	t.Run("summarize_trace", func(t *testing.T) {
		a, err := summarize(ctx, operationsReq(kineto, gen.TraceSliceFields{Category: []string{"kernel", "gpu_memcpy"}, MinDurationNS: ptr(int64(2000))}))
		if err != nil {
			t.Fatal(err)
		}
		rows, m := pageAll[slim](t, a.Rows, 100)
		if len(rows) == 0 || m["slice_count"] != int64(len(rows)) || m["filter_excluded_count"].(int64) == 0 {
			t.Fatalf("rows %d metrics %v", len(rows), m)
		}
		for _, r := range rows {
			if (*r.Category != "kernel" && *r.Category != "gpu_memcpy") || r.Dur < 2000 {
				t.Errorf("row %+v passes no filter", r)
			}
		}
	})
	t.Run("summarize_pytorch_trace", func(t *testing.T) {
		a, err := summarizePytorch(ctx, &providers.Request[gen.TraceFilterFields]{Inputs: []providers.Input{kineto},
			Fields: &gen.TraceFilterFields{EventKind: []string{"memcpy", "memset"}}})
		if err != nil {
			t.Fatal(err)
		}
		rows, m := pageAll[slim](t, a.Rows, 100)
		if len(rows) != 19 || m["memcpy_count"] != int64(16) || m["memset_count"] != int64(3) {
			t.Errorf("%d rows, metrics %v; want the 16 memcpy and 3 memset", len(rows), m)
		}
		for _, r := range rows {
			if r.Kind != "memcpy" && r.Kind != "memset" {
				t.Errorf("row %+v", r)
			}
		}
	})
	t.Run("inspect_trace_window", func(t *testing.T) {
		a, err := window(ctx, &providers.Request[gen.WindowFields]{Inputs: []providers.Input{kineto},
			Fields: &gen.WindowFields{StartNS: "0", EndNS: "9223372036854775807", NameContains: ptr("cudaMemcpyAsync")}})
		if err != nil {
			t.Fatal(err)
		}
		rows, m := pageAll[slim](t, a.Rows, 100)
		if len(rows) == 0 || m["matching_slice_count"] != int64(len(rows)) {
			t.Fatalf("%d rows, metrics %v", len(rows), m)
		}
		for _, r := range rows {
			if !strings.Contains(r.Name, "cudaMemcpyAsync") {
				t.Errorf("row %+v", r)
			}
		}
	})
	t.Run("empty", func(t *testing.T) {
		a, err := summarizeOperations(ctx, operationsReq(kineto, gen.TraceSliceFields{NameContains: ptr("no such name")}))
		if err != nil {
			t.Fatal(err)
		}
		rows, _ := pageAll[gen.TraceOperationRow](t, a.Rows, 10)
		m := a.Metrics
		if len(rows) != 0 || m["filter_excluded_count"] != m["slice_count"] ||
			!strings.Contains(strings.Join(a.Limitations, "|"), "no_rows_match_filters") {
			t.Errorf("rows %v metrics %v limitations %q", rows, m, a.Limitations)
		}
	})
	t.Run("otlp", func(t *testing.T) {
		all, err := summarizeOperations(ctx, operationsReq(otlp, gen.TraceSliceFields{}))
		if err != nil {
			t.Fatal(err)
		}
		every, _ := pageAll[gen.TraceOperationRow](t, all.Rows, 100)
		kind := every[0].SpanKind
		a, err := summarizeOperations(ctx, operationsReq(otlp, gen.TraceSliceFields{Category: []string{kind}}))
		if err != nil {
			t.Fatal(err)
		}
		rows, _ := pageAll[gen.TraceOperationRow](t, a.Rows, 100)
		m := a.Metrics
		var n int
		for _, r := range every {
			if r.SpanKind == kind {
				n++
			}
		}
		if len(rows) != n || m["filter_excluded_count"] == nil {
			t.Errorf("%d rows of kind %s, want %d; metrics %v", len(rows), kind, n, m)
		}
		a, err = summarizeOperations(ctx, operationsReq(otlp, gen.TraceSliceFields{EventKind: []string{"kernel"}}))
		if err != nil {
			t.Fatal(err)
		}
		if rows, _ := pageAll[gen.TraceOperationRow](t, a.Rows, 100); len(rows) != 0 {
			t.Errorf("an OTLP span has no event kind; %d rows passed", len(rows))
		}
	})
	t.Run("nsys operations", func(t *testing.T) {
		all, err := summarizeOperations(ctx, operationsReq(nsys, gen.TraceSliceFields{}))
		if err != nil {
			t.Fatal(err)
		}
		every, _ := pageAll[gen.TraceOperationRow](t, all.Rows, 1000)
		whole := all.Metrics
		a, err := summarizeOperations(ctx, operationsReq(nsys, gen.TraceSliceFields{Category: []string{"runtime"}, NameContains: ptr("cuda")}))
		if err != nil {
			t.Fatal(err)
		}
		rows, _ := pageAll[gen.TraceOperationRow](t, a.Rows, 1000)
		m := a.Metrics
		var want []gen.TraceOperationRow
		for _, r := range every {
			if r.SpanKind == "runtime" && strings.Contains(r.Operation, "cuda") {
				want = append(want, r)
			}
		}
		// A share is of the listed rows' total, so it differs once rows are filtered out.
		noShare := cmpopts.IgnoreFields(gen.TraceOperationRow{}, "ShareOfKind")
		if len(want) == 0 || !cmp.Equal(rows, want, noShare) {
			t.Errorf("filtered rows differ from the rows filtered:\n%s", cmp.Diff(want, rows, noShare))
		}
		var kept int64
		for _, r := range rows {
			kept += r.CallCount
		}
		if m["filter_excluded_count"].(int64)+kept != whole["event_count"].(int64) {
			t.Errorf("excluded %v + kept %d != events %v", m["filter_excluded_count"], kept, whole["event_count"])
		}
	})
}

// TestPytorchLaunchesAgainstPython checks every GPU row of summarize_pytorch_trace on
// the corpus torch.profiler traces: its launching operator is the one Python finds
// through the correlation id, else the External id (the 2023 A100 trace links kernels to
// operators only through the correlation id).
func TestPytorchLaunchesAgainstPython(t *testing.T) {
	for _, name := range []string{"hta__kineto-simple-add-a100.pt.trace.json.gz", "h200__torch-mlp-train.pt.trace.json"} {
		t.Run(name, func(t *testing.T) {
			path := corpusFile(t, name)
			var want map[string]*string
			if err := json.Unmarshal(python3(t, rankTruth, path, "", "", "0", "launches"), &want); err != nil {
				t.Fatal(err)
			}
			a, err := summarizePytorch(context.Background(), &providers.Request[gen.TraceFilterFields]{Inputs: []providers.Input{{Path: path, Format: gen.FormatPytorch}},
				Fields: &gen.TraceFilterFields{EventKind: []string{"kernel", "memcpy", "memset"}}})
			if err != nil {
				t.Fatal(err)
			}
			rows, _ := pageAll[gen.PytorchEventRow](t, a.Rows, 100)
			if len(rows) != len(want) {
				t.Fatalf("%d GPU rows, python has %d", len(rows), len(want))
			}
			linked := 0
			for _, r := range rows {
				w := want[fmt.Sprint(r.ID)]
				if !cmp.Equal(r.LaunchOpName, w) {
					t.Errorf("slice %d %.40q launched by %v, python %v", r.ID, r.Name, deref(r.LaunchOpName), deref(w))
				}
				if w != nil {
					linked++
				}
			}
			if linked == 0 {
				t.Error("no GPU slice has a launching operator")
			}
		})
	}
}

func deref(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}

// TestSliceRowsDemangle: the rows of summarize_trace, summarize_pytorch_trace and
// inspect_trace_window show a C++ symbol demangled, with the name as written beside it,
// and leave other names alone.
func TestSliceRowsDemangle(t *testing.T) {
	trace := `{"traceEvents":[
{"ph":"X","cat":"kernel","name":"_ZN2at6native4gemmEv","pid":0,"tid":7,"ts":10,"dur":5,"args":{"stream":7}},
{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":0,"dur":20}
]}`
	path := filepath.Join(t.TempDir(), "t.json")
	if err := os.WriteFile(path, []byte(trace), 0o644); err != nil {
		t.Fatal(err)
	}
	in := providers.Input{Path: path, Format: gen.FormatPytorch}
	type named struct {
		Name    string  `json:"name"`
		Mangled *string `json:"mangled_name"`
	}
	check := func(what string, rows []named) {
		t.Helper()
		if len(rows) != 2 {
			t.Fatalf("%s: %d rows", what, len(rows))
		}
		for _, r := range rows {
			switch r.Name {
			case "at::native::gemm()":
				if r.Mangled == nil || *r.Mangled != "_ZN2at6native4gemmEv" {
					t.Errorf("%s: %+v", what, r)
				}
			case "aten::mm":
				if r.Mangled != nil {
					t.Errorf("%s: aten::mm has a mangled name %q", what, *r.Mangled)
				}
			default:
				t.Errorf("%s: row %+v", what, r)
			}
		}
	}
	a, err := summarize(context.Background(), operationsReq(in, gen.TraceSliceFields{}))
	if err != nil {
		t.Fatal(err)
	}
	rows, _ := pageAll[named](t, a.Rows, 10)
	check("summarize_trace", rows)
	a, err = summarizePytorch(context.Background(), &providers.Request[gen.TraceFilterFields]{Inputs: []providers.Input{in}, Fields: &gen.TraceFilterFields{}})
	if err != nil {
		t.Fatal(err)
	}
	rows, _ = pageAll[named](t, a.Rows, 10)
	check("summarize_pytorch_trace", rows)
	a, err = window(context.Background(), &providers.Request[gen.WindowFields]{Inputs: []providers.Input{in}, Fields: &gen.WindowFields{StartNS: "0", EndNS: "1000000"}})
	if err != nil {
		t.Fatal(err)
	}
	rows, _ = pageAll[named](t, a.Rows, 10)
	check("inspect_trace_window", rows)
}
