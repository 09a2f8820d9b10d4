package runtime

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	gen "github.com/flameox/flameox/generated/contracts"
)

func cases(n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = map[string]any{"name": string(rune('a' + i))}
	}
	return out
}

// TestExperimentBlocksSourceArithmetic: the schema takes blocks 1-100 (seed 000: "An
// experiment runs 2-16 cases across 1-100 blocks"); admission refuses more than the
// capture's 32 sources with LIMIT_EXCEEDED, the arithmetic in the message and details,
// at experiment.blocks, before any process starts, and names the largest blocks value
// that fits. Both sides of each bound.
func TestExperimentBlocksSourceArithmetic(t *testing.T) {
	rt := newRuntime(t)
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	run := []string{"sh", "-c", "touch " + marker}
	samples := map[string]any{"kind": "benchmark-samples"}
	tests := []struct {
		name     string
		tool     string
		provider map[string]any
		cases    int
		blocks   int
		// fit is the largest blocks value that fits; 0 when the request fits.
		fit  int
		says string
	}{
		{"direct, 2 x 9 x 2 = 36", "capture_and_preview_artifact", direct(), 2, 9, 8, "36 sources (2 cases x 9 blocks x 2 artifacts per run); at most 32"},
		{"direct, 3 x 6 x 2 = 36", "capture_and_preview_artifact", direct(), 3, 6, 5, "36 sources (3 cases x 6 blocks x 2 artifacts per run)"},
		{"direct, 2 x 100 x 2 = 400", "capture_and_preview_artifact", direct(), 2, 100, 8, "400 sources (2 cases x 100 blocks x 2 artifacts per run)"},
		{"samples, 2 x 17 x 1 = 34", "capture_and_summarize_benchmarks", samples, 2, 17, 16, "34 sources (2 cases x 17 blocks x 1 artifacts per run)"},
		{"samples, 16 x 3 x 1 = 48", "capture_and_summarize_benchmarks", samples, 16, 3, 2, "48 sources (16 cases x 3 blocks x 1 artifacts per run)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := map[string]any{"target": target(dir, run...), "provider": tt.provider,
				"experiment": map[string]any{"cases": cases(tt.cases), "blocks": tt.blocks, "seed": 1, "practical_threshold": 0}}
			_, f := call(t, rt, tt.tool, args)
			if f == nil || f.Code != gen.FailureCodeLimitExceeded {
				t.Fatalf("got %v, want LIMIT_EXCEEDED", f)
			}
			if _, err := os.Stat(marker); err == nil {
				t.Fatal("the workload ran although admission refused the request")
			}
			if !strings.Contains(f.Message, tt.says) {
				t.Errorf("message %q does not say %q", f.Message, tt.says)
			}
			if mustJSON(f.FieldPath) != `["experiment","blocks"]` {
				t.Errorf("field_path = %v", f.FieldPath)
			}
			d := f.Details
			if d["max_blocks"] != tt.fit || d["maximum_sources"] != 32 || d["case_count"] != tt.cases || d["block_count"] != tt.blocks ||
				d["source_count"] != d["case_count"].(int)*tt.blocks*d["artifacts_per_execution"].(int) {
				t.Errorf("details = %v", d)
			}
			env := f.Envelope()
			na := env.NextAction
			if na == nil || na.AdjustRequest == nil || mustJSON(na.AdjustRequest.FieldPath) != `["experiment","blocks"]` ||
				!strings.Contains(na.AdjustRequest.Message, "experiment.blocks="+itoa(tt.fit)) {
				t.Fatalf("next_action = %s", mustJSON(na))
			}
			// The largest value that fits is admitted (the other side of the bound); the
			// workload's runs are not asserted here, only that admission accepts it.
			args["experiment"].(map[string]any)["blocks"] = tt.fit
			raw, _ := json.Marshal(args)
			tool := rt.byName[tt.tool]
			inst, vf := tool.Validate(raw)
			if vf != nil {
				t.Fatalf("blocks=%d is not schema-valid: %v", tt.fit, vf)
			}
			if _, f := rt.admitCapture(tool, inst); f != nil {
				t.Errorf("blocks=%d (%s) was refused: %v", tt.fit, na.AdjustRequest.Message, f)
			}
			args["experiment"].(map[string]any)["blocks"] = tt.fit + 1
			raw, _ = json.Marshal(args)
			inst, _ = tool.Validate(raw)
			if _, f := rt.admitCapture(tool, inst); f == nil || f.Code != gen.FailureCodeLimitExceeded {
				t.Errorf("blocks=%d was admitted: %v", tt.fit+1, f)
			}
		})
	}
}

// TestExperimentAtTheSourceBoundRuns runs the largest experiment a direct capture
// admits, 2 cases x 8 blocks x 2 artifacts = 32 sources: every run's console is a source.
func TestExperimentAtTheSourceBoundRuns(t *testing.T) {
	rt := newRuntime(t)
	dir := t.TempDir()
	res, f := capture(t, rt, map[string]any{"target": target(dir, "sh", "-c", "echo out; echo err >&2"), "provider": direct(),
		"experiment": map[string]any{"cases": cases(2), "blocks": 8, "seed": 1, "practical_threshold": 0}})
	if f != nil {
		t.Fatal(f)
	}
	if res.Status != "complete" || len(res.Inputs) != 32 || len(res.Capture.Executions) != 16 {
		t.Errorf("status %s, %d inputs, %d executions; want complete, 32, 16", res.Status, len(res.Inputs), len(res.Capture.Executions))
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }
