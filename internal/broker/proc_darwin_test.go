package broker

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// defaultMechanism is the containment macOS runs.
const defaultMechanism = "process_group"

// running reports whether pid is a live (non-zombie) process.
func running(pid int) bool {
	kp, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	return err == nil && int(kp.Proc.P_pid) == pid && kp.Proc.P_stat != sZomb
}

// TestRSSOfSelf reads this test process's resident memory through proc_info: more than
// the Go heap it has touched, and less than a terabyte.
func TestRSSOfSelf(t *testing.T) {
	if !rssMeasured() {
		t.Fatal("proc_info(PROC_PIDTASKINFO) refused this process's own task info")
	}
	keep := make([]byte, 64<<20)
	for i := range keep {
		keep[i] = 1
	}
	got := rss(os.Getpid())
	if got < 64<<20 || got > 1<<40 {
		t.Errorf("rss = %d bytes with 64 MiB touched", got)
	}
	_ = keep[len(keep)-1]
}
