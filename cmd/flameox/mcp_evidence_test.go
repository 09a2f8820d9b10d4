package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// linesFile writes n numbered lines under a directory whose name must never reach an MCP
// message, and returns the directory and the file.
func linesFile(t *testing.T, n int) (string, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "private-host-directory")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "workload-output.log")
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, path
}

func rows(res map[string]any) []any {
	blocks := res["blocks"].([]any)
	return blocks[len(blocks)-1].(map[string]any)["rows"].([]any)
}

func TestMCPEvidenceLifecycle(t *testing.T) {
	dir, path := linesFile(t, 25)
	s := connect(t, "")
	live, isErr := s.preview(map[string]any{"sources": []any{map[string]any{"kind": "path", "path": path}}, "page_size": 10})
	if isErr {
		t.Fatal(live)
	}
	livePage2, _ := s.preview(live["next_page"].(map[string]any)["arguments"])
	id := live["analysis_id"].(string)

	if _, err := os.Stat(s.store); !os.IsNotExist(err) {
		t.Fatalf("the store exists before the first preservation: %v", err)
	}
	p, isErr := s.call("preserve_evidence", map[string]any{"analysis_id": id})
	if isErr {
		t.Fatal(p)
	}
	evidenceID := p["evidence_id"].(string)
	if p["artifact_count"] != 1.0 {
		t.Errorf("artifact_count = %v", p["artifact_count"])
	}
	if st, err := os.Stat(s.store); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("store mode = %v, %v", st, err)
	}
	again, _ := s.call("preserve_evidence", map[string]any{"analysis_id": id})
	if diff := cmp.Diff(p, again); diff != "" {
		t.Errorf("preservation is not idempotent (-first +second):\n%s", diff)
	}

	// The refreshed next_page reads evidence and returns the live analysis's second page.
	next := p["next_page"].(map[string]any)
	src := next["arguments"].(map[string]any)["sources"].([]any)[0].(map[string]any)
	if src["kind"] != "evidence" || src["evidence_id"] != evidenceID || len(src["artifact_selector"].(string)) != 64 {
		t.Fatalf("refreshed sources = %v", src)
	}
	if err := os.Remove(path); err != nil { // native bytes now live in the store
		t.Fatal(err)
	}
	page2, isErr := s.preview(next["arguments"])
	if isErr {
		t.Fatal(page2)
	}
	if diff := cmp.Diff(rows(livePage2), rows(page2)); diff != "" {
		t.Errorf("evidence page 2 differs from the live page 2:\n%s", diff)
	}
	if in := page2["inputs"].([]any)[0].(map[string]any); in["path"] != nil {
		t.Errorf("an evidence input carries a path: %v", in)
	}

	// inspect_evidence: ordered analysis sources that replay page 1, and nothing host-specific.
	view, isErr := s.call("inspect_evidence", map[string]any{"evidence_id": evidenceID})
	if isErr {
		t.Fatal(view)
	}
	assertRedacted(t, view, dir)
	replay, isErr := s.preview(map[string]any{"sources": view["analysis_sources"], "page_size": 10})
	if isErr {
		t.Fatal(replay)
	}
	if diff := cmp.Diff(rows(live), rows(replay)); diff != "" {
		t.Errorf("replay differs from the live analysis:\n%s", diff)
	}

	// query_evidence with filters.
	sha := live["inputs"].([]any)[0].(map[string]any)["sha256"].(string)
	for _, tt := range []struct {
		name string
		args map[string]any
		want int
	}{
		{"all", map[string]any{}, 1},
		{"operation", map[string]any{"operation": "preview_artifact", "evidence_kind": "analysis"}, 1},
		{"provider", map[string]any{"provider_id": "flameox"}, 1},
		{"other provider", map[string]any{"provider_id": "perf"}, 0},
		{"input digest", map[string]any{"input_sha256": sha}, 1},
		{"other digest", map[string]any{"input_sha256": strings.Repeat("0", 64)}, 0},
		{"created window", map[string]any{"created_after": "2020-01-01T00:00:00Z", "created_before": time.Now().Add(time.Hour).Format(time.RFC3339)}, 1},
		{"future", map[string]any{"created_after": time.Now().Add(time.Hour).Format(time.RFC3339)}, 0},
		{"capture kind", map[string]any{"evidence_kind": "capture"}, 0},
	} {
		res, isErr := s.call("query_evidence", tt.args)
		if isErr {
			t.Fatalf("%s: %v", tt.name, res)
		}
		if got := len(res["evidence"].([]any)); got != tt.want {
			t.Errorf("%s: %d manifests, want %d", tt.name, got, tt.want)
		}
	}

	for _, tt := range []struct {
		name, tool string
		args       map[string]any
		code       string
		path       []any
	}{
		{"unknown handle", "preserve_evidence", map[string]any{"analysis_id": strings.Repeat("b", 64)}, "EXPIRED_SESSION_ANALYSIS", []any{"analysis_id"}},
		{"unknown evidence", "inspect_evidence", map[string]any{"evidence_id": strings.Repeat("c", 64)}, "MISSING_EVIDENCE", []any{"evidence_id"}},
		{"naive time", "query_evidence", map[string]any{"created_after": "2026-01-01T00:00:00"}, "INVALID_INPUT", []any{"created_after"}},
		{"inverted window", "query_evidence", map[string]any{"created_after": "2026-02-01T00:00:00Z", "created_before": "2026-01-01T00:00:00Z"}, "INVALID_INPUT", []any{"created_before"}},
		{"page size", "query_evidence", map[string]any{"page_size": 201}, "INVALID_INPUT", []any{"page_size"}},
		{"bad cursor", "query_evidence", map[string]any{"cursor": "not-a-cursor"}, "INVALID_INPUT", []any{"cursor"}},
		{"rescue into the store", "rescue_evidence", map[string]any{"analysis_id": id, "destination": filepath.Join(s.store, "inside")}, "INVALID_INPUT", []any{"destination"}},
		{"rescue to an existing directory", "rescue_evidence", map[string]any{"analysis_id": id, "destination": dir}, "INVALID_INPUT", []any{"destination"}},
		{"rescue under a missing parent", "rescue_evidence", map[string]any{"analysis_id": id, "destination": filepath.Join(dir, "no", "such")}, "INVALID_INPUT", []any{"destination"}},
		{"relative rescue", "rescue_evidence", map[string]any{"analysis_id": id, "destination": "relative/dir"}, "INVALID_INPUT", []any{"destination"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res, isErr := s.call(tt.tool, tt.args)
			if !isErr || res["code"] != tt.code {
				t.Fatalf("got %v %v: %v", isErr, res["code"], res["message"])
			}
			if diff := cmp.Diff(tt.path, res["field_path"]); diff != "" {
				t.Errorf("field_path (-want +got):\n%s", diff)
			}
			b, _ := json.Marshal(res)
			if strings.Contains(string(b), dir) || strings.Contains(string(b), s.store) {
				t.Errorf("a host path reached the MCP message: %s", b)
			}
		})
	}

	// rescue_evidence writes a new store; the active store is unchanged.
	before := listTree(t, s.store)
	dest := filepath.Join(t.TempDir(), "rescued-store")
	r, isErr := s.call("rescue_evidence", map[string]any{"analysis_id": id, "destination": dest})
	if isErr {
		t.Fatal(r)
	}
	if r["evidence_id"] != evidenceID || r["rescue_destination"] != dest {
		t.Errorf("rescue = %v", r)
	}
	na := r["next_action"].(map[string]any)
	if na["kind"] != "restart_reconnect" || na["environment"].(map[string]any)["FLAMEOX_DATA_DIR"] != dest {
		t.Errorf("next_action = %v", na)
	}
	repeat, _ := s.call("rescue_evidence", map[string]any{"analysis_id": id, "destination": dest})
	if diff := cmp.Diff(r, repeat); diff != "" {
		t.Errorf("repeated rescue differs:\n%s", diff)
	}
	if diff := cmp.Diff(before, listTree(t, s.store)); diff != "" {
		t.Errorf("rescue changed the active store:\n%s", diff)
	}
	// After reconnecting with the rescued store, its next_page reads the evidence.
	rescued := connectStore(t, "", dest)
	page2r, isErr := rescued.preview(r["next_page"].(map[string]any)["arguments"])
	if isErr {
		t.Fatal(page2r)
	}
	if diff := cmp.Diff(rows(livePage2), rows(page2r)); diff != "" {
		t.Errorf("rescued page 2 differs:\n%s", diff)
	}
}

func TestMCPQueryPagesWithCursor(t *testing.T) {
	_, path := linesFile(t, 40)
	s := connect(t, "")
	var ids []string
	for offset := 0; offset < 40; offset += 10 {
		res, isErr := s.preview(map[string]any{"sources": []any{map[string]any{"kind": "path", "path": path}}, "page_size": 10, "offset": offset})
		if isErr {
			t.Fatal(res)
		}
		p, isErr := s.call("preserve_evidence", map[string]any{"analysis_id": res["analysis_id"]})
		if isErr {
			t.Fatal(p)
		}
		ids = append(ids, p["evidence_id"].(string))
	}
	var seen []string
	args := any(map[string]any{"operation": "preview_artifact", "page_size": 3})
	var first map[string]any
	for i := 0; i < 5; i++ {
		res, isErr := s.call("query_evidence", args)
		if isErr {
			t.Fatal(res)
		}
		if first == nil {
			first = res
		}
		for _, e := range res["evidence"].([]any) {
			seen = append(seen, e.(map[string]any)["evidence_id"].(string))
		}
		if args = s.nextArgs(res, "query_evidence"); args == nil {
			break
		}
	}
	// The pages list exactly the preserved evidence, in inventory (sorted id) order.
	sort.Strings(ids)
	if diff := cmp.Diff(ids, seen); diff != "" {
		t.Fatalf("paged manifests (-preserved +paged):\n%s", diff)
	}
	cursorArgs := first["next_page"].(map[string]any)["arguments"].(map[string]any)
	// The cursor is bound to its filters...
	other := map[string]any{"provider_id": "flameox", "page_size": 3, "cursor": cursorArgs["cursor"]}
	if res, isErr := s.call("query_evidence", other); !isErr || !strings.Contains(res["message"].(string), "filters") {
		t.Errorf("a cursor with other filters: %v", res)
	}
	// ...and to the inventory snapshot.
	res, _ := s.preview(map[string]any{"sources": []any{map[string]any{"kind": "path", "path": path}}, "page_size": 7})
	if p, isErr := s.call("preserve_evidence", map[string]any{"analysis_id": res["analysis_id"]}); isErr {
		t.Fatal(p)
	}
	if res, isErr := s.call("query_evidence", cursorArgs); !isErr || !strings.Contains(res["message"].(string), "stale") {
		t.Errorf("a stale cursor: %v", res)
	}
}

// assertRedacted fails when the projection holds a host path, or any argv, cwd,
// environment or path key, anywhere in its JSON.
func assertRedacted(t *testing.T, v any, dir string) {
	t.Helper()
	b, _ := json.Marshal(v)
	for _, banned := range []string{dir, "workload-output.log", os.Getenv("HOME") + "/"} {
		if banned != "/" && strings.Contains(string(b), banned) {
			t.Errorf("inspect_evidence leaks %q: %s", banned, b)
		}
	}
	var walk func(any)
	walk = func(x any) {
		switch y := x.(type) {
		case map[string]any:
			for k, e := range y {
				switch k {
				case "path", "argv", "capture_argv", "cwd", "environment", "stdout", "stderr":
					t.Errorf("inspect_evidence carries the key %q", k)
				}
				walk(e)
			}
		case []any:
			for _, e := range y {
				walk(e)
			}
		}
	}
	walk(v)
}

// listTree lists every path under root with its size and mode.
func listTree(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		out = append(out, fmt.Sprintf("%s %d %v", rel, info.Size(), info.Mode()))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
