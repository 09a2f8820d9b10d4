package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/flameox/flameox/internal/testtool"
)

func TestMCPCaptureWithProgress(t *testing.T) {
	dir := t.TempDir()
	var mu sync.Mutex
	var notes []string
	var values []float64
	s := connectWith(t, "", filepath.Join(t.TempDir(), "store"), &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			defer mu.Unlock()
			notes = append(notes, req.Params.Message)
			values = append(values, req.Params.Progress)
		},
	})
	args := map[string]any{
		"target":   map[string]any{"argv": []string{"sh", "-c", "echo one; echo two; exit 4"}, "cwd": dir},
		"provider": map[string]any{"kind": "direct"},
		"experiment": map[string]any{"cases": []any{map[string]any{"name": "a"}, map[string]any{"name": "b"}},
			"blocks": 2, "seed": 3, "practical_threshold": 1e9},
		"page_size": 3,
	}
	params := &mcp.CallToolParams{Name: "capture_and_preview_artifact", Arguments: args}
	params.SetProgressToken("capture-1")
	res, isErr := s.callParams(params)
	if isErr {
		t.Fatalf("a failing workload is evidence, not a tool error: %v", res)
	}
	if res["status"] != "partial" || res["capture"].(map[string]any)["workload_status"] != "failed" {
		t.Errorf("status = %v / %v", res["status"], res["capture"])
	}
	// Capture continuation names the analysis tool and reads the captured files.
	next := s.nextArgs(res, "preview_artifact")
	page2, isErr := s.preview(next)
	if isErr || len(rows(page2)) != 3 {
		t.Fatalf("page 2 = %v", page2)
	}
	time.Sleep(50 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	// One notification on admission and one per finished execution (2 cases x 2 blocks),
	// with strictly increasing progress.
	if len(notes) != 5 || notes[0] != "capture admitted" || !strings.HasPrefix(notes[4], "captured ") {
		t.Errorf("progress notifications = %q", notes)
	}
	for i := 1; i < len(values); i++ {
		if values[i] <= values[i-1] {
			t.Errorf("progress values %v do not strictly increase", values)
			break
		}
	}
}

func TestMCPCancelStopsTheWorkload(t *testing.T) {
	dir := t.TempDir()
	s := connect(t, "")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: "capture_and_preview_artifact", Arguments: map[string]any{
			"target":   map[string]any{"argv": []string{"sh", "-c", "echo $$ > pids; sleep 300 & echo $! >> pids; setsid sleep 301 & echo $! >> pids; wait"}, "cwd": dir},
			"provider": map[string]any{"kind": "direct"},
		}})
		done <- err
	}()
	pidFile := filepath.Join(dir, "pids")
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, _ := os.ReadFile(pidFile)
		if strings.Count(string(b), "\n") >= 3 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err == nil {
		t.Fatal("the cancelled call returned a result")
	}
	b, _ := os.ReadFile(pidFile)
	pids := strings.Fields(string(b))
	if len(pids) != 3 {
		t.Fatalf("pids = %q", b)
	}
	// The server settles the broker after the client gives up: wait for it.
	deadline = time.Now().Add(10 * time.Second)
	for _, p := range pids {
		pid, _ := strconv.Atoi(p)
		for processAlive(pid) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if processAlive(pid) {
			t.Errorf("process %d survived the cancellation", pid)
		}
	}
}

// processAlive reports whether pid names a live, non-zombie process.
func processAlive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(f) > 0 && f[0] != "Z" && f[0] != "X"
}

// TestMCPBenchmarkExperiment runs a paired experiment through
// capture_and_summarize_benchmarks over MCP and checks its comparison against the
// executions it recorded: per-case medians of wall_time_ns, their ratio, and the paired
// estimate (the median of the per-block differences, candidate minus baseline), computed
// here from the result's own execution records. Real timings decide nothing: on a loaded
// machine a 0.25 s sleep may well time faster than a 0.01 s one.
func TestMCPBenchmarkExperiment(t *testing.T) {
	testtool.Require(t, "python3")
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "nap.py"), []byte(`import json, os, time
time.sleep(float(os.environ["SLEEP"]))
json.dump({"schema": "flameox.benchmark-samples.v1", "benchmarks": [{"name": "nap", "unit": "s", "samples": [float(os.environ["SLEEP"])]}]},
          open(os.environ["FLAMEOX_BENCHMARK_OUTPUT"], "w"))
`), 0o644)
	s := connect(t, "")
	res, isErr := s.call("capture_and_summarize_benchmarks", map[string]any{
		"target":   map[string]any{"argv": []string{"python3", "nap.py"}, "cwd": dir},
		"provider": map[string]any{"kind": "benchmark-samples"},
		"experiment": map[string]any{"cases": []any{
			map[string]any{"name": "fast", "environment": map[string]any{"SLEEP": "0.01"}},
			map[string]any{"name": "slow", "environment": map[string]any{"SLEEP": "0.25"}}},
			"blocks": 3, "seed": 2, "practical_threshold": 5e7},
	})
	if isErr {
		t.Fatal(res)
	}
	capture := res["capture"].(map[string]any)
	if capture["mode"] != "experiment" {
		t.Errorf("capture = %v", capture)
	}
	// The executions' wall times by case and block.
	wall := map[string]map[float64]float64{"fast": {}, "slow": {}}
	for _, e := range capture["executions"].([]any) {
		ex := e.(map[string]any)
		wall[ex["case"].(string)][ex["block"].(float64)] = ex["wall_time_ns"].(float64)
	}
	median := func(v []float64) float64 {
		slices.Sort(v)
		if n := len(v); n%2 == 1 {
			return v[n/2]
		}
		return (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	var fast, slow, diffs []float64
	for b, w := range wall["fast"] {
		fast, slow, diffs = append(fast, w), append(slow, wall["slow"][b]), append(diffs, wall["slow"][b]-w)
	}
	if len(fast) != 3 || len(wall["slow"]) != 3 {
		t.Fatalf("executions by case and block: %v", wall)
	}
	// The experiment summary leads the result, with per-case medians and their ratio.
	summary := res["blocks"].([]any)[0].(map[string]any)["values"].(map[string]any)
	row := summary["comparisons"].([]any)[0].(map[string]any)
	near := func(got any, want float64) bool {
		g, _ := got.(float64)
		return math.Abs(g-want) <= 1e-9*math.Max(1, math.Abs(want))
	}
	bm, cm := median(fast), median(slow)
	if row["baseline_case"] != "fast" || row["candidate_case"] != "slow" || !near(row["baseline_median_ns"], bm) ||
		!near(row["candidate_median_ns"], cm) || !near(row["median_ratio"], cm/bm) || !near(row["estimate"], median(diffs)) {
		t.Errorf("experiment row = %v; want medians %v and %v, ratio %v, paired estimate %v", row, bm, cm, cm/bm, median(diffs))
	}
	if lo, hi := row["confidence_low"].(float64), row["confidence_high"].(float64); lo > row["estimate"].(float64) || hi < row["estimate"].(float64) {
		t.Errorf("the interval [%v, %v] does not hold the estimate %v", lo, hi, row["estimate"])
	}
}

// inspectReturncodes preserves an analysis (unless evidence is given) and returns the
// workload return codes its evidence recorded.
func (s *session) inspectReturncodes(t *testing.T, analysisID, evidenceID string) []any {
	t.Helper()
	if evidenceID == "" {
		p, isErr := s.call("preserve_evidence", map[string]any{"analysis_id": analysisID})
		if isErr {
			t.Fatal(p)
		}
		evidenceID = p["evidence_id"].(string)
	}
	ev, isErr := s.call("inspect_evidence", map[string]any{"evidence_id": evidenceID})
	if isErr {
		t.Fatal(ev)
	}
	var codes []any
	for _, e := range ev["body"].(map[string]any)["capture_request"].(map[string]any)["executions"].([]any) {
		codes = append(codes, e.(map[string]any)["workload_returncode"])
	}
	return codes
}

// TestMCPCapturesKeepTheirExecutions covers the three ways a capture used to lose its
// executions: a failed analysis, two captures of identical output, and a collector that
// wrote nothing. Each keeps a handle, and its evidence records its own exit.
func TestMCPCapturesKeepTheirExecutions(t *testing.T) {
	dir := t.TempDir()
	s := connect(t, "")
	capture := func(tool string, args map[string]any) map[string]any {
		t.Helper()
		args["target"].(map[string]any)["cwd"] = dir
		res, isErr := s.call(tool, args)
		if isErr {
			t.Fatalf("%s: a capture that ran is a result, not an error: %v", tool, res)
		}
		return res
	}

	// A limit failure with preservation: partial, typed, preserved with its exit code.
	res := capture("capture_and_preview_artifact", map[string]any{"target": map[string]any{"argv": []string{"sh", "-c", "head -c 5000 /dev/zero | tr '\\0' x"}},
		"provider": map[string]any{"kind": "direct"}, "limits": map[string]any{"max_input_bytes": 1024}, "preserve": true})
	af := res["analysis_failure"].(map[string]any)
	if res["status"] != "partial" || af["code"] != "LIMIT_EXCEEDED" || res["next_action"].(map[string]any)["tool"] != "inspect_evidence" {
		t.Fatalf("limit failure: %v", res)
	}
	if codes := s.inspectReturncodes(t, "", res["preserved"].(map[string]any)["evidence_id"].(string)); !cmp.Equal(codes, []any{0.0}) {
		t.Errorf("limit failure recorded %v", codes)
	}

	// A decode failure without preservation: preserve_then_analyze, then the evidence
	// keeps the invalid document and the exit.
	res = capture("capture_and_summarize_benchmarks", map[string]any{"target": map[string]any{"argv": []string{"sh", "-c", `echo '{"schema":"nope"}' > "$FLAMEOX_BENCHMARK_OUTPUT"`}},
		"provider": map[string]any{"kind": "benchmark-samples"}})
	pta, _ := res["next_action"].(map[string]any)
	if res["analysis_failure"].(map[string]any)["code"] != "DECODE_FAILURE" || pta["kind"] != "preserve_then_analyze" {
		t.Fatalf("decode failure: %v", res)
	}
	if codes := s.inspectReturncodes(t, res["analysis_id"].(string), ""); !cmp.Equal(codes, []any{0.0}) {
		t.Errorf("decode failure recorded %v", codes)
	}

	// Identical output, different exits: two handles, each preserving its own exit.
	same := func(code string) map[string]any {
		return capture("capture_and_preview_artifact", map[string]any{"target": map[string]any{"argv": []string{"sh", "-c", "echo same; exit " + code}},
			"provider": map[string]any{"kind": "direct"}})
	}
	zero, seven := same("0"), same("7")
	if zero["analysis_id"] == seven["analysis_id"] {
		t.Fatal("two captures share one analysis_id")
	}
	for _, c := range []struct {
		res  map[string]any
		want float64
	}{{zero, 0}, {seven, 7}} {
		if codes := s.inspectReturncodes(t, c.res["analysis_id"].(string), ""); !cmp.Equal(codes, []any{c.want}) {
			t.Errorf("capture exiting %v recorded %v", c.want, codes)
		}
	}

	// The collector wrote nothing because the workload's argv failed (cProfile refuses -c):
	// a handle, a console preview, and preserve_evidence next, whose message says to fix
	// target.argv.
	testtool.Require(t, "python3")
	res = capture("capture_and_rank_cpu_hotspots", map[string]any{"target": map[string]any{"argv": []string{"python3", "-c", "print(1)"}},
		"provider": map[string]any{"kind": "cprofile"}})
	next := res["next_action"].(map[string]any)
	if res["analysis_failure"].(map[string]any)["details"].(map[string]any)["analysis_source_count"] != 0.0 || next["kind"] != "call_tool" ||
		next["tool"] != "preserve_evidence" || next["arguments"].(map[string]any)["analysis_id"] != res["analysis_id"] ||
		!strings.Contains(fmt.Sprint(next["message"]), "target.argv") {
		t.Fatalf("collector wrote nothing: %v", res)
	}
	if r := rows(res); len(r) == 0 || !strings.Contains(fmt.Sprint(r), "no such option") {
		t.Errorf("console preview = %v", r)
	}
	if codes := s.inspectReturncodes(t, res["analysis_id"].(string), ""); !cmp.Equal(codes, []any{2.0}) {
		t.Errorf("empty collection recorded %v", codes)
	}
}

// serveWithCapture starts `flameox mcp serve` (the test binary under the flameox name, as
// testscript installs it on PATH) with its own TMPDIR, calls a capture whose workload
// writes its pids to dir/pids (the shell, a child, and a daemon that setsid detached from
// the tree) and then sleeps 40 s, and returns once the pids are written.
func serveWithCapture(t *testing.T, dir string) (*exec.Cmd, []int) {
	t.Helper()
	bin, err := exec.LookPath("flameox")
	if err != nil {
		t.Skip("no flameox on PATH")
	}
	cmd := exec.Command(bin, "mcp", "serve")
	cmd.Env = append(os.Environ(), "TMPDIR="+dir, "FLAMEOX_DATA_DIR="+filepath.Join(dir, "store"))
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	work := filepath.Join(dir, "work")
	os.Mkdir(work, 0o700)
	go cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "capture_and_preview_artifact", Arguments: map[string]any{
		"target":   map[string]any{"argv": []string{"sh", "-c", "echo $$ > pids.tmp; sleep 40 & echo $! >> pids.tmp; (setsid sleep 41 & echo $! >> pids.tmp; mv pids.tmp pids); wait"}, "cwd": work},
		"provider": map[string]any{"kind": "direct"},
	}})
	deadline := time.Now().Add(20 * time.Second)
	for {
		b, err := os.ReadFile(filepath.Join(work, "pids"))
		if err == nil {
			var pids []int
			for _, f := range strings.Fields(string(b)) {
				n, _ := strconv.Atoi(f)
				pids = append(pids, n)
			}
			return cmd, pids
		}
		if time.Now().After(deadline) {
			t.Fatal("the workload never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// assertServerGone waits (generously) for the server and every workload pid to be gone.
func assertServerGone(t *testing.T, cmd *exec.Cmd, pids []int) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for _, pid := range append([]int{cmd.Process.Pid}, pids...) {
		for processAlive(pid) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if processAlive(pid) {
			t.Errorf("process %d survived", pid)
		}
	}
}

// TestMCPServeSIGTERMDuringCaptureEndsPromptly: SIGTERM to a server with a capture of a
// 40 s sleep in flight cancels the call, kills the workload (its detached daemon included)
// and removes the session scratch; the server is gone within seconds, not 40.
func TestMCPServeSIGTERMDuringCaptureEndsPromptly(t *testing.T) {
	dir := t.TempDir()
	cmd, pids := serveWithCapture(t, dir)
	start := time.Now()
	cmd.Process.Signal(syscall.SIGTERM)
	assertServerGone(t, cmd, pids)
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("the server took %v to finish after SIGTERM", d)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "flameox-session-*")); len(m) != 0 {
		t.Errorf("session scratch survives SIGTERM: %v", m)
	}
}

// TestMCPServeSIGKILLDuringCaptureLeavesNoProcess: even SIGKILL of the server, which can
// clean nothing up itself, takes the workload and its detached daemon with it; the scratch
// it leaves is removed by the next start.
func TestMCPServeSIGKILLDuringCaptureLeavesNoProcess(t *testing.T) {
	dir := t.TempDir()
	cmd, pids := serveWithCapture(t, dir)
	cmd.Process.Signal(syscall.SIGKILL)
	assertServerGone(t, cmd, pids)
}
