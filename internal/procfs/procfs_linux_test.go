package procfs

import (
	"os"
	"os/exec"
	"slices"
	"syscall"
	"testing"
)

// TestStat reads this process, a child it started in a process group of its own and a
// pid that no process has.
func TestStat(t *testing.T) {
	self, child := os.Getpid(), startSleep(t)
	for _, c := range []struct {
		name       string
		pid        int
		ppid, pgrp int
		ok         bool
	}{
		{"this process", self, os.Getppid(), syscall.Getpgrp(), true},
		{"a child in its own process group", child, self, child, true},
		{"no such process", -1, 0, 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, ok := Stat(c.pid)
			if ok != c.ok {
				t.Fatalf("Stat(%d) ok = %v, want %v", c.pid, ok, c.ok)
			}
			if !ok {
				return
			}
			if p.PID != c.pid || p.PPID != c.ppid || p.Pgrp != c.pgrp || !p.Live() || p.Start == 0 {
				t.Errorf("Stat(%d) = %+v, want parent %d, group %d, live, a start time", c.pid, p, c.ppid, c.pgrp)
			}
		})
	}
	// The same process read again keeps its start time, which tells it from a later one.
	a, _ := Stat(child)
	b, _ := Stat(child)
	if a.Start != b.Start {
		t.Errorf("start time changed: %d, then %d", a.Start, b.Start)
	}
}

// TestScan finds this process, live, among the live processes, and in its own tree.
func TestScan(t *testing.T) {
	all := Scan()
	self, ok := Stat(os.Getpid())
	if !ok {
		t.Fatal("Stat of this process failed")
	}
	found := false
	for _, p := range all {
		if !p.Live() {
			t.Errorf("Scan returned %+v, which is not live", p)
		}
		found = found || p.PID == self.PID && p.Start == self.Start
	}
	if !found {
		t.Errorf("Scan's %d processes miss this one, %+v", len(all), self)
	}
	if got := Tree(all, self.PID); !slices.ContainsFunc(got, func(p Process) bool { return p.PID == self.PID }) {
		t.Errorf("Tree(Scan(), self) = %+v, want this process in it", got)
	}
}

// TestUserTasks: this process's threads count for its user; a user without processes
// has none.
func TestUserTasks(t *testing.T) {
	if n := UserTasks(os.Getuid()); n == 0 {
		t.Errorf("UserTasks(%d) = 0, want at least this process's threads", os.Getuid())
	}
	if n := UserTasks(1<<31 - 2); n != 0 {
		t.Errorf("UserTasks of a user with no processes = %d", n)
	}
}

// startSleep starts a sleep in a process group of its own, ended with the test, and
// returns its pid.
func startSleep(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("sleep", "30")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Skipf("no sleep: %v", err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd.Process.Pid
}

// TestDescendants: the subtree read through the children files is the one a scan of the
// whole table finds by parent links: a child, and the two processes it started.
func TestDescendants(t *testing.T) {
	if _, ok := Children(os.Getpid()); !ok {
		t.Skip("this kernel lists no /proc/PID/task/TID/children")
	}
	cmd := exec.Command("sh", "-c", "sleep 30 & sleep 30 & echo started; wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Skipf("no sh: %v", err)
	}
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() })
	// Both sleeps are forked once the shell prints.
	if _, err := out.Read(make([]byte, 8)); err != nil {
		t.Fatal(err)
	}
	self := os.Getpid()
	got, ok := Descendants(self)
	if !ok {
		t.Fatal("Descendants refused a tree whose children files exist")
	}
	var byLinks []int
	parent := map[int]int{}
	for _, p := range Scan() {
		parent[p.PID] = p.PPID
	}
	for pid := range parent {
		for p, hops := parent[pid], 0; p > 1 && hops < 64; p, hops = parent[p], hops+1 {
			if p == self {
				byLinks = append(byLinks, pid)
				break
			}
		}
	}
	var pids []int
	for _, p := range got {
		if !p.Live() {
			t.Errorf("Descendants returned %+v, which is not live", p)
		}
		pids = append(pids, p.PID)
	}
	slices.Sort(pids)
	slices.Sort(byLinks)
	if len(pids) != 3 || !slices.Contains(pids, cmd.Process.Pid) || !slices.Equal(pids, byLinks) {
		t.Errorf("Descendants = %v, want the shell %d and its two sleeps, as parent links give: %v", pids, cmd.Process.Pid, byLinks)
	}
	if _, ok := Descendants(-1); ok {
		t.Error("Descendants of no process: ok")
	}
}
