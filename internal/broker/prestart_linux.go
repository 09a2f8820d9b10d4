package broker

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/flameox/flameox/internal/subreaper"
)

// prestarted is a helper started ahead (Prestart): waiting in its scope, with the task
// bound max prepared, for the invocation on its control socket.
type prestarted struct {
	max int64
	sc  *scope
	tl  *taskLimit
	h   *reaper
}

// prestart starts a waiting helper with the task bound max; nil where the helper cannot
// be started here, or the broker is to use the process group alone. The helper is started
// first, and the scope and the task bound made while it starts (its exec and runtime
// start, about 3 ms here, are the longer): the invocation message hands them over
// (helperFiles), as a helper Run starts gets them with its arguments.
func prestart(max int64) *prestarted {
	if forceProcessGroup {
		return nil
	}
	h := startWaiting()
	if h == nil {
		return nil
	}
	sc := newScope()
	return &prestarted{max: max, sc: sc, tl: limitTasks(max, sc), h: h}
}

// startWaiting starts the helper with subreaper.ArgWaiting, with neither scope nor task
// bound; its control channel is a SOCK_SEQPACKET socket, so that the invocation and its
// files arrive as one message. Nil when it cannot start.
func startWaiting() *reaper {
	pair, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_SEQPACKET|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	ctlR, ctlW := os.NewFile(uintptr(pair[0]), "helper-control"), os.NewFile(uintptr(pair[1]), "helper-control")
	h, _ := launchHelper(nil, nil, ctlR, ctlW, func(cmd *exec.Cmd, _ string) {
		cmd.Args = []string{subreaper.Name, subreaper.ArgWaiting}
	})
	return h
}

// start hands the helper spec's invocation, with outW and errW as the workload's output,
// and returns its container once the workload has started, as startContained does; ok is
// false when the helper does not fit spec or is gone (the caller abandons it and starts
// spec as without it).
func (p *prestarted) start(spec Spec, outW, errW *os.File, res *Result) (c container, err error, ok bool) {
	if spec.Direct || !p.bound(taskBound(spec)) {
		return nil, nil, false
	}
	env := spec.Env
	if env == nil {
		env = os.Environ() // as exec.Cmd starts a command with no Env
	}
	// The options name the attached files by position, after the three standard streams.
	opts, extra := helperFiles(p.sc, p.tl, 3)
	defer p.tl.closeFiles() // the helper holds its own copies, or is gone
	if 3+len(extra) > subreaper.MaxInvocationFiles {
		return nil, nil, false
	}
	msg := subreaper.EncodeInvocation(opts, spec.Path, spec.Dir, spec.helperArgv(), env)
	if len(msg) > subreaper.MaxInvocationBytes {
		return nil, nil, false
	}
	stdin := spec.Stdin
	if stdin == nil {
		if stdin, err = os.Open(os.DevNull); err != nil {
			return nil, nil, false
		}
		defer stdin.Close()
	}
	raw, err := p.h.ctlW.SyscallConn()
	if err != nil {
		return nil, nil, false
	}
	var sendErr error
	fds := []int{int(stdin.Fd()), int(outW.Fd()), int(errW.Fd())}
	for _, f := range extra {
		fds = append(fds, int(f.Fd()))
	}
	err = raw.Write(func(fd uintptr) bool {
		sendErr = syscall.Sendmsg(int(fd), msg, syscall.UnixRights(fds...), nil, 0)
		return true
	})
	if err != nil || sendErr != nil {
		return nil, nil, false // the helper is gone: nothing was started
	}
	err = p.h.awaitStart(p.sc)
	if p.h.rep.workload != 0 {
		return contained(res, p.h.cmd, p.h, p.sc, p.h.rep.scoped, p.tl), nil, true
	}
	// The helper started nothing and has exited: the invocation failed to start (err), or
	// cannot be contained by a helper here (the caller starts it as without one).
	p.abandon()
	return nil, err, err != nil
}

// bound reports whether the helper's task bound is n, making it n where the bound is a
// cgroup's pids.max (the helper joins the group only when it forks the workload); an
// RLIMIT_NPROC bound is fixed by the helper's arguments, and a helper with a bound cannot
// run an invocation without one.
func (p *prestarted) bound(n int64) bool {
	if n == p.max {
		return true
	}
	if n <= 0 || p.tl == nil {
		return false
	}
	var err error
	switch p.tl.kind {
	case "cgroup", "cgroup_v1":
		err = writeControl(filepath.Join(p.tl.dir, "pids.max"), strconv.FormatInt(n, 10))
	default:
		return false
	}
	if err != nil {
		return false
	}
	p.max, p.tl.max = n, n
	return true
}

// abandon ends the helper (reaper.end) and removes its task bound and scope.
func (p *prestarted) abandon() {
	p.h.end()
	if p.tl != nil {
		p.tl.remove()
		p.tl = nil
	}
	if p.sc != nil {
		p.sc.remove()
		p.sc = nil
	}
}
