package main

import (
	"os"
	"path/filepath"
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
