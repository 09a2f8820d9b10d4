package broker

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// On macOS the process table is the kernel's (sysctl kern.proc): parent, process group,
// state and start time of every process, with no /proc to scan. Resident memory is not
// in it (the kinfo_proc's e_xrssize is always zero); it is proc_pidinfo's
// (PROC_PIDTASKINFO) in libproc, which golang.org/x/sys does not wrap and this module
// does not call without cgo, so memory is unmeasured here (GapMemoryUnmeasured).

// sZomb is a zombie's p_stat (sys/proc.h).
const sZomb = 5

// infoOf is what one kinfo_proc says.
func infoOf(kp *unix.KinfoProc) procInfo {
	state := byte('R')
	if kp.Proc.P_stat == sZomb {
		state = 'Z'
	}
	t := kp.Proc.P_starttime
	return procInfo{pid: int(kp.Proc.P_pid), ppid: int(kp.Eproc.Ppid), pgrp: int(kp.Eproc.Pgid), state: state,
		start: uint64(t.Sec)*1e6 + uint64(t.Usec)}
}

// tree returns the live processes descended from root or in root's process group, root
// included, from one read of the process table.
func tree(root int) []procInfo {
	kps, err := unix.SysctlKinfoProcSlice("kern.proc.all")
	if err != nil {
		return nil
	}
	all := make([]procInfo, 0, len(kps))
	for i := range kps {
		if p := infoOf(&kps[i]); p.state != 'Z' {
			all = append(all, p)
		}
	}
	return treeOf(all, root)
}

// rssMeasured: macOS gives no resident memory of another process without libproc.
const rssMeasured = false

// rss is not measured on macOS.
func rss(int) int64 { return 0 }

// alive reports whether the process p still runs (not a zombie) with its start time.
func alive(p procInfo) bool {
	kp, err := unix.SysctlKinfoProc("kern.proc.pid", p.pid)
	if err != nil || int(kp.Proc.P_pid) != p.pid {
		return false
	}
	now := infoOf(kp)
	return now.start == p.start && now.state != 'Z'
}

// groupAttr starts a workload in its own process group. macOS has no parent-death
// signal: a broker killed outright leaves the tree running (GapBrokerDeath).
func groupAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
