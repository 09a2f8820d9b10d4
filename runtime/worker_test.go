package runtime

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/broker"
	"github.com/flameox/flameox/internal/failure"
	"github.com/flameox/flameox/internal/sourcefile"
	"github.com/flameox/flameox/internal/testtool"
	"github.com/flameox/flameox/providers/all"
	"github.com/flameox/flameox/repository"
)

// workerRuntime is a runtime whose analyses of non-trivial inputs run in worker processes
// of this test binary (TestMain serves them).
func workerRuntime(t *testing.T) *Runtime {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	rt, err := New(all.Registry(), nil, WithAnalysisWorker(exe),
		WithStore(repository.Location{Dir: filepath.Join(t.TempDir(), "store"), Source: repository.SourceExplicit}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rt.Close)
	return rt
}

func analyzeJSON(t *testing.T, rt *Runtime, tool string, args map[string]any) ([]byte, *Result, *failure.Failure) {
	t.Helper()
	raw, _ := json.Marshal(args)
	res, f := rt.Analyze(context.Background(), tool, raw)
	if f != nil {
		return nil, nil, f
	}
	id := res.AnalysisID
	res.AnalysisID = "" // session handles differ between runtimes
	b, err := json.Marshal(res)
	res.AnalysisID = id
	if err != nil {
		t.Fatal(err)
	}
	return b, res, nil
}

// TestWorkerMatchesInProcess: corpus inputs above the in-process size run in a worker
// and give byte-identical results, first pages and continued pages, to the server
// process's own analysis.
func TestWorkerMatchesInProcess(t *testing.T) {
	local, worker := newRuntime(t), workerRuntime(t)
	for _, c := range []struct{ tool, file, format string }{
		{"summarize_inference", "aiperf__profile_export.jsonl", ""},
		{"summarize_trace", "speedscope__chrome116-devtools-trace.json", ""},
		{"inspect_gpu_launches", "nsightful__nsys-power_iteration.sqlite", ""},
		{"summarize_benchmarks", "nvbench__test_ref.json", "nvbench"},
		{"preview_artifact", "Mooncake__conversation_trace_head2000.jsonl", ""},
	} {
		t.Run(c.tool, func(t *testing.T) {
			src := map[string]any{"kind": "path", "path": testtool.Corpus(t, c.file)}
			if c.format != "" {
				src["format"] = c.format
			}
			args := map[string]any{"sources": []any{src}, "page_size": 3}
			for page := 1; page <= 2; page++ {
				want, wres, wf := analyzeJSON(t, local, c.tool, args)
				got, gres, gf := analyzeJSON(t, worker, c.tool, args)
				if wf != nil || gf != nil {
					// A failure is the same failure (nvbench's metrics pass the default
					// max_result_bytes: LIMIT_EXCEEDED with its field and hint).
					if wf == nil || gf == nil {
						t.Fatalf("in process %v, worker %v", wf, gf)
					}
					we, _ := json.Marshal(wf.Envelope())
					ge, _ := json.Marshal(gf.Envelope())
					if d := cmp.Diff(string(we), string(ge)); d != "" {
						t.Fatalf("failures differ (-in process +worker):\n%s", d)
					}
					break
				}
				if d := cmp.Diff(string(want), string(got)); d != "" {
					t.Fatalf("page %d differs (-in process +worker):\n%s", page, d)
				}
				if wres.Token != gres.Token {
					t.Fatalf("page %d tokens differ", page)
				}
				if gres.Token == "" {
					break
				}
				args["continuation"] = gres.Token
			}
		})
	}
	// The worker's session record is usable: preserve it.
	_, res, f := analyzeJSON(t, worker, "summarize_inference", map[string]any{"sources": []any{map[string]any{"kind": "path", "path": testtool.Corpus(t, "aiperf__profile_export.jsonl")}}})
	if f != nil {
		t.Fatal(f)
	}
	if _, f := worker.Preserve(res.AnalysisID); f != nil {
		t.Fatalf("preserve a worker's analysis: %v", f)
	}
}

// TestWorkerBounds: a worker that exhausts memory, hangs or crashes costs its request a
// typed failure; the runtime goes on serving.
func TestWorkerBounds(t *testing.T) {
	rt := workerRuntime(t)
	big := map[string]any{"sources": []any{map[string]any{"kind": "path", "path": testtool.Corpus(t, "aiperf__profile_export.jsonl")}}}
	small := map[string]any{"sources": []any{map[string]any{"kind": "path", "path": testtool.Corpus(t, "gprof2dot__print1.pstats")}}}
	for _, c := range []struct {
		helper string
		limits map[string]any
		code   gen.FailureCode
		reason string
		field  []any
	}{
		{"worker-hog", map[string]any{"max_memory_bytes": 64 << 20}, gen.FailureCodeLimitExceeded, "memory", failure.Path("limits", "max_memory_bytes")},
		{"worker-hang", map[string]any{"timeout_seconds": 1}, gen.FailureCodeLimitExceeded, "timeout", failure.Path("limits", "timeout_seconds")},
		{"worker-crash", nil, gen.FailureCodeInternalFailure, "worker_crashed", nil},
		// The worker's threads past the task bound (FLAMEOX_MAX_TASKS, which it inherits).
		{"worker-threads", nil, gen.FailureCodeLimitExceeded, "tasks", nil},
	} {
		t.Run(c.helper, func(t *testing.T) {
			t.Setenv("FLAMEOX_RUNTIME_HELPER", c.helper)
			t.Setenv(broker.MaxTasksVariable, "64")
			args := map[string]any{"sources": big["sources"]}
			if c.limits != nil {
				args["limits"] = c.limits
			}
			start := time.Now()
			_, _, f := analyzeJSON(t, rt, "summarize_inference", args)
			if f == nil || f.Code != c.code || f.Details["reason"] != c.reason || !cmp.Equal(f.FieldPath, c.field) {
				t.Fatalf("failure = %+v, want %s (%s) at %v", f, c.code, c.reason, c.field)
			}
			if c.reason == "tasks" && f.Details["limit"] != int64(64) {
				t.Errorf("limit = %v (%T), want the worker's bound, 64", f.Details["limit"], f.Details["limit"])
			}
			if time.Since(start) > 50*time.Second {
				t.Errorf("the worker was not stopped (%v)", time.Since(start))
			}
			// Small inputs run in the server process, untouched by the worker's behaviour.
			if _, _, f := analyzeJSON(t, rt, "rank_cpu_hotspots", small); f != nil {
				t.Errorf("in-process analysis: %v", f)
			}
		})
	}
	// The same runtime still analyzes in a (well-behaved) worker.
	if _, _, f := analyzeJSON(t, rt, "summarize_inference", big); f != nil {
		t.Fatalf("after the failures: %v", f)
	}
}

// TestWorkerCancellation: cancelling the request stops the worker and answers CANCELLED.
func TestWorkerCancellation(t *testing.T) {
	rt := workerRuntime(t)
	t.Setenv("FLAMEOX_RUNTIME_HELPER", "worker-hang")
	raw, _ := json.Marshal(map[string]any{"sources": []any{map[string]any{"kind": "path", "path": testtool.Corpus(t, "aiperf__profile_export.jsonl")}}})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	_, f := rt.Analyze(ctx, "summarize_inference", raw)
	if f == nil || f.Code != gen.FailureCodeCancelled {
		t.Fatalf("failure = %v", f)
	}
}

// TestInProcess: small plain files are analysed in the server process; gzip and Parquet
// files (compressed pages that declare their own expanded size), directories and inputs
// over inProcessBytes together go to a worker.
func TestInProcess(t *testing.T) {
	dir := t.TempDir()
	file := func(name string, b []byte) resolved {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return resolved{path: p, size: int64(len(b))}
	}
	text := file("a.txt", []byte("hello\n"))
	big := resolved{path: text.path, size: inProcessBytes/2 + 1}
	for _, c := range []struct {
		name string
		in   []resolved
		want bool
	}{
		{"small text", []resolved{text}, true},
		{"two halves over the bound", []resolved{big, big}, false},
		{"gzip", []resolved{file("a.gz", []byte{0x1f, 0x8b, 8, 0})}, false},
		{"parquet", []resolved{file("a.parquet", []byte("PAR1\x15\x00"))}, false},
		{"PAR1 after the start", []resolved{file("b.txt", []byte(" PAR1"))}, true},
		{"directory", []resolved{{path: dir, members: []sourcefile.Member{{Rel: "a.txt", Size: 6}}}}, false},
	} {
		if got := inProcess(c.in); got != c.want {
			t.Errorf("%s: inProcess = %v, want %v", c.name, got, c.want)
		}
	}
}
