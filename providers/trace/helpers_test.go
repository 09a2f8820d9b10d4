package trace

import (
	"os"
	"testing"

	"github.com/flameox/flameox/internal/testtool"
)

// corpusFile returns the path of a shared corpus file, skipping the test when the
// corpus (../shared beside the repository) is absent.
func corpusFile(t testing.TB, name string) string {
	t.Helper()
	return testtool.Corpus(t, name)
}

func writeFile(path string, b []byte) error { return os.WriteFile(path, b, 0o644) }
