package fuzztool

import (
	"os"
	"path/filepath"
	goruntime "runtime"
	"testing"
)

// TestCorpusDir pins where the seeds come from: ../shared/corpus beside the module root.
// When fuzztool moved from internal/ to providers/internal/ the path kept one ".." too
// few, and every target silently ran on its hand-written seeds only.
func TestCorpusDir(t *testing.T) {
	_, file, _, _ := goruntime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..", "..")
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root not where expected: %v", err)
	}
	want := filepath.Join(root, "..", "shared", "corpus")
	if got := corpusDir(); filepath.Clean(got) != filepath.Clean(want) {
		t.Fatalf("corpusDir() = %s, want %s", got, want)
	}
	if _, err := os.Stat(want); err != nil {
		t.Skipf("no shared corpus here: %v", err)
	}
}
