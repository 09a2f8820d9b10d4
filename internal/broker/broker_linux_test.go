package broker

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flameox/flameox/internal/procfs"
)

// TestDetachedDaemonDiesOnTimeout: issue 21 item 3. Process-group tracking and a sampled
// /proc scan cannot see a daemon that detached before the first sample; the subreaper
// helper contains it.
func TestDetachedDaemonDiesOnTimeout(t *testing.T) {
	for _, mechanism := range []string{"cgroup", "subreaper"} {
		t.Run(mechanism, func(t *testing.T) {
			withContainment(t, mechanism)
			spec := sh(t, detached)
			spec.Timeout = time.Second
			res, err := Run(context.Background(), spec)
			if err != nil {
				t.Fatal(err)
			}
			if res.Limit == nil || res.Limit.Kind != "timeout" || res.Mechanism != mechanism || len(res.Gaps) != 0 {
				t.Fatalf("limit = %+v, mechanism = %q, gaps = %q", res.Limit, res.Mechanism, res.Gaps)
			}
			assertGone(t, []int{daemonPid(t, spec.Dir)})
			if res.DescendantsTerminated < 2 {
				t.Errorf("descendants terminated = %d", res.DescendantsTerminated)
			}
		})
	}
}

// containments are the mechanisms eachContainment runs a test under on Linux: the
// strongest this host offers, and the portable process group.
var containments = []string{"default", "process_group"}

// withContainment makes the broker use the mechanism named for the rest of the test:
// cgroup (skipped where this process cannot create a cgroup v2 scope), subreaper,
// process_group (the portable mechanism alone, as on macOS) or default.
func withContainment(t testing.TB, mechanism string) {
	t.Helper()
	switch mechanism {
	case "cgroup":
		sc := newScope()
		if sc == nil {
			t.Skip("no cgroup v2 scope can be created here (no writable unified hierarchy or no cgroup.kill)")
		}
		sc.remove()
	case "subreaper":
		scopesDisabled = true
		t.Cleanup(func() { scopesDisabled = false })
	case "process_group":
		forceProcessGroup = true
		t.Cleanup(func() { forceProcessGroup = false })
	}
}

// running reports whether pid is a live (non-zombie) process.
func running(pid int) bool {
	p, ok := procfs.Stat(pid)
	return ok && p.Live()
}

// TestDaemonThatLeftTheTreeDiesWithTheScope: the workload kills its own containment
// helper, so the daemon it started reparents to init and leaves every tree the broker
// can see by parent links or process group. The kernel still lists it in the
// invocation's cgroup scope, and it ends with the invocation; the scope is removed.
func TestDaemonThatLeftTheTreeDiesWithTheScope(t *testing.T) {
	withContainment(t, "cgroup")
	spec := sh(t, "(setsid sleep 3004 >/dev/null 2>&1 & echo $! > pids); kill -9 $PPID; sleep 100")
	spec.Timeout = 20 * time.Second
	// No sample: only what the broker sees at the end counts.
	spec.SampleInterval = time.Hour
	res, err := Run(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	daemon := daemonPid(t, spec.Dir)
	assertGone(t, []int{daemon})
	if res.Mechanism != "cgroup" || res.Termination != "terminated" || res.Limit != nil {
		t.Fatalf("result = %+v", res)
	}
	if res.DescendantsTerminated < 1 {
		t.Errorf("descendants terminated = %d", res.DescendantsTerminated)
	}
	parent, _ := ownCgroupDir()
	entries, _ := os.ReadDir(parent)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ownerPrefix()) {
			t.Errorf("scope %s was not removed", e.Name())
		}
	}
}

// TestScopesOfGoneOwnersAreSwept: a scope left by a broker that was killed (its owner
// tag names no live process) is emptied and removed; one of a live owner is kept, and so
// is one of another pid namespace, whose pids mean nothing here.
func TestScopesOfGoneOwnersAreSwept(t *testing.T) {
	withContainment(t, "cgroup")
	parent, _ := ownCgroupDir()
	ns := scopePrefix + pidNamespace() + "-"
	gone := filepath.Join(parent, ns+"999999999-1-0a0b0c0d0e0f")
	live := filepath.Join(parent, ownerPrefix()+"ffffffffffff")
	foreign := filepath.Join(parent, scopePrefix+"1-999999999-1-0a0b0c0d0e0f")
	// A name of another shape (an older naming without the namespace) is never judged.
	odd := filepath.Join(parent, scopePrefix+"999999999-1-0a0b0c0d0e0f")
	for _, d := range []string{gone, live, foreign, odd} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	defer os.Remove(odd)
	defer os.Remove(foreign)
	defer os.Remove(live)
	defer os.Remove(gone)
	// A process in the abandoned scope, as a killed broker's workload would be.
	cmd := exec.Command("sleep", "3005")
	fd, err := os.Open(gone)
	if err != nil {
		t.Fatal(err)
	}
	defer fd.Close()
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: int(fd.Fd())}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	sweepScopes(parent)
	select {
	case <-waited:
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		t.Fatal("the process in the abandoned scope survived the sweep")
	}
	if _, err := os.Stat(gone); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("abandoned scope: %v", err)
	}
	for _, kept := range []string{live, foreign, odd} {
		if _, err := os.Stat(kept); err != nil {
			t.Errorf("scope %s: %v", filepath.Base(kept), err)
		}
	}
}

func TestCgroupParsing(t *testing.T) {
	mounts := []struct {
		line, want string
		ok         bool
	}{
		{"35 24 0:30 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw,nsdelegate", "/sys/fs/cgroup", true},
		{"36 25 0:31 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup rw", "/sys/fs/cgroup/unified", true},
		{"37 25 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory", "", false},
		{"38 25 0:33 /user.slice /mnt/cg rw - cgroup2 cgroup2 rw", "", false},
		{"39 25 0:34 / /mnt/with\\040space rw - cgroup2 cgroup2 rw", "/mnt/with space", true},
		{"garbage", "", false},
	}
	for _, m := range mounts {
		got, ok := cgroup2MountPoint(m.line)
		if got != m.want || ok != m.ok {
			t.Errorf("cgroup2MountPoint(%q) = %q, %v; want %q, %v", m.line, got, ok, m.want, m.ok)
		}
	}
	paths := []struct {
		content, want string
		ok            bool
	}{
		{"0::/\n", "/", true},
		{"12:memory:/x\n0::/user.slice/user-1000.slice/session-2.scope\n", "/user.slice/user-1000.slice/session-2.scope", true},
		{"0::/gone (deleted)\n", "", false},
		{"0::/../../outside\n", "", false},
		{"4:memory:/only-v1\n", "", false},
	}
	for _, p := range paths {
		got, ok := unifiedPath(p.content)
		if got != p.want || ok != p.ok {
			t.Errorf("unifiedPath(%q) = %q, %v; want %q, %v", p.content, got, ok, p.want, p.ok)
		}
	}
}

func TestDetachedDaemonDiesOnCancellation(t *testing.T) {
	spec := sh(t, detached)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { daemonPid(t, spec.Dir); cancel() }()
	res, err := Run(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Cancelled || res.Termination != "terminated" || !res.ReadersSettled {
		t.Fatalf("result = %+v", res)
	}
	assertGone(t, []int{daemonPid(t, spec.Dir)})
}

// TestDetachedDaemonDiesOnExit: a workload that exits at once leaves its daemon to
// nobody; the daemon holds no pipe, so nothing else would notice it.
func TestDetachedDaemonDiesOnExit(t *testing.T) {
	spec := sh(t, "(setsid sleep 3003 >/dev/null 2>&1 & echo $! > pids); exit 7")
	res, err := Run(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode == nil || *res.ExitCode != 7 || res.Termination != "exited" {
		t.Fatalf("result = %+v", res)
	}
	assertGone(t, []int{daemonPid(t, spec.Dir)})
	if res.DescendantsTerminated != 1 {
		t.Errorf("descendants terminated = %d", res.DescendantsTerminated)
	}
}

// TestDetachedDaemonCountsTowardMemory: the memory bound sees a detached daemon's
// resident memory, because the daemon stays in the helper's tree.
func TestDetachedDaemonCountsTowardMemory(t *testing.T) {
	dir := t.TempDir()
	spec := Spec{Path: "/bin/sh", Args: []string{"sh", "-c", "(setsid \"$0\" & echo $! > pids); sleep 100", os.Args[0]}, Dir: dir,
		Env: []string{"FLAMEOX_BROKER_HELPER=hog", "PATH=" + os.Getenv("PATH")}, MaxRSSBytes: 128 << 20, SampleInterval: 10 * time.Millisecond}
	res, err := Run(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if res.Limit == nil || res.Limit.Kind != "memory_limit_exceeded" {
		t.Fatalf("limit = %+v", res.Limit)
	}
	assertGone(t, []int{daemonPid(t, dir)})
}

// TestDirect: a Direct spec starts the workload as the broker's own child, with no
// containment helper between them and no task bound, in the invocation's cgroup scope
// where one can be created; without Direct the helper is its parent.
func TestDirect(t *testing.T) {
	for _, direct := range []bool{true, false} {
		spec := sh(t, "echo $PPID")
		spec.Direct = direct
		spec.MaxTasks = 64
		res, err := Run(context.Background(), spec)
		if err != nil {
			t.Fatal(err)
		}
		ppid := pidsIn(t, res.Stdout.Excerpt)
		if len(ppid) != 1 {
			t.Fatalf("direct %v: output %q", direct, res.Stdout.Excerpt)
		}
		// Without Direct the helper is the parent, unless it could not run here
		// (process_group), when the workload is started directly anyway.
		own := ppid[0] == os.Getpid()
		if want := direct || res.Mechanism == "process_group"; own != want {
			t.Errorf("direct %v: the workload's parent is %d (this process %d), mechanism %q", direct, ppid[0], os.Getpid(), res.Mechanism)
		}
		if direct {
			if res.TaskBound != "" || res.MaxTasks != 0 {
				t.Errorf("direct: task bound %q %d, want none", res.TaskBound, res.MaxTasks)
			}
			if want := map[bool]string{true: "cgroup", false: "process_group"}[newScopeAvailable()]; res.Mechanism != want {
				t.Errorf("direct: mechanism %q, want %q", res.Mechanism, want)
			}
		}
	}
}

// newScopeAvailable reports whether this process can create a cgroup v2 scope.
func newScopeAvailable() bool {
	sc := newScope()
	if sc == nil {
		return false
	}
	sc.remove()
	return true
}

// TestSilentHelperStartedWhatItsScopeHolds: a helper that ends before its first line
// (its workload killed it first) started the workload when its scope holds a process,
// since nothing but the helper's clone enters the scope; with the scope empty, it
// started nothing. TestDaemonThatLeftTheTreeDiesWithTheScope meets the first case only
// when the workload wins the race.
func TestSilentHelperStartedWhatItsScopeHolds(t *testing.T) {
	sc := newScope()
	if sc == nil {
		t.Skip("no cgroup v2 scope can be created here")
	}
	defer sc.remove()
	silent := func() *reaper {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		w.Close()
		t.Cleanup(func() { r.Close() })
		return &reaper{cmd: &exec.Cmd{}, br: bufio.NewReader(r)}
	}

	h := silent()
	if err := h.awaitStart(sc); err == nil || h.rep.workload != 0 {
		t.Fatalf("empty scope: err = %v, workload = %d; want the start failure", err, h.rep.workload)
	}

	var cmd *exec.Cmd
	inScope, err := startInScope(func() *exec.Cmd {
		cmd = exec.Command("sleep", "100")
		cmd.SysProcAttr = &syscall.SysProcAttr{}
		return cmd
	}, sc)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	if !inScope {
		t.Skip("the kernel refuses to clone into the scope here")
	}
	h = silent()
	if err := h.awaitStart(sc); err != nil || h.rep.workload != -1 || !h.rep.scoped {
		t.Fatalf("populated scope: err = %v, report = %+v; want a workload started in the scope", err, h.rep)
	}
	// And without a scope, a silent helper started nothing.
	h = silent()
	if err := h.awaitStart(nil); err == nil || h.rep.workload != 0 {
		t.Fatalf("no scope: err = %v, workload = %d", err, h.rep.workload)
	}
}
