package ncu

import (
	"encoding/json"
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/testtool"
	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/providerstest"
)

// inspectWith inspects the Nsight Compute CSV export at path with f, defaults applied.
func inspectWith(t *testing.T, path string, f gen.KernelMetricFields) *providers.Analysis {
	t.Helper()
	f.ApplyDefaults()
	a, err := providerstest.Analyze(t, inspect, &f, providerstest.Input(t, path, gen.FormatNsightComputeCSV))
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestLaunchesAgainstPython compares the default view, one row per launch, with
// testdata/launches.py's reading (Python's csv module) of the corpus exports: the full
// set of the torch matmul+gelu run, saxpy's details and raw pages, and numba's.
func TestLaunchesAgainstPython(t *testing.T) {
	py := testtool.Require(t, "python3")
	for _, name := range []string{"h200__ncu-torch-matmul-gelu-details.csv", "h200__ncu-saxpy-details.csv", "h200__ncu-saxpy-raw.csv", "nsightful__ncu-copy_blocked.csv"} {
		t.Run(name, func(t *testing.T) {
			path := testtool.Corpus(t, name)
			out, err := exec.Command(py, "testdata/launches.py", path).Output()
			if err != nil {
				var ee *exec.ExitError
				if errors.As(err, &ee) {
					t.Fatalf("launches.py: %v\n%s", err, ee.Stderr)
				}
				t.Fatal(err)
			}
			var want []any
			if err := json.Unmarshal(out, &want); err != nil {
				t.Fatal(err)
			}
			got := providerstest.Decode[any](t, providerstest.Rows(t, inspectWith(t, path, gen.KernelMetricFields{}).Rows, 1000))
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("launch rows (-python +flameox):\n%s", diff)
			}
		})
	}
}

// TestLaunchViewAnswersInLittleText is the agent's question "what limits the GEMM": the
// default view of the full-set export gives two launches in under 10 KB of rows, with
// their rules largest estimated speedup first and each rule's fields in catalog order.
func TestLaunchViewAnswersInLittleText(t *testing.T) {
	path := testtool.Corpus(t, "h200__ncu-torch-matmul-gelu-details.csv")
	rows := providerstest.Rows(t, inspectWith(t, path, gen.KernelMetricFields{}).Rows, 2)
	rows = rows[:min(len(rows), 2)] // the first page
	size := 0
	for _, b := range rows {
		size += len(b)
	}
	if len(rows) != 2 || size >= 10<<10 {
		t.Fatalf("%d rows in %d bytes, want 2 under 10 KB", len(rows), size)
	}
	var gemm struct {
		Kernel string `json:"kernel"`
		Rules  []struct {
			Rule    string   `json:"rule"`
			Speedup *float64 `json:"estimated_speedup"`
		} `json:"rules"`
	}
	if err := json.Unmarshal(rows[1], &gemm); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(gemm.Kernel, "nvjet") || len(gemm.Rules) == 0 {
		t.Fatalf("launch 1: %+v", gemm)
	}
	for i := 1; i < len(gemm.Rules); i++ {
		a, b := gemm.Rules[i-1].Speedup, gemm.Rules[i].Speedup
		if b != nil && (a == nil || *a < *b) {
			t.Errorf("rules not by estimated speedup: %+v", gemm.Rules)
		}
	}
	if i := strings.Index(string(rows[1]), `"rules":[{"rule":`); i < 0 || !strings.Contains(string(rows[1]), `"rule_type":"OPT","section":`) {
		t.Errorf("a rule's fields are not in catalog order: %s", rows[1])
	}
}

// TestMetricViewFilters checks view metrics under each filter against the unfiltered
// rows filtered here, and that the metrics view's filters are refused with view launches.
func TestMetricViewFilters(t *testing.T) {
	path := testtool.Corpus(t, "h200__ncu-torch-matmul-gelu-details.csv")
	type row struct {
		Kind    string  `json:"evidence_kind"`
		Launch  int64   `json:"launch_id"`
		Section *string `json:"section"`
		Metric  *string `json:"metric"`
	}
	decode := func(a *providers.Analysis) []row {
		var out []row
		for _, b := range providerstest.Rows(t, a.Rows, 1000) {
			var r row
			if err := json.Unmarshal(b, &r); err != nil {
				t.Fatal(err)
			}
			out = append(out, r)
		}
		return out
	}
	all := decode(inspectWith(t, path, gen.KernelMetricFields{View: "metrics"}))
	yes := true
	occ := "Occupancy"
	for _, c := range []struct {
		name   string
		fields gen.KernelMetricFields
		keep   func(r row) bool
	}{
		{"launch", gen.KernelMetricFields{View: "metrics", LaunchID: []int64{1}}, func(r row) bool { return r.Launch == 1 }},
		{"section", gen.KernelMetricFields{View: "metrics", Section: []string{"Occupancy"}}, func(r row) bool { return r.Section != nil && *r.Section == occ }},
		{"metric", gen.KernelMetricFields{View: "metrics", MetricContains: ptr("Throughput")},
			func(r row) bool { return r.Metric != nil && strings.Contains(*r.Metric, "Throughput") }},
		{"rules only of launch 2", gen.KernelMetricFields{View: "metrics", RulesOnly: &yes, LaunchID: []int64{2}},
			func(r row) bool { return r.Kind == "observation" && r.Launch == 2 }},
	} {
		t.Run(c.name, func(t *testing.T) {
			var want []row
			for _, r := range all {
				if c.keep(r) {
					want = append(want, r)
				}
			}
			a := inspectWith(t, path, c.fields)
			got := decode(a)
			if len(want) == 0 || !cmp.Equal(want, got) {
				t.Errorf("filtered rows differ (-want +got):\n%s", cmp.Diff(want, got))
			}
			if a.Metrics["filter_excluded_count"] != int64(len(all)-len(got)) {
				t.Errorf("filter_excluded_count %v, want %d", a.Metrics["filter_excluded_count"], len(all)-len(got))
			}
		})
	}
	f := gen.KernelMetricFields{RulesOnly: &yes}
	f.ApplyDefaults()
	_, err := providerstest.Analyze(t, inspect, &f, providerstest.Input(t, path, gen.FormatNsightComputeCSV))
	var fe *providers.FieldError
	if !errors.As(err, &fe) || fe.Field[0] != "view" {
		t.Errorf("rules_only with view launches: %v, want a field error at view", err)
	}
}

func ptr[T any](v T) *T { return &v }
