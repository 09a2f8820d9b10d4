package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flameox/flameox/providers/all"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/failure"
	"github.com/flameox/flameox/internal/owner"
	"github.com/flameox/flameox/internal/testtool"
	"github.com/flameox/flameox/repository"
)

// The test binary doubles as a workload and as the analysis worker: FLAMEOX_RUNTIME_HELPER=hog
// allocates and touches 512 MiB and sleeps; started as a worker (WorkerVariable set) it
// serves the analysis, or misbehaves as FLAMEOX_RUNTIME_HELPER says (worker-hog,
// worker-hang, worker-crash, worker-threads) so that the parent's bounds are tested
// deterministically.
func TestMain(m *testing.M) {
	helper := os.Getenv("FLAMEOX_RUNTIME_HELPER")
	if helper == "hog" {
		testtool.Hog()
		os.Exit(0)
	}
	if os.Getenv(WorkerVariable) != "" {
		switch helper {
		case "worker-hog":
			testtool.Hog()
		case "worker-hang":
			time.Sleep(time.Hour)
		case "worker-crash":
			os.Stdout.WriteString(`{"result":`)
			os.Exit(2)
		case "worker-threads":
			// Every goroutine holds a thread of its own until the bound ends the process.
			boundWorkerThreads()
			for {
				go func() {
					goruntime.LockOSThread()
					select {}
				}()
				time.Sleep(100 * time.Microsecond)
			}
		}
	}
	if code, ok := ServeWorker(all.Registry); ok {
		os.Exit(code)
	}
	os.Exit(m.Run())
}

func newRuntime(t testing.TB, opts ...Option) *Runtime {
	t.Helper()
	opts = append([]Option{WithStore(repository.Location{Dir: filepath.Join(t.TempDir(), "store"), Source: repository.SourceExplicit})}, opts...)
	rt, err := New(all.Registry(), nil, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rt.Close)
	return rt
}

// capture calls capture_and_preview_artifact with args and returns the result or failure.
func capture(t *testing.T, rt *Runtime, args map[string]any) (*CaptureResult, *failure.Failure) {
	t.Helper()
	raw, _ := json.Marshal(args)
	res, f := rt.Call(context.Background(), "capture_and_preview_artifact", raw)
	if f != nil {
		return nil, f
	}
	return res.(*CaptureResult), nil
}

func target(dir string, argv ...string) map[string]any {
	return map[string]any{"argv": argv, "cwd": dir}
}

func direct() map[string]any { return map[string]any{"kind": "direct"} }

// pidsIn reads the pids a workload wrote one per line into file.
func pidsIn(t *testing.T, file string) []int {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, l := range strings.Fields(string(b)) {
		if n, err := strconv.Atoi(l); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// assertGone fails for each pid that still names a live process.
func assertGone(t *testing.T, pids []int) {
	t.Helper()
	if len(pids) == 0 {
		t.Fatal("the workload recorded no pids")
	}
	for _, pid := range pids {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			continue
		}
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(f) > 0 && f[0] != "Z" && f[0] != "X" {
			t.Errorf("process %d survived: %s", pid, b)
		}
	}
}

func TestCaptureNonZeroExitIsEvidence(t *testing.T) {
	rt := newRuntime(t)
	dir := t.TempDir()
	res, f := capture(t, rt, map[string]any{"target": target(dir, "sh", "-c", "echo hello; echo oops >&2; exit 3"), "provider": direct()})
	if f != nil {
		t.Fatal(f)
	}
	ex := res.Capture.Executions[0]
	if res.Status != "partial" || res.Capture.WorkloadStatus != "failed" || *ex.Returncode != 3 || *ex.WorkloadReturncode != 3 ||
		ex.Status != "failed" || *ex.FailureCode != "EXECUTION_FAILURE" || res.Capture.Outcome.FailedCount != 1 {
		t.Fatalf("capture = %+v", res.Capture)
	}
	rows := res.Blocks[1].(TableBlock).Rows
	if len(rows) != 2 || !strings.Contains(string(rows[0]), `"hello"`) || !strings.Contains(string(rows[1]), `"oops"`) {
		t.Errorf("rows = %s", rows)
	}
	if res.Inputs[0].Role != "capture-0001/stdout" || res.Inputs[1].Role != "capture-0001/stderr" {
		t.Errorf("roles = %v %v", res.Inputs[0].Role, res.Inputs[1].Role)
	}
	// The result leads with what happened: the failed execution and its stderr tail, and
	// a next action that preserves this run first, whose message says what to fix.
	wf := res.WorkloadFailure
	if wf == nil || wf.Code != "EXECUTION_FAILURE" || *wf.Returncode != 3 || wf.StderrTail != "oops\n" || wf.StderrSource != "capture-0001/stderr" {
		t.Errorf("workload_failure = %+v", wf)
	}
	na := res.NextAction.CallTool
	if na == nil || na.Tool != "preserve_evidence" || na.ThenRetry != nil || len(na.Arguments) != 1 || na.Arguments["analysis_id"] != res.AnalysisID ||
		!strings.Contains(na.Message, "exited 3") || !strings.Contains(na.Message, "target.argv") {
		t.Errorf("next_action = %+v", res.NextAction)
	}
	if fix := res.Fix(); fix == nil || fmt.Sprint(fix.FieldPath) != "[target argv]" || strings.Contains(fix.Message, res.AnalysisID) {
		t.Errorf("fix = %+v", fix)
	}
	// The analysis handle works with preserve_evidence and makes capture evidence.
	p, f := rt.Preserve(res.AnalysisID)
	if f != nil {
		t.Fatal(f)
	}
	view, f := rt.Inspect(p.EvidenceID)
	if f != nil {
		t.Fatal(f)
	}
	if view.Body.EvidenceKind != "capture" || view.Body.CaptureRequest["target"].(map[string]any)["argument_count"] != 3 {
		t.Errorf("projection = %+v", view.Body.CaptureRequest)
	}
	b, _ := json.Marshal(view)
	for _, leak := range []string{"echo hello", dir, "oops"} {
		if strings.Contains(string(b), leak) {
			t.Errorf("inspect_evidence leaks %q", leak)
		}
	}
}

func TestCaptureAdmissionRefusesBeforeRunning(t *testing.T) {
	rt := newRuntime(t)
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	run := []string{"sh", "-c", "touch " + marker}
	tests := []struct {
		name string
		args map[string]any
		code gen.FailureCode
		path []any
	}{
		{"missing executable", map[string]any{"target": target(dir, "no-such-program-flameox"), "provider": direct()},
			gen.FailureCodeInvalidInput, []any{"target", "argv", 0}},
		{"blocked variable", map[string]any{"target": map[string]any{"argv": run, "cwd": dir, "environment": map[string]any{"LD_PRELOAD": "x.so"}}, "provider": direct()},
			gen.FailureCodeInvalidInput, []any{"target", "environment", "LD_PRELOAD"}},
		{"credential variable", map[string]any{"target": map[string]any{"argv": run, "cwd": dir, "environment": map[string]any{"GITHUB_TOKEN": "x"}}, "provider": direct()},
			gen.FailureCodeInvalidInput, []any{"target", "environment", "GITHUB_TOKEN"}},
		{"missing cwd", map[string]any{"target": target(filepath.Join(dir, "nope"), run...), "provider": direct()},
			gen.FailureCodeInvalidInput, []any{"target", "cwd"}},
		{"relative cwd", map[string]any{"target": target("relative", run...), "provider": direct()},
			gen.FailureCodeInvalidInput, []any{"target", "cwd"}},
		// Catalog 4.4: "incompatible pair → UNSUPPORTED_FORMAT"; a kind that names no
		// provider is an invalid request.
		{"incompatible provider", map[string]any{"target": target(dir, run...), "provider": map[string]any{"kind": "perf"}},
			gen.FailureCodeUnsupportedFormat, []any{"provider", "kind"}},
		{"unknown provider", map[string]any{"target": target(dir, run...), "provider": map[string]any{"kind": "no-such-collector"}},
			gen.FailureCodeInvalidInput, []any{"provider", "kind"}},
		// The schema allows blocks 1-100 (seed); admission checks the sources: 2 cases x 9
		// blocks x 2 artifacts (direct) is 36, and 3 cases x 6 blocks x 2 is 36.
		{"blocks above the two-case fit", map[string]any{"target": target(dir, run...), "provider": direct(),
			"experiment": map[string]any{"cases": []any{map[string]any{"name": "a"}, map[string]any{"name": "b"}}, "blocks": 9, "seed": 1, "practical_threshold": 0}},
			gen.FailureCodeLimitExceeded, []any{"experiment", "blocks"}},
		{"blocks above the schema's 100", map[string]any{"target": target(dir, run...), "provider": direct(),
			"experiment": map[string]any{"cases": []any{map[string]any{"name": "a"}, map[string]any{"name": "b"}}, "blocks": 101, "seed": 1, "practical_threshold": 0}},
			gen.FailureCodeInvalidInput, []any{"experiment", "blocks"}},
		{"too many sources", map[string]any{"target": target(dir, run...), "provider": direct(),
			"experiment": map[string]any{"cases": []any{map[string]any{"name": "a"}, map[string]any{"name": "b"}, map[string]any{"name": "c"}}, "blocks": 6, "seed": 1, "practical_threshold": 0}},
			gen.FailureCodeLimitExceeded, []any{"experiment", "blocks"}},
		{"duplicate case", map[string]any{"target": target(dir, run...), "provider": direct(),
			"experiment": map[string]any{"cases": []any{map[string]any{"name": "a"}, map[string]any{"name": "a"}}, "blocks": 1, "seed": 1, "practical_threshold": 0}},
			gen.FailureCodeInvalidInput, []any{"experiment", "cases", 1, "name"}},
		{"shell string", map[string]any{"target": map[string]any{"argv": "echo hi", "cwd": dir}, "provider": direct()},
			gen.FailureCodeInvalidInput, []any{"target", "argv"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, f := capture(t, rt, tt.args)
			if f == nil || f.Code != tt.code {
				t.Fatalf("got %v, want %s", f, tt.code)
			}
			if b, _ := json.Marshal(f.FieldPath); string(b) != mustJSON(tt.path) {
				t.Errorf("field_path = %s, want %s", b, mustJSON(tt.path))
			}
			if _, err := os.Stat(marker); err == nil {
				t.Fatal("the workload ran although admission refused the request")
			}
			if strings.Contains(f.Message, dir) {
				t.Errorf("the message names a host path: %s", f.Message)
			}
		})
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestCaptureTimeoutLeavesNoProcess(t *testing.T) {
	rt := newRuntime(t)
	dir := t.TempDir()
	script := "sleep 300 & echo $! > pids; setsid sleep 301 & echo $! >> pids; (sleep 302 & echo $! >> pids; wait) & sleep 303"
	res, f := capture(t, rt, map[string]any{"target": map[string]any{"argv": []string{"sh", "-c", script}, "cwd": dir,
		"budget": map[string]any{"timeout_seconds": 0.5}}, "provider": direct()})
	if f != nil {
		t.Fatal(f)
	}
	ex := res.Capture.Executions[0]
	if ex.Limit == nil || ex.Limit.Kind != "timeout" || ex.Limit.Configured != 0.5 || ex.Limit.Unit != "seconds" || ex.Limit.Recovery == "" {
		t.Fatalf("limit = %+v", ex.Limit)
	}
	if *ex.FailureCode != "EXECUTION_TIMEOUT" || ex.Returncode != nil || ex.Containment.Termination != "terminated" || res.Capture.WorkloadStatus != "unknown" {
		t.Errorf("execution = %+v", ex)
	}
	assertGone(t, pidsIn(t, filepath.Join(dir, "pids")))
	preserveNext(t, res, "[target budget timeout_seconds]", "target.budget.timeout_seconds (0.5 s)")
}

// preserveNext checks the next action of an unpreserved partial capture with no failed
// analysis: preserve_evidence with its handle, whose message names the field to change
// (with the value used); Fix gives that field without the handle.
func preserveNext(t *testing.T, res *CaptureResult, field, says string) {
	t.Helper()
	a := res.NextAction.CallTool
	if a == nil || a.Tool != "preserve_evidence" || len(a.Arguments) != 1 || a.Arguments["analysis_id"] != res.AnalysisID ||
		a.ThenRetry != nil || !strings.Contains(a.Message, says) {
		t.Errorf("next_action = %+v", res.NextAction)
	}
	if fix := res.Fix(); fix == nil || fmt.Sprint(fix.FieldPath) != field || strings.Contains(fix.Message, res.AnalysisID) {
		t.Errorf("fix = %+v", fix)
	}
}

// TestCaptureDetachedDaemonDiesOnTimeout is issue 21 item 3's reproduction: a daemon
// detached with setsid by a subshell that exits at once used to outlive the timeout. The
// execution record names the containment that was in force.
func TestCaptureDetachedDaemonDiesOnTimeout(t *testing.T) {
	rt := newRuntime(t)
	dir := t.TempDir()
	res, f := capture(t, rt, map[string]any{"target": map[string]any{"argv": []string{"sh", "-c", "(setsid sleep 3002 & echo $! > pids); sleep 100"}, "cwd": dir,
		"budget": map[string]any{"timeout_seconds": 2}}, "provider": direct()})
	if f != nil {
		t.Fatal(f)
	}
	ex := res.Capture.Executions[0]
	if ex.Limit == nil || ex.Limit.Kind != "timeout" || ex.Containment.Mechanism == nil || (*ex.Containment.Mechanism != "cgroup" && *ex.Containment.Mechanism != "subreaper") {
		t.Fatalf("limit = %+v, containment = %+v", ex.Limit, ex.Containment)
	}
	pids := pidsIn(t, filepath.Join(dir, "pids"))
	if len(pids) != 1 {
		t.Fatalf("pids = %v", pids)
	}
	assertGone(t, pids)
}

func TestCaptureCancellationLeavesNoProcess(t *testing.T) {
	rt := newRuntime(t)
	dir := t.TempDir()
	raw, _ := json.Marshal(map[string]any{"target": target(dir, "sh", "-c", "sleep 300 & echo $! > pids; setsid sleep 301 & echo $! >> pids; sleep 302"), "provider": direct()})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(500*time.Millisecond, cancel)
	_, f := rt.Call(ctx, "capture_and_preview_artifact", raw)
	if f == nil || f.Code != gen.FailureCodeCancelled {
		t.Fatalf("got %v", f)
	}
	assertGone(t, pidsIn(t, filepath.Join(dir, "pids")))
}

func TestCaptureOutputFloodIsBounded(t *testing.T) {
	rt := newRuntime(t)
	res, f := capture(t, rt, map[string]any{"target": target(t.TempDir(), "yes", "flood"), "provider": direct(),
		"limits": map[string]any{"max_output_bytes": 1 << 20}})
	if f != nil {
		t.Fatal(f)
	}
	ex := res.Capture.Executions[0]
	if ex.Limit == nil || ex.Limit.Kind != "output_limit" || ex.OutputStreams.StdoutBytes != 1<<20 ||
		ex.OutputStreams.StdoutOmittedBytes <= 0 || ex.OutputStreams.StdoutComplete {
		t.Fatalf("execution = %+v %+v", ex.Limit, ex.OutputStreams)
	}
	if res.Inputs[0].SizeBytes != 1<<20 {
		t.Errorf("retained stdout = %d bytes", res.Inputs[0].SizeBytes)
	}
	preserveNext(t, res, "[limits max_output_bytes]", "limits.max_output_bytes (1048576 bytes)")
}

func TestCaptureMemoryBudget(t *testing.T) {
	rt := newRuntime(t)
	res, f := capture(t, rt, map[string]any{"target": map[string]any{"argv": []string{os.Args[0]}, "cwd": t.TempDir(),
		"environment": map[string]any{"FLAMEOX_RUNTIME_HELPER": "hog"},
		"budget":      map[string]any{"max_memory_bytes": 128 << 20, "timeout_seconds": 60}}, "provider": direct()})
	if f != nil {
		t.Fatal(f)
	}
	ex := res.Capture.Executions[0]
	if ex.Limit == nil || ex.Limit.Kind != "memory_limit_exceeded" || *ex.Limit.Observed <= 128<<20 || *ex.FailureCode != "LIMIT_EXCEEDED" {
		t.Fatalf("limit = %+v", ex.Limit)
	}
	preserveNext(t, res, "[target budget max_memory_bytes]", "target.budget.max_memory_bytes (134217728 bytes)")
}

func TestCaptureWritableGrowth(t *testing.T) {
	rt := newRuntime(t)
	res, f := capture(t, rt, map[string]any{"target": target(t.TempDir(), "sh", "-c", "head -c 3000000 /dev/zero > big; sleep 20"),
		"provider": direct(), "limits": map[string]any{"max_output_bytes": 1 << 20}})
	if f != nil {
		t.Fatal(f)
	}
	if l := res.Capture.Executions[0].Limit; l == nil || l.Kind != "writable_limit_exceeded" || *l.Observed < 3000000 {
		t.Fatalf("limit = %+v", l)
	}
	preserveNext(t, res, "[limits max_output_bytes]", "limits.max_output_bytes (1048576 bytes)")
}

// experiment runs a two-case experiment and returns its comparison row.
func experiment(t *testing.T, rt *Runtime, base, cand []string, extra map[string]any) (*CaptureResult, map[string]any) {
	t.Helper()
	e := map[string]any{"cases": []any{map[string]any{"name": "baseline", "argv": base}, map[string]any{"name": "candidate", "argv": cand}},
		"blocks": 5, "seed": 42, "practical_threshold": 50e6}
	for k, v := range extra {
		e[k] = v
	}
	res, f := capture(t, rt, map[string]any{"target": target(t.TempDir(), base...), "provider": direct(), "experiment": e})
	if f != nil {
		t.Fatal(f)
	}
	return res, experimentRow(t, res)
}

// experimentRow returns the first comparison of the experiment summary, which leads a
// capture result.
func experimentRow(t *testing.T, res *CaptureResult) map[string]any {
	t.Helper()
	summary := res.Blocks[0].(MetricsBlock).Values
	var rows []map[string]any
	b, _ := json.Marshal(summary["comparisons"])
	if err := json.Unmarshal(b, &rows); err != nil || len(rows) == 0 {
		t.Fatalf("experiment summary = %v", summary)
	}
	return rows[0]
}

// TestExperimentRunsPairedBlocks runs a real experiment: timings depend on the machine's
// load (a loaded machine can even reorder two cases), so only the shape is checked; the
// estimate and classification rules are checked exactly in TestExperimentComparisonRules.
func TestExperimentRunsPairedBlocks(t *testing.T) {
	rt := newRuntime(t)
	res, row := experiment(t, rt, []string{"sleep", "0.01"}, []string{"sleep", "0.3"}, nil)
	if _, ok := row["estimate"].(float64); !ok || row["paired_blocks"] != 5.0 || row["point_estimate_classification"] == nil {
		t.Errorf("experiment row: %v", row)
	}
	if row["method"] != "bootstrap.percentile.paired.median_difference.v1" || row["confidence_low"].(float64) > row["confidence_high"].(float64) {
		t.Errorf("interval: %v", row)
	}
	if res.Capture.Mode != "experiment" || len(res.Capture.Executions) != 10 {
		t.Errorf("capture = %+v", res.Capture)
	}
	// Each block runs both cases; sequences are 1..10 in run order.
	for i, e := range res.Capture.Executions {
		if e.Sequence != int64(i+1) || e.Block != int64(i/2+1) {
			t.Errorf("execution %d: sequence %d block %d", i, e.Sequence, e.Block)
		}
	}

	_, row = experiment(t, rt, []string{"true"}, []string{"true"}, map[string]any{"estimand": "mean_difference"})
	if row["estimand"] != "mean_difference" || row["paired_blocks"] != 5.0 {
		t.Errorf("identical cases: %v", row)
	}
}

// TestExperimentComparisonRules checks the estimate, the classification and the interval
// on deterministic paired differences.
func TestExperimentComparisonRules(t *testing.T) {
	e := &gen.Experiment{Blocks: 5, Seed: 9, Estimand: "median_difference", PracticalThreshold: 50}
	tests := []struct {
		name     string
		diffs    []float64
		estimand string
		class    string
		estimate float64
		method   string
	}{
		{"regressed", []float64{100, 120, 90, 300, 110}, "median_difference", "practically_regressed", 110, "bootstrap.percentile.paired.median_difference.v1"},
		{"improved", []float64{-100, -80, -90}, "median_difference", "practically_improved", -90, "bootstrap.percentile.paired.median_difference.v1"},
		{"within", []float64{10, -20, 5, 0}, "mean_difference", "within_threshold", -1.25, "bootstrap.percentile.paired.mean_difference.v1"},
		{"constant", []float64{70, 70, 70}, "median_difference", "practically_regressed", 70, "analytic.constant.median_difference.v1"},
		{"two blocks", []float64{70, 90}, "median_difference", "practically_regressed", 80, "descriptive.median_difference.v1"},
		{"no block", nil, "median_difference", "inconclusive", 0, "descriptive.median_difference.v1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e.Estimand = tt.estimand
			c := compare(e, "base", "cand", 1, tt.diffs)
			if c.PointEstimateClassification != tt.class || c.Method != tt.method || c.PairedBlocks != int64(len(tt.diffs)) ||
				c.ExcludedBlocks != 5-int64(len(tt.diffs)) {
				t.Fatalf("comparison = %+v", c)
			}
			if tt.diffs == nil {
				if c.Estimate != nil {
					t.Errorf("estimate %v without blocks", *c.Estimate)
				}
				return
			}
			if *c.Estimate != tt.estimate {
				t.Errorf("estimate = %v, want %v", *c.Estimate, tt.estimate)
			}
			if len(tt.diffs) >= 3 && (c.ConfidenceLow == nil || *c.ConfidenceLow > *c.Estimate || *c.ConfidenceHigh < *c.Estimate) {
				t.Errorf("interval %v..%v does not hold the estimate %v", c.ConfidenceLow, c.ConfidenceHigh, *c.Estimate)
			}
			a, _ := json.Marshal(compare(e, "base", "cand", 1, tt.diffs))
			b, _ := json.Marshal(c)
			if string(a) != string(b) {
				t.Errorf("the same seed gave another interval")
			}
		})
	}
}

func TestExperimentOracleExcludesBlocks(t *testing.T) {
	rt := newRuntime(t)
	res, row := experiment(t, rt, []string{"echo", "ok"}, []string{"echo", "bad"},
		map[string]any{"semantic_oracle": []string{"sh", "-c", `grep -q ok "$FLAMEOX_CAPTURE_STDOUT"`}})
	if row["paired_blocks"] != 0.0 || row["excluded_blocks"] != 5.0 || row["point_estimate_classification"] != "inconclusive" {
		t.Errorf("row = %v", row)
	}
	var failed, passed int
	for _, e := range res.Capture.Executions {
		switch e.SemanticOracle.Status {
		case "failed":
			failed++
			if e.Case != "candidate" || *e.FailureCode != "SEMANTIC_ORACLE_FAILED" {
				t.Errorf("execution %+v", e)
			}
		case "passed":
			passed++
		}
	}
	if failed != 5 || passed != 5 || res.Status != "partial" {
		t.Errorf("failed %d passed %d status %s", failed, passed, res.Status)
	}
	found := false
	for _, l := range res.Limitations {
		found = found || strings.Contains(l, "excluded 5 failed or oracle-invalid blocks")
	}
	if !found {
		t.Errorf("limitations = %v", res.Limitations)
	}
	preserveNext(t, res, "[experiment semantic_oracle]", "The semantic oracle rejected execution")
}

func TestExperimentOrderIsSeeded(t *testing.T) {
	e := &gen.Experiment{Seed: 9}
	a, b := planRuns(4, 6, e), planRuns(4, 6, e)
	for i := range a {
		if a[i] != b[i] {
			t.Fatal("the same seed gave two orders")
		}
	}
	c := planRuns(4, 6, &gen.Experiment{Seed: 10})
	same := true
	for i := range a {
		same = same && a[i] == c[i]
	}
	if same {
		t.Error("another seed gave the same order")
	}
}

func TestCaptureScratchIsRemovedOnClose(t *testing.T) {
	rt := newRuntime(t)
	res, f := capture(t, rt, map[string]any{"target": target(t.TempDir(), "echo", "x"), "provider": direct()})
	if f != nil {
		t.Fatal(f)
	}
	p := *res.Inputs[0].Path
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("captured file missing while the session lives: %v", err)
	}
	rt.Close()
	if _, err := os.Stat(filepath.Dir(filepath.Dir(p))); !os.IsNotExist(err) {
		t.Errorf("scratch survives Close: %v", err)
	}
}

func TestScratchReservationIsBounded(t *testing.T) {
	s := newScratch()
	defer s.close()
	evicted := false
	_, f := s.reserve(MaxSessionScratchBytes+1, 1, func(func() bool) { evicted = true })
	if f == nil || f.Code != gen.FailureCodeLimitExceeded || !evicted {
		t.Fatalf("got %v (eviction tried: %v)", f, evicted)
	}
	d, f := s.reserve(MaxSessionScratchBytes, 2, func(func() bool) {})
	if f != nil {
		t.Fatal(f)
	}
	f = nil
	if _, f = s.reserve(1, 1, func(func() bool) {}); f == nil {
		t.Fatal("an active reservation did not count")
	}
	// Room held by a running capture frees when it ends: retryable, with the reason.
	if !f.Retryable || f.Details["reason"] != "scratch_held_by_running_captures" || f.NextAction == nil || f.NextAction.WaitAndRetry == nil {
		t.Errorf("held scratch = %+v", f)
	}
	if r, ok := f.Recoverable(); !ok || r.Status != "retryable" {
		t.Errorf("held scratch is not a retryable state: %+v", r)
	}
	s.settle(d)
	if _, err := os.Stat(d.path); !os.IsNotExist(err) {
		t.Error("an unreferenced settled capture was kept")
	}
	if _, f := s.reserve(1, 1, func(func() bool) {}); f != nil {
		t.Fatal(f)
	}
}

// TestEvictedCaptureHandleExpires fills the session cache: the least recently used
// capture's handle expires and its scratch is removed, while the newest stays usable.
func TestEvictedCaptureHandleExpires(t *testing.T) {
	rt := newRuntime(t)
	dir := t.TempDir()
	var first *CaptureResult
	for i := 0; i <= MaxSessionAnalyses; i++ {
		res, f := capture(t, rt, map[string]any{"target": target(dir, "echo", strconv.Itoa(i)), "provider": direct()})
		if f != nil {
			t.Fatal(f)
		}
		if first == nil {
			first = res
		}
	}
	if _, f := rt.Preserve(first.AnalysisID); f == nil || f.Code != gen.FailureCodeExpiredSessionAnalysis {
		t.Fatalf("evicted handle: %v", f)
	}
	if _, err := os.Stat(*first.Inputs[0].Path); !os.IsNotExist(err) {
		t.Errorf("the evicted capture's scratch remains: %v", err)
	}
}

// TestInspectCaptureEvidenceRedactsOracleAndConsole preserves an experiment with an oracle
// and checks the projection keeps oracle outcomes but no argv, console text or paths.
func TestInspectCaptureEvidenceRedactsOracleAndConsole(t *testing.T) {
	rt := newRuntime(t)
	dir := t.TempDir()
	res, f := capture(t, rt, map[string]any{"target": target(dir, "echo", "secret-console-text"), "provider": direct(), "preserve": true,
		"experiment": map[string]any{"cases": []any{map[string]any{"name": "a"}, map[string]any{"name": "b"}}, "blocks": 1, "seed": 1,
			"practical_threshold": 1e9, "semantic_oracle": []string{"sh", "-c", "echo oracle-says-hi; exit 0"}}})
	if f != nil {
		t.Fatal(f)
	}
	view, f := rt.Inspect(res.Preserved.EvidenceID)
	if f != nil {
		t.Fatal(f)
	}
	b, _ := json.Marshal(view)
	for _, leak := range []string{"secret-console-text", "oracle-says-hi", dir, `"argv"`, `"cwd"`} {
		if strings.Contains(string(b), leak) {
			t.Errorf("the projection leaks %s", leak)
		}
	}
	execs := view.Body.CaptureRequest["executions"].([]any)
	oracle := execs[0].(map[string]any)["semantic_oracle"].(map[string]any)
	if oracle["status"] != "passed" || oracle["output_streams"].(map[string]any)["stdout_observed_bytes"] == nil {
		t.Errorf("oracle projection = %v", oracle)
	}
	if len(view.LogicalSources) != 4 || len(view.AnalysisSources) != 4 {
		t.Errorf("sources: %d logical, %d analysis", len(view.LogicalSources), len(view.AnalysisSources))
	}
}

// TestCaptureScratchOfDeadOwnerIsRemovedAtStart: the scratch of a process that died without
// removing it (SIGKILL) is removed when the next runtime starts; that of a live process,
// and a directory without an owner tag, are kept.
func TestCaptureScratchOfDeadOwnerIsRemovedAtStart(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Skip("no true")
	}
	stale := filepath.Join(tmp, fmt.Sprintf("flameox-session-%d-%d-abc", dead.Process.Pid, 12345))
	live := filepath.Join(tmp, "flameox-session-"+owner.Tag()+"-def")
	untagged := filepath.Join(tmp, "flameox-session-123456789")
	for _, d := range []string{stale, live, untagged} {
		if err := os.MkdirAll(filepath.Join(d, "capture-1"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	newRuntime(t)
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("the scratch of a dead owner survives the next start: %v", err)
	}
	for _, d := range []string{live, untagged} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s was removed: %v", filepath.Base(d), err)
		}
	}
}
