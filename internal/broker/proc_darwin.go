package broker

import (
	"os"
	"sync"
	"syscall"
	"unsafe"

	"github.com/flameox/flameox/internal/procfs"
	"golang.org/x/sys/unix"
)

// On macOS the process table is the kernel's (sysctl kern.proc): parent, process group,
// state and start time of every process, with no /proc to scan. Resident memory is not
// in it (the kinfo_proc's e_xrssize is always zero); it is the proc_info system call's
// (what libproc's proc_pidinfo(pid, PROC_PIDTASKINFO) calls), made here without cgo
// through the system call trap, as the syscall package makes its own.

// sZomb is a zombie's p_stat (sys/proc.h).
const sZomb = 5

// infoOf is what one kinfo_proc says.
func infoOf(kp *unix.KinfoProc) procfs.Process {
	state := byte('R')
	if kp.Proc.P_stat == sZomb {
		state = 'Z'
	}
	t := kp.Proc.P_starttime
	return procfs.Process{PID: int(kp.Proc.P_pid), PPID: int(kp.Eproc.Ppid), Pgrp: int(kp.Eproc.Pgid), State: state,
		Start: uint64(t.Sec)*1e6 + uint64(t.Usec)}
}

// tree returns the live processes descended from root or in root's process group, root
// included, from one read of the process table.
func tree(root int) []procfs.Process {
	kps, err := unix.SysctlKinfoProcSlice("kern.proc.all")
	if err != nil {
		return nil
	}
	all := make([]procfs.Process, 0, len(kps))
	for i := range kps {
		if p := infoOf(&kps[i]); p.State != 'Z' {
			all = append(all, p)
		}
	}
	return procfs.Tree(all, root)
}

// proc_info's call and flavor numbers (sys/proc_info.h): PROC_INFO_CALL_PIDINFO and
// PROC_PIDTASKINFO.
const (
	procInfoCallPIDInfo = 2
	procPIDTaskInfo     = 4
)

// procTaskInfo is struct proc_taskinfo (sys/proc_info.h), 96 bytes; this package reads
// only the resident size.
type procTaskInfo struct {
	virtualSize, residentSize                          uint64
	totalUser, totalSystem, threadsUser, threadsSystem uint64
	policy, faults, pageins, cowFaults                 int32
	messagesSent, messagesReceived                     int32
	syscallsMach, syscallsUnix, csw                    int32
	threadnum, numRunning, priority                    int32
}

// taskInfo reads pid's task info; ok is false when the kernel refused (no such process,
// another user's process, or a kernel without the call).
func taskInfo(pid int) (ti procTaskInfo, ok bool) {
	n, _, errno := unix.Syscall6(unix.SYS_PROC_INFO, procInfoCallPIDInfo, uintptr(pid), procPIDTaskInfo, 0,
		uintptr(unsafe.Pointer(&ti)), unsafe.Sizeof(ti))
	return ti, errno == 0 && n == unsafe.Sizeof(ti)
}

// rssMeasured reports whether this kernel answers proc_info for this process: then the
// resident memory of a workload (the same user's) is read; otherwise memory is
// unmeasured (GapMemoryUnmeasured).
var rssMeasured = sync.OnceValue(func() bool {
	_, ok := taskInfo(os.Getpid())
	return ok
})

// rss returns the resident set size of pid in bytes, 0 when it cannot be read.
func rss(pid int) int64 {
	ti, ok := taskInfo(pid)
	if !ok {
		return 0
	}
	return int64(ti.residentSize)
}

// alive reports whether the process p still runs (not a zombie) with its start time.
func alive(p procfs.Process) bool {
	kp, err := unix.SysctlKinfoProc("kern.proc.pid", p.PID)
	if err != nil || int(kp.Proc.P_pid) != p.PID {
		return false
	}
	now := infoOf(kp)
	return now.Start == p.Start && now.State != 'Z'
}

// groupAttr starts a workload in its own process group. macOS has no parent-death
// signal: a broker killed outright leaves the tree running (GapBrokerDeath).
func groupAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// procTaskInfo is exactly the kernel's 96 bytes: either array length below is negative,
// and the build fails, when the struct drifts.
var (
	_ [unsafe.Sizeof(procTaskInfo{}) - 96]struct{}
	_ [96 - unsafe.Sizeof(procTaskInfo{})]struct{}
)
