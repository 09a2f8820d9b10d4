package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMCPNextActionCallToolRuns follows the call_tool next action of a detected format
// that the tool does not read (issue 33, item 3: it carried arguments {}, which fail:
// sources is required): the named tool, called with the action's arguments unchanged,
// answers.
func TestMCPNextActionCallToolRuns(t *testing.T) {
	dir := t.TempDir()
	text := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(text, []byte("a plain text file\nwith two lines\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := connect(t, "")
	for _, tool := range []string{"summarize_failures", "rank_cpu_hotspots", "summarize_trace"} {
		res, isErr := s.call(tool, map[string]any{"sources": []any{map[string]any{"kind": "path", "path": text}}})
		if !isErr || res["code"] != "UNSUPPORTED_FORMAT" {
			t.Fatalf("%s: %v %v", tool, res["code"], res["message"])
		}
		na, _ := res["next_action"].(map[string]any)
		if na["kind"] != "call_tool" {
			t.Fatalf("%s: next_action %v", tool, na)
		}
		next, isErr := s.call(na["tool"].(string), na["arguments"])
		if isErr || next["status"] != "complete" {
			t.Errorf("%s's next action %s %v: %v %v", tool, na["tool"], na["arguments"], next["code"], next["message"])
		}
	}
}

// TestMCPCaptureNextActionsRun follows the next action of each kind of partial capture
// through MCP, as the catalog's section 5.3 chooses it (issue 33, item 2; decision 0048):
// an already preserved capture inspects its evidence (then retries the operation on its
// analysis_sources when the failed analysis had replayable inputs); an unpreserved one
// whose analysis failed on replayable inputs is preserve_then_analyze; any other
// unpreserved partial capture calls preserve_evidence with its handle. Each action runs
// as given, and its message says what failed and the field to change.
func TestMCPCaptureNextActionsRun(t *testing.T) {
	dir := t.TempDir()
	bin := t.TempDir()
	// A py-spy, named as the pinned version, that fails without writing its profile: a
	// collector failure (its exit is the collector's).
	pyspy := filepath.Join(bin, "py-spy")
	if err := os.WriteFile(pyspy, []byte("#!/bin/sh\n# A fake py-spy for tests that always fails.\nif [ \"$1\" = \"--version\" ]; then echo \"py-spy 0.4.2\"; exit 0; fi\necho collector broke >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("FLAMEOX_PY_SPY", pyspy)
	s := connect(t, "")
	direct := map[string]any{"kind": "direct"}
	sh := func(script string) map[string]any {
		return map[string]any{"argv": []string{"sh", "-c", script}, "cwd": dir}
	}
	big := "head -c 5000 /dev/zero | tr '\\0' x"
	tests := []struct {
		name string
		tool string
		args map[string]any
		kind string // call_tool tool, or preserve_then_analyze
		// then is the operation a preserved capture retries ("" for none).
		then string
		says []string
	}{
		{"workload failed", "capture_and_preview_artifact", map[string]any{"target": sh("echo oops >&2; exit 3"), "provider": direct},
			"preserve_evidence", "", []string{"exited 3", "target.argv", "capture-0001/stderr"}},
		{"timed out", "capture_and_preview_artifact", map[string]any{"target": map[string]any{"argv": []string{"sleep", "30"}, "cwd": dir,
			"budget": map[string]any{"timeout_seconds": 1}}, "provider": direct},
			"preserve_evidence", "", []string{"target.budget.timeout_seconds (1 s)"}},
		{"collector wrote nothing", "capture_and_summarize_benchmarks", map[string]any{"target": sh("exit 0"), "provider": map[string]any{"kind": "benchmark-samples"}},
			"preserve_evidence", "", []string{"no native artifact"}},
		{"collector failed", "capture_and_rank_cpu_hotspots", map[string]any{"target": sh("exit 0"), "provider": map[string]any{"kind": "py-spy"}},
			"preserve_evidence", "", []string{"collector exited 1", "provider"}},
		{"analysis failed", "capture_and_preview_artifact", map[string]any{"target": sh(big), "provider": direct, "limits": map[string]any{"max_input_bytes": 1024}},
			"preserve_then_analyze", "", []string{"LIMIT_EXCEEDED", "change limits.max_input_bytes", "preview_artifact"}},
		{"preserved, analysis failed", "capture_and_preview_artifact", map[string]any{"target": sh(big), "provider": direct, "limits": map[string]any{"max_input_bytes": 1024}, "preserve": true},
			"inspect_evidence", "preview_artifact", []string{"LIMIT_EXCEEDED", "change limits.max_input_bytes", "preserved as evidence"}},
		{"preserved, workload failed", "capture_and_preview_artifact", map[string]any{"target": sh("exit 3"), "provider": direct, "preserve": true},
			"inspect_evidence", "", []string{"exited 3", "target.argv", "preserved as evidence"}},
		{"preserved, collector wrote nothing", "capture_and_summarize_benchmarks", map[string]any{"target": sh("exit 0"), "provider": map[string]any{"kind": "benchmark-samples"}, "preserve": true},
			"inspect_evidence", "", []string{"no native artifact", "preserved as evidence"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, isErr := s.call(tc.tool, tc.args)
			if isErr || res["status"] != "partial" {
				t.Fatalf("a capture that ran is a partial result: %v", res)
			}
			na, _ := res["next_action"].(map[string]any)
			msg, _ := na["message"].(string)
			t.Logf("%v %v: %s", na["kind"], na["tool"], msg)
			for _, want := range tc.says {
				if !strings.Contains(msg, want) {
					t.Errorf("message %q does not say %q", msg, want)
				}
			}
			if tc.kind == "preserve_then_analyze" {
				if na["kind"] != "preserve_then_analyze" {
					t.Fatalf("next_action = %v", na)
				}
				p, isErr := s.call("preserve_evidence", na["preserve_arguments"])
				if isErr || p["status"] != "complete" {
					t.Fatalf("preserve_evidence %v: %v", na["preserve_arguments"], p)
				}
				view, isErr := s.call("inspect_evidence", map[string]any{"evidence_id": p["evidence_id"]})
				if isErr {
					t.Fatalf("inspect_evidence: %v", view)
				}
				again, isErr := s.call("preview_artifact", map[string]any{"sources": view["analysis_sources"], "limits": map[string]any{"max_input_bytes": 1 << 20}})
				if isErr || again["status"] != "complete" {
					t.Errorf("reanalysis with adjusted limits: %v", again)
				}
				return
			}
			if na["kind"] != "call_tool" || na["tool"] != tc.kind {
				t.Fatalf("next_action = %v", na)
			}
			if then, _ := na["then_retry"].(string); then != tc.then {
				t.Errorf("then_retry = %q, want %q", then, tc.then)
			}
			next, isErr := s.call(na["tool"].(string), na["arguments"])
			if isErr {
				t.Fatalf("%s %v: %v", na["tool"], na["arguments"], next)
			}
			view := next
			if na["tool"] == "preserve_evidence" {
				if view, isErr = s.call("inspect_evidence", map[string]any{"evidence_id": next["evidence_id"]}); isErr {
					t.Fatalf("inspect_evidence: %v", view)
				}
			}
			if view["body"].(map[string]any)["evidence_kind"] != "capture" {
				t.Errorf("evidence = %v", view["body"])
			}
			if tc.then != "" {
				again, isErr := s.call(tc.then, map[string]any{"sources": view["analysis_sources"], "limits": map[string]any{"max_input_bytes": 1 << 20}})
				if isErr || again["status"] != "complete" {
					t.Errorf("then_retry %s: %v", tc.then, again)
				}
			}
		})
	}
	// A complete capture has no next action.
	res, _ := s.call("capture_and_preview_artifact", map[string]any{"target": sh("echo fine"), "provider": direct})
	if res["status"] != "complete" || res["next_action"] != nil {
		t.Errorf("complete capture: status %v next_action %v", res["status"], res["next_action"])
	}
}
