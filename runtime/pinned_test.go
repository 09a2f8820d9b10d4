package runtime

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/flameox/flameox/internal/broker"
	"github.com/flameox/flameox/internal/sourcefile"
	"github.com/flameox/flameox/internal/testtool"
	"github.com/flameox/flameox/providers/all"
	"github.com/flameox/flameox/repository"
)

// resolvedFile is a file input resolved as the runtime resolves one: its size and digest.
func resolvedFile(t *testing.T, path string) resolved {
	t.Helper()
	sum, size, err := sourcefile.Hash(path)
	if err != nil {
		t.Fatal(err)
	}
	return resolved{path: path, size: size, sha256: sum, format: "text", role: "input"}
}

// TestPinnedInputsAreWhatWasMeasured: the decoder of an in-process analysis reads a copy
// taken while hashing, so a file swapped after the size decided "in process" cannot reach
// it (issue 40, item 1: "An input swapped between the size check and the decoder's open
// bypasses the worker"); a file that changed before the copy is the changed-input failure.
func TestPinnedInputsAreWhatWasMeasured(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(path, []byte("first line\nsecond line\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	in := []resolved{resolvedFile(t, path)}
	pinned, done, f := pinInputs(in, sealedDir{})
	if f != nil {
		t.Fatal(f)
	}
	copyPath := pinned[0].read
	if copyPath == "" || copyPath == path || filepath.Base(copyPath) != "notes.txt" || pinned[0].path != path {
		t.Fatalf("pinned input = %+v", pinned[0])
	}
	// The original is swapped for something else after the decision: the decoder's input
	// is still the measured bytes, and the recheck reports the swap.
	if err := os.WriteFile(path, make([]byte, inProcessBytes*4), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := providerInputs(pinned)[0].Path; got != copyPath {
		t.Fatalf("the decoder reads %s, not the copy %s", got, copyPath)
	}
	if b, err := os.ReadFile(copyPath); err != nil || string(b) != "first line\nsecond line\n" {
		t.Fatalf("copy = %q, %v", b, err)
	}
	if f := recheck(in); f == nil || f.Code != "MISSING_OR_CHANGED_INPUT" {
		t.Fatalf("recheck after the swap = %v", f)
	}
	done()
	if _, err := os.Stat(filepath.Dir(filepath.Dir(copyPath))); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the copies outlive the analysis: %v", err)
	}
	// Swapped before the copy: refused, and nothing is left behind.
	_, done, f = pinInputs(in, sealedDir{})
	done()
	if f == nil || f.Code != "MISSING_OR_CHANGED_INPUT" || f.Details["source_index"] != 0 {
		t.Fatalf("pinning a changed file = %v", f)
	}
}

// TestAmplifyingFormatsRunInTheWorker: a small SQLite input (a coverage.py data file, an
// Nsight Systems export, each well under the in-process size) goes to the worker, as the
// families declare, while a small text file stays in process.
func TestAmplifyingFormatsRunInTheWorker(t *testing.T) {
	rt, err := New(all.Registry(), nil, WithAnalysisWorker(filepath.Join(t.TempDir(), "no-worker")),
		WithStore(repository.Location{Dir: filepath.Join(t.TempDir(), "store"), Source: repository.SourceExplicit}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rt.Close)
	var launches atomic.Int64
	rt.launch = func(context.Context, broker.Spec) (*broker.Result, error) {
		launches.Add(1)
		return nil, errors.New("fake launcher")
	}
	cov := testtool.Corpus(t, "local__coverage_py_branch.coverage")
	// A small SQLite file whose b-tree repeats a page (the adversary's input, 180 KiB).
	dag := testtool.SmallSQLiteDAG(t)
	text := filepath.Join(t.TempDir(), "notes.txt")
	os.WriteFile(text, []byte("a line\n"), 0o600)
	for _, c := range []struct {
		tool, path, format string
		worker             bool
	}{
		{"summarize_coverage", cov, "coverage", true},
		{"summarize_coverage", dag, "coverage", true},
		{"summarize_trace_operations", dag, "nsys-sqlite", true},
		{"preview_artifact", text, "text", false},
	} {
		before := launches.Load()
		_, f := call(t, rt, c.tool, map[string]any{"sources": []any{map[string]any{"kind": "path", "path": c.path, "format": c.format}}})
		if got := launches.Load() > before; got != c.worker {
			t.Errorf("%s of %s (%s): worker %v, want %v (failure %v)", c.tool, filepath.Base(c.path), c.format, got, c.worker, f)
		}
	}
}

// TestSealedFilesAreReadInPlace: in a sealed capture scratch, a regular file reached
// through no link is read where it is; a link the workload left (to a file outside, or
// to another file of the scratch), a file outside the scratch and every file of an
// analysis that is not a sealed capture's are copied (decision 0054, addendum).
func TestSealedFilesAreReadInPlace(t *testing.T) {
	base := t.TempDir()
	scratch := filepath.Join(base, "scratch")
	exdir := filepath.Join(scratch, "capture-0001")
	if err := os.MkdirAll(exdir, 0o700); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(base, "outside.txt")
	own := filepath.Join(exdir, "stdout")
	for _, p := range []string{outside, own} {
		if err := os.WriteFile(p, []byte("a line\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	linkOut, linkIn := filepath.Join(exdir, "profile.txt"), filepath.Join(exdir, "stderr")
	linkedDir := filepath.Join(scratch, "capture-0002")
	if os.Symlink(outside, linkOut) != nil || os.Symlink(own, linkIn) != nil || os.Symlink(exdir, linkedDir) != nil {
		t.Skip("this file system has no symbolic links")
	}
	// The scratch named through a link (as macOS names TMPDIR) is still the scratch.
	scratchLink := filepath.Join(base, "scratch-link")
	if err := os.Symlink(scratch, scratchLink); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, sealed, path string
		inPlace            bool
	}{
		{"own file", scratch, own, true},
		{"own file, scratch named by a link", scratchLink, filepath.Join(scratchLink, "capture-0001", "stdout"), true},
		{"link to a file outside", scratch, linkOut, false},
		{"link to a file of the scratch", scratch, linkIn, false},
		{"file below a linked directory", scratch, filepath.Join(linkedDir, "stdout"), false},
		{"file outside", scratch, outside, false},
		{"not a capture's analysis", "", own, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var sealed sealedDir
			if c.sealed != "" {
				sealed = sealScratch(c.sealed)
			}
			pinned, done, f := pinInputs([]resolved{resolvedFile(t, c.path)}, sealed)
			defer done()
			if f != nil {
				t.Fatal(f)
			}
			if got := pinned[0].read == ""; got != c.inPlace {
				t.Errorf("read in place = %v (read %q), want %v", got, pinned[0].read, c.inPlace)
			}
		})
	}
}

// TestCaptureCopiesOnlyWhatMayStillChange: a capture whose containment ends every
// process of it analyses its console files in place; one whose containment may leave a
// detached descendant (a process group alone) copies them first, as any input.
func TestCaptureCopiesOnlyWhatMayStillChange(t *testing.T) {
	for _, c := range []struct {
		name   string
		gaps   []string
		copies bool
	}{
		{"sealed", nil, false},
		{"detached descendants possible", []string{broker.GapDetachedDescendants, broker.GapBrokerDeath}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			code := 0
			old := runBroker
			runBroker = func(_ context.Context, s broker.Spec) (*broker.Result, error) {
				for _, p := range []string{s.StdoutFile, s.StderrFile} {
					if p != "" {
						if err := os.WriteFile(p, []byte("a line\n"), 0o600); err != nil {
							return nil, err
						}
					}
				}
				return &broker.Result{Termination: "exited", ExitCode: &code, Started: true, ReadersSettled: true,
					WritableComplete: true, Mechanism: "process_group", Gaps: c.gaps}, nil
			}
			t.Cleanup(func() { runBroker = old })
			var copies atomic.Int64
			oldCopy := copyInput
			copyInput = func(src, dst string, size int64, sum string) (bool, error) {
				copies.Add(1)
				return oldCopy(src, dst, size, sum)
			}
			t.Cleanup(func() { copyInput = oldCopy })
			rt := newRuntime(t)
			res, f := capture(t, rt, map[string]any{"target": target(t.TempDir(), "true"), "provider": direct()})
			if f != nil {
				t.Fatal(f)
			}
			if res.AnalysisFailure != nil || len(res.Result.Inputs) == 0 {
				t.Fatalf("analysis failure %+v, inputs %+v", res.AnalysisFailure, res.Result.Inputs)
			}
			if got := copies.Load() > 0; got != c.copies {
				t.Errorf("copied %d inputs, want copies %v", copies.Load(), c.copies)
			}
		})
	}
}
