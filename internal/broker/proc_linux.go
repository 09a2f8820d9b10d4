package broker

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

// readStat parses /proc/PID/stat.
func readStat(pid int) (procInfo, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procInfo{}, false
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 || i+2 >= len(b) {
		return procInfo{}, false
	}
	f := strings.Fields(string(b[i+2:]))
	if len(f) < 20 {
		return procInfo{}, false
	}
	ppid, _ := strconv.Atoi(f[1])
	pgrp, _ := strconv.Atoi(f[2])
	start, _ := strconv.ParseUint(f[19], 10, 64)
	return procInfo{pid: pid, ppid: ppid, pgrp: pgrp, state: f[0][0], start: start}, true
}

// tree returns the live processes descended from root or in root's process group, root
// included, from one scan of /proc.
func tree(root int) []procInfo {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var all []procInfo
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		p, ok := readStat(pid)
		if !ok || p.state == 'Z' || p.state == 'X' {
			continue
		}
		all = append(all, p)
	}
	return treeOf(all, root)
}

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
func alive(p procInfo) bool {
	now, ok := readStat(p.pid)
	return ok && now.start == p.start && now.state != 'Z' && now.state != 'X'
}

// groupAttr starts a workload in its own process group, killed when the thread that
// started it (the broker's) ends.
func groupAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
