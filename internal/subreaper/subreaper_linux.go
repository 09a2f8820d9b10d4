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

	"github.com/flameox/flameox/internal/procfs"
)

// prSetChildSubreaper is prctl's PR_SET_CHILD_SUBREAPER (linux/prctl.h).
const prSetChildSubreaper = 36

func init() {
	if len(os.Args) >= 5 && os.Args[1] == Arg {
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
	if _, _, errno := syscall.RawSyscall6(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0, 0, 0, 0); errno != 0 {
		// The broker falls back to process-group containment.
		report(status, "nosubreaper "+errno.Error())
		return 0
	}
	bound, restore := applyTaskOptions(opts)
	pid, err := syscall.ForkExec(path, argv, &syscall.ProcAttr{
		Env: os.Environ(), Files: []uintptr{0, 1, 2},
		Sys: &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL},
	})
	restore()
	if err != nil {
		report(status, "starterr "+string(bytes.ReplaceAll([]byte(err.Error()), []byte("\n"), []byte(" "))))
		return 0
	}
	report(status, "started "+strconv.Itoa(pid)+" tasks="+bound)
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
// RLIMIT_NPROC (nproc=N) for the fork. Both cgroup files are written "0", the writer
// itself: through a v1 tasks file that moves this thread alone (which the kernel does
// without the global lock a process's move takes), through a cgroup.procs file this
// process. It returns the bound it applied (cgroup_v1, rlimit or -) and what to call once
// the fork is done: the helper returns home and gets its own limit back, so the bound
// holds the workload alone. None of the descriptors reaches the workload. The options
// are internal/broker's encoding (its taskLimit's helperOptions).
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
