package main

import (
	"strings"
	"testing"
)

// TestMCPExperimentBlocksAdjustRuns: tools/list offers blocks 1-100 (seed 000); a request
// whose cases x blocks x artifacts exceed 32 sources fails LIMIT_EXCEEDED with the
// arithmetic, at experiment.blocks, and its adjust_request names the largest blocks value
// that fits. The request with that value, as the action says, runs.
func TestMCPExperimentBlocksAdjustRuns(t *testing.T) {
	s := connect(t, "")
	dir := t.TempDir()
	exp := map[string]any{"cases": []any{map[string]any{"name": "a"}, map[string]any{"name": "b"}}, "blocks": 9, "seed": 1, "practical_threshold": 0}
	args := map[string]any{"target": map[string]any{"argv": []string{"true"}, "cwd": dir}, "provider": map[string]any{"kind": "direct"}, "experiment": exp}
	res, isErr := s.call("capture_and_preview_artifact", args)
	if !isErr || res["code"] != "LIMIT_EXCEEDED" {
		t.Fatalf("blocks 9: %v", res)
	}
	if msg, _ := res["message"].(string); !strings.Contains(msg, "36 sources (2 cases x 9 blocks x 2 artifacts per run); at most 32") {
		t.Errorf("message = %q", msg)
	}
	if fp, _ := res["field_path"].([]any); len(fp) != 2 || fp[0] != "experiment" || fp[1] != "blocks" {
		t.Errorf("field_path = %v", res["field_path"])
	}
	d, _ := res["details"].(map[string]any)
	if d["source_count"] != 36.0 || d["maximum_sources"] != 32.0 || d["max_blocks"] != 8.0 {
		t.Errorf("details = %v", d)
	}
	na, _ := res["next_action"].(map[string]any)
	if msg, _ := na["message"].(string); na["kind"] != "adjust_request" || !strings.Contains(msg, "experiment.blocks=8") {
		t.Fatalf("next_action = %v", na)
	}
	exp["blocks"] = d["max_blocks"]
	res, isErr = s.call("capture_and_preview_artifact", args)
	if isErr || res["status"] != "complete" {
		t.Errorf("blocks %v, as the next action says: %v %v", exp["blocks"], res["code"], res["message"])
	}
}
