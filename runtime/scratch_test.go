package runtime

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flameox/flameox/internal/owner"
	"github.com/flameox/flameox/internal/workerproc"
)

func TestScratchIOFailureIsRetryableWithItsReason(t *testing.T) {
	tests := []struct {
		err    error
		reason string
	}{
		{&fs.PathError{Op: "mkdir", Path: "/secret/host/path", Err: syscall.ENOSPC}, "no_space_left"},
		{&fs.PathError{Op: "mkdir", Path: "/secret/host/path", Err: syscall.EACCES}, "permission_denied"},
		{errors.New("other"), "io_error"},
	}
	for _, tt := range tests {
		f := scratchIOFailure(tt.err, "the capture scratch could not be created")
		if !f.Retryable || f.Details["reason"] != tt.reason || f.NextAction.WaitAndRetry == nil {
			t.Errorf("%v: %+v", tt.err, f)
		}
		if env := f.Envelope(); env.Message == "" || strings.Contains(env.Message, "/secret") {
			t.Errorf("%v: message %q", tt.err, env.Message)
		}
	}
}

// TestScratchOfGoneOwnersIsSwept: removeStaleScratch removes the session and worker scratch
// directories whose owner process is gone (a server killed with SIGKILL leaves a worker's
// request.json behind) and keeps those of live owners and names without an owner tag.
func TestScratchOfGoneOwnersIsSwept(t *testing.T) {
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Skip("no true")
	}
	gone := fmt.Sprintf("%d-%d", dead.Process.Pid, 12345)
	live := exec.Command("sleep", "600")
	if err := live.Start(); err != nil {
		t.Skip("no sleep")
	}
	t.Cleanup(func() { live.Process.Kill(); live.Wait() })
	child := fmt.Sprintf("%d-%d", live.Process.Pid, owner.ProcessStart(live.Process.Pid))

	tmp := t.TempDir()
	for _, c := range []struct {
		name  string
		swept bool
	}{
		{workerproc.ScratchPrefix + gone + "-111", true},
		{scratchPrefix + gone + "-222", true},
		{workerproc.ScratchPrefix + child + "-333", false},
		{workerproc.ScratchPrefix + owner.Tag() + "-444", false},
		{scratchPrefix + child + "-555", false},
		{workerproc.ScratchPrefix + "123456789", false}, // no owner tag: made before tags
		{"flameox-other-" + gone + "-666", false},
	} {
		dir := filepath.Join(tmp, c.name)
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "request.json"), []byte(`{"inputs":[]}`), 0o600); err != nil {
			t.Fatal(err)
		}
		t.Run(c.name, func(t *testing.T) {
			removeStaleScratch(tmp)
			if _, err := os.Stat(dir); c.swept != os.IsNotExist(err) {
				t.Errorf("swept %v, want %v (stat: %v)", os.IsNotExist(err), c.swept, err)
			}
		})
	}
}

// TestStaleScratchSweepIsStamped: a start sweeps the temporary directory and stamps it;
// a start within staleSweepInterval of the stamp does not list it, one after does; a
// stamp that is not this user's regular file is not trusted, and a link is not followed.
func TestStaleScratchSweepIsStamped(t *testing.T) {
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Skip("no true")
	}
	gone := fmt.Sprintf("%d-%d", dead.Process.Pid, 12345)
	n := 0
	leave := func(dir string) string { // a gone owner's scratch
		n++
		p := filepath.Join(dir, fmt.Sprintf("%s%s-%d", scratchPrefix, gone, n))
		if err := os.Mkdir(p, 0o700); err != nil {
			t.Fatal(err)
		}
		return p
	}
	exists := func(p string) bool { _, err := os.Lstat(p); return err == nil }
	t0 := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)

	tmp := t.TempDir()
	stamp := filepath.Join(tmp, sweptStampPrefix+strconv.Itoa(os.Getuid()))
	first := leave(tmp)
	sweepStaleScratch(tmp, t0)
	if exists(first) {
		t.Fatal("the first start did not sweep")
	}
	if st, err := os.Lstat(stamp); err != nil || !st.ModTime().Equal(t0) {
		t.Fatalf("stamp: %v, %v; want one made at %v", st, err, t0)
	}
	for _, c := range []struct {
		at    time.Duration
		swept bool
	}{
		{time.Minute, false},
		{staleSweepInterval - time.Second, false},
		{staleSweepInterval, true},                // stamped again at t0+interval
		{staleSweepInterval + time.Minute, false}, // within the new stamp's interval
		{-time.Hour, true},                        // a stamp from the future is not trusted
		{3 * staleSweepInterval, true},
	} {
		p := leave(tmp)
		sweepStaleScratch(tmp, t0.Add(c.at))
		if exists(p) == c.swept {
			t.Errorf("start at t0%+v: swept %v, want %v", c.at, !exists(p), c.swept)
		}
	}

	// A stamp that is a directory, or a link to a file of ours, is not trusted: every start
	// sweeps, and the link's target keeps its time.
	for _, kind := range []string{"directory", "link"} {
		tmp := t.TempDir()
		stamp := filepath.Join(tmp, sweptStampPrefix+strconv.Itoa(os.Getuid()))
		target := filepath.Join(t.TempDir(), "target")
		if err := os.WriteFile(target, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(target, t0, t0); err != nil {
			t.Fatal(err)
		}
		var err error
		if kind == "directory" {
			err = os.Mkdir(stamp, 0o700)
		} else {
			err = os.Symlink(target, stamp)
		}
		if err != nil {
			t.Fatal(err)
		}
		for i := range 2 {
			p := leave(tmp)
			sweepStaleScratch(tmp, t0.Add(time.Duration(i)*time.Second))
			if exists(p) {
				t.Errorf("%s stamp, start %d: not swept", kind, i)
			}
		}
		if st, err := os.Stat(target); err != nil || !st.ModTime().Equal(t0) {
			t.Errorf("%s stamp: the target's time changed: %v %v", kind, st.ModTime(), err)
		}
	}
}

// TestScratchOfWorkerCarriesItsOwner: a worker's scratch is named after this process, so a
// later start can tell whether its owner is gone.
func TestScratchOfWorkerCarriesItsOwner(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	dir, err := workerproc.Scratch()
	if err != nil {
		t.Fatal(err)
	}
	name, ok := ownerOf(filepath.Base(dir))
	if !ok || !strings.HasPrefix(name, owner.Tag()+"-") || owner.Gone(name) {
		t.Errorf("worker scratch %s: owner %q", filepath.Base(dir), name)
	}
	removeStaleScratch(filepath.Dir(dir))
	if _, err := os.Stat(dir); err != nil {
		t.Errorf("the scratch of a live worker owner was swept: %v", err)
	}
}
