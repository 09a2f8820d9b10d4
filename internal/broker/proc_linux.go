package broker

import (
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/flameox/flameox/internal/procfs"
)

// tree returns the live processes descended from root or in root's process group, root
// included, from one scan of /proc.
func tree(root int) []procfs.Process { return procfs.Tree(procfs.Scan(), root) }

var pageSize = int64(os.Getpagesize())

// rssMeasured: Linux gives every process's resident memory (/proc/PID/statm).
func rssMeasured() bool { return true }

// rss returns the resident set size of pid in bytes.
func rss(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	n, _ := strconv.ParseInt(f[1], 10, 64)
	return n * pageSize
}

// alive reports whether the process p still runs (not a zombie) with its start time.
func alive(p procfs.Process) bool {
	now, ok := procfs.Stat(p.PID)
	return ok && now.Start == p.Start && now.Live()
}

// groupAttr starts a workload in its own process group, killed when the thread that
// started it (the broker's) ends.
func groupAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
