package broker

import (
	"bytes"
	"encoding/binary"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// Linux's walk reads each directory with getdents64 and stats its files relative to the
// directory's descriptor (fstatat), so that an entry costs one system call and no
// allocation beyond its name, and walks directories on up to maxWalkers goroutines:
// filepath.WalkDir sorted every directory, allocated an entry and a path per file and
// resolved each path from the root, one at a time (BenchmarkWritableSize).

// direntBufSize is the getdents64 buffer of one walker.
const direntBufSize = 32 << 10

// maxWalkers bounds the goroutines of one walk.
const maxWalkers = 4

// tree walks root and says whether the walk goes on.
func (w *sizeWalk) tree(root string) bool {
	var st unix.Stat_t
	if err := unix.Lstat(root, &st); err != nil {
		return true
	}
	if !w.visit() {
		return false
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		if !w.skip[root] {
			w.total += st.Size
		}
	case unix.S_IFDIR:
		return w.dirs(root)
	}
	return true
}

// walkState is what the walkers of one root share.
type walkState struct {
	w       *sizeWalk
	entries atomic.Int64
	total   atomic.Int64
	stopped atomic.Bool
	mu      sync.Mutex
	queue   []string
	pending sync.WaitGroup
	wake    chan struct{}
}

// dirs walks the directory root (its subdirectories with walkers that take them from a
// shared queue) and says whether the walk goes on.
func (w *sizeWalk) dirs(root string) bool {
	s := &walkState{w: w, wake: make(chan struct{}, maxWalkers)}
	s.entries.Store(int64(w.entries))
	// The root is read here, so that a directory without subdirectories (an empty working
	// directory, a collector's output directory) starts no goroutine.
	first := make([]byte, direntBufSize)
	s.dir(root, first)
	s.mu.Lock()
	queued := len(s.queue)
	s.mu.Unlock()
	if queued > 0 {
		s.walk(first)
	}
	w.entries = int(s.entries.Load())
	w.total += s.total.Load()
	if s.stopped.Load() {
		w.complete = false
		return false
	}
	return true
}

// walk reads the queued directories, and those they queue, on up to maxWalkers
// goroutines (the first with buf) and returns when none is left.
func (s *walkState) walk(buf []byte) {
	done := make(chan struct{})
	go func() { s.pending.Wait(); close(done) }()
	n := min(runtime.GOMAXPROCS(0), maxWalkers)
	var walkers sync.WaitGroup
	for i := range n {
		walkers.Add(1)
		go func() {
			defer walkers.Done()
			buf := buf
			if i > 0 {
				buf = make([]byte, direntBufSize)
			}
			for {
				path, ok := s.pop()
				if ok {
					s.dir(path, buf)
					s.pending.Done()
					continue
				}
				select {
				case <-done:
					return
				case <-s.wake:
				}
			}
		}()
	}
	walkers.Wait()
}

// push queues the directory at path and wakes a waiting walker.
func (s *walkState) push(path string) {
	s.pending.Add(1)
	s.mu.Lock()
	s.queue = append(s.queue, path)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// pop takes a queued directory, the last queued first; false when none is queued.
func (s *walkState) pop() (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.queue) == 0 {
		return "", false
	}
	p := s.queue[len(s.queue)-1]
	s.queue = s.queue[:len(s.queue)-1]
	return p, true
}

// visit counts one entry and says whether the walk goes on.
func (s *walkState) visit() bool {
	if s.stopped.Load() {
		return false
	}
	if s.entries.Add(1) > walkEntryBound {
		s.stopped.Store(true)
		return false
	}
	return true
}

// dir reads the directory at path with buf: its files' sizes are added, its
// subdirectories queued.
func (s *walkState) dir(path string, buf []byte) {
	if s.stopped.Load() {
		return
	}
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	var total int64
	defer func() { s.total.Add(total) }()
	for {
		n, err := unix.Getdents(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n <= 0 {
			return
		}
		for off := 0; off+19 <= n; {
			reclen := int(binary.NativeEndian.Uint16(buf[off+16:]))
			if reclen == 0 || off+reclen > n {
				break
			}
			typ := buf[off+18]
			name := buf[off+19 : off+reclen]
			if i := bytes.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			off += reclen
			if len(name) == 0 || string(name) == "." || string(name) == ".." {
				continue
			}
			if !s.visit() {
				return
			}
			if typ == unix.DT_UNKNOWN || typ == unix.DT_REG {
				var st unix.Stat_t
				if unix.Fstatat(fd, string(name), &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
					continue
				}
				switch st.Mode & unix.S_IFMT {
				case unix.S_IFREG:
					if s.w.skip == nil || !s.w.skip[filepath.Join(path, string(name))] {
						total += st.Size
					}
					continue
				case unix.S_IFDIR:
					typ = unix.DT_DIR
				default:
					continue
				}
			}
			if typ == unix.DT_DIR {
				s.push(filepath.Join(path, string(name)))
			}
		}
	}
}
