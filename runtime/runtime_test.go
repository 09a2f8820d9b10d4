package runtime

import (
	"strings"
	"testing"

	"github.com/flameox/flameox/providers"
)

func TestNewRefusesAnIncompleteRegistry(t *testing.T) {
	_, err := New(providers.NewRegistry(), nil)
	if err == nil {
		t.Fatal("a runtime started without analyzers")
	}
	for _, w := range []string{"released operation preview_artifact has no analyzer", "released capture provider perf has no collector"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("startup error %q does not name %q", err, w)
		}
	}
}

// TestEveryToolInputSchemaCompiles: input validators compile lazily, on a tool's first
// call, so every published schema is compiled here once.
func TestEveryToolInputSchemaCompiles(t *testing.T) {
	rt := newRuntime(t)
	for _, tool := range rt.Tools() {
		if _, f := tool.validator(); f != nil {
			t.Errorf("%s: %v", tool.Name, f)
		}
	}
}
