package broker

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	goruntime "runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The reaper is the per-invocation helper that contains a workload: the running binary
// (whatever imports this package: flameox, a test binary) re-executed through
// /proc/self/exe with reaperArg as its first argument. It makes itself a child subreaper,
// starts the workload and reaps. Every process the workload leaves behind, a setsid daemon
// or a double fork included, reparents to the reaper rather than to init, so the reaper
// sees the whole tree by parent links alone and kills all of it when the workload exits,
// when the broker asks (closing the control pipe: a limit or cancellation), and when the
// broker dies (the control pipe reaches EOF even on SIGKILL; PR_SET_PDEATHSIG delivers
// SIGTERM as well). Its arguments are reaperArg, the task options (tasks_linux.go: "-" or
// join=FD,home=FD,nproc=N), the executable and the argv. Protocol on fd 4, one line each:
// "started PID tasks=KIND" (KIND: cgroup_v1 or rlimit where the helper applied that bound,
// else -) or "starterr MESSAGE", then "end exit|signal N killed K" once nothing of the
// tree is left.
const reaperArg = "--flameox-broker-reaper-v2"

// reaperName is argv[0] of the helper, as ps shows it.
const reaperName = "flameox-reaper"

func init() {
	if len(os.Args) >= 5 && os.Args[1] == reaperArg {
		os.Exit(reaperMain(os.Args[2], os.Args[3], os.Args[4:]))
	}
}

// reaperMain runs the helper and returns its exit status: 0 once it has reported, 2 when
// it could not.
func reaperMain(opts, path string, argv []string) int {
	// The workload's PR_SET_PDEATHSIG is tied to the thread that forks it.
	goruntime.LockOSThread()
	ctl, status := os.NewFile(3, "control"), os.NewFile(4, "status")
	if ctl == nil || status == nil {
		return 2
	}
	stopReq := make(chan struct{}, 2)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	// Neither pipe end may reach the workload.
	syscall.CloseOnExec(3)
	syscall.CloseOnExec(4)
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		// The broker falls back to process-group containment.
		fmt.Fprintf(status, "nosubreaper %v\n", err)
		return 0
	}
	bound, restore := applyTaskOptions(opts)
	pid, err := syscall.ForkExec(path, argv, &syscall.ProcAttr{
		Env: os.Environ(), Files: []uintptr{0, 1, 2},
		Sys: &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL},
	})
	restore()
	if err != nil {
		fmt.Fprintf(status, "starterr %s\n", strings.ReplaceAll(err.Error(), "\n", " "))
		return 0
	}
	fmt.Fprintf(status, "started %d tasks=%s\n", pid, bound)
	go func() { io.Copy(io.Discard, ctl); stopReq <- struct{}{} }()
	go func() { <-sigs; stopReq <- struct{}{} }()

	type reaped struct {
		pid int
		ws  syscall.WaitStatus
	}
	reapCh := make(chan reaped)
	go func() {
		defer close(reapCh)
		for {
			var ws syscall.WaitStatus
			wpid, err := syscall.Wait4(-1, &ws, 0, nil)
			if err == syscall.EINTR {
				continue
			}
			if err != nil { // ECHILD: nothing of the tree is left
				return
			}
			reapCh <- reaped{wpid, ws}
		}
	}()

	self := os.Getpid()
	killed := map[int]uint64{}
	killAll := func() {
		for round := 0; round < 1000; round++ {
			live := descendants(self)
			if len(live) == 0 {
				return
			}
			for _, p := range live {
				_ = syscall.Kill(p.pid, syscall.SIGKILL)
				if p.pid != pid {
					killed[p.pid] = p.start
				}
			}
			time.Sleep(time.Millisecond)
		}
	}
	end := "signal 9"
	workloadDone := false
	for {
		select {
		case r, ok := <-reapCh:
			if !ok {
				fmt.Fprintf(status, "end %s killed %d\n", end, len(killed))
				return 0
			}
			if r.pid == pid && !workloadDone {
				workloadDone = true
				if r.ws.Exited() {
					end = "exit " + strconv.Itoa(r.ws.ExitStatus())
				} else if r.ws.Signaled() {
					end = "signal " + strconv.Itoa(int(r.ws.Signal()))
				}
				// The invocation ended: nothing it started outlives it.
				killAll()
			}
		case <-stopReq:
			killAll()
		}
	}
}

// descendants returns the live processes below root by parent links, from one /proc scan.
func descendants(root int) []procInfo {
	all := tree(root)
	out := all[:0]
	for _, p := range all {
		if p.pid != root {
			out = append(out, p)
		}
	}
	return out
}

// reaperReport is what the helper said.
type reaperReport struct {
	workload  int    // the workload's pid; 0 when it did not start
	taskBound string // cgroup_v1 or rlimit: the task bound the helper applied
	startErr  string // why the workload did not start
	// unavailable: the helper could not become a subreaper and started nothing.
	unavailable bool
	ended       bool // the end line arrived
	exitCode    *int
	killed      int
}

// readStart reads the helper's first line.
func (r *reaperReport) readStart(br *bufio.Reader) {
	line, err := br.ReadString('\n')
	if err != nil {
		r.startErr = "the containment helper ended before starting the workload"
		return
	}
	line = strings.TrimSpace(line)
	if v, ok := strings.CutPrefix(line, "started "); ok {
		f := strings.Fields(v)
		if len(f) > 0 {
			r.workload, _ = strconv.Atoi(f[0])
		}
		if len(f) > 1 {
			if b, ok := strings.CutPrefix(f[1], "tasks="); ok && b != "-" {
				r.taskBound = b
			}
		}
		return
	}
	if strings.HasPrefix(line, "nosubreaper") {
		r.unavailable = true
		return
	}
	r.startErr = strings.TrimPrefix(line, "starterr ")
}

// readEnd reads the helper's last line; it returns at EOF.
func (r *reaperReport) readEnd(br *bufio.Reader) {
	line, err := br.ReadString('\n')
	if err != nil {
		return
	}
	var kind string
	var n, k int
	if _, err := fmt.Sscanf(strings.TrimSpace(line), "end %s %d killed %d", &kind, &n, &k); err != nil {
		return
	}
	r.ended, r.killed = true, k
	if kind == "exit" {
		r.exitCode = &n
	}
}

// reaper is a started helper.
type reaper struct {
	cmd     *exec.Cmd
	ctlW    *os.File // closing it asks the helper to kill the tree
	statusR *os.File
	br      *bufio.Reader
	rep     reaperReport
	inScope bool // the helper was cloned into the invocation's cgroup scope
}

// startReaper starts the helper for spec with the workload's output on outW and errW and
// returns it once the workload has started. It returns nil and no error when the helper
// cannot contain the workload here (the caller starts it directly), and an error when the
// workload itself could not be started.
func startReaper(spec Spec, outW, errW *os.File, sc *scope, tl *taskLimit) (*reaper, error) {
	ctlR, ctlW, err := os.Pipe()
	if err != nil {
		return nil, nil
	}
	statusR, statusW, err := os.Pipe()
	if err != nil {
		ctlR.Close()
		ctlW.Close()
		return nil, nil
	}
	argv := spec.Args
	if len(argv) == 0 {
		argv = []string{spec.Path}
	}
	var cmd *exec.Cmd
	opts, files := tl.helperOptions(5)
	inScope, startErr := startInScope(func() *exec.Cmd {
		cmd = &exec.Cmd{
			Path: "/proc/self/exe", Args: append([]string{reaperName, reaperArg, opts, spec.Path}, argv...),
			Dir: spec.Dir, Env: spec.Env, Stdin: spec.stdin(), Stdout: outW, Stderr: errW, ExtraFiles: append([]*os.File{ctlR, statusW}, files...),
			// The helper's own group holds the workload; SIGTERM on the broker's death makes it
			// kill the tree (the control pipe's EOF does too).
			SysProcAttr: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM},
		}
		return cmd
	}, sc)
	ctlR.Close()
	statusW.Close()
	if startErr != nil {
		ctlW.Close()
		statusR.Close()
		if _, err := os.Stat(spec.Dir); spec.Dir != "" && err != nil {
			return nil, startErr
		}
		return nil, nil
	}
	h := &reaper{cmd: cmd, ctlW: ctlW, statusR: statusR, br: bufio.NewReader(statusR), inScope: inScope}
	h.rep.readStart(h.br)
	if h.rep.workload > 0 {
		return h, nil
	}
	ctlW.Close()
	cmd.Wait()
	statusR.Close()
	if h.rep.unavailable {
		return nil, nil
	}
	return nil, errors.New(h.rep.startErr)
}

// startInScope starts the command mk builds, cloned into the scope when there is one. A
// clone into the scope that the kernel refuses (no cgroup.procs write access at the common
// ancestor, a scope made threaded) is retried outside it with a fresh command.
func startInScope(mk func() *exec.Cmd, sc *scope) (inScope bool, err error) {
	if sc != nil {
		cmd := mk()
		cmd.SysProcAttr.UseCgroupFD = true
		cmd.SysProcAttr.CgroupFD = sc.fd
		if err := cmd.Start(); err == nil {
			return true, nil
		}
	}
	return false, mk().Start()
}
