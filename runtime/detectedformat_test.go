package runtime

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	gen "github.com/flameox/flameox/generated/contracts"
)

// TestDeclaredFormatReadsAsAnother: a source declared in a format the operation reads,
// whose bytes detection reads as another format the operation also reads, fails to
// decode with the action that fixes it, whether the decoder fails while analysing or
// while paging (the Perfetto reader decodes as it pages, and its failure had no next
// action): field sources[i].format, details declared_format and detected_format, and an
// adjust_request of that field (issue 33 item 3: every failure the sweep produces
// carries a complete next action).
func TestDeclaredFormatReadsAsAnother(t *testing.T) {
	rt := newRuntime(t)
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	chrome := write("trace.json", `{"traceEvents":[{"name":"main","ph":"X","ts":1,"dur":50,"pid":1,"tid":1}]}`)
	cpuprofile := write("run.cpuprofile", `{"nodes":[{"id":1,"callFrame":{"functionName":"(root)","scriptId":"0","url":"","lineNumber":-1,"columnNumber":-1},"hitCount":1,"children":[]}],"startTime":0,"endTime":10,"samples":[1],"timeDeltas":[10]}`)
	for _, tc := range []struct {
		name, tool, path, declared, detected string
	}{
		{"paging decoder", "summarize_trace", chrome, "perfetto", "chrome-trace"},
		{"analysing decoder", "rank_cpu_hotspots", cpuprofile, "pstats", "cpuprofile"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, f := call(t, rt, tc.tool, map[string]any{"sources": []any{map[string]any{"kind": "path", "path": tc.path, "format": tc.declared}}})
			if f == nil || f.Code != gen.FailureCodeDecodeFailure {
				t.Fatalf("got %v, want DECODE_FAILURE", f)
			}
			path := []any{"sources", 0, "format"}
			if diff := cmp.Diff(path, f.FieldPath); diff != "" {
				t.Errorf("field path (-want +got):\n%s", diff)
			}
			got := map[string]any{"declared_format": f.Details["declared_format"], "detected_format": f.Details["detected_format"]}
			if diff := cmp.Diff(map[string]any{"declared_format": tc.declared, "detected_format": tc.detected}, got); diff != "" {
				t.Errorf("details (-want +got):\n%s", diff)
			}
			na := f.Envelope().NextAction
			if na == nil || na.AdjustRequest == nil || !cmp.Equal(na.AdjustRequest.FieldPath, path) {
				t.Fatalf("next action = %+v, want adjust_request of %v", na, path)
			}
		})
	}
}
