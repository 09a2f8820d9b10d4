package runtime

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/failure"
)

// Session scratch ceilings.
const (
	MaxSessionScratchBytes = 1 << 30
	MaxSessionScratchFiles = 8192
	// StorageReserveBytes must stay free on the scratch filesystem while a capture runs.
	StorageReserveBytes = 64 << 20
)

// scratch is the session's bounded scratch area: one directory per capture, reservations
// counted before outputs exist, and removal of a capture's files once no cached analysis
// or active request uses them.
type scratch struct {
	mu   sync.Mutex
	root string
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
		return nil, failure.New(gen.FailureCodeLimitExceeded,
			"the capture's declared outputs (%d bytes, %d files) do not fit in the session scratch (%d bytes, %d files in use of %d bytes, %d files)",
			bytes, files, b, f, int64(MaxSessionScratchBytes), int64(MaxSessionScratchFiles)).
			With("reserved_bytes", bytes).With("reserved_files", files).
			With("recovery", "Lower limits.max_output_bytes, run fewer cases or blocks, or preserve and release earlier captures.")
	}
	if s.root == "" {
		root, err := os.MkdirTemp("", "flameox-session-")
		if err != nil {
			return nil, failure.Wrap(err, gen.FailureCodeExecutionFailure, "the session scratch could not be created")
		}
		s.root = root
	}
	dir, err := os.MkdirTemp(s.root, "capture-")
	if err != nil {
		return nil, failure.Wrap(err, gen.FailureCodeExecutionFailure, "the capture scratch could not be created")
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

// close removes the whole session scratch.
func (s *scratch) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.root != "" {
		os.RemoveAll(s.root)
	}
	s.dirs = map[string]*scratchDir{}
	s.root = ""
}
