package subreaper

import (
	"bytes"
	"io"
	"os"
	"os/signal"
	goruntime "runtime"
	"strconv"
	"syscall"
	"time"
	"unsafe"

	"github.com/flameox/flameox/internal/procfs"
)

// prSetChildSubreaper is prctl's PR_SET_CHILD_SUBREAPER (linux/prctl.h).
const prSetChildSubreaper = 36

func init() {
	if len(os.Args) >= 5 && os.Args[1] == Arg {
		os.Exit(reaperMain(invocation{opts: os.Args[2], path: os.Args[3], argv: os.Args[4:], env: os.Environ(), files: []uintptr{0, 1, 2}}, nil))
	}
	if len(os.Args) == 2 && os.Args[1] == ArgWaiting {
		// Signal handling is set up while the broker still prepares the invocation:
		// os/signal's first Notify hands each signal to a thread of its own and waits for
		// it, three round trips between threads (about 0.3 ms, more on a busy machine).
		sigs := notifyStop()
		inv, ok := receiveInvocation(3)
		if !ok {
			os.Exit(0) // abandoned: nothing was started
		}
		select {
		case <-sigs:
			os.Exit(0) // asked to stop while it waited: it starts nothing
		default:
		}
		os.Exit(reaperMain(inv, sigs))
	}
}

// notifyStop returns the channel of the signals that make the helper kill the tree.
func notifyStop() chan os.Signal {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	return sigs
}

// invocation is what the helper starts: its task options, the executable, argv,
// environment, working directory ("" for the helper's own) and the workload's standard
// input, output and error.
type invocation struct {
	opts      string
	path      string
	argv, env []string
	dir       string
	files     []uintptr
}

// receiveInvocation waits on the socket fd for the invocation message of a helper started
// ahead (ArgWaiting); false at the socket's end or on a message it cannot read (one cut
// short by MaxInvocationBytes included).
func receiveInvocation(fd int) (invocation, bool) {
	buf := make([]byte, MaxInvocationBytes)
	oob := make([]byte, syscall.CmsgSpace(MaxInvocationFiles*4))
	var n, oobn, flags int
	var err error
	for {
		n, oobn, flags, _, err = syscall.Recvmsg(fd, buf, oob, syscall.MSG_CMSG_CLOEXEC)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil || n == 0 || flags&(syscall.MSG_TRUNC|syscall.MSG_CTRUNC) != 0 {
		return invocation{}, false
	}
	msgs, err := syscall.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return invocation{}, false
	}
	fds, err := syscall.ParseUnixRights(&msgs[0])
	if err != nil {
		return invocation{}, false
	}
	inv, ok := decodeInvocation(buf[:n])
	if ok && len(fds) >= 3 {
		inv.opts, ok = attachedOptions(inv.opts, fds)
	}
	if !ok || len(fds) < 3 {
		for _, f := range fds {
			syscall.Close(f)
		}
		return invocation{}, false
	}
	for _, f := range fds[:3] {
		inv.files = append(inv.files, uintptr(f))
	}
	return inv, true
}

// attachedOptions rewrites the task options of an invocation message, which name the
// files attached to it by position (3 and on: after the three standard streams), with
// the descriptors those files arrived as; a file no option names is closed. False when
// an option names a position with no file, or a standard stream.
func attachedOptions(opts string, fds []int) (string, bool) {
	named := make([]bool, len(fds))
	var out []byte
	for _, o := range bytes.Split([]byte(opts), []byte(",")) {
		key, v, _ := bytes.Cut(o, []byte("="))
		switch string(key) {
		case "join", "home", "scope":
			i, err := strconv.Atoi(string(v))
			if err != nil || i < 3 || i >= len(fds) || named[i] {
				return "", false
			}
			named[i] = true
			o = append(append(append([]byte(nil), key...), '='), strconv.Itoa(fds[i])...)
		}
		if len(out) > 0 {
			out = append(out, ',')
		}
		out = append(out, o...)
	}
	for i := 3; i < len(fds); i++ {
		if !named[i] {
			syscall.Close(fds[i])
		}
	}
	return string(out), true
}

// decodeInvocation reads EncodeInvocation's payload; false when b is not one (fields not
// each ended by a NUL byte, an argv count that is not a positive number of the fields).
func decodeInvocation(b []byte) (invocation, bool) {
	fields := bytes.Split(b, []byte{0})
	if len(fields) < 6 || len(fields[len(fields)-1]) != 0 {
		return invocation{}, false
	}
	opts := string(fields[0])
	fields = fields[1 : len(fields)-1]
	argc, err := strconv.Atoi(string(fields[2]))
	if err != nil || argc < 1 || argc > len(fields)-3 {
		return invocation{}, false
	}
	str := func(b [][]byte) []string {
		out := make([]string, len(b))
		for i, f := range b {
			out[i] = string(f)
		}
		return out
	}
	return invocation{opts: opts, path: string(fields[0]), dir: string(fields[1]), argv: str(fields[3 : 3+argc]), env: str(fields[3+argc:])}, true
}

// reaperMain runs the helper and returns its exit status: 0 once it has reported, 2 when
// it could not. sigs are the stop signals where notifyStop has set them up already.
func reaperMain(inv invocation, sigs chan os.Signal) int {
	// The workload's PR_SET_PDEATHSIG is tied to the thread that forks it.
	goruntime.LockOSThread()
	ctl, status := os.NewFile(3, "control"), os.NewFile(4, "status")
	if ctl == nil || status == nil {
		return 2
	}
	stopReq := make(chan struct{}, 2)
	if sigs == nil {
		sigs = notifyStop()
	}
	// Neither pipe end may reach the workload.
	syscall.CloseOnExec(3)
	syscall.CloseOnExec(4)
	if _, _, errno := syscall.RawSyscall6(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0, 0, 0, 0); errno != 0 {
		// The broker falls back to process-group containment.
		report(status, "nosubreaper "+errno.Error())
		return 0
	}
	bound, restore := applyTaskOptions(inv.opts)
	pid, scoped, err := forkWorkload(inv.path, inv.argv, &syscall.ProcAttr{
		Dir: inv.dir, Env: inv.env, Files: inv.files,
		Sys: &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL},
	}, scopeFD(inv.opts))
	restore()
	for _, fd := range inv.files {
		if fd > 2 { // received: the workload's copies are its own
			syscall.Close(int(fd))
		}
	}
	if err != nil {
		report(status, "starterr "+string(bytes.ReplaceAll([]byte(err.Error()), []byte("\n"), []byte(" "))))
		return 0
	}
	report(status, "started "+strconv.Itoa(pid)+" tasks="+bound+scoped)
	// The helper writes nothing on its standard output: pointing it at its standard error
	// lets the workload's output end when the workload closes it, not when the helper
	// exits (broker.Spec.StdoutClosed).
	_ = syscall.Dup3(2, 1, 0)
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
			if childless() {
				return // no child, so no descendant: every orphan of the tree is a child here
			}
			live := descendants(self)
			if len(live) == 0 {
				return
			}
			for _, p := range live {
				_ = syscall.Kill(p.PID, syscall.SIGKILL)
				if p.PID != pid {
					killed[p.PID] = p.Start
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
				report(status, "end "+end+" killed "+strconv.Itoa(len(killed)))
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

// Options of waitid(2) (linux/wait.h) and its idtype P_ALL.
const (
	pAll     = 0
	wNoHang  = 0x1
	wExited  = 0x4
	wNoWait  = 0x1000000
	wAllKids = 0x40000000 // __WALL: children of any exit signal
)

// childless reports whether this process has no child left, running or exited: waitid
// over all children, without waiting and without reaping (WNOWAIT, so the reaping
// goroutine still collects every status), fails with ECHILD only then. As a subreaper the
// helper is the parent of every orphan of the tree, so a helper with no child has no
// descendant either, and killAll need not list them (seven /proc files for a helper of six
// threads, on every capture whose workload left nothing behind).
func childless() bool {
	var info [16]uint64 // siginfo_t: 128 bytes
	_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pAll, 0, uintptr(unsafe.Pointer(&info[0])), wNoHang|wExited|wNoWait|wAllKids, 0, 0)
	return errno == syscall.ECHILD
}

// scopeFD returns the descriptor the scope=FD option names, a cgroup v2 scope's
// directory, or -1 without the option.
func scopeFD(opts string) int {
	for _, o := range bytes.Split([]byte(opts), []byte(",")) {
		if v, ok := bytes.CutPrefix(o, []byte("scope=")); ok {
			if n, err := strconv.Atoi(string(v)); err == nil && n > 4 {
				return n
			}
			return -1
		}
	}
	return -1
}

// forkWorkload starts the workload with attr, cloned into the scope (the directory
// descriptor scope, -1 for none) where there is one: the workload is then a member from
// its first instruction, and the helper stays where it is (moving a whole process into a
// cgroup takes the kernel's global lock, about 10 ms here). It returns what the started
// line adds: " scope=1" where the clone into the scope succeeded, " scope=0" where the
// kernel refused it and the workload started outside, nothing without a scope.
func forkWorkload(path string, argv []string, attr *syscall.ProcAttr, scope int) (int, string, error) {
	if scope < 0 {
		pid, err := syscall.ForkExec(path, argv, attr)
		return pid, "", err
	}
	defer syscall.Close(scope)
	sys := *attr.Sys
	sys.UseCgroupFD, sys.CgroupFD = true, scope
	scoped := *attr
	scoped.Sys = &sys
	if pid, err := syscall.ForkExec(path, argv, &scoped); err == nil {
		return pid, " scope=1", nil
	}
	pid, err := syscall.ForkExec(path, argv, attr)
	return pid, " scope=0", err
}

// report writes one line of the protocol to the broker.
func report(status *os.File, line string) { _, _ = status.WriteString(line + "\n") }

// descendants returns the live processes below root: from root's subtree of children
// files where the kernel lists them (every orphan of the workload is the helper's child,
// so its subtree holds the whole tree), else by parent links from one /proc scan.
func descendants(root int) []procfs.Process {
	if out, ok := procfs.Descendants(root); ok {
		return out
	}
	all := procfs.Tree(procfs.Scan(), root)
	out := all[:0]
	for _, p := range all {
		if p.PID != root {
			out = append(out, p)
		}
	}
	return out
}

// applyTaskOptions runs in the helper's forking thread (locked to it) before it forks the
// workload: it joins the v1 group (join=FD), notes where to return (home=FD) and lowers
// RLIMIT_NPROC (nproc=N) for the fork. Both files are written "0", the writer itself:
// through a v1 tasks file that moves this thread alone (which the kernel does without the
// global lock a process's move takes). It returns the bound it applied (cgroup_v1, rlimit or -) and what to call once
// the fork is done: the helper returns home and gets its own limit back, so the bound
// holds the workload alone. None of the descriptors reaches the workload. The options
// are internal/broker's encoding (its helperFiles).
func applyTaskOptions(opts string) (string, func()) {
	bound := "-"
	var home *os.File
	var nproc uint64
	for _, o := range bytes.Split([]byte(opts), []byte(",")) {
		key, v, _ := bytes.Cut(o, []byte("="))
		n, err := strconv.Atoi(string(v))
		if err != nil || n <= 0 {
			continue
		}
		switch k := string(key); k {
		case "join", "home":
			if n <= 4 {
				continue
			}
			syscall.CloseOnExec(n)
			f := os.NewFile(uintptr(n), k)
			if k == "home" {
				home = f
				continue
			}
			if _, err := f.WriteString("0"); err == nil {
				bound = "cgroup_v1"
			}
			f.Close()
		case "nproc":
			nproc = uint64(n)
		}
	}
	var restoreLimit func()
	if nproc > 0 && bound == "-" {
		var prev syscall.Rlimit
		if syscall.Getrlimit(rlimitNproc, &prev) == nil {
			lim := min(procfs.UserTasks(os.Getuid())+nproc, prev.Cur)
			if syscall.Setrlimit(rlimitNproc, &syscall.Rlimit{Cur: lim, Max: prev.Max}) == nil {
				bound = "rlimit"
				restoreLimit = func() { _ = syscall.Setrlimit(rlimitNproc, &prev) }
			}
		}
	}
	return bound, func() {
		if restoreLimit != nil {
			restoreLimit()
		}
		if home != nil {
			_, _ = home.WriteString("0")
			home.Close()
		}
	}
}
