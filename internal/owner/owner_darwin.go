package owner

import (
	"errors"
	"syscall"

	"golang.org/x/sys/unix"
)

// ProcessStart returns the start time of pid in microseconds since the epoch, from the
// kernel's process table (sysctl kern.proc.pid), or 0.
func ProcessStart(pid int) uint64 {
	kp, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	if err != nil || int(kp.Proc.P_pid) != pid {
		return 0
	}
	t := kp.Proc.P_starttime
	if t.Sec < 0 {
		return 0
	}
	return uint64(t.Sec)*1e6 + uint64(t.Usec)
}

// noSuchProcess reports whether no process has pid.
func noSuchProcess(pid int) bool { return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) }
