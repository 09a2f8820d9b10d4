package cpu

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/prepare"
	"github.com/flameox/flameox/internal/sourcefile"
	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/internal/sampled"
)

// Register adds rank_cpu_hotspots and inspect_cpu_callers, the perf, node-cpu-profile,
// cprofile, go-test and py-spy capture providers, the CPU profile format detectors and
// the records of perf and py-spy.
func Register(r *providers.Registry) {
	r.Analyzer(providers.Analyze(gen.OperationNameRankCPUHotspots, rankHotspots))
	r.Analyzer(providers.Analyze(gen.OperationNameInspectCPUCallers, inspectCallers))
	for _, c := range collectors {
		r.Collector(c)
	}
	for _, d := range detectors {
		r.Detector(d)
	}
	// perf.data is read through perf script, whose text is many times the file.
	r.Amplifying(gen.FormatPerfData)
	r.Tool(perfTool)
	r.Tool(pySpyTool)
}

var detectors = []providers.Detector{
	{Format: gen.FormatPerfData, Extension: ".data", Match: func(_ string, head []byte) bool { return bytes.HasPrefix(head, []byte("PERFILE2")) }},
	// A marshal dict starts with '{' (0xfb with its reference flag). cProfile and Go both
	// write .prof: a '{' there is pstats, anything else pprof.
	{Format: gen.FormatPstats, Suffixes: []string{".pstats"}, Match: func(name string, head []byte) bool {
		return len(head) > 0 && (head[0] == 0xfb || head[0] == '{' && strings.HasSuffix(name, ".prof"))
	}},
	// A gzip stream whose content is not text is a pprof profile.
	{Format: gen.FormatPprof, Suffixes: []string{".pprof", ".pb.gz", ".prof"}, Match: func(_ string, head []byte) bool {
		return sourcefile.IsGzip(head)
	}},
	{Format: gen.FormatPySpy, Suffixes: []string{".speedscope.json"}, Container: gen.FormatJSON, Match: func(_ string, head []byte) bool {
		return bytes.Contains(head, []byte("speedscope.app/file-format-schema"))
	}},
	{Format: gen.FormatCpuprofile, Suffixes: []string{".cpuprofile"}, Container: gen.FormatJSON, Match: func(_ string, head []byte) bool {
		return bytes.Contains(head, []byte(`"callFrame"`)) && bytes.Contains(head, []byte(`"nodes"`))
	}},
	{Format: gen.FormatPerf, Suffixes: []string{".folded", ".collapsed"}, Container: gen.FormatText},
}

// maxJSONProfileBytes bounds JSON profiles, which are decoded whole: Speedscope as
// upstream, V8 CPU profiles likewise.
const maxJSONProfileBytes = 64 << 20

// decoded is one decoded CPU source.
type decoded struct {
	pstats   *pstatsTable
	sampled  *sampled.Sampled
	provider gen.Provider
	metrics  map[string]any
	// implementation names an external decoder executable bound into the request.
	implementation map[string]string
	// limitations say what the input itself lacks (an empty profile).
	limitations []string
}

// emptyProfile is the limitation of a sampled profile without a sample (issue 21, item
// 9): a complete result with no rows, said explicitly, as for an empty pstats table.
const emptyProfile = "The profile holds no samples (an empty file, or a run shorter than the sampling interval): there is nothing to rank; profile a longer run or raise the sampling rate."

// fieldChecks refuses metric for non-pstats and sample_type for non-pprof sources.
func fieldChecks(in providers.Input, metric, sampleType *string) error {
	only := func(field string, accepted []string, f gen.Format, why string) error {
		return &providers.FieldError{Field: []any{field}, Accepted: accepted,
			Message: fmt.Sprintf("%s applies to %s sources only; source %d is %s%s", field, f, in.Index, in.Format, why),
			Details: map[string]any{"option": field, "accepted_formats": []string{string(f)}, "source_index": in.Index}}
	}
	if metric != nil {
		pstats := in.Format == gen.FormatPstats
		if sampled := *metric == "self_weight" || *metric == "inclusive_weight"; sampled == pstats {
			if pstats {
				return &providers.FieldError{Field: []any{"metric"}, Accepted: pstatsMetrics,
					Message: fmt.Sprintf("metric %s ranks sampled profiles; source %d is pstats, ranked by %s", *metric, in.Index, strings.Join(pstatsMetrics, ", ")),
					Details: map[string]any{"option": "metric", "source_index": in.Index}}
			}
			return &providers.FieldError{Field: []any{"metric"}, Accepted: sampledMetricNames,
				Message: fmt.Sprintf("metric %s applies to pstats sources only; source %d is %s, ranked by self_weight or inclusive_weight", *metric, in.Index, in.Format),
				Details: map[string]any{"option": "metric", "source_index": in.Index}}
		}
	}
	if sampleType != nil && in.Format != gen.FormatPprof {
		return only("sample_type", []string{string(gen.FormatPprof)}, gen.FormatPprof, "")
	}
	return nil
}

// The ranking metrics of pstats and of sampled profiles.
var (
	pstatsMetrics      = []string{"self_time_seconds", "cumulative_time_seconds", "total_calls", "primitive_calls"}
	sampledMetricNames = []string{"self_weight", "inclusive_weight"}
)

// decode decodes the single CPU source.
func decode(ctx context.Context, in providers.Input, limits gen.EffectiveLimits, o sampled.Options) (*decoded, error) {
	p := &decoded{metrics: map[string]any{}}
	switch in.Format {
	case gen.FormatPerfData:
		return decodePerfData(ctx, in, limits, p, o)
	}
	// Every format is read through one bound on its decompressed bytes and the request's
	// context; JSON profiles, decoded whole, have the smaller bound.
	bound := limits.MaxInputBytes
	if in.Format == gen.FormatPySpy || in.Format == gen.FormatCpuprofile {
		if in.Size > maxJSONProfileBytes {
			return nil, &providers.LimitError{Message: fmt.Sprintf("the %s profile is %d bytes; JSON profiles are read up to %d bytes", in.Format, in.Size, maxJSONProfileBytes),
				Limit: maxJSONProfileBytes, Unit: "bytes", Details: map[string]any{"size_bytes": in.Size}}
		}
		bound = min(bound, maxJSONProfileBytes)
	}
	f, err := providers.OpenBounded(ctx, in, bound)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	switch in.Format {
	case gen.FormatPstats:
		p.provider.ID = "pstats"
		p.pstats, err = decodePstatsTable(f, o.Edges)
	case gen.FormatPySpy:
		p.provider.ID = "speedscope"
		var profiles int
		p.sampled, profiles, err = DecodeSpeedscope(f, o)
		p.metrics["profile_count"] = profiles
	case gen.FormatCpuprofile:
		p.provider.ID = "v8-cpuprofile"
		p.sampled, err = DecodeCPUProfile(f, o)
	case gen.FormatPerf:
		p.provider.ID = "collapsed-stacks"
		p.sampled, err = DecodeCollapsed(f, o)
	case gen.FormatPprof:
		p.provider.ID = "pprof"
		var info sampled.PprofInfo
		p.sampled, info, err = sampled.DecodePprofStream(f, func() (io.ReadCloser, error) {
			return providers.OpenBounded(ctx, in, bound)
		}, o)
		p.metrics["sample_type"], p.metrics["sample_types"] = info.SampleType, info.SampleTypes
	}
	if err != nil {
		return nil, err
	}
	if p.sampled != nil && p.sampled.Samples == 0 {
		p.limitations = append(p.limitations, emptyProfile)
	}
	return p, nil
}

// sampledMetrics are the operation-level figures of a sampled profile.
func sampledMetrics(s *sampled.Sampled, m map[string]any) map[string]any {
	m["frame_count"] = len(s.Frames)
	m["sample_count"] = s.Samples
	m["weight_unit"] = s.Unit
	m["total_weight"] = s.TotalWeight * s.Scale
	m["unresolved_sample_count"] = s.Unresolved
	return m
}

// analysis resolves the format-specific fields and decodes the single source.
func analysis(ctx context.Context, in []providers.Input, limits gen.EffectiveLimits, metric, sampleType *string, paths *pathFilter, edges bool) (*decoded, error) {
	if err := fieldChecks(in[0], metric, sampleType); err != nil {
		return nil, err
	}
	if err := paths.check(in[0]); err != nil {
		return nil, err
	}
	o := sampled.Options{Edges: edges}
	if sampleType != nil {
		o.SampleType = *sampleType
	}
	return decode(ctx, in[0], limits, o)
}

// rankHotspots is rank_cpu_hotspots: functions (pstats) or frames (sampled formats) by
// the chosen metric, those outside the path filters left out after the whole profile's
// figures are taken.
func rankHotspots(ctx context.Context, req *providers.Request[gen.CpuHotspotFields]) (*providers.Analysis, error) {
	paths := newPathFilter(req.Fields.IncludePaths, req.Fields.ExcludePaths)
	p, err := analysis(ctx, req.Inputs, req.Limits, req.Fields.Metric, req.Fields.SampleType, paths, false)
	if err != nil {
		return nil, err
	}
	a := &providers.Analysis{Provider: p.provider, Implementation: p.implementation, Limitations: p.limitations}
	if p.pstats == nil {
		a.Metrics = sampledMetrics(p.sampled, p.metrics)
		metric := "self_weight"
		if req.Fields.Metric != nil {
			metric = *req.Fields.Metric
		}
		a.Metrics["metric"] = metric
		unit := p.sampled.Unit
		s := p.sampled
		order := s.HotspotOrder(metric == "inclusive_weight")
		listed := keep(order, func(i int32) bool { return paths.pass(s.Frames[i].File) })
		paths.figures(a.Metrics, len(order)-len(listed))
		a.Limitations = append(a.Limitations, paths.notes(len(listed), len(order)-len(listed), "frames")...)
		a.Rows = providers.ProjectSlice(listed, func(i int32) gen.CpuHotspotSampledRow {
			h := s.Hotspot(int(i))
			return gen.CpuHotspotSampledRow{Function: h.Function, File: providers.Nullable(h.File), Line: providers.Nullable(h.Line),
				Column: providers.Nullable(h.Column), SelfWeight: h.SelfWeight, InclusiveWeight: h.InclusiveWeight,
				SelfSamples: h.SelfSamples, Unit: unit}
		})
		return a, nil
	}
	metric := "self_time_seconds"
	if req.Fields.Metric != nil {
		metric = *req.Fields.Metric
	}
	t := p.pstats
	order := t.rank(metric)
	var total float64
	for _, i := range order {
		total += t.funcs[i].tt
	}
	a.Metrics = map[string]any{"function_count": len(order), "metric": metric, "total_self_time_seconds": total}
	listed := keep(order, func(i int32) bool { return paths.pass(t.strs[t.funcs[i].file]) })
	paths.figures(a.Metrics, len(order)-len(listed))
	a.Limitations = append(a.Limitations, paths.notes(len(listed), len(order)-len(listed), "functions")...)
	a.Rows = providers.ProjectSlice(listed, func(i int32) gen.CpuHotspotPstatsRow {
		x := &t.funcs[i]
		return gen.CpuHotspotPstatsRow{Function: t.strs[x.name], File: t.strs[x.file], Line: x.line, PrimitiveCalls: x.cc,
			TotalCalls: x.nc, SelfTimeSeconds: x.tt, CumulativeTimeSeconds: x.ct}
	})
	return a, nil
}

// inspectCallers is inspect_cpu_callers: the caller edges around the functions matching
// function, in direction, whose caller and callee both pass the path filters.
func inspectCallers(ctx context.Context, req *providers.Request[gen.CpuCallerFields]) (*providers.Analysis, error) {
	paths := newPathFilter(req.Fields.IncludePaths, req.Fields.ExcludePaths)
	p, err := analysis(ctx, req.Inputs, req.Limits, nil, req.Fields.SampleType, paths, true)
	if err != nil {
		return nil, err
	}
	function := ""
	if req.Fields.Function != nil {
		function = *req.Fields.Function
	}
	direction := req.Fields.Direction
	a := &providers.Analysis{Provider: p.provider, Implementation: p.implementation, Limitations: p.limitations}
	matching, excluded := 0, 0
	if t := p.pstats; t != nil {
		all := t.callerEdges(function, direction)
		edges := keep(all, func(e pstatsEdge) bool {
			return paths.pass(t.strs[t.callers[e.caller].file]) && paths.pass(t.strs[t.funcs[e.callee].file])
		})
		matching, excluded = len(edges), len(all)-len(edges)
		a.Metrics = map[string]any{"function_count": len(t.funcs), "edge_count": t.edges, "matching_edge_count": len(edges)}
		a.Rows = providers.ProjectSlice(edges, func(e pstatsEdge) gen.CpuCallerPstatsRow {
			c, callee := &t.callers[e.caller], &t.funcs[e.callee]
			row := gen.CpuCallerPstatsRow{CallerFunction: t.strs[c.name], CallerFile: t.strs[c.file], CallerLine: c.line,
				CalleeFunction: t.strs[callee.name], CalleeFile: t.strs[callee.file], CalleeLine: callee.line, TotalCalls: c.nc}
			if !c.bare {
				cc, tt, ct := c.cc, c.tt, c.ct
				row.PrimitiveCalls, row.SelfTimeSeconds, row.CumulativeTimeSeconds = &cc, &tt, &ct
			}
			return row
		})
	} else {
		all := p.sampled.CallerEdges(function, direction)
		edges := keep(all, func(e sampled.EdgeRow) bool { return paths.pass(e.Caller.File) && paths.pass(e.Callee.File) })
		matching, excluded = len(edges), len(all)-len(edges)
		a.Metrics = sampledMetrics(p.sampled, p.metrics)
		a.Metrics["edge_count"], a.Metrics["matching_edge_count"] = len(p.sampled.Edges), len(edges)
		unit := p.sampled.Unit
		a.Rows = providers.ProjectSlice(edges, func(e sampled.EdgeRow) gen.CpuCallerSampledRow {
			return gen.CpuCallerSampledRow{CallerFunction: e.Caller.Function, CallerFile: providers.Nullable(e.Caller.File),
				CallerLine: providers.Nullable(e.Caller.Line), CalleeFunction: e.Callee.Function, CalleeFile: providers.Nullable(e.Callee.File),
				CalleeLine: providers.Nullable(e.Callee.Line), SampleCount: e.Samples, Weight: e.Weight, Unit: unit}
		})
	}
	var filter any
	if function != "" {
		filter = function
	}
	a.Metrics["function_filter"], a.Metrics["direction"] = filter, direction
	paths.figures(a.Metrics, excluded)
	a.Limitations = append(a.Limitations, paths.notes(matching, excluded, "caller edges")...)
	if matching == 0 && excluded == 0 {
		a.Limitations = append(a.Limitations, "No caller edge matches the request.")
	}
	return a, nil
}

// keep is the elements of s that pass, in order; s itself when all do.
func keep[E any](s []E, pass func(E) bool) []E {
	for i, e := range s {
		if !pass(e) {
			out := append(make([]E, 0, len(s)-1), s[:i]...)
			for _, e := range s[i+1:] {
				if pass(e) {
					out = append(out, e)
				}
			}
			return out
		}
	}
	return s
}

// pySpyVersion is the pinned py-spy release, the one prepare_providers installs.
const pySpyVersion = prepare.PySpyVersion

// pySpyTool is py-spy's record: a collector Flameox installs (decision 0068).
var pySpyTool = prepare.Tool{ID: gen.PreparableProviderPySpy, Class: prepare.Managed, Executables: []string{"py-spy"}, Variable: "FLAMEOX_PY_SPY",
	Note: "Flameox installs py-spy " + prepare.PySpyVersion + " with python3 -m pip or uv into its own tools directory."}

// pySpyNeed is what the py-spy provider needs py-spy for.
var pySpyNeed = prepare.Need{Purpose: "to capture with the py-spy provider, which runs py-spy " + pySpyVersion}

// pySpyUnavailable is py-spy's unavailable state: missing when why is "", else why.
func pySpyUnavailable(why string) *providers.UnavailableError {
	n := pySpyNeed
	n.Why = why
	e := providers.Unavailable(pySpyTool, n)
	e.Details = map[string]any{"pinned_version": pySpyVersion}
	return e
}

// admitPySpy binds the py-spy that wraps the workload: FLAMEOX_PY_SPY when the operator
// set it, else the collector prepare_providers bound in this session (its digest
// re-checked), else py-spy on PATH reporting the pinned version. Anything else is the
// retryable state that prepare_providers resolves, except a wrong FLAMEOX_PY_SPY, which
// only the operator can change.
func admitPySpy(_ []providers.Case, prepared *providers.Executable) (*providers.Executable, error) {
	exe, explicit := os.Getenv(pySpyTool.Variable), true
	switch {
	case exe != "":
	case prepared != nil:
		b, err := providers.Bind(prepared.Path, func() error { return pySpyUnavailable("the prepared py-spy is gone") })
		if err != nil {
			return nil, err
		}
		if b.SHA256 != prepared.SHA256 {
			e := pySpyUnavailable("the prepared py-spy changed since it was prepared (its SHA-256 differs)")
			e.Details["reason"] = "binding_changed"
			return nil, e
		}
		return b, nil
	default:
		p, ok := providers.Locate(pySpyTool)
		if !ok {
			return nil, pySpyUnavailable("")
		}
		exe, explicit = p, false
	}
	b, err := providers.Bind(exe, func() error {
		e := pySpyUnavailable("the py-spy executable cannot be read")
		e.Preparable = !explicit
		return e
	})
	if err != nil {
		return nil, err
	}
	if v := providers.VersionOf(b.Path); v != pySpyVersion {
		e := pySpyUnavailable("py-spy reports version " + strconv.Quote(v) + ", not the pinned " + pySpyVersion)
		e.Details["found_version"] = v
		if explicit {
			e.Preparable = false
			e.Remediation = pySpyTool.Variable + " names a py-spy that is not " + pySpyVersion + ": point it at py-spy " + pySpyVersion + ", or unset it and call prepare_providers with provider_ids [\"py-spy\"]; then retry the same call."
		}
		return nil, e
	}
	return b, nil
}

// perfTool is perf's record: a host tool that reads perf.data and captures (decision 0068).
var perfTool = prepare.Tool{ID: gen.PreparableProviderPerf, Class: prepare.HostTool, Executables: []string{"perf"}, Variable: "FLAMEOX_PERF",
	Install: map[string]string{
		"":       "perf is part of Linux (tools/perf): install your distribution's perf package so that perf is on PATH, or set FLAMEOX_PERF to it.",
		"debian": "apt-get install linux-perf, so that perf is on PATH, or set FLAMEOX_PERF to it.",
		"ubuntu": "apt-get install linux-tools-common linux-tools-$(uname -r), so that perf is on PATH, or set FLAMEOX_PERF to it.",
		"fedora": "dnf install perf, so that perf is on PATH, or set FLAMEOX_PERF to it.",
		"arch":   "pacman -S perf, so that perf is on PATH, or set FLAMEOX_PERF to it.",
		"alpine": "apk add perf, so that perf is on PATH, or set FLAMEOX_PERF to it.",
		"suse":   "zypper install perf, so that perf is on PATH, or set FLAMEOX_PERF to it.",
	},
	Unsupported: map[string]string{
		"darwin": "perf runs only on Linux; use the py-spy, cprofile, node-cpu-profile or go-test providers here.",
	},
	Note: "Sampling other processes may need kernel.perf_event_paranoid <= 2."}

// bindPerf locates, resolves and hashes perf.
func bindPerf() (*providers.Executable, error) {
	return providers.LocateAndBind(perfTool, prepare.Need{Purpose: "to read perf.data and to capture with the perf provider"})
}

var collectors = []providers.Collector{
	providers.Collect(providers.CollectorSpec[gen.PerfProvider]{Kind: "perf", File: "perf.data",
		Admit: func([]providers.Case) (*providers.Executable, error) { return bindPerf() },
		Command: func(o *gen.PerfProvider, exe *providers.Executable, c providers.Case, dir string) []string {
			argv := []string{exe.Path, "record", "--freq", strconv.FormatInt(o.Frequency, 10), "--call-graph", o.CallGraph,
				"--output", filepath.Join(dir, "perf.data"), "--", c.Launch()}
			return append(argv, c.Argv[1:]...)
		}}),
	providers.Collect(providers.CollectorSpec[gen.NodeCpuProfileProvider]{Kind: "node-cpu-profile", File: "profile.cpuprofile",
		Admit: func(cases []providers.Case) (*providers.Executable, error) {
			return nil, providers.RequireArgv0(cases, "node-cpu-profile", "a Node.js interpreter (node)", func(base string) bool {
				return base == "node" || base == "nodejs"
			})
		},
		Command: func(_ *gen.NodeCpuProfileProvider, _ *providers.Executable, c providers.Case, dir string) []string {
			argv := []string{c.Argv[0], "--cpu-prof", "--cpu-prof-dir=" + dir, "--cpu-prof-name=profile.cpuprofile"}
			return append(argv, c.Argv[1:]...)
		}}),
	providers.Collect(providers.CollectorSpec[gen.CProfileProvider]{Kind: "cprofile", File: "profile.pstats",
		Admit: func(cases []providers.Case) (*providers.Executable, error) {
			return nil, providers.RequireArgv0(cases, "cprofile", "a Python interpreter (python, python3, python3.12, ...)", func(base string) bool {
				return strings.HasPrefix(base, "python")
			})
		},
		Command: func(_ *gen.CProfileProvider, _ *providers.Executable, c providers.Case, dir string) []string {
			argv := []string{c.Argv[0], "-m", "cProfile", "-o", filepath.Join(dir, "profile.pstats")}
			return append(argv, c.Argv[1:]...)
		}}),
	providers.Collect(providers.CollectorSpec[gen.GoTestProvider]{Kind: "go-test", File: "profile.pprof",
		Admit: func(cases []providers.Case) (*providers.Executable, error) {
			for _, c := range cases {
				if filepath.Base(c.Argv[0]) != "go" || len(c.Argv) < 2 || c.Argv[1] != "test" {
					return nil, &providers.FieldError{Field: append(append([]any{}, c.ArgvField...), 1), Accepted: []string{"go test ..."},
						Message: "the go-test provider runs `go test PACKAGE [flags]`; argv must start with go test"}
				}
			}
			return nil, nil
		},
		Command: goTestCommand,
		// The go command needs HOME for its build and module caches.
		Env: func(_ *gen.GoTestProvider, _ string) map[string]string {
			if h := os.Getenv("HOME"); h != "" {
				return map[string]string{"HOME": h}
			}
			return nil
		}}),
	providers.Collect(providers.CollectorSpec[gen.PySpyProvider]{Kind: "py-spy", File: "profile.speedscope.json",
		AdmitPrepared: admitPySpy,
		Command: func(o *gen.PySpyProvider, exe *providers.Executable, c providers.Case, dir string) []string {
			argv := []string{exe.Path, "record", "--format", "speedscope", "--output", filepath.Join(dir, "profile.speedscope.json"),
				"--rate", strconv.FormatInt(o.Rate, 10)}
			for _, f := range []struct {
				flag string
				on   bool
			}{{"--gil", o.Gil}, {"--native", o.Native}, {"--subprocesses", o.Subprocesses}} {
				if f.on {
					argv = append(argv, f.flag)
				}
			}
			argv = append(argv, "--", c.Launch())
			return append(argv, c.Argv[1:]...)
		}}),
}

// goTestCommand is go test with a CPU or a memory profile into dir; the test binary goes
// to scratch, not the working directory.
func goTestCommand(o *gen.GoTestProvider, _ *providers.Executable, c providers.Case, dir string) []string {
	profile := filepath.Join(dir, "profile.pprof")
	argv := []string{c.Argv[0], "test", "-cpuprofile", profile}
	if o.Profile == "memory" {
		argv = []string{c.Argv[0], "test", "-memprofile", profile}
		if o.Memprofilerate != nil {
			argv = append(argv, "-memprofilerate="+strconv.FormatInt(*o.Memprofilerate, 10))
		}
	}
	argv = append(argv, "-o", filepath.Join(dir, "test.bin"))
	return append(argv, c.Argv[2:]...)
}
