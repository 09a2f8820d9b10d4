package runtime

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	gen "github.com/flameox/flameox/generated/contracts"
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

// TestAnalysisDeadlineIsTimeoutNotCancellation: running past limits.timeout_seconds is a
// LIMIT_EXCEEDED at that limit; the caller's cancellation stays CANCELLED.
func TestAnalysisDeadlineIsTimeoutNotCancellation(t *testing.T) {
	expired, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	f := providerFailure(expired, expired.Err(), nil)
	if f.Code != gen.FailureCodeLimitExceeded || fmt.Sprint(f.FieldPath) != "[limits timeout_seconds]" {
		t.Errorf("deadline = %+v", f)
	}
	cancelled, stop := context.WithCancel(context.Background())
	stop()
	if f := providerFailure(cancelled, cancelled.Err(), nil); f.Code != gen.FailureCodeCancelled {
		t.Errorf("cancellation = %+v", f)
	}
}
