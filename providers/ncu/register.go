// Package ncu reads Nsight Compute evidence: ncu's CSV exports (the details and raw
// pages) natively, and native .ncu-rep reports through the installed ncu (--import
// --csv), bound by the ncu executable's digest. It also registers the nsight-compute
// capture provider, which profiles a workload's kernel launches with ncu.
package ncu

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/prepare"
	"github.com/flameox/flameox/providers"
)

// Register adds inspect_gpu_kernel_metrics, the detectors of the nsight-compute and
// nsight-compute-csv formats, the nsight-compute capture provider and its record.
func Register(r *providers.Registry) {
	r.Analyzer(providers.Analyze(gen.OperationNameInspectGPUKernelMetrics, inspect))
	for _, d := range detectors {
		r.Detector(d)
	}
	// A report is read through ncu, which expands it into every metric of every launch.
	r.Amplifying(gen.FormatNsightCompute)
	r.Collector(collector)
	r.Tool(ncuTool)
}

var reportMagic = []byte("NVR\x00")

var detectors = []providers.Detector{
	{Format: gen.FormatNsightCompute, Suffixes: []string{".ncu-rep", ".ncu-repz"}, Match: func(_ string, head []byte) bool {
		return bytes.HasPrefix(head, reportMagic)
	}},
	{Format: gen.FormatNsightComputeCSV, Container: gen.FormatCSV, Match: func(_ string, head []byte) bool { return IsCSVHead(head) }},
}

func inspect(ctx context.Context, req *providers.Request[gen.KernelMetricFields]) (*providers.Analysis, error) {
	in, f := req.Inputs[0], req.Fields
	if err := checkFields(f); err != nil {
		return nil, err
	}
	r := newReport()
	a := &providers.Analysis{Provider: gen.Provider{ID: "nsight-compute-csv", Version: "native-1"}}
	if in.Format == gen.FormatNsightCompute {
		exe, err := convert(ctx, in, req.Limits, r)
		if err != nil {
			return nil, err
		}
		a.Provider = gen.Provider{ID: "nsight-compute", Version: "sha256:" + exe.SHA256}
		a.Implementation = map[string]string{"ncu": exe.SHA256}
	} else {
		fh, err := providers.OpenBounded(ctx, in, req.Limits.MaxInputBytes)
		if err != nil {
			return nil, err
		}
		err = decodePage(ctx, fh, in.Index, keepAll, r)
		fh.Close()
		if err != nil {
			return nil, err
		}
	}
	a.Metrics = r.figures()
	if r.rows() == 0 {
		a.Limitations = append(a.Limitations, "no_kernel_metrics_observed: the report holds no measurement or rule result.")
	}
	keep := launchIDs(f.LaunchID)
	if f.View == "metrics" {
		idx := r.selectEntries(f, keep)
		a.Rows = providers.Project(len(idx), func(i int) gen.GpuKernelMetricRow { return r.row(idx[i]) })
		if filtered(f) {
			a.Metrics["filter_excluded_count"] = int64(len(r.entries) - len(idx))
			if int64(len(r.entries)) < r.rows() {
				a.Limitations = append(a.Limitations, fmt.Sprintf("The filters were applied to the first %d rows of the report, which holds %d.", len(r.entries), r.rows()))
			}
			if len(idx) == 0 && r.rows() > 0 {
				a.Limitations = append(a.Limitations, "no_rows_match_filters: no measurement or rule result passes launch_id, section, metric_contains and rules_only; widen or omit them.")
			}
		}
		return a, nil
	}
	var idx []int
	for i := range r.launches {
		if keep == nil || keep[r.launches[i].id] {
			idx = append(idx, i)
		}
	}
	if keep != nil {
		a.Metrics["filter_excluded_count"] = int64(len(r.launches) - len(idx))
		if len(idx) == 0 && len(r.launches) > 0 {
			a.Limitations = append(a.Limitations, "no_rows_match_filters: no launch of the report has the launch_id asked for; omit launch_id for every launch (launch_count says how many there are).")
		}
	}
	a.Rows = providers.Project(len(idx), func(i int) launchRow { return r.launchRow(idx[i]) })
	return a, nil
}

// filtered reports whether the metrics view's rows are filtered.
func filtered(f *gen.KernelMetricFields) bool {
	return len(f.LaunchID) > 0 || len(f.Section) > 0 || f.MetricContains != nil || f.RulesOnly != nil && *f.RulesOnly
}

// checkFields refuses the metrics view's filters with the launches view.
func checkFields(f *gen.KernelMetricFields) error {
	if f.View == "metrics" {
		return nil
	}
	for _, c := range []struct {
		name string
		set  bool
	}{{"section", len(f.Section) > 0}, {"metric_contains", f.MetricContains != nil}, {"rules_only", f.RulesOnly != nil}} {
		if c.set {
			return &providers.FieldError{Field: []any{"view"}, Accepted: []string{"metrics"},
				Message: fmt.Sprintf(`%s filters the rows of view "metrics": add "view": "metrics", or omit %s for one row per launch`, c.name, c.name),
				Details: map[string]any{"option": c.name}}
		}
	}
	return nil
}

// selectEntries is the kept rows the metrics view's filters pass, in the report's order.
func (r *report) selectEntries(f *gen.KernelMetricFields, keep map[int64]bool) []int {
	idx := make([]int, 0, len(r.entries))
	rulesOnly := f.RulesOnly != nil && *f.RulesOnly
	for i := range r.entries {
		e := &r.entries[i]
		switch {
		case keep != nil && !keep[r.launches[e.launch].id]:
		case len(f.Section) > 0 && !slices.Contains(f.Section, e.section):
		case rulesOnly && !e.observation:
		case f.MetricContains != nil && (e.observation || !strings.Contains(e.metric, *f.MetricContains)):
		default:
			idx = append(idx, i)
		}
	}
	return idx
}

func (r *report) figures() map[string]any {
	m := map[string]any{
		"range_count": nil, "launch_count": len(r.launches), "action_count": len(r.launches),
		"metric_count": r.metrics, "observation_count": r.observed,
		"metric_id_count": len(r.metricIDs), "section_count": len(r.sections),
	}
	for key, set := range map[string]map[string]struct{}{"metric_ids": r.metricIDs, "section_ids": r.sections} {
		ids := make([]string, 0, len(set))
		for s := range set {
			ids = append(ids, s)
		}
		slices.Sort(ids)
		if len(ids) > maxListedIDs {
			ids = ids[:maxListedIDs]
			m[key+"_truncated"] = true
		}
		m[key] = ids
	}
	return m
}

func (r *report) row(i int) gen.GpuKernelMetricRow {
	e := &r.entries[i]
	l := &r.launches[e.launch]
	row := gen.GpuKernelMetricRow{EvidenceKind: "measurement", LaunchID: l.id, Kernel: l.kernel,
		Device: providers.Nullable(l.device), Stream: providers.Nullable(l.stream),
		BlockSize: providers.Nullable(l.block), GridSize: providers.Nullable(l.grid), Section: providers.Nullable(e.section)}
	if e.observation {
		row.EvidenceKind = "observation"
		row.Rule, row.RuleType, row.Description = providers.Nullable(e.rule), providers.Nullable(e.ruleType), providers.Nullable(e.desc)
		row.EstimatedSpeedupType = providers.Nullable(e.speedupType)
		if e.hasSpeedup {
			s := e.speedup
			row.EstimatedSpeedup = &s
		}
		return row
	}
	row.Metric, row.Unit = providers.Nullable(e.metric), providers.Nullable(e.unit)
	row.Value = e.jsonValue()
	return row
}

// ncuTool is Nsight Compute's record: a host tool that reads reports and captures
// (decision 0068).
var ncuTool = prepare.Tool{ID: gen.PreparableProviderNsightCompute, Class: prepare.HostTool, Executables: []string{"ncu"}, Variable: "FLAMEOX_NCU",
	Install: map[string]string{
		"":       "Install NVIDIA Nsight Compute (with the CUDA Toolkit, or from developer.nvidia.com/nsight-compute) so that ncu is on PATH, or set FLAMEOX_NCU to it.",
		"debian": "Install NVIDIA Nsight Compute from NVIDIA's CUDA apt repository (apt-get install nsight-compute) so that ncu is on PATH, or set FLAMEOX_NCU to it.",
		"fedora": "Install NVIDIA Nsight Compute from NVIDIA's CUDA dnf repository (dnf install nsight-compute) so that ncu is on PATH, or set FLAMEOX_NCU to it.",
	},
	Note: "Profiling kernels may need access to GPU performance counters (NVreg_RestrictProfilingToAdminUsers=0 or root)."}

// bindNcu locates, resolves and hashes ncu.
func bindNcu() (*providers.Executable, error) {
	return providers.LocateAndBind(ncuTool, prepare.Need{Purpose: "to read .ncu-rep reports and to capture with the nsight-compute provider",
		Alternative: "export the report where ncu exists (ncu --import R --csv --page details > R.csv) and analyse the CSV"})
}

var collector = providers.Collect(providers.CollectorSpec[gen.NsightComputeProvider]{Kind: "nsight-compute", File: reportFile,
	Admit: func([]providers.Case) (*providers.Executable, error) { return bindNcu() },
	Command: func(o *gen.NsightComputeProvider, exe *providers.Executable, c providers.Case, dir string) []string {
		return command(o, exe, c, dir)
	}})

// reportFile is the captured report; ncu keeps an --export name that ends in .ncu-rep.
const reportFile = "report.ncu-rep"

func command(o *gen.NsightComputeProvider, exe *providers.Executable, c providers.Case, dir string) []string {
	argv := []string{exe.Path, "--export", filepath.Join(dir, reportFile), "--force-overwrite",
		"--replay-mode", o.ReplayMode, "--launch-skip", strconv.FormatInt(o.LaunchSkip, 10),
		"--launch-count", strconv.FormatInt(o.LaunchCount, 10)}
	for _, s := range o.Section {
		argv = append(argv, "--section", s)
	}
	argv = append(argv, c.Launch())
	return append(argv, c.Argv[1:]...)
}
