package trace

import (
	"bytes"
	"context"
	"fmt"
	"math/big"
	"strconv"
	"strings"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/providers"
)

// Register adds summarize_trace, inspect_trace_call_graph, summarize_pytorch_trace,
// inspect_trace_window, summarize_trace_operations, summarize_trace_lifecycle and
// inspect_gpu_launches and the detectors of the chrome-trace, pytorch, perfetto,
// rocprof-pftrace, otlp, xctrace, nsys-sqlite, nsys-rep and nsys-parquet formats.
func Register(r *providers.Registry) {
	r.Analyzer(providers.Analyze(gen.OperationNameSummarizeTrace, summarize))
	r.Analyzer(providers.Analyze(gen.OperationNameInspectTraceCallGraph, callGraph))
	r.Analyzer(providers.Analyze(gen.OperationNameSummarizePytorchTrace, summarizePytorch))
	r.Analyzer(providers.AnalyzeChecked(gen.OperationNameInspectTraceWindow, window, func(f *gen.WindowFields) error {
		_, _, err := windowBounds(f)
		return err
	}))
	r.Analyzer(providers.Analyze(gen.OperationNameSummarizeTraceOperations, summarizeOperations))
	r.Analyzer(providers.Analyze(gen.OperationNameSummarizeTraceLifecycle, summarizeLifecycle))
	r.Analyzer(providers.Analyze(gen.OperationNameInspectGPULaunches, inspectLaunches))
	for _, d := range detectors {
		r.Detector(d)
	}
	// Nsight Systems exports are SQLite (a report converted into it by nsys) or Parquet,
	// which decodes to up to 64 times its size (decision 0057).
	r.Amplifying(gen.FormatNsysSqlite, gen.FormatNsysRep, gen.FormatNsysParquet)
	r.Collector(torchCollector)
	r.Collector(rocprofCollector)
	r.Collector(xctraceCollector)
	r.Collector(nsysCollector)
}

var detectors = []providers.Detector{
	// Kineto writes its own keys before traceEvents.
	{Format: gen.FormatPytorch, Container: gen.FormatJSON, Match: func(_ string, head []byte) bool {
		return bytes.Contains(head, []byte(`"schemaVersion"`)) &&
			(bytes.Contains(head, []byte(`"deviceProperties"`)) || bytes.Contains(head, []byte(`"distributedInfo"`)) ||
				bytes.Contains(head, []byte(`"record_shapes"`)) || bytes.Contains(head, []byte(`"traceName"`)))
	}},
	{Format: gen.FormatChromeTrace, Container: gen.FormatJSON, Match: func(_ string, head []byte) bool {
		t := bytes.TrimLeft(head, " \t\r\n\ufeff")
		if bytes.HasPrefix(t, []byte("{")) {
			return bytes.Contains(head, []byte(`"traceEvents"`))
		}
		return bytes.HasPrefix(t, []byte("[")) && bytes.Contains(head, []byte(`"ph"`)) && bytes.Contains(head, []byte(`"ts"`))
	}},
	{Format: gen.FormatPerfetto, Suffixes: []string{".pftrace", ".perfetto-trace"}, Match: func(_ string, head []byte) bool {
		return IsPerfetto(head)
	}},
	// rocprofv3 writes Perfetto protobuf; only its declared format or its output name tells it apart.
	{Format: gen.FormatRocprofPftrace, Suffixes: []string{"_results.pftrace"}},
	{Format: gen.FormatXctrace, Suffixes: []string{".trace"}},
	// OTLP/JSON: an ExportTraceServiceRequest (or TracesData) object.
	{Format: gen.FormatOtlp, Container: gen.FormatJSON, Match: func(_ string, head []byte) bool {
		return bytes.HasPrefix(bytes.TrimLeft(head, " \t\r\n\ufeff"), []byte("{")) && bytes.Contains(head, []byte(`"resourceSpans"`))
	}},
	// OTLP/protobuf (.binpb, .pb, or any name): recognized by content only.
	{Format: gen.FormatOtlp, Match: func(_ string, head []byte) bool { return IsOTLPProto(head) }},
	// Nsight Systems' SQLite export (nsys export --type sqlite): SQLite named *.sqlite; its
	// tables are checked when it is opened.
	{Format: gen.FormatNsysSqlite, Match: isNsysSQLiteHead},
	// Nsight Systems' native report, converted with the installed nsys.
	{Format: gen.FormatNsysRep, Suffixes: []string{".nsys-rep"}},
	// Nsight Systems' parquetdir export (nsys export --type parquetdir): a directory of
	// <TABLE>.parquet files holding StringIds and an export's marker tables.
	{Format: gen.FormatNsysParquet, Directory: isNsysParquetNames},
}

func provider() gen.Provider { return gen.Provider{ID: "flameox-trace", Version: "native-1"} }

// unavailable answers an xctrace source, which only macOS reads.
func unavailable(in providers.Input) error {
	if familyOf(in.Format) != familyMacOnly {
		return nil
	}
	return &providers.UnavailableError{Provider: "xctrace", Executable: "xcrun",
		Message:     fmt.Sprintf("source %d is an Instruments trace, which only xcrun xctrace on macOS reads", in.Index),
		Remediation: "Export the trace on macOS (xcrun xctrace export) or record a Perfetto or Chrome trace instead."}
}

// slice is one selected slice with what its row needs.
type slice struct {
	Nested
	kind    string
	launch  *int64
	launchN *string
}

func ownSlice(s *slice) { s.Nested = retain(&s.Nested) }

func byStart(a, b *slice) bool {
	if a.TS != b.TS {
		return a.TS < b.TS
	}
	if a.Depth != b.Depth {
		return a.Depth < b.Depth
	}
	return a.ID < b.ID
}

func summarize(ctx context.Context, req *providers.Request[gen.TraceSliceFields]) (*providers.Analysis, error) {
	if a, ok, err := tablesView(ctx, gen.OperationNameSummarizeTrace, req); ok || err != nil {
		return a, err
	}
	in, f := req.Inputs[0], sliceFilter(req.Fields)
	if err := unavailable(in); err != nil {
		return nil, err
	}
	if isOTLP(in.Format) {
		return summarizeOTLP(in, f), nil
	}
	in, a, done, err := nsysTraceInput(ctx, in, req.Limits)
	if err != nil {
		return nil, err
	}
	context.AfterFunc(ctx, done)
	tp, err := admitTraceProcessor(ctx, in, req.Limits)
	if err != nil {
		return nil, err
	}
	q := &query{in: in, tp: tp, less: byStart, filter: f,
		pick: func(s *Nested) (string, bool) { return "", s.Dur > 0 },
		figures: func(m map[string]any, n int64) string {
			m["slice_count"] = n
			return "no_slices_observed: the trace holds no slice with a positive duration."
		},
		project: func(_ context.Context, sc *scan, sel []slice) ([]any, error) {
			out := make([]any, len(sel))
			for i := range sel {
				out[i] = sliceRow(sc, &sel[i].Nested)
			}
			return out, nil
		}}
	a.Rows = doneRows{q.rows(), done}
	return tp.bind(a), nil
}

func sliceRow(sc *scan, n *Nested) gen.TraceSliceRow {
	a := &n.Args
	name, mangled := displayName(n.Name)
	return gen.TraceSliceRow{
		ID: n.ID, ParentID: parent(n), Name: name, MangledName: mangled, Ts: nanos(n.TS), Dur: nanos(n.Dur),
		TrackID: n.Track, Category: optional(n.Category),
		ThreadName: sc.threadName(n.Track), ProcessName: sc.processName(n.Track),
		Filename: a.Filename, Line: a.Line, InputShapes: a.InputShapes, AllocationBytes: a.AllocationBytes,
		Phase: n.Phase, CorrelationID: a.CorrelationID, Device: a.Device, Stream: a.Stream,
	}
}

// edge is one aggregated parent/child name pair.
type edge struct {
	parent, child string
	count         int64
	dur           big.Int
}

// maxEdges bounds the distinct parent/child name pairs one call graph aggregates.
const maxEdges = providers.MaxProjectionRows

func callGraph(ctx context.Context, req *providers.Request[gen.NoFields]) (*providers.Analysis, error) {
	in := req.Inputs[0]
	if err := unavailable(in); err != nil {
		return nil, err
	}
	in, a, done, err := nsysTraceInput(ctx, in, req.Limits)
	if err != nil {
		return nil, err
	}
	defer done()
	tp, err := admitTraceProcessor(ctx, in, req.Limits)
	if err != nil {
		return nil, err
	}
	type key struct{ parent, child string }
	edges := map[key]*edge{}
	var all, slices, dropped int64
	// The parent's name comes with each slice (Nested.ParentName), as the Nester or
	// trace_processor nested it: a slice misnested or out of order does not hide the
	// parents of the slices after it.
	sc, err := read(ctx, in, tp, func(s *Nested) error {
		if s.Dur > 0 {
			all++
		}
		if s.ParentID < 0 || s.Dur <= 0 {
			return nil
		}
		slices++
		k := key{sliceName(s.ParentName), sliceName(s.Name)}
		e := edges[k]
		if e == nil {
			if len(edges) >= maxEdges {
				dropped++
				return nil
			}
			e = &edge{parent: strings.Clone(k.parent), child: strings.Clone(k.child)}
			edges[key{e.parent, e.child}] = e
		}
		e.count++
		e.dur.Add(&e.dur, big.NewInt(s.Dur))
		return nil
	})
	if err != nil {
		return nil, err
	}
	list := make([]*edge, 0, len(edges))
	for _, e := range edges {
		list = append(list, e)
	}
	sortEdges(list)
	m := sc.metrics()
	m["slice_count"] = all
	m["child_slice_count"] = slices
	m["edge_count"] = len(list)
	lim := sc.limitations()
	if dropped > 0 {
		lim = append(lim, fmt.Sprintf("More than %d distinct parent/child name pairs: %d child slices of further pairs were not aggregated.", maxEdges, dropped))
	}
	if len(list) == 0 {
		lim = append(lim, "no_nested_slices_observed: no slice of the trace has a parent slice.")
	}
	a.Metrics, a.Limitations = m, lim
	a.Rows = providers.ProjectSlice(list, func(e *edge) gen.TraceCallEdgeRow {
		return gen.TraceCallEdgeRow{Parent: e.parent, Child: e.child, SampleCount: e.count, InclusiveDurationNS: bigNanos(&e.dur)}
	})
	return tp.bind(a), nil
}

func bigNanos(b *big.Int) any {
	if b.IsInt64() {
		return nanos(b.Int64())
	}
	return b.String()
}

// window parses a trace bound: an integer or its canonical decimal string.
func bound(v any, field string) (int64, error) {
	bad := &providers.FieldError{Field: []any{field}, Accepted: []string{"an integer from 0 to 9223372036854775807", "a string matching ^(0|[1-9][0-9]{0,18})$ up to 9223372036854775807"},
		Message: fmt.Sprintf("%s must be an integer from 0 to 9223372036854775807 nanoseconds, or its canonical decimal string", field)}
	var s string
	switch x := v.(type) {
	case string:
		s = x
	case interface{ String() string }: // json.Number
		s = x.String()
	case float64:
		if x != float64(int64(x)) || x < 0 || x > 1<<53 {
			return 0, bad
		}
		return int64(x), nil
	default:
		return 0, bad
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, bad
	}
	return n, nil
}
