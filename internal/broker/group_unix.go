//go:build linux || darwin

package broker

import (
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/flameox/flameox/internal/procfs"
)

// A group is the process_group mechanism, the portable containment of Linux and macOS:
// the workload in a process group of its own, its descendants found by polling the
// process table (tree: /proc on Linux, sysctl kern.proc on macOS) at every sample, and
// the group and everything seen killed on a limit, on cancellation and at exit. A
// descendant that leaves the group (setsid) and whose parent exits before a sample sees
// it is reparented out of the tree and missed (GapDetachedDescendants). On Linux it is
// also the fallback inside the stronger mechanisms (contain_linux.go), which replace its
// member listing or its end; on macOS it is the mechanism (contain_darwin.go).
type group struct {
	cmd     *exec.Cmd
	pid     int // the root: the workload, or the containment helper
	tracked map[int]procfs.Process
	// members lists the live processes of the invocation: tree(pid) unless a cgroup
	// scope lists them.
	members func() []procfs.Process
	// helper is set when the root is a containment helper, whose own memory is not the
	// workload's.
	helper bool
}

func newGroup(cmd *exec.Cmd) *group {
	g := &group{cmd: cmd, pid: cmd.Process.Pid, tracked: map[int]procfs.Process{}}
	g.members = func() []procfs.Process { return tree(g.pid) }
	return g
}

// groupCmd is the command that starts spec's workload in its own process group.
func groupCmd(spec Spec, outW, errW *os.File) *exec.Cmd {
	return &exec.Cmd{
		Path: spec.Path, Args: spec.Args, Dir: spec.Dir, Env: spec.Env,
		Stdin: spec.stdin(), Stdout: outW, Stderr: errW,
		SysProcAttr: groupAttr(),
	}
}

// startGroup starts spec under the process_group mechanism alone.
func startGroup(spec Spec, outW, errW *os.File, res *Result) (container, error) {
	cmd := groupCmd(spec, outW, errW)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	res.Mechanism = "process_group"
	res.Gaps = groupGaps()
	return newGroup(cmd), nil
}

// groupGaps is what the process_group mechanism cannot hold here.
func groupGaps() []string {
	gaps := []string{GapDetachedDescendants, GapBrokerDeath}
	if !rssMeasured() {
		gaps = append(gaps, GapMemoryUnmeasured)
	}
	return gaps
}

func (g *group) wait() error { return g.cmd.Wait() }

func (g *group) sample() (int64, bool) {
	var total int64
	for _, p := range g.members() {
		g.tracked[p.PID] = p
		if !g.helper || p.PID != g.pid {
			total += rss(p.PID)
		}
	}
	return total, rssMeasured()
}

func (g *group) kill(<-chan error) (int, error, bool) {
	for _, p := range g.members() {
		g.tracked[p.PID] = p
	}
	return terminate(g.pid, g.tracked), nil, false
}

// end kills what is left of the tree and returns how many it killed besides the root. An
// empty process group with nothing tracked needs no process-table scan.
func (g *group) end() int {
	if len(g.tracked) > 0 || syscall.Kill(-g.pid, 0) != syscall.ESRCH {
		for _, p := range g.members() {
			g.tracked[p.PID] = p
		}
	}
	return terminate(g.pid, g.tracked)
}

func (g *group) finish(res *Result, waitErr error, _ bool) {
	res.DescendantsTerminated += g.end()
	recordExit(res, g.cmd, waitErr, nil)
}

func (g *group) release() {}

// terminate kills root's process group and every tracked process that still runs with its
// recorded start time, waits briefly for them to be gone, and returns how many it killed
// besides root.
func terminate(root int, tracked map[int]procfs.Process) int {
	var live []procfs.Process
	for _, p := range tracked {
		if alive(p) {
			live = append(live, p)
		}
	}
	_ = syscall.Kill(-root, syscall.SIGKILL)
	n := 0
	for _, p := range live {
		_ = syscall.Kill(p.PID, syscall.SIGKILL)
		if p.PID != root {
			n++
		}
	}
	deadline := time.Now().Add(2 * time.Second)
	for _, p := range live {
		for alive(p) && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		delete(tracked, p.PID)
	}
	return n
}
