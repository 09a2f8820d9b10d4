// Package procfs reads the process table the way internal/broker and its containment
// helper (internal/subreaper) need it: each process's parent, process group, state and
// start time from Linux's /proc (procfs_linux.go; elsewhere the readers find nothing, and
// macOS's broker fills Process from sysctl kern.proc itself), and the tree of one
// process. It imports only the standard library, so that the helper, which runs from
// internal/subreaper's init, initializes right after the packages it needs
// (docs/decisions/0067-start-up.md, Addendum).
package procfs

// Process is what the process table says about one process.
type Process struct {
	// PID is the process's id, PPID its parent's and Pgrp its process group's.
	PID, PPID, Pgrp int
	// State is the process's state letter (/proc/PID/stat): Z for a zombie, X for a dead
	// process.
	State byte
	// Start is when the process started, in the table's own unit (clock ticks after boot
	// on Linux): with PID it tells a process from a later one given the same id.
	Start uint64
}

// Live reports whether p was running when it was read: neither a zombie nor dead.
func (p Process) Live() bool { return p.State != 'Z' && p.State != 'X' }

// Tree returns the processes of all descended from root or in root's process group, root
// included, each once (a cycle of parent links included).
func Tree(all []Process, root int) []Process {
	children := map[int][]Process{}
	for _, p := range all {
		children[p.PPID] = append(children[p.PPID], p)
	}
	seen := map[int]bool{}
	var out []Process
	var walk func(p Process)
	walk = func(p Process) {
		if seen[p.PID] {
			return
		}
		seen[p.PID] = true
		out = append(out, p)
		for _, c := range children[p.PID] {
			walk(c)
		}
	}
	for _, p := range all {
		if p.PID == root || p.Pgrp == root {
			walk(p)
		}
	}
	return out
}
