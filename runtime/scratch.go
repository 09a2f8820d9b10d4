package runtime

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/failure"
	"github.com/flameox/flameox/internal/owner"
	"github.com/flameox/flameox/internal/workerproc"
)

// Session scratch ceilings.
const (
	MaxSessionScratchBytes = 1 << 30
	MaxSessionScratchFiles = 8192
	// StorageReserveBytes must stay free on the scratch filesystem while a capture or an
	// analysis worker runs.
	StorageReserveBytes = workerproc.StorageReserveBytes
)

// scratch is the session's bounded scratch area: one directory per capture, reservations
// counted before outputs exist, and removal of a capture's files once no cached analysis
// or active request uses them.
type scratch struct {
	mu   sync.Mutex
	dirs map[string]*scratchDir
}

// scratchDir is one capture's directory.
type scratchDir struct {
	path   string
	bytes  int64 // reserved while active, measured after
	files  int64
	active bool
	refs   int // cached records that read from it
}

func newScratch() *scratch { return &scratch{dirs: map[string]*scratchDir{}} }

// usage returns the bytes and files held by reservations and settled directories.
func (s *scratch) usage() (int64, int64) {
	var b, f int64
	for _, d := range s.dirs {
		b += d.bytes
		f += d.files
	}
	return b, f
}

// reserve admits a new capture directory of at most bytes and files, after evict frees
// what it can. It fails with LIMIT_EXCEEDED before anything is allocated.
func (s *scratch) reserve(bytes, files int64, evict func(need func() bool)) (*scratchDir, *failure.Failure) {
	fits := func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		b, f := s.usage()
		return b+bytes <= MaxSessionScratchBytes && f+files <= MaxSessionScratchFiles
	}
	if !fits() {
		evict(fits)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	b, f := s.usage()
	if b+bytes > MaxSessionScratchBytes || f+files > MaxSessionScratchFiles {
		if held := s.activeReservations(); held > 0 && bytes <= MaxSessionScratchBytes && files <= MaxSessionScratchFiles {
			// Running captures hold the room; it frees when they end.
			fl := failure.New(gen.FailureCodeLimitExceeded,
				"the session scratch is held by %d running captures; this capture's outputs (%d bytes, %d files) fit once they end", held, bytes, files).
				With("reason", "scratch_held_by_running_captures").With("running_captures", held).
				With("reserved_bytes", bytes).With("reserved_files", files)
			fl.Retryable = true
			fl.NextAction = &gen.NextAction{WaitAndRetry: &gen.WaitAndRetry{Kind: "wait_and_retry", RetryAfterMS: &retryAfterMS,
				Message: "Retry the same call when the running captures have finished."}}
			return nil, fl
		}
		return nil, failure.New(gen.FailureCodeLimitExceeded,
			"the capture's declared outputs (%d bytes, %d files) do not fit in the session scratch (%d bytes, %d files in use of %d bytes, %d files)",
			bytes, files, b, f, int64(MaxSessionScratchBytes), int64(MaxSessionScratchFiles)).
			With("reserved_bytes", bytes).With("reserved_files", files).
			With("recovery", "Lower limits.max_output_bytes, run fewer cases or blocks, or preserve and release earlier captures.")
	}
	// Each capture's directory is made in the system temporary directory itself, not in
	// a session directory: a directory costs 0.15 to 0.3 ms to make and as much to remove
	// on this project's ext4 guest, and a one-shot capture paid for one that held only
	// its own. The name carries the owner tag, so a later start can tell scratch left
	// behind by a killed process from that of a live one (removeStaleScratch).
	dir, err := os.MkdirTemp("", scratchPrefix+owner.Tag()+"-")
	if err != nil {
		return nil, scratchIOFailure(err, "the capture scratch could not be created")
	}
	d := &scratchDir{path: dir, bytes: bytes, files: files, active: true}
	s.dirs[dir] = d
	return d, nil
}

// settle ends a capture's reservation: the directory now counts what it holds. A
// directory no cached record references is removed.
func (s *scratch) settle(d *scratchDir) {
	var bytes, files int64
	filepath.WalkDir(d.path, func(p string, e fs.DirEntry, err error) error {
		if err == nil && e.Type().IsRegular() {
			if info, err := e.Info(); err == nil {
				bytes += info.Size()
			}
			files++
		}
		return nil
	})
	s.mu.Lock()
	defer s.mu.Unlock()
	d.bytes, d.files, d.active = bytes, files, false
	s.dropIfUnused(d)
}

func (s *scratch) dropIfUnused(d *scratchDir) {
	if d.refs <= 0 && !d.active {
		os.RemoveAll(d.path)
		delete(s.dirs, d.path)
	}
}

// owner returns the capture directory holding path, or nil.
func (s *scratch) owner(path string) *scratchDir {
	s.mu.Lock()
	defer s.mu.Unlock()
	for dir, d := range s.dirs {
		if strings.HasPrefix(path, dir+string(filepath.Separator)) {
			return d
		}
	}
	return nil
}

// acquire and release count a cached record's use of directories.
func (s *scratch) acquire(ds []*scratchDir) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, d := range ds {
		d.refs++
	}
}

func (s *scratch) release(ds []*scratchDir) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, d := range ds {
		d.refs--
		s.dropIfUnused(d)
	}
}

// scratchPrefix begins the name of every capture's scratch directory in the system
// temporary directory: flameox-session-PID-START-RANDOM, the owner tag of the session's
// process.
const scratchPrefix = "flameox-session-"

// stalePrefixes begin the names of the owner-tagged scratch directories removeStaleScratch
// sweeps: sessions' and analysis workers'.
var stalePrefixes = []string{scratchPrefix, workerproc.ScratchPrefix}

// ownerOf returns the owner part (PID-START-RANDOM) of a swept scratch directory's name.
func ownerOf(name string) (string, bool) {
	for _, p := range stalePrefixes {
		if rest, ok := strings.CutPrefix(name, p); ok {
			return rest, true
		}
	}
	return "", false
}

// staleSweepInterval is how often this user's processes sweep the system temporary
// directory for the scratch of gone owners. Listing it costs every process that builds a
// runtime (a CLI call, a server, an analysis worker) about 2 ms when it holds 5,000
// entries (decision 0067, sixth addendum); a scratch directory its owner could not remove
// waits at most this long after the next start.
const staleSweepInterval = 10 * time.Minute

// sweptStampPrefix begins the name of the file in the temporary directory whose
// modification time records this user's last sweep: flameox-swept-UID.
const sweptStampPrefix = "flameox-swept-"

// sweepStaleScratch runs removeStaleScratch on dir unless this user's stamp there says a
// sweep began within staleSweepInterval before now; it stamps first, so that processes
// starting together do not all sweep. A stamp that is not a regular file of this user
// (another user's, a link, a directory) is neither trusted nor touched: every start then
// sweeps, as before the stamp.
func sweepStaleScratch(dir string, now time.Time) {
	stamp := filepath.Join(dir, sweptStampPrefix+strconv.Itoa(os.Getuid()))
	st, err := os.Lstat(stamp)
	switch {
	case err == nil && st.Mode().IsRegular() && ownedBySelf(st):
		if age := now.Sub(st.ModTime()); age >= 0 && age < staleSweepInterval {
			return
		}
		_ = os.Chtimes(stamp, now, now)
	case errors.Is(err, fs.ErrNotExist):
		// O_EXCL: a name made meanwhile, a link included, is not opened.
		if f, err := os.OpenFile(stamp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600); err == nil {
			f.Close()
			_ = os.Chtimes(stamp, now, now)
		}
	}
	removeStaleScratch(dir)
}

// removeStaleScratch removes the session and worker scratch directories in dir (the system
// temporary directory) that belong to this user and whose owning process is provably gone:
// a server or CLI killed before it could remove its own. Directories of live owners, of
// other users and of names without an owner tag are left alone.
func removeStaleScratch(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		name, ok := ownerOf(e.Name())
		if !ok || !e.IsDir() || !owner.Gone(name) {
			continue
		}
		p := filepath.Join(dir, e.Name())
		if st, err := os.Lstat(p); err != nil || !st.IsDir() || !ownedBySelf(st) {
			continue
		}
		os.RemoveAll(p)
	}
}

// close removes the whole session scratch: every capture directory it holds.
func (s *scratch) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for dir := range s.dirs {
		os.RemoveAll(dir)
	}
	s.dirs = map[string]*scratchDir{}
}

// retryAfterMS is the suggested wait before retrying a transient scratch failure.
var retryAfterMS int64 = 5000

// activeReservations counts the capture directories still reserved by running captures.
// The caller holds s.mu.
func (s *scratch) activeReservations() int {
	n := 0
	for _, d := range s.dirs {
		if d.active {
			n++
		}
	}
	return n
}

// scratchIOFailure is a scratch directory that could not be created: retryable, with the
// reason (no space, no permission, another I/O error) and never the path.
func scratchIOFailure(err error, msg string) *failure.Failure {
	reason := "io_error"
	switch {
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		reason = "no_space_left"
	case errors.Is(err, fs.ErrPermission):
		reason = "permission_denied"
	}
	f := failure.Wrap(err, gen.FailureCodeIoFailure, "%s (%s)", msg, strings.ReplaceAll(reason, "_", " ")).
		With("reason", reason).With("location", "the system temporary directory (TMPDIR)")
	f.Retryable = true
	f.NextAction = &gen.NextAction{WaitAndRetry: &gen.WaitAndRetry{Kind: "wait_and_retry", RetryAfterMS: &retryAfterMS,
		Message: "Free space or fix permissions in the temporary directory (TMPDIR), then retry the same call."}}
	return f
}
