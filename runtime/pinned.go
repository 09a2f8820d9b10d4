package runtime

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"strconv"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/failure"
	"github.com/flameox/flameox/internal/workerproc"
)

// In-process analyses read a verified copy (issue 40, item 1; decision 0054). An input is
// analysed in the server process only when its size says its decoder cannot grow past
// its bounds (inProcess) and its format declares a decoder bounded by the bytes it reads
// (providers.Registry.Amplifying names the others: SQLite, converted artifacts). The size
// was taken from the path; a file swapped for a larger or hostile one between that
// decision and the decoder's open would reach the server's decoder unbounded. So the
// server copies each file input while hashing it, checks the copy against the digest and
// size the request resolved, and hands the decoder the copy: what is decoded is what was
// measured. The copies are at most inProcessBytes together, in an owner-tagged scratch
// directory the next start sweeps if this process dies.

// needsWorker reports whether an analysis of in runs in the worker: inputs too large or
// compressed for the server process, or of a format whose decoding amplifies.
func (rt *Runtime) needsWorker(in []resolved) bool {
	if !inProcess(in) {
		return true
	}
	for _, r := range in {
		if rt.providers.IsAmplifying(r.format) {
			return true
		}
	}
	return false
}

// pinInputs returns in with each file input (not an evidence payload, which the store
// keeps immutable, nor a file of the sealed capture scratch, which nothing left can
// change: sealedDir.holds) read from a private copy that matches its resolved digest and
// size, and a function that removes the copies. A file that no longer matches is the
// changed input failure recheck gives. sealed is the zero sealedDir outside a capture's
// analysis.
func pinInputs(in []resolved, sealed sealedDir) ([]resolved, func(), *failure.Failure) {
	var dir string
	done := func() {
		if dir != "" {
			os.RemoveAll(dir)
		}
	}
	out := append([]resolved(nil), in...)
	for i := range out {
		r := &out[i]
		if r.evidence != nil || r.members != nil || sealed.holds(r.path) {
			continue
		}
		if dir == "" {
			d, err := workerproc.Scratch()
			if err != nil {
				return nil, done, failure.Wrap(err, gen.FailureCodeIoFailure, "the analysis scratch directory cannot be created; check TMPDIR's free space and permissions")
			}
			dir = d
		}
		// The copy keeps the file's name: readers may go by its extension.
		sub := filepath.Join(dir, "input-"+strconv.Itoa(i))
		if err := os.Mkdir(sub, 0o700); err != nil {
			return nil, done, failure.Wrap(err, gen.FailureCodeIoFailure, "the analysis scratch directory cannot be written")
		}
		dst := filepath.Join(sub, filepath.Base(r.path))
		ok, err := copyInput(r.path, dst, r.size, r.sha256)
		if err != nil || !ok {
			done()
			return nil, func() {}, changedInput(i, r.sha256)
		}
		r.read = dst
	}
	return out, done, nil
}

// copyInput is copyVerified, unless a test counts the copies.
var copyInput = copyVerified

// copyVerified copies at most size+1 bytes of src to dst and reports whether they are
// exactly size bytes with the given SHA-256.
func copyVerified(src, dst string, size int64, sum string) (bool, error) {
	in, err := os.Open(src)
	if err != nil {
		return false, err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return false, err
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(out, h), io.LimitReader(in, size+1))
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return false, err
	}
	return n == size && hex.EncodeToString(h.Sum(nil)) == sum, nil
}

// changedInput is the failure of source i whose bytes no longer have the digest sum.
func changedInput(i int, sum string) *failure.Failure {
	return failure.New(gen.FailureCodeMissingOrChangedInput,
		"source %d changed or disappeared during analysis; retry to analyze its current content", i).
		Field(failure.Path("sources", i, "path"), nil).With("source_index", i).With("sha256_before", sum)
}

// A capture's own files are read in place (decision 0054, addendum). The copy guards
// the size decision against a file another process swaps or grows after it; a capture's
// artifacts and console files lie in the runtime's own scratch directory (0700, named by
// the runtime), written by the capture's processes and by the runtime itself, and once
// every process of the capture has ended and its containment leaves none detached
// (broker.GapDetachedDescendants), no process of the workload is left to change them. A
// copy would be one more set of directories and files made and removed in the capture's
// path (about 1.5 to 3.5 ms of a trivial capture here, most of it the file system's).

// sealedDir is the sealed scratch of a capture: dir as the capture names it, real with
// its links resolved (once, for every input). The zero sealedDir holds nothing.
type sealedDir struct{ dir, real string }

// sealScratch returns dir as a sealedDir; the zero one where dir cannot be resolved.
func sealScratch(dir string) sealedDir {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return sealedDir{}
	}
	return sealedDir{dir: dir, real: real}
}

// sealedContextKey carries the sealed scratch of the capture being analysed.
type sealedContextKey struct{}

// withSealedScratch returns ctx carrying dir as the sealed scratch of a capture whose
// processes have all ended with none detached.
func withSealedScratch(ctx context.Context, dir string) context.Context {
	return context.WithValue(ctx, sealedContextKey{}, sealScratch(dir))
}

// sealedScratch returns the sealed scratch ctx carries, or the zero sealedDir.
func sealedScratch(ctx context.Context) sealedDir {
	s, _ := ctx.Value(sealedContextKey{}).(sealedDir)
	return s
}

// holds reports whether path is a regular file below the sealed scratch reached through
// no symbolic link: a link the workload left (to a file of the user's elsewhere, or
// another file of the scratch) is copied as any other input.
func (s sealedDir) holds(path string) bool {
	if s.dir == "" {
		return false
	}
	rel, err := filepath.Rel(s.dir, path)
	if err != nil || !filepath.IsLocal(rel) {
		return false
	}
	realPath, err := filepath.EvalSymlinks(path)
	if err != nil || realPath != filepath.Join(s.real, rel) {
		return false
	}
	st, err := os.Lstat(path)
	return err == nil && st.Mode().IsRegular()
}
