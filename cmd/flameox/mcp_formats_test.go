package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/flameox/flameox/internal/testtool"
)

// TestMCPSourceWithoutKind: catalog §4.2, "`kind` may be omitted: it defaults to [...]
// `path`". A kind-less path source is read through MCP (its result validating against the
// published output schema) and its next page continues; an object that is no path
// source is refused at the field that would make it one.
func TestMCPSourceWithoutKind(t *testing.T) {
	p := filepath.Join(t.TempDir(), "lines.txt")
	if err := os.WriteFile(p, []byte("a\nb\nc\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := connect(t, "")
	res, isErr := s.preview(map[string]any{"sources": []any{map[string]any{"path": p}}, "page_size": 2})
	if isErr || res["status"] != "complete" {
		t.Fatalf("kind-less source: %v %v", res["code"], res["message"])
	}
	if in := res["inputs"].([]any)[0].(map[string]any); in["path"] != p || in["format"] != "text" {
		t.Errorf("inputs[0] = %v", in)
	}
	next, isErr := s.preview(s.nextArgs(res, "preview_artifact"))
	if isErr || next["status"] != "complete" {
		t.Errorf("next page: %v %v", next["code"], next["message"])
	}
	sha := strings.Repeat("a", 64)
	for _, tt := range []struct {
		name     string
		src      map[string]any
		path     []any
		accepted []any
	}{
		{"neither path nor evidence_id", map[string]any{}, []any{"sources", 0.0, "path"}, nil},
		{"evidence_id without kind", map[string]any{"evidence_id": sha}, []any{"sources", 0.0, "kind"}, []any{"evidence"}},
	} {
		res, isErr := s.preview(map[string]any{"sources": []any{tt.src}})
		if !isErr || res["code"] != "INVALID_INPUT" {
			t.Fatalf("%s: %v %v", tt.name, res["code"], res["message"])
		}
		if diff := cmp.Diff(tt.path, res["field_path"]); diff != "" {
			t.Errorf("%s: field_path (-want +got):\n%s", tt.name, diff)
		}
		if got, _ := res["accepted_values"].([]any); !cmp.Equal(tt.accepted, got) {
			t.Errorf("%s: accepted_values = %v", tt.name, res["accepted_values"])
		}
	}
}

// TestMCPUnsupportedFormatDetails: catalog §2, "A declared format not accepted by the
// operation fails with `UNSUPPORTED_FORMAT` **before** path resolution, details
// `{operation, source_index, received_format, accepted_formats, recovery}`", and §4.4,
// "incompatible pair → `UNSUPPORTED_FORMAT` details `{provider_id, output_formats,
// operation, accepted_formats, compatible_capture_providers}`". Each failure validates
// against the tool's output schema, and the request it points to runs: the tool it names
// for the declared format, and the capture with a provider from accepted_values.
func TestMCPUnsupportedFormatDetails(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(p, []byte("one\ntwo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := connect(t, "")
	sources := []any{map[string]any{"path": p, "format": "text"}}
	res, isErr := s.call("rank_cpu_hotspots", map[string]any{"sources": sources})
	if !isErr || res["code"] != "UNSUPPORTED_FORMAT" {
		t.Fatalf("declared format: %v %v", res["code"], res["message"])
	}
	d := res["details"].(map[string]any)
	readers, _ := d["tools_reading_format"].([]any)
	want := map[string]any{"operation": "rank_cpu_hotspots", "source_index": 0.0, "received_format": "text",
		"accepted_formats":     []any{"pstats", "py-spy", "perf", "perf-data", "cpuprofile", "pprof"},
		"tools_reading_format": readers, "recovery": d["recovery"]}
	if diff := cmp.Diff(want, d); diff != "" || len(readers) == 0 || !strings.Contains(d["recovery"].(string), "call "+readers[0].(string)) {
		t.Errorf("details (-want +got):\n%s", diff)
	}
	if na := res["next_action"].(map[string]any); na["kind"] != "adjust_request" || !cmp.Equal(na["field_path"], []any{"sources", 0.0, "format"}) {
		t.Errorf("next_action = %v", na)
	}
	if next, isErr := s.call(readers[0].(string), map[string]any{"sources": sources}); isErr || next["status"] != "complete" {
		t.Errorf("%s on the same sources: %v %v", readers[0], next["code"], next["message"])
	}

	if err := os.WriteFile(filepath.Join(dir, "hot.py"), []byte("print(sum(i * i for i in range(100000)))\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	target := map[string]any{"argv": []string{"python3", "hot.py"}, "cwd": dir}
	res, isErr = s.call("capture_and_rank_cpu_hotspots", map[string]any{"target": target, "provider": map[string]any{"kind": "direct"}})
	if !isErr || res["code"] != "UNSUPPORTED_FORMAT" {
		t.Fatalf("incompatible provider: %v %v", res["code"], res["message"])
	}
	compatible := []any{"py-spy", "perf", "node-cpu-profile", "cprofile", "go-test"}
	want = map[string]any{"provider_id": "direct", "output_formats": []any{"text"}, "operation": "rank_cpu_hotspots",
		"accepted_formats":             []any{"pstats", "py-spy", "perf", "perf-data", "cpuprofile", "pprof"},
		"compatible_capture_providers": compatible}
	if diff := cmp.Diff(want, res["details"]); diff != "" {
		t.Errorf("details (-want +got):\n%s", diff)
	}
	if !cmp.Equal(res["field_path"], []any{"provider", "kind"}) || !cmp.Equal(res["accepted_values"], compatible) {
		t.Errorf("field_path %v, accepted_values %v", res["field_path"], res["accepted_values"])
	}
	testtool.Require(t, "python3")
	res, isErr = s.call("capture_and_rank_cpu_hotspots", map[string]any{"target": target, "provider": map[string]any{"kind": "cprofile"}})
	if isErr || res["status"] != "complete" {
		t.Errorf("capture with cprofile: %v %v %v", res["status"], res["code"], res["message"])
	}
}
