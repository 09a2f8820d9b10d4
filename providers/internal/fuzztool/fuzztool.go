// Package fuzztool holds what the decoders' native fuzz targets share: seeds from the
// shared corpus (skipped when it is absent), a scratch file for decoders that read a path,
// and the error invariants every target asserts.
package fuzztool

import (
	"errors"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"testing"
	"time"

	"github.com/flameox/flameox/providers"
)

// MaxSeedBytes bounds a corpus file used as a seed: larger ones slow every mutation.
const MaxSeedBytes = 256 << 10

// corpusDir is the shared corpus beside the repository: this file is
// <repo>/providers/internal/fuzztool/fuzztool.go, the corpus <repo>/../shared/corpus.
func corpusDir() string {
	_, file, _, _ := goruntime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "..", "shared", "corpus")
}

// Corpus adds the named files of the shared corpus (../shared/corpus beside the
// repository) as seeds; a missing or too large file is left out, so the targets run
// without the corpus on their hand-written seeds.
func Corpus(f *testing.F, names ...string) {
	f.Helper()
	for _, n := range names {
		if b := File(n); b != nil {
			f.Add(b)
		}
	}
}

// File is the named file of the shared corpus, or nil when it is missing or larger than
// MaxSeedBytes: for a target that adds a transformed seed (a gzip file decompressed).
func File(name string) []byte {
	b, err := os.ReadFile(filepath.Join(corpusDir(), name))
	if err != nil || len(b) > MaxSeedBytes {
		return nil
	}
	return b
}

// WriteInput writes b to a file named name in a fresh temporary directory and returns its path.
func WriteInput(t *testing.T, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// CheckError fails the target unless err is nil or one of the typed decoder errors
// (DecodeError, LimitError, UnsupportedError, FieldError), and unless its message names
// no host path: neither a temporary directory nor any of paths.
func CheckError(t *testing.T, err error, paths ...string) {
	t.Helper()
	if err == nil {
		return
	}
	var (
		de *providers.DecodeError
		le *providers.LimitError
		ue *providers.UnsupportedError
		fe *providers.FieldError
	)
	if !errors.As(err, &de) && !errors.As(err, &le) && !errors.As(err, &ue) && !errors.As(err, &fe) {
		t.Fatalf("untyped error %T: %v", err, err)
	}
	msg := err.Error()
	if strings.Contains(msg, "/tmp") || strings.Contains(msg, os.TempDir()) {
		t.Fatalf("error names a temporary path: %q", msg)
	}
	for _, p := range paths {
		if p != "" && strings.Contains(msg, p) {
			t.Fatalf("error names the input path: %q", msg)
		}
		if b := filepath.Base(p); len(b) > 12 && strings.Contains(msg, b) {
			t.Fatalf("error names the input file: %q", msg)
		}
	}
}

// NonNegative fails the target when a count is negative.
func NonNegative(t *testing.T, what string, n int64) {
	t.Helper()
	if n < 0 {
		t.Fatalf("%s = %d < 0", what, n)
	}
}

// HangAfter is how long one input may take before the target fails it as a hang (the
// fuzzing engine has no per-input deadline, so a hang would otherwise stall it silently).
var HangAfter = 10 * time.Second

// Bounded runs fn, which may call t.Fatal, and fails the input when it runs longer than
// HangAfter, so that the fuzzing engine keeps it as a crasher.
func Bounded(t *testing.T, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	select {
	case <-done:
		if t.Failed() {
			t.FailNow()
		}
	case <-time.After(HangAfter):
		t.Fatalf("the decoder ran longer than %v on this input", HangAfter)
	}
}
