package broker

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
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
		if running(pid) {
			t.Errorf("process %d survived", pid)
		}
	}
}

// eachContainment runs f once per containment this OS can be made to use (containments:
// on Linux the default and the portable process group that macOS runs; elsewhere the
// default), each as a subtest named after it.
func eachContainment(t *testing.T, f func(t *testing.T)) {
	for _, m := range containments {
		t.Run(m, func(t *testing.T) {
			withContainment(t, m)
			f(t)
		})
	}
}

func TestExitAndOutput(t *testing.T) {
	eachContainment(t, func(t *testing.T) {
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
	})
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
	eachContainment(t, func(t *testing.T) {
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
		// Not a speed check: the children sleep 300 s, and Run must not wait for them. The
		// bound is far above any load's delay of a 0.5 s timeout and far below 300 s.
		if time.Since(start) > 120*time.Second {
			t.Errorf("Run took %v: it waited for the tree it should have killed", time.Since(start))
		}
		pids := pidsIn(t, res.Stdout.Excerpt)
		if len(pids) != 3 {
			t.Fatalf("printed pids = %q", res.Stdout.Excerpt)
		}
		assertGone(t, pids)
		if res.DescendantsTerminated < 3 {
			t.Errorf("descendants terminated = %d", res.DescendantsTerminated)
		}
	})
}

func TestCancellationKillsTheWholeTree(t *testing.T) {
	eachContainment(t, func(t *testing.T) {
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
	})
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
	eachContainment(t, func(t *testing.T) {
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
	})
}

func TestOutputFloodIsBounded(t *testing.T) {
	eachContainment(t, func(t *testing.T) {
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
	})
}

func TestMemoryBudget(t *testing.T) {
	if !rssMeasured() {
		t.Skip("resident memory is not measured on this OS (GapMemoryUnmeasured)")
	}
	eachContainment(t, func(t *testing.T) {
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
	})
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
	eachContainment(t, func(t *testing.T) {
		dir := t.TempDir()
		p := filepath.Join(dir, "not-executable")
		os.WriteFile(p, []byte("x"), 0o644)
		res, err := Run(context.Background(), Spec{Path: p, Args: []string{p}, Dir: dir})
		if !errors.Is(err, ErrStart) || res.Started || res.ExitCode != nil {
			t.Fatalf("got %+v, %v", res, err)
		}
	})
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

// TestProcessGroupNamesItsGaps: the process_group mechanism (forced on Linux, the default
// on macOS) names itself and what it cannot hold. A daemon that detached before any
// sample saw it may outlive the run (GapDetachedDescendants): it is killed here by hand
// when it did.
func TestProcessGroupNamesItsGaps(t *testing.T) {
	withContainment(t, "process_group")
	spec := sh(t, detached)
	spec.Timeout = time.Second
	res, err := Run(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if res.Mechanism != "process_group" || res.TaskBound != "" || res.Limit == nil || res.Limit.Kind != "timeout" {
		t.Fatalf("result = %+v", res)
	}
	want := []string{GapDetachedDescendants, GapBrokerDeath}
	if !rssMeasured() {
		want = append(want, GapMemoryUnmeasured)
	}
	if !slices.Equal(res.Gaps, want) {
		t.Errorf("gaps = %q, want %q", res.Gaps, want)
	}
	if daemon := daemonPid(t, spec.Dir); running(daemon) {
		t.Logf("the detached daemon %d escaped the process group, as documented", daemon)
		if p, err := os.FindProcess(daemon); err == nil {
			p.Kill()
		}
	}
}

// TestStdin: the workload reads Spec.Stdin, a pipe the test writes and closes, under the
// subreaper helper and the process group alike; without one it reads the null device (an
// empty input, not a closed descriptor that cat would fail on).
func TestStdin(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<14) // 256 KiB: beyond a pipe's buffer
	cases := []struct {
		name string
		pipe bool
		in   []byte
	}{
		{"none", false, nil},
		{"empty", true, nil},
		{"line", true, []byte("hello\n")},
		{"beyond a pipe buffer", true, big},
	}
	for _, m := range []string{"default", "subreaper", "process_group"} {
		t.Run(m, func(t *testing.T) {
			withContainment(t, m)
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					spec := sh(t, "cat")
					spec.ExcerptBytes = len(c.in) + 1
					if c.pipe {
						r, w, err := os.Pipe()
						if err != nil {
							t.Fatal(err)
						}
						defer r.Close()
						spec.Stdin = r
						go func() {
							w.Write(c.in)
							w.Close()
						}()
					}
					res, err := Run(context.Background(), spec)
					if err != nil {
						t.Fatal(err)
					}
					if res.ExitCode == nil || *res.ExitCode != 0 {
						t.Fatalf("result = %+v", res)
					}
					if !bytes.Equal(res.Stdout.Excerpt, c.in) || !res.Stdout.Complete {
						t.Errorf("stdout: %d bytes, complete %v; want the %d bytes written", len(res.Stdout.Excerpt), res.Stdout.Complete, len(c.in))
					}
				})
			}
		})
	}
}

// TestStdoutClosed: a workload that closes its standard output and goes on (here until
// its input ends) has StdoutClosed closed while Run still waits for it, with what it wrote
// already in StdoutFile, under every containment mechanism (the subreaper helper does not
// hold the output open).
func TestStdoutClosed(t *testing.T) {
	for _, m := range []string{"default", "subreaper", "process_group"} {
		t.Run(m, func(t *testing.T) {
			withContainment(t, m)
			spec := sh(t, "echo answer; exec >&-; read x")
			spec.StdoutFile = filepath.Join(t.TempDir(), "stdout")
			closed := make(chan struct{})
			spec.StdoutClosed = closed
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			defer w.Close()
			spec.Stdin = r
			ran := make(chan *Result, 1)
			go func() {
				res, err := Run(context.Background(), spec)
				if err != nil {
					t.Error(err)
				}
				ran <- res
			}()
			select {
			case <-closed:
			case res := <-ran:
				t.Fatalf("Run returned (%+v) before the output was closed", res)
			case <-time.After(30 * time.Second):
				t.Fatal("the output was not closed")
			}
			select {
			case res := <-ran:
				t.Fatalf("Run returned (%+v) while the workload still read its input", res)
			default:
			}
			if b, err := os.ReadFile(spec.StdoutFile); err != nil || string(b) != "answer\n" {
				t.Errorf("stdout file = %q (%v), want the answer", b, err)
			}
			w.Write([]byte("go on\n"))
			w.Close()
			if res := <-ran; res == nil || res.ExitCode == nil || *res.ExitCode != 0 {
				t.Errorf("result = %+v (exit code %v)", res, res.ExitCode)
			}
		})
	}
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
