package runtime

import (
	"compress/gzip"
	"context"
	"fmt"
	"os"
	"path/filepath"
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

// TestProfileDecompressionIsBounded: a small gzip of collapsed stacks that expands past
// limits.max_input_bytes fails typed instead of being read whole.
func TestProfileDecompressionIsBounded(t *testing.T) {
	p := filepath.Join(t.TempDir(), "stacks.folded.gz")
	f, _ := os.Create(p)
	zw := gzip.NewWriter(f)
	line := []byte("main;work;leaf 1\n")
	for i := 0; i < (4<<20)/len(line); i++ {
		zw.Write(line)
	}
	zw.Close()
	f.Close()
	rt := newRuntime(t)
	_, fl := call(t, rt, "rank_cpu_hotspots", map[string]any{"sources": []any{pathSource(p)},
		"limits": map[string]any{"max_input_bytes": 1 << 20}})
	if fl == nil || fl.Code != gen.FailureCodeLimitExceeded || fl.Details["limit"] != int64(1<<20) {
		t.Fatalf("failure = %+v", fl)
	}
}
