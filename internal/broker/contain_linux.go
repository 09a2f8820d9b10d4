package broker

import (
	"os"
	"os/exec"
	"time"
)

// reaperGrace bounds how long the broker waits for the helper to kill the tree and exit
// before it kills what it can see itself.
const reaperGrace = 5 * time.Second

// forceProcessGroup makes every invocation use the process_group mechanism alone (no
// cgroup scope, no subreaper helper, no task bound), the containment macOS has: tests set
// it to run the portable path on Linux.
var forceProcessGroup bool

// A linuxContainer is the process group of group_unix.go made stronger where Linux
// allows: a cgroup v2 scope that lists every member and kills what left the tree
// (cgroup_linux.go), a subreaper helper that every orphan reparents to (internal/subreaper;
// reaper_linux.go starts it), and a task bound (tasks_linux.go).
type linuxContainer struct {
	*group
	h       *reaper // nil: the workload is the root
	sc      *scope  // nil: no scope could be created
	inScope bool
	tl      *taskLimit
	reaped  bool
}

// startContained starts spec under the strongest containment Linux offers here.
func startContained(spec Spec, outW, errW *os.File, res *Result) (container, error) {
	if forceProcessGroup {
		spec.Prestarted.Abandon()
		return startGroup(spec, outW, errW, res)
	}
	if p := spec.Prestarted.take(); p != nil {
		if c, err, ok := p.start(spec, outW, errW, res); ok {
			return c, err
		}
		p.abandon()
	}
	// The reaper helper contains the workload; where it cannot run, or the spec asks for
	// none (Direct), the workload is started directly in its own process group. Either is
	// cloned into a cgroup scope of its own where one can be created.
	sc := newScope()
	inScope := false
	var tl *taskLimit
	var h *reaper
	var err error
	if !spec.Direct {
		tl = limitTasks(taskBound(spec), sc)
		h, err = startReaper(spec, outW, errW, sc, tl)
		// The helper holds its own copies of the task bound's descriptors.
		tl.closeFiles()
	}
	var cmd *exec.Cmd
	if h != nil {
		cmd = h.cmd
		inScope = h.rep.scoped
	} else if err == nil {
		inScope, err = startInScope(func() *exec.Cmd {
			cmd = groupCmd(spec, outW, errW)
			return cmd
		}, sc)
	}
	if err != nil {
		tl.remove()
		if sc != nil {
			sc.remove()
		}
		return nil, err
	}
	return contained(res, cmd, h, sc, inScope, tl), nil
}

// contained is the container of a started invocation: cmd is the helper h where there is
// one, else the workload; inScope says whether it was cloned into the scope sc.
func contained(res *Result, cmd *exec.Cmd, h *reaper, sc *scope, inScope bool, tl *taskLimit) *linuxContainer {
	switch {
	case sc != nil && inScope:
		res.Mechanism = "cgroup"
	case h != nil:
		res.Mechanism = "subreaper"
	default:
		res.Mechanism = "process_group"
		res.Gaps = groupGaps()
	}
	if tl != nil && (tl.kind == "cgroup" && inScope || h != nil && h.rep.taskBound == tl.kind) {
		res.TaskBound, res.MaxTasks = tl.kind, tl.max
	}
	c := &linuxContainer{group: newGroup(cmd), h: h, sc: sc, inScope: inScope, tl: tl}
	c.helper = h != nil
	if inScope {
		// The scope's members, read from the kernel, rather than the tree by parent links
		// and process group from a /proc scan.
		c.members = sc.members
	}
	return c
}

func (c *linuxContainer) kill(exited <-chan error) (int, error, bool) {
	if c.h != nil && !c.reaped {
		// The helper kills the whole tree and exits; the scan below is the fallback for a
		// helper that does not.
		c.h.ctlW.Close()
		select {
		case werr := <-exited:
			c.reaped = true
			return 0, werr, true
		case <-time.After(reaperGrace):
		}
	}
	return c.group.kill(exited)
}

// tasksRefused reads the refusals and tasks of a cgroup task bound (cgroup, cgroup_v1);
// an rlimit bound counts neither.
func (c *linuxContainer) tasksRefused() (refused, current int64, counted bool) {
	if c.tl == nil || c.tl.dir == "" {
		return 0, 0, false
	}
	return c.tl.refused(), c.tl.current(), true
}

func (c *linuxContainer) finish(res *Result, waitErr error, _ bool) {
	res.DescendantsTerminated += c.end()
	if c.inScope {
		// What is still in the scope left the tree (its helper was killed from outside, so
		// it reparented to init): the kernel still knows it, and it ends here.
		res.DescendantsTerminated += c.sc.kill()
	}
	if res.TaskBound != "" {
		res.TasksRefused = c.tl.refused()
	}
	// A v1 pids group is emptied and removed here (a v2 scope goes last, in release).
	res.DescendantsTerminated += c.tl.remove()
	if c.h == nil {
		recordExit(res, c.cmd, waitErr, nil)
		return
	}
	// The helper has exited: its report is complete.
	c.h.rep.readEnd(c.h.br)
	c.h.statusR.Close()
	res.DescendantsTerminated += c.h.rep.killed
	res.Termination = "terminated"
	if c.h.rep.exitCode != nil {
		res.ExitCode = c.h.rep.exitCode
		res.Termination = "exited"
	}
}

func (c *linuxContainer) release() {
	// The scope is removed last: it ends whatever of the invocation is still in it.
	if c.sc != nil {
		c.sc.remove()
	}
	if c.h != nil {
		c.h.ctlW.Close()
	}
}
