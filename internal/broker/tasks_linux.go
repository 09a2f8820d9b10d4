package broker

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/flameox/flameox/internal/procfs"
)

// On Linux the task bound is enforced by the strongest of, in order:
//
//   - cgroup: pids.max of the invocation's cgroup v2 scope. Where the scope has no pids
//     controller but its parent (the cgroup this process runs in) offers one, the broker
//     enables it for its children first (a threaded controller: allowed with this process
//     in the parent as long as no domain controller is enabled there).
//   - cgroup_v1: pids.max of a group created for the invocation in the v1 pids hierarchy
//     (a hybrid host, where pids is not on the unified hierarchy). The helper's forking
//     thread moves itself into the group through its tasks file, forks the workload there
//     and moves back: the kernel moves the writing thread alone without taking its global
//     threadgroup lock, which a process's move takes and which then waits for an RCU grace
//     period (6 to 16 ms on the project's VM when the lock has been idle).
//   - rlimit: RLIMIT_NPROC of the workload, set to the user's tasks at launch plus the
//     bound. The limit counts every task of the user, so it is shared with whatever else
//     the user starts meanwhile; it never affects another process (a fork is judged by
//     the forking process's own limit); root and CAP_SYS_RESOURCE are exempt, so it is not
//     used for root.
//
// Only the workload's tasks count, and the helper never fails to create a thread of its
// own because the workload filled the bound: the helper clones the workload into the v2
// scope and stays outside it, and returns from the v1 group once the workload runs.

// taskLimit is the task bound of one invocation as it will be enforced.
type taskLimit struct {
	kind string // cgroup, cgroup_v1 or rlimit
	max  int64
	// dir is the directory whose pids.events counts refusals (cgroup, cgroup_v1).
	dir string
	// join is the v1 group's tasks file, which the helper's forking thread writes 0 to
	// (itself) before it forks the workload; home is the tasks file of the group's parent,
	// through which it returns once the workload runs (cgroup_v1). Either may be nil.
	join, home *os.File
}

// limitTasks prepares the task bound n (0: none) of an invocation with the scope sc (nil
// where none could be created); nil when no bound can be enforced here.
func limitTasks(n int64, sc *scope) *taskLimit {
	if n <= 0 {
		return nil
	}
	if sc != nil && sc.setPidsMax(n) {
		return &taskLimit{kind: "cgroup", max: n, dir: sc.dir}
	}
	if t := newV1Group(n); t != nil {
		return t
	}
	if os.Geteuid() != 0 {
		return &taskLimit{kind: "rlimit", max: n}
	}
	return nil
}

// helperOptions are the helper's task options and the files they name, numbered from
// fd first. The encoding is this package's, the parsing internal/subreaper's (its
// applyTaskOptions; its package comment has the format).
func (t *taskLimit) helperOptions(first int) (string, []*os.File) {
	if t == nil {
		return "-", nil
	}
	var opts []string
	var files []*os.File
	for _, f := range []struct {
		name string
		f    *os.File
	}{{"join", t.join}, {"home", t.home}} {
		if f.f != nil {
			opts = append(opts, f.name+"="+strconv.Itoa(first+len(files)))
			files = append(files, f.f)
		}
	}
	if t.kind == "rlimit" {
		opts = append(opts, "nproc="+strconv.FormatInt(t.max, 10))
	}
	if len(opts) == 0 {
		return "-", nil
	}
	return strings.Join(opts, ","), files
}

// current reads how many tasks the cgroup holds (pids.current); 0 when it cannot be read.
func (t *taskLimit) current() int64 {
	if t == nil || t.dir == "" {
		return 0
	}
	b, err := os.ReadFile(filepath.Join(t.dir, "pids.current"))
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return n
}

// refused reads how many forks the cgroup refused at the bound.
func (t *taskLimit) refused() int64 {
	if t == nil || t.dir == "" {
		return 0
	}
	b, err := os.ReadFile(filepath.Join(t.dir, "pids.events"))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "max "); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

// closeFiles closes the files handed to the helper.
func (t *taskLimit) closeFiles() {
	if t == nil {
		return
	}
	for _, f := range []*os.File{t.join, t.home} {
		if f != nil {
			f.Close()
		}
	}
	t.join, t.home = nil, nil
}

// remove ends what is still in a v1 group and removes it; it returns how many members
// were alive. A v2 scope is removed with the scope.
func (t *taskLimit) remove() int {
	t.closeFiles()
	if t == nil || t.kind != "cgroup_v1" {
		return 0
	}
	return removeV1Group(t.dir)
}

// setPidsMax writes the scope's pids.max, enabling the pids controller for the parent's
// children first where the scope has none.
func (s *scope) setPidsMax(n int64) bool {
	v := strconv.FormatInt(n, 10)
	p := filepath.Join(s.dir, "pids.max")
	if writeControl(p, v) == nil {
		return true
	}
	parent := filepath.Dir(s.dir)
	if !hasWord(filepath.Join(parent, "cgroup.controllers"), "pids") ||
		writeControl(filepath.Join(parent, "cgroup.subtree_control"), "+pids") != nil {
		return false
	}
	return writeControl(p, v) == nil
}

// writeControl writes value to an existing cgroup control file (never creating one).
func writeControl(path, value string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(value)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// hasWord reports whether the file holds word as a whitespace-separated word.
func hasWord(path, word string) bool {
	b, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	for _, w := range strings.Fields(string(b)) {
		if w == word {
			return true
		}
	}
	return false
}

// v1PidsDir is the directory of this process's group in the v1 pids hierarchy, found
// once per process; false where that hierarchy is not mounted.
var v1PidsDir = sync.OnceValues(func() (string, bool) { return cgroupDir(v1PidsMountPoint, v1PidsPath) })

// v1PidsMountPoint returns the mount point of one mountinfo line when it mounts the root
// of the v1 hierarchy that holds the pids controller.
func v1PidsMountPoint(line string) (string, bool) {
	if fstype, mp, super, ok := cgroupMount(line); ok && fstype == "cgroup" && slices.Contains(strings.Split(super, ","), "pids") {
		return mp, true
	}
	return "", false
}

// v1PidsPath returns this process's path in the v1 pids hierarchy from /proc/self/cgroup
// ("N:pids:/path", the controller possibly listed with others).
func v1PidsPath(content string) (string, bool) {
	for _, line := range strings.Split(content, "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) == 3 && f[0] != "0" && slices.Contains(strings.Split(f[1], ","), "pids") {
			return validCgroupPath(f[2])
		}
	}
	return "", false
}

// v1Disabled is set by tests to exercise the mechanisms after it.
var v1Disabled bool

var v1Sweep sync.Once

// newV1Group creates the v1 pids group of one invocation with pids.max n; nil where none
// can be created.
func newV1Group(n int64) *taskLimit {
	if v1Disabled {
		return nil
	}
	parent, ok := v1PidsDir()
	if !ok {
		return nil
	}
	v1Sweep.Do(func() {
		for _, dir := range staleScopes(parent) {
			removeV1Group(dir)
		}
	})
	dir, ok := newGroupDir(parent)
	if !ok {
		return nil
	}
	t := &taskLimit{kind: "cgroup_v1", max: n, dir: dir}
	var err error
	if err = writeControl(filepath.Join(dir, "pids.max"), strconv.FormatInt(n, 10)); err == nil {
		t.join, err = os.OpenFile(filepath.Join(dir, "tasks"), os.O_WRONLY, 0)
	}
	if err != nil {
		_ = os.Remove(dir)
		return nil
	}
	t.home, _ = os.OpenFile(filepath.Join(parent, "tasks"), os.O_WRONLY, 0)
	return t
}

// removeV1Group kills every member of a v1 group (a v1 hierarchy has no cgroup.kill),
// waits boundedly until it is empty and removes it. It returns how many members were
// alive.
func removeV1Group(dir string) int {
	killed := map[int]bool{}
	deadline := time.Now().Add(2 * time.Second)
	for {
		b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		if err != nil {
			break
		}
		pids := strings.Fields(string(b))
		if len(pids) == 0 || time.Now().After(deadline) {
			break
		}
		for _, s := range pids {
			pid, err := strconv.Atoi(s)
			if err != nil || pid <= 0 {
				continue
			}
			if p, ok := procfs.Stat(pid); ok && p.Live() {
				killed[pid] = true
			}
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(2 * time.Millisecond)
	}
	for i := 0; i < 100; i++ {
		err := os.Remove(dir)
		if err == nil || errors.Is(err, os.ErrNotExist) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	return len(killed)
}
