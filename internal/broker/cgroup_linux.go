package broker

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/flameox/flameox/internal/owner"
	"github.com/flameox/flameox/internal/procfs"
)

// A scope is a cgroup v2 directory created for one invocation, below the cgroup this
// process runs in. The workload is cloned straight into it (CLONE_INTO_CGROUP), by the
// helper or, without one, by the broker, so everything the invocation starts is a member
// from its first instruction, whatever its parent, session or process group: membership
// comes from the kernel (cgroup.procs), and cgroup.kill ends all of it at once. A scope
// is created only where the unified hierarchy is mounted, this process's cgroup is
// writable and the kernel has cgroup.kill (5.14); elsewhere the broker keeps the
// subreaper alone.
type scope struct {
	dir string
	f   *os.File // the directory, opened for clone3's CLONE_INTO_CGROUP
}

// scopePrefix names every scope directory: flameox-PIDNS-PID-START-RANDOM, the inode of
// the creating process's pid namespace and its owner tag. Pids mean something only in
// their namespace, and a cgroup directory may be shared with other containers: a sweep
// judges only the scopes of its own pid namespace.
const scopePrefix = "flameox-"

// scopeName matches a whole scope name: the pid namespace, then the owner tag with the
// random suffix (what owner.Gone judges). A name of any other shape, such as one written
// by another version, is never judged, so never swept.
var scopeName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^flameox-([0-9]+)-([0-9]+-[0-9]+-[0-9a-f]{12})$`) })

// ownerPrefix is the name prefix of this process's scopes.
func ownerPrefix() string { return scopePrefix + pidNamespace() + "-" + owner.Tag() + "-" }

// pidNamespace is the inode number of this process's pid namespace, or "0".
var pidNamespace = sync.OnceValue(func() string {
	l, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return "0"
	}
	ino, ok := strings.CutPrefix(l, "pid:[")
	ino, ok2 := strings.CutSuffix(ino, "]")
	if !ok || !ok2 {
		return "0"
	}
	if _, err := strconv.ParseUint(ino, 10, 64); err != nil {
		return "0"
	}
	return ino
})

// scopesDisabled is set by tests to exercise the subreaper alone.
var scopesDisabled bool

var scopeSweep sync.Once

// newScope creates the scope of one invocation, or returns nil where none can be created.
func newScope() *scope {
	if scopesDisabled {
		return nil
	}
	parent, ok := ownCgroupDir()
	if !ok {
		return nil
	}
	scopeSweep.Do(func() { sweepScopes(parent) })
	dir, ok := newGroupDir(parent)
	if !ok {
		return nil
	}
	if _, err := os.Stat(filepath.Join(dir, "cgroup.kill")); err != nil {
		_ = os.Remove(dir)
		return nil
	}
	f, err := os.OpenFile(dir, os.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		_ = os.Remove(dir)
		return nil
	}
	return &scope{dir: dir, f: f}
}

// newGroupDir creates a directory below parent named as this process's scopes are.
func newGroupDir(parent string) (string, bool) {
	var rnd [6]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return "", false
	}
	dir := filepath.Join(parent, ownerPrefix()+hex.EncodeToString(rnd[:]))
	return dir, os.Mkdir(dir, 0o700) == nil
}

// ownCgroupDir returns the directory of this process's cgroup in the unified hierarchy,
// found once per process: every invocation's scope goes below it.
var ownCgroupDir = sync.OnceValues(func() (string, bool) { return cgroupDir(cgroup2MountPoint, unifiedPath) })

// cgroupDir returns the directory of this process's cgroup in one hierarchy: the mount
// point of the first /proc/self/mountinfo line that mount accepts, joined with the path
// that path finds in /proc/self/cgroup.
func cgroupDir(mount func(line string) (string, bool), path func(content string) (string, bool)) (string, bool) {
	mp, ok := firstMount("/proc/self/mountinfo", mount)
	if !ok {
		return "", false
	}
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", false
	}
	rel, ok := path(string(b))
	if !ok {
		return "", false
	}
	return filepath.Join(mp, rel), true
}

// firstMount returns the mount point of the first line of a mountinfo file that accept
// accepts.
func firstMount(path string, accept func(line string) (string, bool)) (string, bool) {
	f, err := os.Open(path)
	if err != nil {
		return "", false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if mp, ok := accept(sc.Text()); ok {
			return mp, true
		}
	}
	return "", false
}

// cgroup2MountPoint returns the mount point of one mountinfo line when its filesystem type
// is cgroup2 and its root is the hierarchy's root.
func cgroup2MountPoint(line string) (string, bool) {
	if fstype, mp, _, ok := cgroupMount(line); ok && fstype == "cgroup2" {
		return mp, true
	}
	return "", false
}

// cgroupMount splits one mountinfo line into its filesystem type, mount point and super
// options; ok only where the mount's root is the hierarchy's root (a bind mount of a
// subtree would put this process's cgroup path elsewhere). Fields: id parent major:minor
// root mount-point options [optional fields] - fstype source super-options.
func cgroupMount(line string) (fstype, mountPoint, super string, ok bool) {
	f := strings.Fields(line)
	sep := -1
	for i, x := range f {
		if x == "-" {
			sep = i
			break
		}
	}
	if sep < 5 || sep+1 >= len(f) || f[3] != "/" {
		return "", "", "", false
	}
	if sep+3 < len(f) {
		super = f[sep+3]
	}
	return f[sep+1], unescapeMountinfo(f[4]), super, true
}

// unescapeMountinfo undoes mountinfo's octal escapes (\040 for a space and the like).
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// unifiedPath returns this process's cgroup v2 path from /proc/self/cgroup: the "0::PATH"
// line. A path of a cgroup that was removed, or outside this namespace's view, is refused.
func unifiedPath(content string) (string, bool) {
	for _, line := range strings.Split(content, "\n") {
		if rel, ok := strings.CutPrefix(line, "0::"); ok {
			return validCgroupPath(rel)
		}
	}
	return "", false
}

// validCgroupPath returns rel unless it is the path of a cgroup that was removed or lies
// outside this namespace's view.
func validCgroupPath(rel string) (string, bool) {
	if !strings.HasPrefix(rel, "/") || strings.Contains(rel, "(deleted)") || strings.Contains(rel, "/..") {
		return "", false
	}
	return rel, true
}

// members returns the live processes in the scope.
func (s *scope) members() []procfs.Process {
	b, err := os.ReadFile(filepath.Join(s.dir, "cgroup.procs"))
	if err != nil {
		return nil
	}
	var out []procfs.Process
	for _, line := range strings.Split(string(b), "\n") {
		pid, err := strconv.Atoi(line)
		if err != nil {
			continue
		}
		if p, ok := procfs.Stat(pid); ok && p.Live() {
			out = append(out, p)
		}
	}
	return out
}

// populated reports whether any process is still in the scope.
func (s *scope) populated() bool {
	b, err := os.ReadFile(filepath.Join(s.dir, "cgroup.events"))
	if err != nil {
		return false
	}
	return strings.Contains(string(b), "populated 1")
}

// kill ends every process in the scope and waits (boundedly) until the kernel reports it
// empty. It returns how many members were alive when it was called.
func (s *scope) kill() int {
	if !s.populated() {
		return 0
	}
	n := len(s.members())
	_ = os.WriteFile(filepath.Join(s.dir, "cgroup.kill"), []byte("1"), 0)
	deadline := time.Now().Add(2 * time.Second)
	for s.populated() && time.Now().Before(deadline) {
		time.Sleep(2 * time.Millisecond)
	}
	return n
}

// remove kills what is left and removes the scope directory.
func (s *scope) remove() {
	s.kill()
	_ = s.f.Close()
	for i := 0; i < 100; i++ {
		err := os.Remove(s.dir)
		if err == nil || errors.Is(err, os.ErrNotExist) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// sweepScopes removes the scopes of owners that are gone (a broker killed before it could
// remove its own), killing what they still hold. Scopes of live owners, and every scope
// of another pid namespace (whose owners this process cannot judge), are kept.
func sweepScopes(parent string) {
	for _, dir := range staleScopes(parent) {
		f, err := os.OpenFile(dir, os.O_RDONLY|syscall.O_DIRECTORY, 0)
		if err != nil {
			continue
		}
		(&scope{dir: dir, f: f}).remove()
	}
}

// staleScopes lists the directories below parent named as scopes of this pid namespace
// whose owners are gone (the v1 pids groups of tasks_linux.go are named the same way).
func staleScopes(parent string) []string {
	entries, err := os.ReadDir(parent)
	if err != nil {
		return nil
	}
	ns := pidNamespace()
	var out []string
	for _, e := range entries {
		m := scopeName().FindStringSubmatch(e.Name())
		if m == nil || m[1] != ns || !e.IsDir() || !owner.Gone(m[2]) {
			continue
		}
		out = append(out, filepath.Join(parent, e.Name()))
	}
	return out
}
