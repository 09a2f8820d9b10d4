package ahead

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/flameox/flameox/internal/testtool"
	"github.com/flameox/flameox/internal/workerproc"
)

// childVariable makes the test binary a child process that reports, with its own
// arguments, what this package's initialization started.
const childVariable = "FLAMEOX_AHEAD_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(workerproc.Variable) != "" {
		// A worker a child's initialization started: it says it runs (a file in its
		// working directory, the worker's scratch), waits for its request, as a worker
		// does, and exits at the input's end.
		os.WriteFile("running", nil, 0o600)
		io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}
	if os.Getenv(childVariable) == "1" {
		os.Exit(child())
	}
	os.Exit(m.Run())
}

// waitRegistered waits until the catch of initialization, if there is one, is
// registered.
func waitRegistered() {
	mu.Lock()
	r := registered
	mu.Unlock()
	if r != nil {
		<-r
	}
}

// child prints what initialization started. With FLAMEOX_AHEAD_TEST_MODE=take it takes
// the helper and prints whether one started and how many waiting helpers this process
// has before and after ending it; with abandon it calls Abandon and prints how many are
// left and whether anything is left to take.
func child() int {
	switch os.Getenv("FLAMEOX_AHEAD_TEST_MODE") {
	case "signal":
		// A shutdown signal before the call sets up its own takes its default action:
		// the process dies of it, whether its initialization catches the signals (once
		// the catch is registered, it gives the signal back) or not.
		waitRegistered()
		syscall.Kill(os.Getpid(), syscall.SIGHUP)
		time.Sleep(10 * time.Second)
		fmt.Println("alive")
		return 0
	case "during":
		// A shutdown signal while the call's context is registered cancels it, and the
		// process lives on.
		waitRegistered()
		ctx, stop := NotifyContext(context.Background())
		defer stop()
		syscall.Kill(os.Getpid(), syscall.SIGHUP)
		select {
		case <-ctx.Done():
			fmt.Println("cancelled=true")
		case <-time.After(10 * time.Second):
			fmt.Println("cancelled=false")
		}
		return 0
	}
	if os.Getenv("FLAMEOX_AHEAD_TEST_MODE") == "stopped" {
		// A shutdown signal after the call's context is stopped takes its default
		// action, as after signal.NotifyContext's stop: the process dies of it.
		waitRegistered()
		_, stop := NotifyContext(context.Background())
		stop()
		syscall.Kill(os.Getpid(), syscall.SIGHUP)
		time.Sleep(10 * time.Second)
		fmt.Println("alive")
		return 0
	}
	if os.Getenv("FLAMEOX_AHEAD_TEST_MODE") == "worker" {
		return childWorker()
	}
	if os.Getenv("FLAMEOX_AHEAD_TEST_MODE") == "abandon" {
		Abandon()
		fmt.Printf("after=%d taken=%v\n", len(testtool.WaitingHelpers()), Take() == nil)
		return 0
	}
	c := Take()
	if c == nil {
		fmt.Println("none")
		return 0
	}
	p := <-c
	before := len(testtool.WaitingHelpers())
	p.Abandon()
	fmt.Printf("started=%v waiting=%d after=%d\n", p != nil, before, len(testtool.WaitingHelpers()))
	return 0
}

// childWorker takes the analysis worker initialization started and prints whether there
// is one, whether its scratch directory is there, whether its process runs there, and,
// once it is stopped, whether its directory is gone.
func childWorker() int {
	c := TakeWorker()
	if c == nil {
		fmt.Println("none")
		return 0
	}
	p := <-c
	if p == nil {
		fmt.Println("nil")
		return 0
	}
	_, err := os.Stat(p.Dir)
	waiting := err == nil && len(workerDirs()) == 1
	running := false
	for deadline := time.Now().Add(time.Minute); !running && time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		_, err := os.Stat(filepath.Join(p.Spec.Dir, "running"))
		running = err == nil
	}
	p.Abandon()
	fmt.Printf("waiting=%v running=%v left=%d\n", waiting, running, len(workerDirs()))
	return 0
}

// workerDirs lists the analysis workers' scratch directories in the temporary directory.
func workerDirs() []string {
	m, _ := filepath.Glob(filepath.Join(os.TempDir(), workerproc.ScratchPrefix+"*"))
	return m
}

// TestWorkerStartsDuringInitialization: a process whose arguments are an analyze call
// over paths that go to a worker (over the in-process size, compressed, a directory) has
// a worker started by the time its packages are initialized; small paths, preserved
// evidence, FLAMEOX_ANALYSIS_IN_PROCESS=1 and other commands start none. Abandon ends
// one nothing took and removes its scratch.
func TestWorkerStartsDuringInitialization(t *testing.T) {
	if TakeWorker() != nil {
		t.Fatal("the test binary's own arguments started a worker")
	}
	dir := t.TempDir()
	big, small := filepath.Join(dir, "big.pstats"), filepath.Join(dir, "small.pstats")
	if err := os.WriteFile(big, make([]byte, workerproc.InProcessBytes+1), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(small, []byte("small"), 0o600); err != nil {
		t.Fatal(err)
	}
	gz := filepath.Join(dir, "small.json.gz")
	if err := os.WriteFile(gz, []byte{0x1f, 0x8b, 8, 0}, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		mode string
		args []string
		env  string
		want string
	}{
		{"worker", []string{"analyze", "rank_cpu_hotspots", big}, "", "waiting=true running=true left=0"},
		{"worker", []string{"analyze", "--arguments", "{}", "rank_cpu_hotspots", small, gz}, "", "waiting=true running=true left=0"},
		{"worker", []string{"analyze", "summarize_directory", dir}, "", "waiting=true running=true left=0"},
		{"worker", []string{"analyze", "rank_cpu_hotspots", small}, "", "nil"},
		{"worker", []string{"analyze", "rank_cpu_hotspots", big}, workerproc.InProcessVariable + "=1", "none"},
		{"worker", []string{"analyze", "rank_cpu_hotspots", "--evidence", "ev", big}, "", "none"},
		{"worker", []string{"capture", "--", "cat", big}, "", "none"},
		{"abandon", []string{"analyze", "rank_cpu_hotspots", big}, "", "after=0 taken=true"},
	} {
		tmp := t.TempDir()
		cmd := exec.Command(os.Args[0], c.args...)
		cmd.Env = append(os.Environ(), childVariable+"=1", "FLAMEOX_AHEAD_TEST_MODE="+c.mode, "TMPDIR="+tmp)
		if c.env != "" {
			cmd.Env = append(cmd.Env, c.env)
		}
		out, err := cmd.CombinedOutput()
		if got := strings.TrimSpace(string(out)); err != nil || got != c.want {
			t.Errorf("flameox %s (%s): %q (%v), want %q", strings.Join(c.args, " "), c.env, got, err, c.want)
		}
		if left, _ := filepath.Glob(filepath.Join(tmp, workerproc.ScratchPrefix+"*")); len(left) > 0 {
			t.Errorf("flameox %s: the worker's scratch is left behind: %q", strings.Join(c.args, " "), left)
		}
	}
}

// TestHelperStartsDuringInitialization: a process whose arguments are a capture call has
// a waiting helper started by the time its packages are initialized, which Abandon ends;
// a call for help, another command and a test binary's own arguments start none.
// Abandon ends a helper nobody took.
func TestHelperStartsDuringInitialization(t *testing.T) {
	if Take() != nil {
		t.Fatal("the test binary's own arguments started a helper")
	}
	for _, c := range []struct {
		mode string
		args []string
		want string
	}{
		{"take", []string{"capture", "--provider", "direct", "--", "true"}, "started=true waiting=1 after=0"},
		{"take", []string{"--json", "capture"}, "started=true waiting=1 after=0"},
		{"take", []string{"capture", "--help"}, "none"},
		{"take", []string{"mcp", "serve"}, "none"},
		{"abandon", []string{"capture", "--provider", "direct", "--", "true"}, "after=0 taken=true"},
		{"during", []string{"analyze", "rank_cpu_hotspots", "x.pstats"}, "cancelled=true"},
		{"during", []string{"capture", "--provider", "direct", "--", "true"}, "cancelled=true"},
		{"during", []string{"mcp", "serve"}, "cancelled=true"},
		{"during", []string{"--version"}, "cancelled=true"},
	} {
		cmd := exec.Command(os.Args[0], c.args...)
		cmd.Env = append(os.Environ(), childVariable+"=1", "FLAMEOX_AHEAD_TEST_MODE="+c.mode)
		out, err := cmd.CombinedOutput()
		if got := strings.TrimSpace(string(out)); err != nil || got != c.want {
			t.Errorf("flameox %s: %q (%v), want %q", strings.Join(c.args, " "), got, err, c.want)
		}
	}
}

// TestOtherCallsKeepTheSignalsDefault: a call that does not set up the shutdown signals
// as its work starts catches none during initialization, so a signal ends it at once; in
// a call that does, a signal before NotifyContext or after its stop ends it too.
func TestOtherCallsKeepTheSignalsDefault(t *testing.T) {
	for _, c := range []struct {
		mode string
		args []string
	}{
		{"signal", []string{"--version"}}, {"signal", []string{"mcp", "inspect"}}, {"signal", []string{"analyze", "--help"}},
		{"signal", []string{"evidence", "show", "x"}},
		// The calls that catch them, before their context is registered and once it is
		// stopped.
		{"signal", []string{"analyze", "rank_cpu_hotspots", "x.pstats"}}, {"signal", []string{"mcp", "serve"}},
		{"signal", []string{"capture", "--provider", "direct", "--", "true"}},
		{"stopped", []string{"analyze", "rank_cpu_hotspots", "x.pstats"}}, {"stopped", []string{"mcp", "serve"}},
		{"stopped", []string{"--version"}},
	} {
		args := c.args
		cmd := exec.Command(os.Args[0], args...)
		cmd.Env = append(os.Environ(), childVariable+"=1", "FLAMEOX_AHEAD_TEST_MODE="+c.mode)
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGHUP {
			t.Errorf("flameox %s: %q (%v), want death by SIGHUP", strings.Join(args, " "), out, err)
		}
	}
}

// testCatch starts one catch in this test process, as a SignalCall's initialization
// does, however many times the tests run.
var testCatch = sync.OnceFunc(func() {
	mu.Lock()
	catching, registered = true, make(chan struct{})
	r := registered
	mu.Unlock()
	go catch(r)
	<-r
})

// TestNotifyContextTakesOver: in a process that catches the shutdown signals from
// initialization, NotifyContext registers its context with the catch: a signal cancels
// it and reaches no other catch, and stop unregisters it.
func TestNotifyContextTakesOver(t *testing.T) {
	testCatch()
	ctx, stop := NotifyContext(context.Background())
	if ctx.Err() != nil {
		t.Fatal("the context is cancelled without a signal")
	}
	mu.Lock()
	n := len(cancels)
	mu.Unlock()
	if n != 1 {
		t.Fatalf("%d contexts registered, want 1", n)
	}
	syscall.Kill(os.Getpid(), syscall.SIGHUP)
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("SIGHUP did not cancel the context")
	}
	stop()
	mu.Lock()
	n = len(cancels)
	mu.Unlock()
	if n != 0 {
		t.Errorf("%d contexts registered after stop, want 0", n)
	}
}
