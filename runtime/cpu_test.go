package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/failure"
	"github.com/flameox/flameox/internal/testtool"
)

// call runs a tool with args and returns its result or failure.
func call(t *testing.T, rt *Runtime, tool string, args map[string]any) (any, *failure.Failure) {
	t.Helper()
	raw, _ := json.Marshal(args)
	return rt.Call(context.Background(), tool, raw)
}

// tableRows returns the last table block's rows of an analysis or capture result.
func tableRows(t *testing.T, res any) []map[string]any {
	t.Helper()
	var blocks []any
	switch r := res.(type) {
	case *Result:
		blocks = r.Blocks
	case *CaptureResult:
		blocks = r.Blocks
	}
	b, _ := json.Marshal(blocks[len(blocks)-1])
	var tb struct {
		Rows []map[string]any `json:"rows"`
	}
	json.Unmarshal(b, &tb)
	return tb.Rows
}

const burnProgram = `package main

import "os"

//go:noinline
func burn(n int) int {
	s := 0
	for i := 0; i < n; i++ {
		s += i % 7 * (i % 11)
	}
	return s
}

func main() {
	if burn(600_000_000) == -1 {
		os.Exit(3)
	}
}
`

// buildBurn builds a Go program that spends its time in main.burn.
func buildBurn(t *testing.T) string {
	t.Helper()
	gobin := testtool.Require(t, "go")
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "main.go"), []byte(burnProgram), 0o644)
	os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module burn\n\ngo 1.26\n"), 0o644)
	bin := filepath.Join(dir, "burn")
	cmd := exec.Command(gobin, "build", "-o", bin, ".")
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	return bin
}

// TestPerfRecordFindsTheHotFunction records a real workload with perf during the test and
// checks that rank_cpu_hotspots on the perf.data names the function it spends its time in.
func TestPerfRecordFindsTheHotFunction(t *testing.T) {
	perf := testtool.RequirePerfRecord(t)
	bin := buildBurn(t)
	dir := t.TempDir()
	data := filepath.Join(dir, "perf.data")
	if b, err := exec.Command(perf, "record", "-F", "499", "-g", "-o", data, "--", bin).CombinedOutput(); err != nil {
		t.Fatalf("perf record: %v\n%s", err, b)
	}
	rt := newRuntime(t)
	res, f := call(t, rt, "rank_cpu_hotspots", map[string]any{"sources": []any{map[string]any{"kind": "path", "path": data}}})
	if f != nil {
		t.Fatal(f)
	}
	r := res.(*Result)
	if r.Inputs[0].Format != gen.FormatPerfData || r.Provider.ID != "perf-script" || !strings.HasPrefix(r.Provider.Version, "sha256:") {
		t.Errorf("inputs %+v provider %+v", r.Inputs, r.Provider)
	}
	rows := tableRows(t, res)
	if len(rows) == 0 || rows[0]["function"] != "main.burn" {
		t.Fatalf("top function = %v", rows[:min(3, len(rows))])
	}
	// The callers of main.burn include main.main.
	res, f = call(t, rt, "inspect_cpu_callers", map[string]any{"sources": []any{map[string]any{"kind": "path", "path": data}},
		"function": "main.burn", "direction": "callers"})
	if f != nil {
		t.Fatal(f)
	}
	found := false
	for _, e := range tableRows(t, res) {
		// Its caller is main.main, or runtime.main where the unwinder skips main.main.
		found = found || (e["caller_function"] == "main.main" || e["caller_function"] == "runtime.main") && e["callee_function"] == "main.burn"
	}
	if !found {
		t.Errorf("no caller edge into main.burn in %v", tableRows(t, res))
	}
}

func TestCPUFieldRules(t *testing.T) {
	rt := newRuntime(t)
	corpus := testtool.CorpusDirOrSkip(t)
	pprof := map[string]any{"kind": "path", "path": filepath.Join(corpus, "speedscope__simple.pprof.gz")}
	pstats := map[string]any{"kind": "path", "path": filepath.Join(corpus, "gprof2dot__print1.pstats")}
	py2 := map[string]any{"kind": "path", "path": filepath.Join(corpus, "gprof2dot__cProfile-py2.pstats")}
	tests := []struct {
		name     string
		tool     string
		args     map[string]any
		code     gen.FailureCode
		path     []any
		accepted []string
	}{
		{"pstats metric on pprof", "rank_cpu_hotspots", map[string]any{"sources": []any{pprof}, "metric": "total_calls"}, gen.FailureCodeInvalidInput, []any{"metric"}, []string{"self_weight", "inclusive_weight"}},
		{"sampled metric on pstats", "rank_cpu_hotspots", map[string]any{"sources": []any{pstats}, "metric": "inclusive_weight"}, gen.FailureCodeInvalidInput, []any{"metric"},
			[]string{"self_time_seconds", "cumulative_time_seconds", "total_calls", "primitive_calls"}},
		{"sample type on pstats", "rank_cpu_hotspots", map[string]any{"sources": []any{pstats}, "sample_type": "cpu"}, gen.FailureCodeInvalidInput, []any{"sample_type"}, []string{"pprof"}},
		{"unknown sample type", "inspect_cpu_callers", map[string]any{"sources": []any{pprof}, "sample_type": "alloc_space"}, gen.FailureCodeInvalidInput, []any{"sample_type"}, []string{"samples", "cpu"}},
		{"unknown metric", "rank_cpu_hotspots", map[string]any{"sources": []any{pstats}, "metric": "wall"}, gen.FailureCodeInvalidInput, []any{"metric"}, []string{"self_time_seconds", "cumulative_time_seconds", "total_calls", "primitive_calls", "self_weight", "inclusive_weight"}},
		{"python 2 pstats", "rank_cpu_hotspots", map[string]any{"sources": []any{py2}}, gen.FailureCodeDecodeFailure, nil, nil},
		{"two sources", "rank_cpu_hotspots", map[string]any{"sources": []any{pstats, pstats}}, gen.FailureCodeInvalidInput, []any{"sources"}, nil},
		{"text is not a profile", "rank_cpu_hotspots", map[string]any{"sources": []any{map[string]any{"kind": "path", "path": filepath.Join(corpus, "README.md")}}},
			gen.FailureCodeUnsupportedFormat, []any{"sources", 0, "format"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, f := call(t, rt, tt.tool, tt.args)
			if f == nil || f.Code != tt.code {
				t.Fatalf("got %v, want %s", f, tt.code)
			}
			if mustJSON(f.FieldPath) != mustJSON(tt.path) {
				t.Errorf("field_path = %s, want %s", mustJSON(f.FieldPath), mustJSON(tt.path))
			}
			if tt.accepted != nil && mustJSON(f.AcceptedValues) != mustJSON(tt.accepted) {
				t.Errorf("accepted = %v", f.AcceptedValues)
			}
		})
	}
	// A metric on pstats reorders the ranking.
	res, f := call(t, rt, "rank_cpu_hotspots", map[string]any{"sources": []any{pstats}, "metric": "total_calls"})
	if f != nil {
		t.Fatal(f)
	}
	rows := tableRows(t, res)
	for i := 1; i < len(rows); i++ {
		if rows[i-1]["total_calls"].(float64) < rows[i]["total_calls"].(float64) {
			t.Errorf("not sorted by total_calls: %v", rows)
		}
	}
}

func TestCallerDirections(t *testing.T) {
	rt := newRuntime(t)
	dir := t.TempDir()
	folded := filepath.Join(dir, "stacks.folded")
	os.WriteFile(folded, []byte("main;parse;lex 5\nmain;parse 2\nmain;eval;lex 3\n"), 0o644)
	src := []any{map[string]any{"kind": "path", "path": folded}}
	edges := func(direction string) []string {
		res, f := call(t, rt, "inspect_cpu_callers", map[string]any{"sources": src, "function": "LEX", "direction": direction})
		if f != nil {
			t.Fatal(f)
		}
		var out []string
		for _, r := range tableRows(t, res) {
			out = append(out, r["caller_function"].(string)+">"+r["callee_function"].(string))
		}
		return out
	}
	if got := strings.Join(edges("callers"), ","); got != "parse>lex,eval>lex" {
		t.Errorf("callers = %s", got)
	}
	if got := edges("callees"); len(got) != 0 {
		t.Errorf("callees of a leaf = %v", got)
	}
	res, _ := call(t, rt, "inspect_cpu_callers", map[string]any{"sources": src})
	if n := len(tableRows(t, res)); n != 4 {
		t.Errorf("all edges = %d", n)
	}
}

func captureCPU(t *testing.T, rt *Runtime, tool, provider string, dir string, argv ...string) (*CaptureResult, *failure.Failure) {
	t.Helper()
	res, f := call(t, rt, tool, map[string]any{"target": map[string]any{"argv": argv, "cwd": dir}, "provider": map[string]any{"kind": provider}})
	if f != nil {
		return nil, f
	}
	return res.(*CaptureResult), nil
}

func TestCaptureCPUProviders(t *testing.T) {
	rt := newRuntime(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "hot.py"), []byte("def hot(n):\n    s = 0\n    for i in range(n):\n        s += i * i\n    return s\n\ndef main():\n    for _ in range(4):\n        hot(200000)\n\nmain()\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "hot.js"), []byte("function hot(n){let s=0;for(let i=0;i<n;i++){s+=Math.sqrt(i)*i}return s}\nlet t=0;for(let k=0;k<30;k++){t+=hot(2e6)}\nconsole.log(t>0)\n"), 0o644)
	gomod := t.TempDir()
	os.WriteFile(filepath.Join(gomod, "go.mod"), []byte("module example.com/spin\n\ngo 1.26\n"), 0o644)
	os.WriteFile(filepath.Join(gomod, "spin_test.go"), []byte("package spin\n\nimport \"testing\"\n\n//go:noinline\nfunc spin(n int) int { s := 0; for i := 0; i < n; i++ { s += i % 7 * (i % 13) }; return s }\n\nfunc TestSpin(t *testing.T) { if spin(300_000_000) < 0 { t.Fatal() } }\n"), 0o644)
	cases := []struct {
		name, tool, provider, want, tool0 string
		dir                               string
		argv                              []string
		format                            gen.Format
		scope                             string
	}{
		{"cprofile", "capture_and_rank_cpu_hotspots", "cprofile", "hot", "python3", dir, []string{"python3", "hot.py"}, gen.FormatPstats, "workload"},
		{"node", "capture_and_rank_cpu_hotspots", "node-cpu-profile", "hot", "node", dir, []string{"node", "hot.js"}, gen.FormatCpuprofile, "workload"},
		{"go test", "capture_and_rank_cpu_hotspots", "go-test", "example.com/spin.spin", "go", gomod, []string{"go", "test", "."}, gen.FormatPprof, "workload"},
		{"perf", "capture_and_rank_cpu_hotspots", "perf", "", "perf", dir, []string{"python3", "hot.py"}, gen.FormatPerfData, "collector"},
		{"cprofile callers", "capture_and_inspect_cpu_callers", "cprofile", "", "python3", dir, []string{"python3", "hot.py"}, gen.FormatPstats, "workload"},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			if tt.tool0 == "perf" {
				testtool.RequirePerfRecord(t)
			} else {
				testtool.Require(t, tt.tool0)
			}
			res, f := captureCPU(t, rt, tt.tool, tt.provider, tt.dir, tt.argv...)
			if f != nil {
				t.Fatal(f)
			}
			ex := res.Capture.Executions[0]
			if res.Status != "complete" || res.AnalysisFailure != nil || len(res.Inputs) != 1 || res.Inputs[0].Format != tt.format {
				t.Fatalf("status %s failure %+v inputs %+v console %+v", res.Status, res.AnalysisFailure, res.Inputs, ex.ConsoleDiagnostics)
			}
			if ex.ReturncodeScope != tt.scope || (tt.scope == "collector") != (ex.CollectorExecutableSHA256 != nil) ||
				(tt.scope == "workload") != (ex.WorkloadReturncode != nil) || ex.ConsoleDiagnostics == nil {
				t.Errorf("execution = %+v", ex)
			}
			// go-test writes a CPU or a memory profile: its role is profile.
			role := "capture-0001/cpu-profile"
			if tt.provider == "go-test" {
				role = "capture-0001/profile"
			}
			if res.Inputs[0].Role != role || res.NextPage != nil && res.NextPage.Tool != strings.TrimPrefix(tt.tool, "capture_and_") {
				t.Errorf("role %s next_page %+v", res.Inputs[0].Role, res.NextPage)
			}
			rows := tableRows(t, res)
			if tt.want != "" && (len(rows) == 0 || rows[0]["function"] != tt.want) {
				t.Errorf("top function = %v", rows[:min(3, len(rows))])
			}
			if len(rows) == 0 {
				t.Error("no rows")
			}
		})
	}
	// An argv the provider cannot wrap is refused before anything runs.
	if _, f := captureCPU(t, rt, "capture_and_rank_cpu_hotspots", "cprofile", dir, "node", "hot.js"); f == nil || mustJSON(f.FieldPath) != `["target","argv",0]` {
		t.Errorf("cprofile of node: %v", f)
	}
	if _, f := captureCPU(t, rt, "capture_and_rank_cpu_hotspots", "go-test", dir, "go", "build"); f == nil || mustJSON(f.FieldPath) != `["target","argv",1]` {
		t.Errorf("go-test of go build: %v", f)
	}
}

func TestCapturePySpyWithFakeCollector(t *testing.T) {
	bin := t.TempDir()
	os.WriteFile(filepath.Join(bin, "py-spy"), []byte(testtool.FakePySpy), 0o755)
	t.Setenv("FLAMEOX_PY_SPY", filepath.Join(bin, "py-spy"))
	rt := newRuntime(t)
	dir := t.TempDir()
	res, f := captureCPU(t, rt, "capture_and_inspect_cpu_callers", "py-spy", dir, "sh", "-c", "exit 0")
	if f != nil {
		t.Fatal(f)
	}
	if res.Inputs[0].Format != gen.FormatPySpy || res.Capture.Executions[0].ReturncodeScope != "collector" {
		t.Fatalf("result = %+v", res.Inputs)
	}
	rows := tableRows(t, res)
	if len(rows) != 2 || rows[0]["caller_function"] != "<module>" || rows[0]["sample_count"] != 4.0 {
		t.Errorf("edges = %v", rows)
	}

	// A collector reporting another version is a non-error unavailable state.
	os.WriteFile(filepath.Join(bin, "py-spy"), []byte("#!/bin/sh\necho py-spy 0.3.14\n"), 0o755)
	_, f = captureCPU(t, rt, "capture_and_rank_cpu_hotspots", "py-spy", dir, "sh", "-c", "exit 0")
	if f == nil || f.Code != gen.FailureCodeUnavailableCapability {
		t.Fatalf("wrong version: %v", f)
	}
	if r, ok := f.Recoverable(); !ok || r.Status != "unavailable" || r.NextAction == nil {
		t.Errorf("recoverable = %+v", r)
	}
	t.Setenv("FLAMEOX_PY_SPY", "")
	t.Setenv("PATH", dir)
	if _, f := captureCPU(t, rt, "capture_and_rank_cpu_hotspots", "py-spy", dir, "/bin/sh", "-c", "exit 0"); f == nil || f.Code != gen.FailureCodeUnavailableCapability {
		t.Fatalf("missing py-spy: %v", f)
	}
}

func TestCaptureMissingProfileIsAPartialResult(t *testing.T) {
	testtool.Require(t, "python3")
	rt := newRuntime(t)
	dir := t.TempDir()
	// os._exit ends the interpreter before cProfile writes its profile.
	os.WriteFile(filepath.Join(dir, "bad.py"), []byte("import os, sys\nsys.stderr.write('giving up early\\n'); sys.stderr.flush()\nos._exit(4)\n"), 0o644)
	res, f := captureCPU(t, rt, "capture_and_rank_cpu_hotspots", "cprofile", dir, "python3", "bad.py")
	if f != nil {
		t.Fatal(f)
	}
	ex := res.Capture.Executions[0]
	if res.Status != "partial" || res.AnalysisFailure == nil || len(ex.MissingArtifactRoles) != 1 || *ex.WorkloadReturncode != 4 ||
		res.AnalysisFailure.Details["analysis_source_count"] != 0 {
		t.Fatalf("result = %+v %+v %+v", res.Status, res.AnalysisFailure, ex)
	}
	// The capture keeps a handle, and the table previews the console so the cause shows;
	// the next action preserves this run first (nothing to reanalyse), and says to fix
	// the workload.
	if a := res.NextAction; res.AnalysisID == "" || a == nil || a.CallTool == nil || a.CallTool.Tool != "preserve_evidence" ||
		a.CallTool.Arguments["analysis_id"] != res.AnalysisID || !strings.Contains(a.CallTool.Message, "exited 4") ||
		!strings.Contains(a.CallTool.Message, "target.argv") {
		t.Fatalf("handle %q next_action %+v", res.AnalysisID, res.NextAction)
	}
	if fix := res.Fix(); fix == nil || fmt.Sprint(fix.FieldPath) != "[target argv]" {
		t.Errorf("fix = %+v", fix)
	}
	rows := tableRows(t, res)
	if len(rows) != 1 || rows[0]["role"] != "capture-0001/stderr-excerpt" || rows[0]["text"] != "giving up early" {
		t.Fatalf("console preview = %v", rows)
	}
	// Preserving it keeps the executions and the console excerpts, with no analysis source.
	p, f := rt.Preserve(res.AnalysisID)
	if f != nil {
		t.Fatal(f)
	}
	ev, f := rt.Inspect(p.EvidenceID)
	if f != nil {
		t.Fatal(f)
	}
	execs := ev.Body.CaptureRequest["executions"].([]any)
	if len(ev.AnalysisSources) != 0 || len(execs) != 1 || execs[0].(map[string]any)["workload_returncode"] != 4.0 {
		t.Fatalf("evidence = %+v", ev)
	}
}

// TestPerfDataWithoutPerfIsUnavailable: without a perf executable, perf.data is a typed
// unavailable state with remediation, not a decode failure and not an empty success.
func TestPerfDataWithoutPerfIsUnavailable(t *testing.T) {
	t.Setenv("FLAMEOX_PERF", filepath.Join(t.TempDir(), "no-perf-here"))
	rt := newRuntime(t)
	data := filepath.Join(t.TempDir(), "perf.data")
	os.WriteFile(data, append([]byte("PERFILE2"), make([]byte, 256)...), 0o644)
	_, f := call(t, rt, "rank_cpu_hotspots", map[string]any{"sources": []any{map[string]any{"kind": "path", "path": data}}})
	if f == nil || f.Code != gen.FailureCodeUnavailableCapability || f.Details["missing_executable"] != "perf" || f.Details["remediation"] == nil {
		t.Fatalf("got %v", f)
	}
	if r, ok := f.Recoverable(); !ok || r.Status != "unavailable" {
		t.Errorf("recoverable = %+v", r)
	}
}
