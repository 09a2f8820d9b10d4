package procfs

import (
	"bytes"
	"os"
	"strconv"
)

// The readers use bytes where strings would do: package strings sorts after the
// module's own packages, so Go initializes it late, and internal/subreaper's init would
// wait for it (the package comment).

// Stat reads /proc/PID/stat; false when pid is gone or its line cannot be parsed.
func Stat(pid int) (Process, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return Process{}, false
	}
	// The command name, in parentheses, may itself hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return Process{}, false
	}
	f := bytes.Fields(b[i+2:])
	if len(f) < 20 {
		return Process{}, false
	}
	ppid, _ := strconv.Atoi(string(f[1]))
	pgrp, _ := strconv.Atoi(string(f[2]))
	start, _ := strconv.ParseUint(string(f[19]), 10, 64)
	return Process{PID: pid, PPID: ppid, Pgrp: pgrp, State: f[0][0], Start: start}, true
}

// Scan returns every live process (neither a zombie nor dead) from one read of /proc;
// nil when /proc cannot be read.
func Scan() []Process {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var all []Process
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, ok := Stat(pid); ok && p.Live() {
			all = append(all, p)
		}
	}
	return all
}

// UserTasks counts the tasks (threads) of the processes whose real user is uid, as this
// pid namespace's /proc shows them: what RLIMIT_NPROC compares with.
func UserTasks(uid int) uint64 {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	want := strconv.Itoa(uid)
	var n uint64
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/status")
		if err != nil {
			continue
		}
		var mine bool
		var threads uint64
		for _, line := range bytes.Split(b, []byte("\n")) {
			if v, ok := bytes.CutPrefix(line, []byte("Uid:")); ok {
				f := bytes.Fields(v)
				mine = len(f) > 0 && string(f[0]) == want
			} else if v, ok := bytes.CutPrefix(line, []byte("Threads:")); ok {
				threads, _ = strconv.ParseUint(string(bytes.TrimSpace(v)), 10, 64)
			}
		}
		if mine {
			n += max(threads, 1)
		}
	}
	return n
}

// Descendants returns the live processes below root, reading only root's subtree: the
// children files of each process's threads (/proc/PID/task/TID/children, which kernels
// built with CONFIG_PROC_CHILDREN list), where Scan reads every process of the system.
// ok is false where root's own children cannot be read that way; the caller then scans
// (Tree of Scan). Like a scan, it sees the tree as it is while it reads: a process forked
// meanwhile may be missing, which a caller that kills what it finds meets in its next
// round, where the dead parent's children are the subreaper's own.
func Descendants(root int) (out []Process, ok bool) {
	seen := map[int]bool{root: true}
	for queue := []int{root}; len(queue) > 0; queue = queue[1:] {
		kids, ok := Children(queue[0])
		if !ok && queue[0] == root {
			return nil, false
		}
		for _, k := range kids {
			if seen[k] {
				continue
			}
			seen[k] = true
			queue = append(queue, k)
			if p, ok := Stat(k); ok && p.Live() {
				out = append(out, p)
			}
		}
	}
	return out, true
}

// Children returns the children of pid's threads, from their children files; false when
// pid's threads cannot be listed or a thread has no children file.
func Children(pid int) ([]int, bool) {
	dir := "/proc/" + strconv.Itoa(pid) + "/task/"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return nil, false
	}
	var out []int
	for _, t := range tasks {
		b, err := os.ReadFile(dir + t.Name() + "/children")
		if err != nil {
			if os.IsNotExist(err) {
				// A thread that exited since the listing has no directory left; a
				// kernel without the files has none for any thread.
				if _, serr := os.Stat(dir + t.Name()); serr == nil {
					return nil, false
				}
			}
			continue
		}
		for _, f := range bytes.Fields(b) {
			if n, err := strconv.Atoi(string(f)); err == nil {
				out = append(out, n)
			}
		}
	}
	return out, true
}
