package subreaper

import (
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flameox/flameox/internal/procfs"
)

// TestApplyTaskOptions: the options internal/broker encodes are applied as they say and
// malformed ones are ignored; the descriptors named are taken over (written to, closed).
func TestApplyTaskOptions(t *testing.T) {
	for _, c := range []struct {
		name           string
		opts           string // JOIN and HOME stand for the write ends of two pipes
		bound          string
		joined, inHome string // what the pipes read once restore has run ("0": the writer)
	}{
		{"none", "-", "-", "", ""},
		{"empty", "", "-", "", ""},
		{"malformed and reserved descriptors", "join=x,home=-1,join=3,home=4,nproc=0,other=9", "-", "", ""},
		{"join a v1 group and return home", "join=JOIN,home=HOME", "cgroup_v1", "0", "0"},
		{"return home only", "home=HOME", "-", "", "0"},
		{"join wins over nproc", "join=JOIN,nproc=5", "cgroup_v1", "0", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			joinR, joinFD := pipeAbove4(t)
			homeR, homeFD := pipeAbove4(t)
			opts := strings.NewReplacer("JOIN", joinFD, "HOME", homeFD).Replace(c.opts)
			bound, restore := applyTaskOptions(opts)
			restore()
			if bound != c.bound {
				t.Errorf("bound = %q, want %q", bound, c.bound)
			}
			closeUnused(joinFD, opts)
			closeUnused(homeFD, opts)
			for _, p := range []struct {
				r    *os.File
				want string
			}{{joinR, c.joined}, {homeR, c.inHome}} {
				b, _ := io.ReadAll(p.r)
				if string(b) != p.want {
					t.Errorf("%s read %q, want %q", p.r.Name(), b, p.want)
				}
			}
		})
	}
}

// TestApplyTaskOptionsNproc: nproc=N lowers this process's RLIMIT_NPROC to at most the
// user's tasks plus N until restore gives the previous limit back.
func TestApplyTaskOptionsNproc(t *testing.T) {
	var prev syscall.Rlimit
	if err := syscall.Getrlimit(rlimitNproc, &prev); err != nil {
		t.Skip(err)
	}
	const n = 1000 // far above what this test's threads need meanwhile
	if prev.Cur <= n {
		t.Skipf("RLIMIT_NPROC is already %d", prev.Cur)
	}
	bound, restore := applyTaskOptions("nproc=" + strconv.Itoa(n))
	var during syscall.Rlimit
	err := syscall.Getrlimit(rlimitNproc, &during)
	restore()
	if bound != "rlimit" {
		t.Skipf("bound = %q: RLIMIT_NPROC could not be set here", bound)
	}
	if err != nil || during.Cur > prev.Cur || during.Cur <= n || during.Max != prev.Max {
		t.Errorf("limit while applied = %+v (%v), before %+v", during, err, prev)
	}
	var after syscall.Rlimit
	if err := syscall.Getrlimit(rlimitNproc, &after); err != nil || after != prev {
		t.Errorf("limit after restore = %+v (%v), want %+v", after, err, prev)
	}
}

// pipeAbove4 returns a pipe's read end and the descriptor number of its write end, made
// above 4 (the helper's options never name 0-4) and closed with the test unless taken.
func pipeAbove4(t *testing.T) (*os.File, string) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	fd, err := syscall.Dup(int(w.Fd()))
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	if fd <= 4 {
		t.Fatalf("dup gave descriptor %d", fd)
	}
	return r, strconv.Itoa(fd)
}

// closeUnused closes the descriptor fd unless opts handed it to applyTaskOptions.
func closeUnused(fd, opts string) {
	for _, o := range strings.Split(opts, ",") {
		if o == "join="+fd || o == "home="+fd {
			return
		}
	}
	n, _ := strconv.Atoi(fd)
	syscall.Close(n)
}

// FuzzInvocation: what EncodeInvocation writes decodes to the same invocation (strings
// without NUL bytes, as options, argv and the environment are), and no payload panics
// the helper.
func FuzzInvocation(f *testing.F) {
	f.Add("join=3,home=4", "/usr/bin/true", "/tmp", "true\x00-x", "PATH=/bin\x00A=b", []byte("-\x00x\x00\x001\x00x\x00"))
	f.Add("-", "", "", "", "", []byte("\x00\x00\x00-1\x00"))
	f.Fuzz(func(t *testing.T, opts, path, dir, argvJoined, envJoined string, raw []byte) {
		decodeInvocation(raw) // must not panic
		argv, env := strings.Split(argvJoined, "\x00"), strings.Split(envJoined, "\x00")
		if envJoined == "" {
			env = nil
		}
		if strings.ContainsRune(opts, 0) || strings.ContainsRune(path, 0) || strings.ContainsRune(dir, 0) {
			return
		}
		inv, ok := decodeInvocation(EncodeInvocation(opts, path, dir, argv, env))
		if !ok || inv.opts != opts || inv.path != path || inv.dir != dir || !slices.Equal(inv.argv, argv) || len(inv.env) != len(env) ||
			len(env) > 0 && !slices.Equal(inv.env, env) {
			t.Fatalf("round trip of %q %q %q %q %q = %+v, %v", opts, path, dir, argv, env, inv, ok)
		}
	})
}

// TestAttachedOptions: the options name attached files by position; each named file's
// position becomes its descriptor, a file no option names is closed, and an option that
// names a standard stream, a missing position or a position twice refuses the message.
func TestAttachedOptions(t *testing.T) {
	open := func() int {
		f, err := os.Open(os.DevNull)
		if err != nil {
			t.Fatal(err)
		}
		fd, err := syscall.Dup(int(f.Fd()))
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		return fd
	}
	isOpen := func(fd int) bool {
		_, err := unixFcntl(fd)
		return err == nil
	}
	std := []int{0, 1, 2}
	a, b, c := open(), open(), open()
	defer syscall.Close(a)
	defer syscall.Close(b)
	got, ok := attachedOptions("scope=3,nproc=9,home=4", append(std, a, b, c))
	want := "scope=" + strconv.Itoa(a) + ",nproc=9,home=" + strconv.Itoa(b)
	if !ok || got != want {
		t.Errorf("attachedOptions = %q, %v; want %q", got, ok, want)
	}
	if isOpen(c) {
		t.Errorf("the unnamed file %d is still open", c)
	}
	for _, opts := range []string{"join=2", "join=5", "home=3,join=3", "scope=x"} {
		if got, ok := attachedOptions(opts, append(std, a, b)); ok {
			t.Errorf("attachedOptions(%q) = %q, accepted", opts, got)
		}
	}
	if got, ok := attachedOptions("-", std); !ok || got != "-" {
		t.Errorf("attachedOptions(-) = %q, %v", got, ok)
	}
}

// unixFcntl reads fd's descriptor flags: an error for a closed descriptor.
func unixFcntl(fd int) (uintptr, error) {
	r, _, errno := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_GETFD, 0)
	if errno != 0 {
		return 0, errno
	}
	return r, nil
}

// TestForkWorkload: without a scope the workload starts as before; with a descriptor the
// kernel refuses as a cgroup (a plain directory), it starts outside and the started line
// says scope=0; the scope's descriptor is closed either way. (internal/broker's
// TestHelperClonesIntoTheScope runs it into a real scope.)
func TestForkWorkload(t *testing.T) {
	if got := scopeFD("join=5,home=6"); got != -1 {
		t.Errorf("scopeFD without scope = %d", got)
	}
	if got := scopeFD("home=7,scope=9"); got != 9 {
		t.Errorf("scopeFD = %d, want 9", got)
	}
	attr := func() *syscall.ProcAttr {
		return &syscall.ProcAttr{Files: []uintptr{0, 1, 2}, Sys: &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}}
	}
	wait := func(pid int) {
		var ws syscall.WaitStatus
		if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil || ws.ExitStatus() != 0 {
			t.Errorf("wait %d: %v, status %v", pid, err, ws)
		}
	}
	pid, scoped, err := forkWorkload("/bin/true", []string{"true"}, attr(), -1)
	if err != nil || scoped != "" {
		t.Fatalf("forkWorkload without a scope = %q, %v", scoped, err)
	}
	wait(pid)
	dir, err := syscall.Open(t.TempDir(), syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	pid, scoped, err = forkWorkload("/bin/true", []string{"true"}, attr(), dir)
	if err != nil || scoped != " scope=0" {
		t.Fatalf("forkWorkload into a plain directory = %q, %v; want scope=0 and a start outside", scoped, err)
	}
	wait(pid)
	if _, err := unixFcntl(dir); err == nil {
		t.Error("the scope's descriptor is still open")
	}
	if _, scoped, err = forkWorkload("/nonexistent/flameox-test", []string{"x"}, attr(), -1); err == nil || scoped != "" {
		t.Errorf("a workload that cannot start: %q, %v", scoped, err)
	}
}

// TestChildless: a child that runs, and one that exited but is not reaped, are children;
// only once it is reaped is the process childless, and the check reaps nothing itself.
func TestChildless(t *testing.T) {
	if !childless() {
		t.Fatal("the test process has a child before the test starts one")
	}
	cmd := exec.Command("cat")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if childless() {
		t.Error("childless while the child runs")
	}
	stdin.Close() // the child exits
	for deadline := time.Now().Add(10 * time.Second); ; {
		p, ok := procfs.Stat(cmd.Process.Pid)
		if ok && !p.Live() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the child did not exit")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if childless() {
		t.Error("childless while the exited child is not reaped")
	}
	if p, ok := procfs.Stat(cmd.Process.Pid); !ok || p.Live() {
		t.Fatal("the check reaped the exited child")
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if !childless() {
		t.Error("not childless once the child is reaped")
	}
}
