package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/broker"
	"github.com/flameox/flameox/internal/failure"
	"github.com/flameox/flameox/internal/sourcefile"
	"github.com/flameox/flameox/providers/cpu"
	"github.com/flameox/flameox/runtime/continuation"
)

// maxProjectionRows bounds the rows one provider projection computes; a larger
// population ends with truncation reason provider_limit and no continuation.
const maxProjectionRows = 100_000

// maxJSONProfileBytes bounds JSON profiles, which are decoded whole: Speedscope as
// upstream, V8 CPU profiles likewise.
const maxJSONProfileBytes = 64 << 20

// Limitations of CPU evidence by format.
var cpuLimitations = map[gen.Format][]string{
	gen.FormatPstats: {
		"cProfile and profile are deterministic instrumentation: per-call overhead inflates the times of small, frequently called functions.",
		"pstats files are not compatible across Python versions; this reader decodes the marshal data CPython 3 writes.",
		"A profile shows where time went, not why; a hot function is not necessarily the cause of slowness.",
	},
	gen.FormatPySpy: {
		"Sampled profile: times are estimated from periodic stack samples at the sampling rate, so functions shorter than the interval may not appear.",
		"Samples with an empty stack are counted as unresolved; py-spy frames without a file are native or idle frames.",
	},
	gen.FormatPerf: {
		"Sampled profile: weights are sample counts from collapsed stacks, so functions shorter than the sampling interval may not appear.",
		"Collapsed stacks carry function names only: no file or line, and frames perf could not resolve appear as [unknown].",
	},
	gen.FormatPerfData: {
		"Sampled profile: weights are sample counts, so functions shorter than the sampling interval may not appear.",
		"perf.data was converted with this machine's perf script; symbols resolve against the binaries present now, and unresolved frames appear as [unknown] with their object file.",
	},
	gen.FormatCpuprofile: {
		"Sampled profile: V8 samples JavaScript frames at its sampling interval; times are the intervals between samples.",
		"Native, idle and GC time appear as (program), (idle) and (garbage collector) frames.",
	},
	gen.FormatPprof: {
		"Sampled profile: weights are the selected sample type's values; functions shorter than the sampling period may not appear.",
		"Frames are functions (name, file, start line); inlined calls are expanded, and unsymbolized locations appear as addresses.",
	},
}

// cpuProfile is one decoded CPU source.
type cpuProfile struct {
	pstats   []cpu.PstatsFunction
	sampled  *cpu.Sampled
	provider gen.Provider
	metrics  map[string]any
	// implementation names an external decoder executable bound into the request.
	implementation map[string]any
}

// cpuFieldChecks refuses metric for non-pstats and sample_type for non-pprof sources.
func cpuFieldChecks(in []resolved, metric, sampleType bool) *failure.Failure {
	for i, r := range in {
		if metric && r.format != gen.FormatPstats {
			return failure.Invalid(failure.Path("metric"), []string{"pstats"},
				"metric applies to pstats sources only; source %d is %s, which ranks by its sampled self weight", i, r.format).
				With("option", "metric").With("accepted_formats", []string{"pstats"}).With("source_index", i)
		}
		if sampleType && r.format != gen.FormatPprof {
			return failure.Invalid(failure.Path("sample_type"), []string{"pprof"},
				"sample_type applies to pprof sources only; source %d is %s", i, r.format).
				With("option", "sample_type").With("accepted_formats", []string{"pprof"}).With("source_index", i)
		}
	}
	return nil
}

// decodeCPU decodes one resolved CPU source.
func (rt *Runtime) decodeCPU(ctx context.Context, req *request, r resolved, o cpu.Options) (*cpuProfile, *failure.Failure) {
	p := &cpuProfile{provider: gen.Provider{Version: Version}, metrics: map[string]any{}}
	switch r.format {
	case gen.FormatPerfData:
		return rt.decodePerfData(ctx, req, r, p, o)
	case gen.FormatPySpy, gen.FormatCpuprofile:
		if r.size > maxJSONProfileBytes {
			return nil, failure.New(gen.FailureCodeLimitExceeded, "the %s profile is %d bytes; JSON profiles are read up to %d bytes", r.format, r.size, maxJSONProfileBytes).
				With("limit_bytes", maxJSONProfileBytes).With("size_bytes", r.size)
		}
	case gen.FormatPstats, gen.FormatPerf, gen.FormatPprof:
	default:
		return nil, unsupportedFormat(req.tool.Operation, 0, string(r.format))
	}
	f, err := sourcefile.OpenStream(r.path)
	if errors.Is(err, sourcefile.ErrBadGzip) {
		return nil, failure.Wrap(err, gen.FailureCodeDecodeFailure, "source 0 is not a valid gzip stream").With("source_index", 0)
	}
	if err != nil {
		return nil, failure.Wrap(err, gen.FailureCodeMissingOrChangedInput, "source 0 could not be read").
			Field(failure.Path("sources", 0), nil)
	}
	defer f.Close()
	switch r.format {
	case gen.FormatPstats:
		p.provider.ID = "pstats"
		p.pstats, err = cpu.DecodePstats(f)
	case gen.FormatPySpy:
		p.provider.ID = "speedscope"
		var profiles int
		p.sampled, profiles, err = cpu.DecodeSpeedscope(f, o)
		p.metrics["profile_count"] = profiles
	case gen.FormatCpuprofile:
		p.provider.ID = "v8-cpuprofile"
		p.sampled, err = cpu.DecodeCPUProfile(f, o)
	case gen.FormatPerf:
		p.provider.ID = "collapsed-stacks"
		p.sampled, err = cpu.DecodeCollapsed(f, o)
	case gen.FormatPprof:
		p.provider.ID = "pprof"
		var info cpu.PprofInfo
		p.sampled, info, err = cpu.DecodePprof(io.LimitReader(f, req.limits.MaxInputBytes), o)
		p.metrics["sample_type"], p.metrics["sample_types"] = info.SampleType, info.SampleTypes
		var ste *cpu.SampleTypeError
		if errors.As(err, &ste) {
			return nil, failure.Invalid(failure.Path("sample_type"), ste.Available,
				"the pprof profile has no sample type %q; it has %s", ste.Requested, strings.Join(ste.Available, ", "))
		}
	}
	if err != nil {
		return nil, cpuDecodeFailure(err)
	}
	return p, nil
}

// cpuDecodeFailure maps a decoder error to its typed failure.
func cpuDecodeFailure(err error) *failure.Failure {
	var de *cpu.DecodeError
	var le *cpu.LimitError
	var ue *cpu.UnsupportedError
	switch {
	case errors.As(err, &de):
		f := failure.Wrap(err, gen.FailureCodeDecodeFailure, "%s", de.Message).With("source_index", 0)
		if de.Python2 {
			f.With("python_major_version", 2)
		}
		return f
	case errors.As(err, &le):
		return failure.Wrap(err, gen.FailureCodeLimitExceeded, "%s", le.Message).With("limit", le.Limit)
	case errors.As(err, &ue):
		return failure.Wrap(err, gen.FailureCodeUnsupportedFormat, "%s", ue.Message).With("source_index", 0)
	}
	return failure.Wrap(err, gen.FailureCodeDecodeFailure, "the input could not be decoded")
}

// perfExecutable locates perf: $FLAMEOX_PERF, else perf on PATH.
func perfExecutable() (string, error) {
	if p := os.Getenv("FLAMEOX_PERF"); p != "" {
		return p, nil
	}
	return exec.LookPath("perf")
}

// perfUnavailable is the UNAVAILABLE_CAPABILITY state of a missing perf.
func perfUnavailable() *failure.Failure {
	f := failure.New(gen.FailureCodeUnavailableCapability,
		"perf is not installed or not on PATH; it is needed to read perf.data and to capture with the perf provider").
		With("missing_executable", "perf").With("provider_id", "perf").
		With("remediation", "Install perf (Debian/Ubuntu: apt-get install linux-perf, or linux-tools-$(uname -r)) or set FLAMEOX_PERF to its path, then retry.")
	f.NextAction = &gen.NextAction{OperatorAction: &gen.OperatorAction{Kind: "operator_action",
		Message: "Install perf (Debian/Ubuntu: apt-get install linux-perf) or set FLAMEOX_PERF, then retry the same call."}}
	return f
}

// decodePerfData converts perf.data with `perf script` through the broker (bounded by the
// request's timeout, memory and output limits) and decodes its stacks. The perf binary's
// digest is the provider version and is bound into the request identity.
func (rt *Runtime) decodePerfData(ctx context.Context, req *request, r resolved, p *cpuProfile, o cpu.Options) (*cpuProfile, *failure.Failure) {
	exe, err := perfExecutable()
	if err != nil {
		return nil, perfUnavailable()
	}
	perf, f := bindCollector(exe, "perf", perfUnavailable)
	if f != nil {
		return nil, f
	}
	dir, err := os.MkdirTemp("", "flameox-perf-script-")
	if err != nil {
		return nil, failure.Wrap(err, gen.FailureCodeDecodeFailure, "the perf.data conversion could not start")
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "script.txt")
	res, err := broker.Run(ctx, broker.Spec{Path: perf.path, Args: []string{"perf", "script", "--input", r.path, "--force"}, Dir: dir,
		Env: []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}, StdoutFile: out, StderrFile: filepath.Join(dir, "stderr"),
		MaxOutputBytes: req.limits.MaxOutputBytes, Timeout: time.Duration(req.limits.TimeoutSeconds * float64(time.Second)),
		MaxRSSBytes: req.limits.MaxMemoryBytes})
	switch {
	case err != nil:
		return nil, failure.Wrap(err, gen.FailureCodeDecodeFailure, "perf script could not be started")
	case res.Cancelled:
		return nil, failure.New(gen.FailureCodeCancelled, "the analysis was cancelled")
	case res.Limit != nil:
		return nil, failure.New(gen.FailureCodeLimitExceeded, "perf script stopped at its %s bound (%v %s)", res.Limit.Kind, res.Limit.Configured, res.Limit.Unit).
			With("limit_kind", res.Limit.Kind).With("configured", res.Limit.Configured).With("unit", res.Limit.Unit)
	case res.ExitCode == nil || *res.ExitCode != 0:
		return nil, failure.New(gen.FailureCodeDecodeFailure, "perf script could not read the perf.data file").With("exit_code", res.ExitCode)
	}
	script, err := os.Open(out)
	if err != nil {
		return nil, failure.Wrap(err, gen.FailureCodeDecodeFailure, "the perf script output could not be read")
	}
	defer script.Close()
	p.provider = gen.Provider{ID: "perf-script", Version: "sha256:" + perf.sha256}
	p.implementation = map[string]any{"perf": perf.sha256}
	if p.sampled, err = cpu.DecodePerfScript(script, o); err != nil {
		return nil, cpuDecodeFailure(err)
	}
	return p, nil
}

// sampledMetrics are the operation-level figures of a sampled profile.
func sampledMetrics(s *cpu.Sampled, m map[string]any) map[string]any {
	m["frame_count"] = len(s.Frames)
	m["sample_count"] = s.Samples
	m["weight_unit"] = s.Unit
	m["total_weight"] = s.TotalWeight * s.Scale
	m["unresolved_sample_count"] = s.Unresolved
	return m
}

func nullable[T comparable](v T) any {
	var zero T
	if v == zero {
		return nil
	}
	return v
}

// projection is a bounded, ordered population of rows; row materializes one of them, so
// only the returned page is ever encoded.
type projection struct {
	n   int
	row func(i int) json.RawMessage
	// bounded is set when the population was cut at maxProjectionRows.
	bounded bool
}

// rawProjection wraps rows already encoded.
func rawProjection(rows []json.RawMessage, bounded bool) projection {
	return projection{n: len(rows), row: func(i int) json.RawMessage { return rows[i] }, bounded: bounded}
}

// pageProjection pages a bounded projection: the continuation offset, the page,
// truncation and next_page.
func (rt *Runtime) pageProjection(req *request, in []resolved, res *Result, p projection) *failure.Failure {
	offset := int64(0)
	if req.continuation != "" {
		o, err := continuation.Decode(req.continuation, req.digest)
		if err != nil {
			return failure.Invalid(failure.Path("continuation"), nil,
				"the continuation does not match this request and its inputs; submit next_page unchanged or start without continuation")
		}
		offset = o
	}
	req.offset = offset
	total := int64(min(p.n, maxProjectionRows))
	if offset > 0 && offset >= total {
		return failure.Invalid(failure.Path("continuation"), nil, "offset %d is at or beyond the %d rows of this projection", offset, total).
			With("offset", offset).With("available_rows", total)
	}
	end := min(offset+req.limits.MaxRows, total)
	page := make([]json.RawMessage, 0, end-offset)
	for i := offset; i < end; i++ {
		page = append(page, p.row(int(i)))
	}
	more := end < total
	bounded := p.bounded || int64(p.n) > maxProjectionRows
	res.Coverage = gen.Coverage{RowsReturned: int64(len(page)), RowsObserved: end, Complete: !more && !bounded}
	res.Blocks = append(res.Blocks, TableBlock{Type: "table", Rows: page})
	if more {
		res.Coverage.RowsObserved = end + 1
		return rt.paginate(req, in, res, int64(len(page)))
	}
	if bounded {
		next := end
		res.Truncation = &gen.Truncation{Reason: "provider_limit", NextOffset: &next}
		res.Limitations = append(res.Limitations, fmt.Sprintf(
			"The projection stops at %d rows (provider_limit); narrow the query (function filter, direction, metric) to see the rest.", maxProjectionRows))
	}
	return nil
}

// cpuAnalysis resolves the single CPU source, checks the format-specific fields, binds the
// request (with any external decoder) and decodes it.
func (rt *Runtime) cpuAnalysis(ctx context.Context, req *request, metric, sampleType *string, edges bool) ([]resolved, *cpuProfile, *failure.Failure) {
	in, f := rt.resolveSources(req)
	if f != nil {
		return nil, nil, f
	}
	if f := cpuFieldChecks(in, metric != nil, sampleType != nil); f != nil {
		return nil, nil, f
	}
	o := cpu.Options{Edges: edges}
	if sampleType != nil {
		o.SampleType = *sampleType
	}
	p, f := rt.decodeCPU(ctx, req, in[0], o)
	if f != nil {
		if ctx.Err() != nil {
			return nil, nil, failure.New(gen.FailureCodeCancelled, "the analysis was cancelled")
		}
		return nil, nil, f
	}
	if f := req.bindWith(in, p.implementation); f != nil {
		return nil, nil, f
	}
	if f := recheck(in); f != nil {
		return nil, nil, f
	}
	return in, p, nil
}

func analyzeCPUHotspots(ctx context.Context, rt *Runtime, req *request) (*Result, *failure.Failure) {
	fields := req.typed.(*gen.CpuHotspotFields)
	in, p, f := rt.cpuAnalysis(ctx, req, fields.Metric, fields.SampleType, false)
	if f != nil {
		return nil, f
	}
	var rows []json.RawMessage
	var metrics map[string]any
	if in[0].format == gen.FormatPstats {
		metric := "self_time_seconds"
		if fields.Metric != nil {
			metric = *fields.Metric
		}
		fs := append([]cpu.PstatsFunction(nil), p.pstats...)
		key := func(x cpu.PstatsFunction) float64 {
			switch metric {
			case "cumulative_time_seconds":
				return x.CumSeconds
			case "total_calls":
				return float64(x.TotalCalls)
			case "primitive_calls":
				return float64(x.PrimitiveCalls)
			}
			return x.SelfSeconds
		}
		sort.SliceStable(fs, func(i, j int) bool {
			a, b := fs[i], fs[j]
			if ka, kb := key(a), key(b); ka != kb {
				return ka > kb
			}
			if a.File != b.File {
				return a.File < b.File
			}
			if a.Line != b.Line {
				return a.Line < b.Line
			}
			return a.Function < b.Function
		})
		var total float64
		for _, x := range fs {
			total += x.SelfSeconds
		}
		metrics = map[string]any{"function_count": len(fs), "metric": metric, "total_self_time_seconds": total}
		for _, x := range fs[:min(len(fs), maxProjectionRows)] {
			b, _ := json.Marshal(map[string]any{"function": x.Function, "file": x.File, "line": x.Line,
				"primitive_calls": x.PrimitiveCalls, "total_calls": x.TotalCalls,
				"self_time_seconds": x.SelfSeconds, "cumulative_time_seconds": x.CumSeconds})
			rows = append(rows, b)
		}
	} else {
		metrics = sampledMetrics(p.sampled, p.metrics)
		hs := p.sampled.Hotspots()
		for _, h := range hs[:min(len(hs), maxProjectionRows)] {
			b, _ := json.Marshal(map[string]any{"function": h.Function, "file": nullable(h.File), "line": nullable(h.Line),
				"column": nullable(h.Column), "self_weight": h.SelfWeight, "inclusive_weight": h.InclusiveWeight,
				"self_samples": h.SelfSamples, "unit": p.sampled.Unit})
			rows = append(rows, b)
		}
	}
	res := newResult(req, in, nil, false, 0)
	res.Provider = p.provider
	res.Limitations = append(append([]string{}, req.tool.Operation.Limitations...), cpuLimitations[in[0].format]...)
	res.Blocks = []any{MetricsBlock{Type: "metrics", Values: metrics}}
	total := len(rows)
	if p.pstats != nil {
		total = len(p.pstats)
	} else if p.sampled != nil {
		total = len(p.sampled.Frames)
	}
	if f := rt.pageProjection(req, in, res, rawProjection(rows, total > maxProjectionRows)); f != nil {
		return nil, f
	}
	return res, nil
}

func analyzeCPUCallers(ctx context.Context, rt *Runtime, req *request) (*Result, *failure.Failure) {
	fields := req.typed.(*gen.CpuCallerFields)
	in, p, f := rt.cpuAnalysis(ctx, req, nil, fields.SampleType, true)
	if f != nil {
		return nil, f
	}
	function := ""
	if fields.Function != nil {
		function = *fields.Function
	}
	direction := fields.Direction
	var rows []json.RawMessage
	var metrics map[string]any
	total := 0
	if in[0].format == gen.FormatPstats {
		edges := pstatsEdges(p.pstats, function, direction)
		total = len(edges)
		allEdges := 0
		for _, fn := range p.pstats {
			allEdges += len(fn.Callers)
		}
		metrics = map[string]any{"function_count": len(p.pstats), "edge_count": allEdges, "matching_edge_count": len(edges)}
		for _, e := range edges[:min(len(edges), maxProjectionRows)] {
			b, _ := json.Marshal(map[string]any{
				"caller_function": e.Caller.Function, "caller_file": e.Caller.File, "caller_line": e.Caller.Line,
				"callee_function": e.callee.Function, "callee_file": e.callee.File, "callee_line": e.callee.Line,
				"primitive_calls": e.PrimitiveCalls, "total_calls": e.TotalCalls,
				"self_time_seconds": e.SelfSeconds, "cumulative_time_seconds": e.CumSeconds})
			rows = append(rows, b)
		}
	} else {
		edges := p.sampled.CallerEdges(function, direction)
		total = len(edges)
		metrics = sampledMetrics(p.sampled, p.metrics)
		metrics["edge_count"], metrics["matching_edge_count"] = len(p.sampled.Edges), len(edges)
		for _, e := range edges[:min(len(edges), maxProjectionRows)] {
			b, _ := json.Marshal(map[string]any{
				"caller_function": e.Caller.Function, "caller_file": nullable(e.Caller.File), "caller_line": nullable(e.Caller.Line),
				"callee_function": e.Callee.Function, "callee_file": nullable(e.Callee.File), "callee_line": nullable(e.Callee.Line),
				"sample_count": e.Samples, "weight": e.Weight, "unit": p.sampled.Unit})
			rows = append(rows, b)
		}
	}
	metrics["function_filter"], metrics["direction"] = nullable(function), direction
	res := newResult(req, in, nil, false, 0)
	res.Provider = p.provider
	res.Limitations = append(append([]string{}, req.tool.Operation.Limitations...), cpuLimitations[in[0].format]...)
	if total == 0 {
		res.Limitations = append(res.Limitations, "No caller edge matches the request.")
	}
	res.Blocks = []any{MetricsBlock{Type: "metrics", Values: metrics}}
	if f := rt.pageProjection(req, in, res, rawProjection(rows, total > maxProjectionRows)); f != nil {
		return nil, f
	}
	return res, nil
}

// pstatsEdge is a caller edge with its callee.
type pstatsEdge struct {
	cpu.PstatsEdge
	callee cpu.Func
}

// pstatsEdges lists the caller edges that pass the filter, by cumulative time (absent
// last), then caller and callee positions.
func pstatsEdges(fs []cpu.PstatsFunction, function, direction string) []pstatsEdge {
	needle := strings.ToLower(function)
	match := func(f cpu.Func) bool { return needle == "" || strings.Contains(strings.ToLower(f.String()), needle) }
	var out []pstatsEdge
	for _, fn := range fs {
		for _, e := range fn.Callers {
			if cpu.KeepEdge(match(e.Caller), match(fn.Func), direction) {
				out = append(out, pstatsEdge{e, fn.Func})
			}
		}
	}
	cum := func(e pstatsEdge) float64 {
		if e.CumSeconds == nil {
			return -1
		}
		return *e.CumSeconds
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if ca, cb := cum(a), cum(b); ca != cb {
			return ca > cb
		}
		if a.Caller.File != b.Caller.File {
			return a.Caller.File < b.Caller.File
		}
		if a.Caller.Line != b.Caller.Line {
			return a.Caller.Line < b.Caller.Line
		}
		if a.callee.File != b.callee.File {
			return a.callee.File < b.callee.File
		}
		if a.callee.Line != b.callee.Line {
			return a.callee.Line < b.callee.Line
		}
		if a.Caller.Function != b.Caller.Function {
			return a.Caller.Function < b.Caller.Function
		}
		return a.callee.Function < b.callee.Function
	})
	return out
}
