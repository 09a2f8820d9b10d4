package runtime

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/broker"
	"github.com/flameox/flameox/internal/owner"
	"github.com/flameox/flameox/internal/testtool"
	"github.com/flameox/flameox/internal/workerproc"
)

// lowDiskBudget makes every worker's disk budget bytes for the test.
func lowDiskBudget(t *testing.T, bytes int64) {
	old := workerDiskBudget
	workerDiskBudget = func([]resolved) int64 { return bytes }
	t.Cleanup(func() { workerDiskBudget = old })
}

// noWorkerScratchLeft fails when a worker scratch directory of this process remains.
func noWorkerScratchLeft(t *testing.T) {
	t.Helper()
	entries, _ := os.ReadDir(os.TempDir())
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), workerproc.ScratchPrefix+owner.Tag()+"-") {
			t.Errorf("worker scratch left behind: %s", e.Name())
		}
	}
}

// TestWorkerParquetBombIsBounded: a parquetdir of a megabyte whose dictionary decodes to
// a gibibyte is refused at the reader's decoded-bytes bound (64 times its Parquet bytes)
// in the worker, typed and with nothing left behind, and the same runtime analyzes again.
// Since decision 0057 the reader writes nothing, so the worker's disk budget (here below
// what the old scratch database would have written) is not what stops it.
func TestWorkerParquetBombIsBounded(t *testing.T) {
	const budget = 8 << 20
	lowDiskBudget(t, budget)
	dir := filepath.Join(t.TempDir(), "report_pqtdir")
	bomb := testtool.ParquetBomb{Rows: 1 << 20, ValueBytes: 1 << 10, PadBytes: 1 << 20}
	size, err := bomb.Write(dir)
	if err != nil {
		t.Fatal(err)
	}
	if 64*size < 4*budget {
		t.Fatalf("the directory (%d bytes) lets the reader decode only %d bytes", size, 64*size)
	}
	rt := workerRuntime(t)
	args := map[string]any{"sources": []any{map[string]any{"kind": "path", "path": dir}}}
	_, _, f := analyzeJSON(t, rt, "inspect_gpu_launches", args)
	if f == nil || f.Code != gen.FailureCodeLimitExceeded || !strings.Contains(f.Message, "Parquet tables decode to more than") ||
		f.Details["reason"] == "disk" {
		t.Fatalf("failure = %+v, want LIMIT_EXCEEDED at the decoded-bytes bound", f)
	}
	if strings.Contains(f.Message, dir) {
		t.Errorf("message %q names the host path", f.Message)
	}
	noWorkerScratchLeft(t)
	if _, _, f := analyzeJSON(t, rt, "inspect_gpu_launches", map[string]any{"sources": []any{map[string]any{"kind": "path",
		"path": testtool.Corpus(t, "nsightful__nsys-power_iteration.sqlite")}}}); f != nil {
		t.Fatalf("after the failure: %v", f)
	}
}

// TestWorkerDiskBudgetMeasured: the broker measures the worker's directory while it runs.
// A worker that writes file after file, each below RLIMIT_FSIZE, into its TMPDIR (here a
// shell loop that never ends by itself, started in the worker's place with its
// environment) is stopped past the budget, LIMIT_EXCEEDED naming the bound and what it
// measured.
func TestWorkerDiskBudgetMeasured(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	const budget = 4 << 20
	lowDiskBudget(t, budget)
	rt := workerRuntime(t)
	var seen broker.Spec
	rt.launch = func(ctx context.Context, spec broker.Spec) (*broker.Result, error) {
		seen = spec
		spec.Path, spec.Args = sh, []string{"sh", "-c",
			`i=0; while :; do head -c 262144 /dev/zero > "$TMPDIR/f$i" || exit 3; i=$((i+1)); done`}
		return broker.Run(ctx, spec)
	}
	args := map[string]any{"sources": []any{map[string]any{"kind": "path", "path": testtool.Corpus(t, "aiperf__profile_export.jsonl")}},
		"limits": map[string]any{"timeout_seconds": 120}} // a failure, not a hang, if the measurement broke
	_, _, f := analyzeJSON(t, rt, "summarize_inference", args)
	if f == nil || f.Code != gen.FailureCodeLimitExceeded || f.Details["reason"] != "disk" || fmt.Sprint(f.Details["limit"]) != fmt.Sprint(budget) {
		t.Fatalf("failure = %+v, want LIMIT_EXCEEDED (disk) at %d bytes", f, budget)
	}
	if obs, _ := f.Details["observed_bytes"].(int64); obs <= budget {
		t.Errorf("observed_bytes = %v, want more than %d", f.Details["observed_bytes"], budget)
	}
	// The measured root is the worker's working directory and every temporary directory
	// variable names it, once.
	if len(seen.WritableRoots) != 1 || seen.WritableRoots[0] != seen.Dir || seen.MaxWritableGrowth != budget {
		t.Errorf("roots %v (growth %d), dir %s", seen.WritableRoots, seen.MaxWritableGrowth, seen.Dir)
	}
	for _, k := range workerproc.TempVariables {
		var vals []string
		for _, kv := range seen.Env {
			if v, ok := strings.CutPrefix(kv, k+"="); ok {
				vals = append(vals, v)
			}
		}
		if !slices.Equal(vals, []string{seen.Dir}) {
			t.Errorf("%s = %q, want [%s]", k, vals, seen.Dir)
		}
	}
	noWorkerScratchLeft(t)
}

func TestWorkerDiskBudgetFigures(t *testing.T) {
	for _, c := range []struct {
		input, want int64
	}{
		{0, minWorkerDiskBytes},
		{4400, minWorkerDiskBytes},
		{10 << 20, 1280 << 20},
		{64 << 20, maxWorkerDiskBytes},
		{1 << 40, maxWorkerDiskBytes},
	} {
		if got := workerDiskBudget([]resolved{{size: c.input / 2}, {size: c.input - c.input/2}}); got != c.want {
			t.Errorf("inputs of %d bytes: budget %d, want %d", c.input, got, c.want)
		}
	}
}

func TestWorkerEnv(t *testing.T) {
	parent := []string{"PATH=/bin", "TMPDIR=/elsewhere", "SQLITE_TMPDIR=/x", WorkerVariable + "=old", workerproc.WarmVariable + "=1", "TMPDIRX=keep"}
	env := workerproc.Env(parent, "/s/request.json", "/s/tmp", 0)
	want := []string{"PATH=/bin", "TMPDIRX=keep", WorkerVariable + "=/s/request.json", "TMPDIR=/s/tmp", "TMP=/s/tmp", "TEMP=/s/tmp", "SQLITE_TMPDIR=/s/tmp"}
	if !slices.Equal(env, want) {
		t.Errorf("env = %q, want %q", env, want)
	}
	// A spare is told how much heap to warm.
	env = workerproc.Env(parent, "/s/request.json", "/s/tmp", spareWarmBytes)
	want = slices.Insert(want, 3, workerproc.WarmVariable+"=8388608")
	if !slices.Equal(env, want) {
		t.Errorf("env = %q, want %q", env, want)
	}
}
