package broker

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"

	"github.com/flameox/flameox/internal/subreaper"
)

// The subreaper helper (internal/subreaper: its package comment has the arguments and
// the protocol) contains a workload; this file is the broker's side of it: it starts
// the helper, reads its report and closes the control pipe to have the tree killed.

// reaperReport is what the helper said.
type reaperReport struct {
	// workload is the workload's pid: -1 when it started but the helper ended before
	// saying so (awaitStart), 0 when it did not start.
	workload  int
	taskBound string // cgroup_v1 or rlimit: the task bound the helper applied
	startErr  string // why the workload did not start
	// unavailable: the helper could not become a subreaper and started nothing.
	unavailable bool
	// scoped: the helper cloned the workload into the scope it was handed (scope=1).
	scoped   bool
	lost     bool // the helper ended before its first line
	ended    bool // the end line arrived
	exitCode *int
	killed   int
}

// readStart reads the helper's first line.
func (r *reaperReport) readStart(br *bufio.Reader) {
	line, err := br.ReadString('\n')
	if err != nil {
		r.startErr = "the containment helper ended before starting the workload"
		r.lost = true
		return
	}
	line = strings.TrimSpace(line)
	if v, ok := strings.CutPrefix(line, "started "); ok {
		f := strings.Fields(v)
		if len(f) > 0 {
			r.workload, _ = strconv.Atoi(f[0])
		}
		for _, w := range f[1:] {
			if b, ok := strings.CutPrefix(w, "tasks="); ok && b != "-" {
				r.taskBound = b
			}
			if w == "scope=1" {
				r.scoped = true
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
	h, startErr := launchHelper(sc, tl, ctlR, ctlW, func(cmd *exec.Cmd, opts string) {
		cmd.Args = append([]string{subreaper.Name, subreaper.Arg, opts, spec.Path}, spec.helperArgv()...)
		cmd.Dir, cmd.Env, cmd.Stdin, cmd.Stdout, cmd.Stderr = spec.Dir, spec.Env, spec.stdin(), outW, errW
	})
	if h == nil {
		if _, err := os.Stat(spec.Dir); spec.Dir != "" && err != nil {
			return nil, startErr
		}
		return nil, nil
	}
	if err := h.awaitStart(sc); err != nil || h.rep.workload == 0 {
		return nil, err
	}
	return h, nil
}

// helperArgv is the workload's argv as a helper starts it: Args, or the path alone.
func (spec Spec) helperArgv() []string {
	if len(spec.Args) == 0 {
		return []string{spec.Path}
	}
	return spec.Args
}

// awaitStart reads the helper's first report. Once the workload runs, rep.workload is
// its pid; otherwise the helper, which started nothing, is ended and reaped (its control
// and status ends closed and cleared), and the error is the workload's start failure
// (nil where a helper cannot contain it here: rep.unavailable).
// A helper that ends without a word while the scope sc it was handed holds a process
// started the workload: nothing but its clone enters the scope. The workload ran first
// and killed it (or something else did) before it reported; the workload runs in the
// scope (rep.workload -1, rep.scoped), so the scope contains it and ends it as it would
// have (the task bound the helper applied goes unreported).
func (h *reaper) awaitStart(sc *scope) error {
	h.rep.readStart(h.br)
	if h.rep.lost && sc != nil && sc.populated() {
		h.rep.workload, h.rep.scoped, h.rep.startErr = -1, true, ""
	}
	if h.rep.workload != 0 {
		return nil
	}
	h.end()
	if h.rep.unavailable {
		return nil
	}
	return errors.New(h.rep.startErr)
}

// end ends the helper through the end of its control channel (it exits having started
// nothing, or kills what it started), reaps it and closes its status pipe. It may be
// called again.
func (h *reaper) end() {
	if h.ctlW != nil {
		h.ctlW.Close()
		h.ctlW = nil
	}
	if h.cmd.Process != nil && h.cmd.ProcessState == nil {
		h.cmd.Wait()
	}
	if h.statusR != nil {
		h.statusR.Close()
		h.statusR = nil
	}
}

// launchHelper starts the helper with ctlR as its end of the control channel (ctlW the
// broker's; both are closed on failure), its status pipe and the files of its options
// (helperFiles: the scope, the task bound's), in its own process group; set gives the
// command what differs (its arguments from the task options on, its directory,
// environment and standard streams).
func launchHelper(sc *scope, tl *taskLimit, ctlR, ctlW *os.File, set func(cmd *exec.Cmd, opts string)) (*reaper, error) {
	statusR, statusW, err := os.Pipe()
	if err != nil {
		ctlR.Close()
		ctlW.Close()
		return nil, err
	}
	opts, files := helperFiles(sc, tl, 5)
	cmd := &exec.Cmd{
		Path: "/proc/self/exe", ExtraFiles: append([]*os.File{ctlR, statusW}, files...),
		// The helper's own group holds the workload; SIGTERM on the broker's death makes it
		// kill the tree (the control channel's end does too).
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM},
	}
	set(cmd, opts)
	err = cmd.Start()
	ctlR.Close()
	statusW.Close()
	if err != nil {
		ctlW.Close()
		statusR.Close()
		return nil, err
	}
	return &reaper{cmd: cmd, ctlW: ctlW, statusR: statusR, br: bufio.NewReader(statusR)}, nil
}

// helperFiles are the helper's options and the files they name, numbered from first: the
// scope's directory (scope=N), into which the helper clones the workload while it stays
// outside, so that the workload is a member from its first instruction and the scope
// holds the workload's tasks alone; and the task bound's files and limit
// (helperOptions), unless the bound is the scope's own pids.max, which needs nothing of
// the helper.
func helperFiles(sc *scope, tl *taskLimit, first int) (string, []*os.File) {
	var opts []string
	var files []*os.File
	if sc != nil {
		opts, files = append(opts, "scope="+strconv.Itoa(first)), append(files, sc.f)
	}
	if tl != nil && tl.kind != "cgroup" {
		if o, fs := tl.helperOptions(first + len(files)); o != "-" {
			opts, files = append(opts, o), append(files, fs...)
		}
	}
	if len(opts) == 0 {
		return "-", nil
	}
	return strings.Join(opts, ","), files
}

// startInScope starts the command mk builds, cloned into the scope when there is one. A
// clone into the scope that the kernel refuses (no cgroup.procs write access at the common
// ancestor, a scope made threaded) is retried outside it with a fresh command.
func startInScope(mk func() *exec.Cmd, sc *scope) (inScope bool, err error) {
	if sc != nil {
		cmd := mk()
		cmd.SysProcAttr.UseCgroupFD = true
		cmd.SysProcAttr.CgroupFD = int(sc.f.Fd())
		if err := cmd.Start(); err == nil {
			return true, nil
		}
	}
	return false, mk().Start()
}
