package runtime

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	gen "github.com/flameox/flameox/generated/contracts"
)

// TestDeclaredFormatUnsupported restores catalog §2: "A declared format not accepted by
// the operation fails with `UNSUPPORTED_FORMAT` **before** path resolution, details
// `{operation, source_index, received_format, accepted_formats, recovery}`". The input
// schema enumerates the operation's formats and refuses the value first; the runtime
// answers that refusal as UNSUPPORTED_FORMAT (the path here does not exist: nothing was
// resolved), naming the tools that read the declared format.
func TestDeclaredFormatUnsupported(t *testing.T) {
	rt := newRuntime(t)
	accepted := []string{"pstats", "py-spy", "perf", "perf-data", "cpuprofile", "pprof"}
	for _, src := range []map[string]any{
		{"kind": "path", "path": "/no/such/telco.json", "format": "pyperf"},
		{"path": "/no/such/telco.json", "format": "pyperf"},
	} {
		_, f := call(t, rt, "rank_cpu_hotspots", map[string]any{"sources": []any{src}})
		if f == nil || f.Code != gen.FailureCodeUnsupportedFormat {
			t.Fatalf("%v: got %v", src, f)
		}
		want := map[string]any{
			"operation": "rank_cpu_hotspots", "source_index": 0, "received_format": "pyperf", "accepted_formats": accepted,
			"tools_reading_format": []string{"summarize_benchmarks", "analyze_benchmark_scaling", "compare_benchmarks"},
			"recovery": "Give sources[0] in one of the formats rank_cpu_hotspots reads (pstats, py-spy, perf, perf-data, cpuprofile, pprof), " +
				"or call summarize_benchmarks or analyze_benchmark_scaling or compare_benchmarks on it.",
		}
		if diff := cmp.Diff(want, f.Details); diff != "" {
			t.Errorf("details (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]any{"sources", 0, "format"}, f.FieldPath); diff != "" {
			t.Errorf("field path (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(accepted, f.AcceptedValues); diff != "" {
			t.Errorf("accepted values (-want +got):\n%s", diff)
		}
		na := f.Envelope().NextAction
		if na == nil || na.AdjustRequest == nil || !cmp.Equal(na.AdjustRequest.FieldPath, []any{"sources", 0, "format"}) {
			t.Errorf("next action = %+v", na)
		}
	}
	// A value that is no format name is an invalid request, not an unsupported format.
	for _, bad := range []any{strings.Repeat("x", 81), 7, ""} {
		_, f := call(t, rt, "rank_cpu_hotspots", map[string]any{"sources": []any{map[string]any{"path": "/x", "format": bad}}})
		if f == nil || f.Code != gen.FailureCodeInvalidInput {
			t.Errorf("format %v: got %v", bad, f)
		}
	}
}

// TestIncompatibleCaptureProvider restores catalog §4.4: "incompatible pair →
// `UNSUPPORTED_FORMAT` details `{provider_id, output_formats, operation,
// accepted_formats, compatible_capture_providers}`" (output_formats: what the provider
// writes). A kind that names no provider stays INVALID_INPUT.
func TestIncompatibleCaptureProvider(t *testing.T) {
	rt := newRuntime(t)
	dir := t.TempDir()
	compatible := []string{"py-spy", "perf", "node-cpu-profile", "cprofile", "go-test"}
	_, f := call(t, rt, "capture_and_rank_cpu_hotspots", map[string]any{"target": target(dir, "true"), "provider": map[string]any{"kind": "direct"}})
	if f == nil || f.Code != gen.FailureCodeUnsupportedFormat {
		t.Fatalf("got %v", f)
	}
	want := map[string]any{
		"provider_id": "direct", "output_formats": []string{"text"}, "operation": "rank_cpu_hotspots",
		"accepted_formats":             []string{"pstats", "py-spy", "perf", "perf-data", "cpuprofile", "pprof"},
		"compatible_capture_providers": compatible,
	}
	if diff := cmp.Diff(want, f.Details); diff != "" {
		t.Errorf("details (-want +got):\n%s", diff)
	}
	if !cmp.Equal(f.FieldPath, []any{"provider", "kind"}) || !cmp.Equal(f.AcceptedValues, compatible) {
		t.Errorf("field path %v, accepted %v", f.FieldPath, f.AcceptedValues)
	}
	_, f = call(t, rt, "capture_and_rank_cpu_hotspots", map[string]any{"target": target(dir, "true"), "provider": map[string]any{"kind": "no-such"}})
	if f == nil || f.Code != gen.FailureCodeInvalidInput || !cmp.Equal(f.FieldPath, []any{"provider", "kind"}) {
		t.Errorf("unknown provider: %v", f)
	}
}

// TestSourceWithoutKind restores catalog §4.2: "`kind` may be omitted: it defaults to
// [...] `path`". A kind-less path source is read as a path source; the next page names
// the kind, and both it and the caller's own kind-less arguments continue the page.
func TestSourceWithoutKind(t *testing.T) {
	rt := newRuntime(t)
	p := filepath.Join(t.TempDir(), "lines.txt")
	if err := os.WriteFile(p, []byte("a\nb\nc\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args := map[string]any{"sources": []any{map[string]any{"path": p}}, "page_size": 1}
	res, f := call(t, rt, "preview_artifact", args)
	if f != nil {
		t.Fatal(f)
	}
	r := res.(*Result)
	if len(r.Inputs) != 1 || r.Inputs[0].Path == nil || *r.Inputs[0].Path != p || r.Inputs[0].Format != gen.FormatText {
		t.Fatalf("inputs = %+v", r.Inputs)
	}
	next := r.NextPage.Arguments
	src := next["sources"].([]any)[0].(map[string]any)
	if src["kind"] != "path" {
		t.Errorf("next page source = %v", src)
	}
	if _, f := call(t, rt, "preview_artifact", next); f != nil {
		t.Errorf("next page: %v", f)
	}
	args["continuation"] = r.Token
	if _, f := call(t, rt, "preview_artifact", args); f != nil {
		t.Errorf("kind-less continuation: %v", f)
	}
}
