package broker

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flameox/flameox/internal/testtool"
)

// The test binary doubles as a workload: FLAMEOX_BROKER_HELPER=hog allocates and touches
// memory and then sleeps.
func TestMain(m *testing.M) {
	if os.Getenv("FLAMEOX_BROKER_HELPER") == "hog" {
		testtool.Hog()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func sh(t *testing.T, script string) Spec {
	t.Helper()
	path, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	return Spec{Path: path, Args: []string{"sh", "-c", script}, Dir: t.TempDir(),
		Env: []string{"PATH=" + os.Getenv("PATH")}, ExcerptBytes: 4096, SampleInterval: 10 * time.Millisecond}
}

// pidsIn returns the integers printed one per line in b.
func pidsIn(t *testing.T, b []byte) []int {
	t.Helper()
	var out []int
	for _, l := range strings.Fields(string(b)) {
		if n, err := strconv.Atoi(l); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// assertGone fails when any pid is still a live (non-zombie) process.
func assertGone(t *testing.T, pids []int) {
	t.Helper()
	for _, pid := range pids {
		if p, ok := readStat(pid); ok && p.state != 'Z' && p.state != 'X' {
			t.Errorf("process %d survived (state %c)", pid, p.state)
		}
	}
}

func TestExitAndOutput(t *testing.T) {
	res, err := Run(context.Background(), sh(t, "echo out; echo err >&2; exit 3"))
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode == nil || *res.ExitCode != 3 || res.Termination != "exited" || res.Limit != nil {
		t.Fatalf("result = %+v", res)
	}
	if string(res.Stdout.Excerpt) != "out\n" || string(res.Stderr.Excerpt) != "err\n" || !res.Stdout.Complete || !res.ReadersSettled {
		t.Errorf("streams = %+v %+v", res.Stdout, res.Stderr)
	}
}

func TestStreamsToFiles(t *testing.T) {
	spec := sh(t, "printf 'a%.0s' $(seq 1 1000); printf 'bb' >&2")
	dir := t.TempDir()
	spec.StdoutFile, spec.StderrFile = filepath.Join(dir, "out"), filepath.Join(dir, "err")
	res, err := Run(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(spec.StdoutFile)
	if len(b) != 1000 || res.Stdout.Retained != 1000 || !res.Stdout.Complete {
		t.Errorf("stdout file %d bytes, stream %+v", len(b), res.Stdout)
	}
}

// TestTimeoutKillsTheWholeTree starts grandchildren, one of them in its own session, and
// checks that none survives the timeout.
func TestTimeoutKillsTheWholeTree(t *testing.T) {
	spec := sh(t, "sleep 300 & echo $!; setsid sleep 301 & echo $!; (sleep 302 & echo $!; wait) & sleep 303")
	spec.Timeout = 500 * time.Millisecond
	start := time.Now()
	res, err := Run(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if res.Limit == nil || res.Limit.Kind != "timeout" || res.Limit.Unit != "seconds" || res.Limit.Configured != 0.5 {
		t.Fatalf("limit = %+v", res.Limit)
	}
	if res.Termination != "terminated" || res.ExitCode != nil {
		t.Errorf("termination = %s %v", res.Termination, res.ExitCode)
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("Run took %v", time.Since(start))
	}
	pids := pidsIn(t, res.Stdout.Excerpt)
	if len(pids) != 3 {
		t.Fatalf("printed pids = %q", res.Stdout.Excerpt)
	}
	assertGone(t, pids)
	if res.DescendantsTerminated < 3 {
		t.Errorf("descendants terminated = %d", res.DescendantsTerminated)
	}
}

func TestCancellationKillsTheWholeTree(t *testing.T) {
	spec := sh(t, "sleep 300 & echo $!; setsid sleep 301 & echo $!; sleep 302")
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(400*time.Millisecond, cancel)
	res, err := Run(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Cancelled || res.ExitCode != nil || res.Termination != "terminated" || !res.ReadersSettled {
		t.Fatalf("result = %+v", res)
	}
	assertGone(t, pidsIn(t, res.Stdout.Excerpt))
}

func TestCancelledBeforeLaunch(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := Run(ctx, sh(t, "echo never"))
	if err != nil || !res.Cancelled || res.Started || res.Termination != "unreported" || res.ExitCode != nil {
		t.Fatalf("result = %+v, %v", res, err)
	}
}

// TestExitLeavesNoBackgroundProcess: a workload that exits leaving a background process
// holding its stdout does not hold the call, and the process is killed.
func TestExitLeavesNoBackgroundProcess(t *testing.T) {
	res, err := Run(context.Background(), sh(t, "sleep 300 & echo $!; exit 0"))
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode == nil || *res.ExitCode != 0 {
		t.Fatalf("result = %+v", res)
	}
	assertGone(t, pidsIn(t, res.Stdout.Excerpt))
	if res.DescendantsTerminated != 1 {
		t.Errorf("descendants terminated = %d", res.DescendantsTerminated)
	}
}

func TestOutputFloodIsBounded(t *testing.T) {
	yes, err := exec.LookPath("yes")
	if err != nil {
		t.Skip("no yes")
	}
	dir := t.TempDir()
	spec := Spec{Path: yes, Args: []string{"yes", "flood"}, Dir: dir, MaxOutputBytes: 1 << 20,
		StdoutFile: filepath.Join(dir, "out"), StderrFile: filepath.Join(dir, "err")}
	res, err := Run(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if res.Limit == nil || res.Limit.Kind != "output_limit" || res.Limit.Configured != 1<<20 {
		t.Fatalf("limit = %+v", res.Limit)
	}
	st, _ := os.Stat(spec.StdoutFile)
	if st.Size() != 1<<20 || res.Stdout.Retained != 1<<20 || res.Stdout.Observed <= res.Stdout.Retained || res.Stdout.Complete {
		t.Errorf("file %d bytes, stream %+v", st.Size(), res.Stdout)
	}
}

func TestMemoryBudget(t *testing.T) {
	spec := Spec{Path: os.Args[0], Args: []string{os.Args[0]}, Dir: t.TempDir(),
		Env: []string{"FLAMEOX_BROKER_HELPER=hog"}, MaxRSSBytes: 128 << 20, SampleInterval: 10 * time.Millisecond}
	res, err := Run(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if res.Limit == nil || res.Limit.Kind != "memory_limit_exceeded" || res.Limit.Unit != "bytes" || *res.Limit.Observed <= 128<<20 {
		t.Fatalf("limit = %+v", res.Limit)
	}
	if res.PeakRSS == nil || *res.PeakRSS <= 128<<20 || res.ExitCode != nil {
		t.Errorf("peak = %v exit = %v", res.PeakRSS, res.ExitCode)
	}
}

func TestWritableGrowth(t *testing.T) {
	spec := sh(t, "head -c 3000000 /dev/zero > big; sleep 30")
	spec.WritableRoots = []string{spec.Dir}
	spec.MaxWritableGrowth = 1 << 20
	res, err := Run(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if res.Limit == nil || res.Limit.Kind != "writable_limit_exceeded" || *res.Limit.Observed < 3000000 {
		t.Fatalf("limit = %+v", res.Limit)
	}
	// A workload that writes and exits before a sample is caught by the final check.
	spec = sh(t, "head -c 3000000 /dev/zero > big")
	spec.WritableRoots, spec.MaxWritableGrowth = []string{spec.Dir}, 1<<20
	res, err = Run(context.Background(), spec)
	if err != nil || res.Limit == nil || res.Limit.Kind != "writable_limit_exceeded" || res.ExitCode == nil {
		t.Fatalf("final check: %+v %v", res, err)
	}
}

// TestWritableGrowthThroughASymlinkedRoot: a working directory named through a symbolic
// link is measured (WalkDir does not descend into a link: the walk measured nothing and
// called the check complete), and a root that does not resolve makes the check partial.
func TestWritableGrowthThroughASymlinkedRoot(t *testing.T) {
	spec := sh(t, "head -c 3000000 /dev/zero > big")
	link := filepath.Join(t.TempDir(), "cwd")
	if err := os.Symlink(spec.Dir, link); err != nil {
		t.Fatal(err)
	}
	spec.Dir = link
	spec.WritableRoots, spec.MaxWritableGrowth = []string{link}, 1<<20
	res, err := Run(context.Background(), spec)
	if err != nil || res.Limit == nil || res.Limit.Kind != "writable_limit_exceeded" || *res.Limit.Observed < 3000000 {
		t.Fatalf("through a symlinked root: %+v %v", res, err)
	}
	if size, complete := writableSize([]string{link, filepath.Join(t.TempDir(), "gone")}); size < 3000000 || complete {
		t.Errorf("writableSize = %d, complete %v; want the file's bytes and a partial check", size, complete)
	}
}

func TestStartFailure(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "not-executable")
	os.WriteFile(p, []byte("x"), 0o644)
	res, err := Run(context.Background(), Spec{Path: p, Args: []string{p}, Dir: dir})
	if !errors.Is(err, ErrStart) || res.Started || res.ExitCode != nil {
		t.Fatalf("got %+v, %v", res, err)
	}
}

// TestStorageReserve asks for more free space than any disk has: the workload is stopped
// with the free bytes observed.
func TestStorageReserve(t *testing.T) {
	spec := sh(t, "sleep 30")
	spec.ReserveDir, spec.ReserveBytes = spec.Dir, 1<<62
	res, err := Run(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if res.Limit == nil || res.Limit.Kind != "storage_reserve_exceeded" || res.Limit.Unit != "bytes_free" || *res.Limit.Observed >= 1<<62 {
		t.Fatalf("limit = %+v", res.Limit)
	}
}

// detached starts a daemon that leaves the tree at once: the subshell forks a setsid
// sleep and exits, so the sleep is an orphan in its own session before any sample can
// see it. Its pid goes to the file pids in the working directory (not stdout: the daemon
// would hold the pipe), then the workload sleeps.
const detached = "(setsid sleep 3002 & echo $! > pids); sleep 100"

// daemonPid waits for the daemon's pid in dir/pids.
func daemonPid(t *testing.T, dir string) int {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		b, _ := os.ReadFile(filepath.Join(dir, "pids"))
		if p := pidsIn(t, b); len(p) == 1 {
			return p[0]
		}
	}
	t.Fatal("the daemon's pid was never written")
	return 0
}

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
			if res.Limit == nil || res.Limit.Kind != "timeout" || res.Mechanism != mechanism {
				t.Fatalf("limit = %+v, mechanism = %q", res.Limit, res.Mechanism)
			}
			assertGone(t, []int{daemonPid(t, spec.Dir)})
			if res.DescendantsTerminated < 2 {
				t.Errorf("descendants terminated = %d", res.DescendantsTerminated)
			}
		})
	}
}

// withContainment makes the broker use the mechanism named for the rest of the test:
// cgroup (skipped where this process cannot create a cgroup v2 scope) or subreaper.
func withContainment(t *testing.T, mechanism string) {
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
	}
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

// TestLimitBound: a limit's figure is written in full, never in exponent form.
func TestLimitBound(t *testing.T) {
	for _, c := range []struct {
		l    Limit
		want string
	}{
		{Limit{Kind: "output_limit", Configured: 16 << 20, Unit: "bytes"}, "output_limit bound (16777216 bytes)"},
		{Limit{Kind: "memory_limit_exceeded", Configured: 1 << 34, Unit: "bytes"}, "memory_limit_exceeded bound (17179869184 bytes)"},
		{Limit{Kind: "timeout", Configured: 0.5, Unit: "seconds"}, "timeout bound (0.5 seconds)"},
	} {
		if got := c.l.Bound(); got != c.want {
			t.Errorf("Bound() = %q, want %q", got, c.want)
		}
	}
}
