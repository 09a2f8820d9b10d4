// Package broker runs one bound subprocess for a request and owns everything about it
// until it is gone: its own process group, bounded stdout and stderr readers, an optional
// wall-clock timeout, sampled resident memory of the whole process tree, a bound on the
// tasks it holds at once (tasks.go), writable-growth checks of its working directory and
// of a collector's output directory against a pre-launch baseline, a storage reserve,
// and on every exit (normal, limit, cancellation, error) termination of the whole tree
// and settlement of the readers before Run returns. It is trusted local execution with
// bounds, not a sandbox.
package broker

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Spec is one invocation.
type Spec struct {
	// Path is the exact executable; Args is the argv, Args[0] as the caller gave it.
	Path string
	Args []string
	Dir  string
	Env  []string

	// StdoutFile and StderrFile, when set, receive the retained streams (full retention);
	// otherwise the first ExcerptBytes of each stream are kept in memory.
	StdoutFile, StderrFile string
	ExcerptBytes           int
	// MaxOutputBytes bounds the combined observed output; beyond it the tree is terminated
	// (output_limit). Zero means no bound.
	MaxOutputBytes int64

	// Timeout bounds wall-clock time; zero means none.
	Timeout time.Duration
	// MaxRSSBytes bounds the sampled resident memory of the process tree; zero means none.
	MaxRSSBytes int64
	// WritableRoots are measured before launch, while running and after exit; growth past
	// MaxWritableGrowth terminates the tree. Zero means no check.
	WritableRoots     []string
	MaxWritableGrowth int64
	// ReserveDir's filesystem must keep ReserveBytes free while the process runs.
	ReserveDir   string
	ReserveBytes int64

	// ArtifactDir, when set, is where a collector writes its native output: the regular
	// files under it, StdoutFile and StderrFile excepted (the output bound holds those),
	// may grow by at most MaxArtifactBytes over their size at launch, checked every
	// second sample and after exit; past it the tree is terminated (writable_limit_exceeded).
	// Zero means no check.
	ArtifactDir      string
	MaxArtifactBytes int64

	// MaxTasks bounds the tasks (processes and threads) the invocation holds at once;
	// zero means the process default (FLAMEOX_MAX_TASKS, else DefaultMaxTasks), a
	// negative value none. Result.TaskBound says how it was enforced, if at all.
	MaxTasks int64

	// SampleInterval is the sampling period; zero means 50 ms.
	SampleInterval time.Duration
}

// Stream describes one output stream.
type Stream struct {
	Observed int64
	Retained int64
	// Complete is true when every observed byte was retained and the stream reached EOF.
	Complete bool
	Excerpt  []byte
	IOError  error
}

// Limit describes the bound that terminated the invocation.
type Limit struct {
	Kind       string // timeout, output_limit, memory_limit_exceeded, writable_limit_exceeded, storage_reserve_exceeded
	Configured float64
	Observed   *float64
	Unit       string // seconds, bytes, bytes_free
	Recovery   string
}

// Bound names the limit for a message: "output_limit bound (16777216 bytes)", the
// figure written in full (never in exponent form).
func (l *Limit) Bound() string {
	return l.Kind + " bound (" + strconv.FormatFloat(l.Configured, 'f', -1, 64) + " " + l.Unit + ")"
}

// Result is the receipt of one invocation.
type Result struct {
	// Termination is exited (the process reported an exit), terminated (the broker ended
	// it) or unreported (it never ran to a reported end: cancelled before launch).
	Termination string
	// ExitCode is the process's exit status; nil when it was killed or never ran.
	ExitCode  *int
	Started   bool
	WallTime  time.Duration
	Stdout    Stream
	Stderr    Stream
	Limit     *Limit
	Cancelled bool
	// DescendantsTerminated counts processes of the tree still running at the end, all
	// killed before Run returned.
	DescendantsTerminated int
	ReadersSettled        bool
	PeakRSS               *int64
	RSSSamples            int
	// WritableComplete is false when a writable root was too large to measure completely.
	WritableComplete bool
	// Mechanism is the containment that was in force: cgroup (a cgroup v2 scope created
	// for the invocation holds everything it started, whatever its parent or session; the
	// kernel lists the members and cgroup.kill ends them; the subreaper helper runs inside
	// it where it can), subreaper (a per-invocation helper that every orphan of the tree
	// reparents to, killed with all of it at the end) or process_group (the process group
	// and the sampled tree only, where the helper could not run); empty when nothing
	// started.
	Mechanism string
	// TaskBound is how the task bound was enforced: cgroup (pids.max of the invocation's
	// cgroup v2 scope), cgroup_v1 (pids.max of a group of the v1 pids hierarchy the
	// helper joined before starting the workload), rlimit (RLIMIT_NPROC of the workload:
	// the user's tasks at launch plus the bound), or empty (not enforced: no pids
	// controller could be used and the user is exempt from RLIMIT_NPROC, or no bound).
	TaskBound string
	// MaxTasks is the bound in force; zero when TaskBound is empty.
	MaxTasks int64
	// TasksRefused counts the forks and thread creations the cgroup refused at the bound
	// (pids.events); rlimit refusals cannot be counted.
	TasksRefused int64
}

// ErrStart is returned (wrapped) when the process could not be started.
var ErrStart = errors.New("broker: the process could not be started")

// reaperGrace bounds how long the broker waits for the helper to kill the tree and exit
// before it kills what it can see itself.
const reaperGrace = 5 * time.Second

// readerSettleTimeout bounds how long Run waits for the output readers once the tree is
// gone; a descendant that escaped with an inherited pipe cannot hold the call.
const readerSettleTimeout = 2 * time.Second

// walkEntryBound bounds one writable-root measurement.
const walkEntryBound = 10000

// Run runs spec and returns after the process tree is terminated and the readers settled.
func Run(ctx context.Context, spec Spec) (*Result, error) {
	res := &Result{Termination: "unreported", WritableComplete: true}
	if ctx.Err() != nil {
		res.Cancelled = true
		res.ReadersSettled = true
		return res, nil
	}
	interval := spec.SampleInterval
	if interval <= 0 {
		interval = 50 * time.Millisecond
	}
	var baseline int64
	if spec.MaxWritableGrowth > 0 {
		var complete bool
		baseline, complete = writableSize(spec.WritableRoots)
		res.WritableComplete = complete
	}
	art := newArtifactCheck(spec)
	if art != nil && !art.complete {
		res.WritableComplete = false
	}

	outR, outW, err := os.Pipe()
	if err != nil {
		return res, errors.Join(ErrStart, err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return res, errors.Join(ErrStart, err)
	}
	out := newSink(spec.StdoutFile, spec.ExcerptBytes)
	errs := newSink(spec.StderrFile, spec.ExcerptBytes)
	budget := &outputBudget{max: spec.MaxOutputBytes, exceeded: make(chan struct{})}

	// The reaper helper contains the workload; where it cannot run, the workload is started
	// directly in its own process group. Either is cloned into a cgroup scope of its own
	// where one can be created.
	sc := newScope()
	inScope := false
	tl := limitTasks(taskBound(spec), sc)
	h, err := startReaper(spec, outW, errW, sc, tl)
	// The helper holds its own copies of the task bound's descriptors.
	tl.closeFiles()
	var cmd *exec.Cmd
	if h != nil {
		cmd = h.cmd
		inScope = h.inScope
		defer h.ctlW.Close()
		res.Mechanism = "subreaper"
	} else if err == nil {
		inScope, err = startInScope(func() *exec.Cmd {
			cmd = &exec.Cmd{
				Path: spec.Path, Args: spec.Args, Dir: spec.Dir, Env: spec.Env,
				Stdout: outW, Stderr: errW,
				SysProcAttr: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL},
			}
			return cmd
		}, sc)
		res.Mechanism = "process_group"
	}
	if sc != nil {
		// The scope is removed last: it ends whatever of the invocation is still in it.
		defer sc.remove()
		if inScope {
			res.Mechanism = "cgroup"
		}
	}
	// members returns the processes of the invocation: the scope's members, read from the
	// kernel, or the tree by parent links and process group from a /proc scan.
	members := func(root int) []procInfo {
		if inScope {
			return sc.members()
		}
		return tree(root)
	}
	start := time.Now()
	if err != nil {
		outR.Close()
		outW.Close()
		errR.Close()
		errW.Close()
		out.close()
		errs.close()
		res.ReadersSettled = true
		res.Mechanism = ""
		tl.remove()
		return res, errors.Join(ErrStart, err)
	}
	res.Started = true
	if tl != nil && (tl.kind == "cgroup" && inScope || h != nil && h.rep.taskBound == tl.kind) {
		res.TaskBound, res.MaxTasks = tl.kind, tl.max
	}
	outW.Close()
	errW.Close()
	// pid is the root of the tree: the helper, or the workload itself.
	pid := cmd.Process.Pid

	var readers sync.WaitGroup
	readers.Add(2)
	go func() { defer readers.Done(); out.drain(outR, budget) }()
	go func() { defer readers.Done(); errs.drain(errR, budget) }()

	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	var timeout <-chan time.Time
	if spec.Timeout > 0 {
		t := time.NewTimer(spec.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	ticker := time.NewTicker(interval)
	defer ticker.Stop()

	tracked := map[int]procInfo{}
	var peak int64
	var waitErr error
	done := false
	killed := false
	reaped := false
	kill := func() {
		killed = true
		if h != nil && !reaped {
			// The helper kills the whole tree and exits; the scan below is the fallback
			// for a helper that does not.
			h.ctlW.Close()
			select {
			case waitErr = <-exited:
				reaped = true
				return
			case <-time.After(reaperGrace):
			}
		}
		for _, p := range members(pid) {
			tracked[p.pid] = p
		}
		res.DescendantsTerminated += terminate(pid, tracked)
	}
	// stop ends the run on a limit (nil for cancellation): the tree is killed and reaped.
	stop := func(l *Limit) {
		res.Limit = l
		kill()
		if !reaped {
			waitErr = <-exited
		}
		done = true
	}
	observed := func(v float64) *float64 { return &v }
	sample := 0
	for !done {
		select {
		case waitErr = <-exited:
			done = true
		case <-ctx.Done():
			res.Cancelled = true
			stop(nil)
		case <-timeout:
			stop(&Limit{Kind: "timeout", Configured: spec.Timeout.Seconds(), Observed: observed(time.Since(start).Seconds()), Unit: "seconds",
				Recovery: "Raise target.budget.timeout_seconds or shorten the workload."})
		case <-budget.exceeded:
			stop(&Limit{Kind: "output_limit", Configured: float64(spec.MaxOutputBytes), Observed: observed(float64(budget.observed())), Unit: "bytes",
				Recovery: "Make the workload print less, or raise limits.max_output_bytes within the server ceiling."})
		case <-ticker.C:
			sample++
			var total int64
			for _, p := range members(pid) {
				tracked[p.pid] = p
				if h == nil || p.pid != pid { // the helper's own memory is not the workload's
					total += rss(p.pid)
				}
			}
			res.RSSSamples++
			peak = max(peak, total)
			if spec.MaxRSSBytes > 0 && total > spec.MaxRSSBytes {
				stop(&Limit{Kind: "memory_limit_exceeded", Configured: float64(spec.MaxRSSBytes), Observed: observed(float64(total)), Unit: "bytes",
					Recovery: "Raise target.budget.max_memory_bytes or reduce the workload's memory; the figure is the sampled resident memory of the whole process tree."})
				continue
			}
			if spec.ReserveBytes > 0 && spec.ReserveDir != "" && sample%4 == 0 {
				if free, ok := freeBytes(spec.ReserveDir); ok && free < spec.ReserveBytes {
					stop(&Limit{Kind: "storage_reserve_exceeded", Configured: float64(spec.ReserveBytes), Observed: observed(float64(free)), Unit: "bytes_free",
						Recovery: "Free disk space on the scratch filesystem and retry."})
					continue
				}
			}
			if art != nil && sample%2 == 0 {
				if lim := art.limit(res); lim != nil {
					stop(lim)
					continue
				}
			}
			if spec.MaxWritableGrowth > 0 && sample%5 == 0 {
				if lim := writableLimit(spec, baseline, res); lim != nil {
					stop(lim)
				}
			}
		}
	}
	res.WallTime = time.Since(start)
	// Whatever ended the run, nothing of the tree outlives it. An empty process group with
	// nothing tracked needs no /proc scan.
	if len(tracked) > 0 || syscall.Kill(-pid, 0) != syscall.ESRCH {
		for _, p := range members(pid) {
			tracked[p.pid] = p
		}
	}
	res.DescendantsTerminated += terminate(pid, tracked)
	if inScope {
		// What is still in the scope left the tree (its helper was killed from outside, so
		// it reparented to init): the kernel still knows it, and it ends here.
		res.DescendantsTerminated += sc.kill()
	}
	if res.TaskBound != "" {
		res.TasksRefused = tl.refused()
	}
	// A v1 pids group is emptied and removed here (a v2 scope goes last, deferred).
	res.DescendantsTerminated += tl.remove()
	if res.RSSSamples > 0 {
		res.PeakRSS = &peak
	}

	var st *os.ProcessState
	var ee *exec.ExitError
	if errors.As(waitErr, &ee) {
		st = ee.ProcessState
	} else if waitErr == nil {
		st = cmd.ProcessState
	}
	if h != nil {
		// The helper has exited: its report is complete.
		h.rep.readEnd(h.br)
		h.statusR.Close()
		res.DescendantsTerminated += h.rep.killed
		res.Termination = "terminated"
		if h.rep.exitCode != nil {
			res.ExitCode = h.rep.exitCode
			res.Termination = "exited"
		}
	} else if st != nil {
		if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Exited() {
			code := ws.ExitStatus()
			res.ExitCode = &code
			res.Termination = "exited"
		} else {
			res.Termination = "terminated"
		}
	}
	if killed && res.ExitCode == nil {
		res.Termination = "terminated"
	}

	settled := make(chan struct{})
	go func() { readers.Wait(); close(settled) }()
	select {
	case <-settled:
		res.ReadersSettled = true
	case <-time.After(readerSettleTimeout):
		// An escaped process still holds a pipe: stop reading rather than wait for it.
		outR.Close()
		errR.Close()
		<-settled
	}
	outR.Close()
	errR.Close()
	res.Stdout = out.close()
	res.Stderr = errs.close()

	if res.Limit == nil && art != nil {
		res.Limit = art.limit(res)
	}
	if res.Limit == nil && spec.MaxWritableGrowth > 0 {
		res.Limit = writableLimit(spec, baseline, res)
	}
	return res, nil
}

// terminate kills root's process group and every tracked process that still runs with its
// recorded start time, waits briefly for them to be gone, and returns how many it killed
// besides root.
func terminate(root int, tracked map[int]procInfo) int {
	var live []procInfo
	for _, p := range tracked {
		if alive(p) {
			live = append(live, p)
		}
	}
	_ = syscall.Kill(-root, syscall.SIGKILL)
	n := 0
	for _, p := range live {
		_ = syscall.Kill(p.pid, syscall.SIGKILL)
		if p.pid != root {
			n++
		}
	}
	deadline := time.Now().Add(2 * time.Second)
	for _, p := range live {
		for alive(p) && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		delete(tracked, p.pid)
	}
	return n
}

// writableLimit measures the writable roots and returns the limit when they grew too much.
func writableLimit(spec Spec, baseline int64, res *Result) *Limit {
	size, complete := writableSize(spec.WritableRoots)
	if !complete {
		res.WritableComplete = false
	}
	if growth := size - baseline; growth > spec.MaxWritableGrowth {
		obs := float64(growth)
		return &Limit{Kind: "writable_limit_exceeded", Configured: float64(spec.MaxWritableGrowth), Observed: &obs, Unit: "bytes",
			Recovery: "The workload wrote more than limits.max_output_bytes under its working directory and scratch; write less or raise the bound within the server ceiling."}
	}
	return nil
}

// artifactCheck bounds the growth of a collector's output directory (Spec.ArtifactDir).
type artifactCheck struct {
	dir      string
	max      int64
	baseline int64
	complete bool
	// console holds the retained console files, bounded by the output bound instead.
	console map[string]bool
}

// newArtifactCheck measures the output directory's baseline; nil when spec sets no bound.
func newArtifactCheck(spec Spec) *artifactCheck {
	if spec.ArtifactDir == "" || spec.MaxArtifactBytes <= 0 {
		return nil
	}
	a := &artifactCheck{dir: spec.ArtifactDir, max: spec.MaxArtifactBytes, console: map[string]bool{}}
	for _, p := range []string{spec.StdoutFile, spec.StderrFile} {
		if p == "" {
			continue
		}
		if d, err := filepath.EvalSymlinks(filepath.Dir(p)); err == nil {
			a.console[filepath.Join(d, filepath.Base(p))] = true
		}
	}
	a.baseline, a.complete = measure([]string{a.dir}, a.console)
	return a
}

// limit measures the output directory and returns the limit when it grew too much.
func (a *artifactCheck) limit(res *Result) *Limit {
	size, complete := measure([]string{a.dir}, a.console)
	if !complete {
		res.WritableComplete = false
	}
	if growth := size - a.baseline; growth > a.max {
		obs := float64(growth)
		return &Limit{Kind: "writable_limit_exceeded", Configured: float64(a.max), Observed: &obs, Unit: "bytes",
			Recovery: "The collector's output files grew past limits.max_output_bytes; capture a shorter run or at a lower rate, or raise limits.max_output_bytes within the server ceiling."}
	}
	return nil
}

// writableSize sums the regular files under roots, visiting at most walkEntryBound
// entries; complete is false when the bound cut a walk short or a root could not be
// resolved. A root that is a symbolic link (a symlinked --cwd) is resolved first:
// WalkDir does not descend into a link, so the walk measured nothing under it and still
// called the check complete (issue 40, item 8).
func writableSize(roots []string) (int64, bool) { return measure(roots, nil) }

// measure is writableSize leaving out the files named in skip (resolved paths).
func measure(roots []string, skip map[string]bool) (int64, bool) {
	var total int64
	entries := 0
	complete := true
	for _, root := range roots {
		resolved, err := filepath.EvalSymlinks(root)
		if err != nil {
			complete = false
			continue
		}
		_ = filepath.WalkDir(resolved, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			entries++
			if entries > walkEntryBound {
				complete = false
				return filepath.SkipAll
			}
			if d.Type().IsRegular() && !skip[p] {
				if info, err := d.Info(); err == nil {
					total += info.Size()
				}
			}
			return nil
		})
	}
	return total, complete
}

func freeBytes(dir string) (int64, bool) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, false
	}
	return int64(st.Bavail) * int64(st.Bsize), true
}

// outputBudget counts the combined observed output and signals once it passes max.
type outputBudget struct {
	mu       sync.Mutex
	max      int64
	total    int64
	fired    bool
	exceeded chan struct{}
}

func (b *outputBudget) add(n int) (allowed int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	before := b.total
	b.total += int64(n)
	if b.max <= 0 {
		return int64(n)
	}
	if b.total > b.max && !b.fired {
		b.fired = true
		close(b.exceeded)
	}
	if before >= b.max {
		return 0
	}
	return min(int64(n), b.max-before)
}

func (b *outputBudget) observed() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.total
}

// sink retains one stream to a file or as an in-memory excerpt.
type sink struct {
	file    *os.File
	fileErr error
	excerpt []byte
	limit   int
	st      Stream
	eof     bool
}

func newSink(path string, excerpt int) *sink {
	s := &sink{limit: excerpt}
	if path != "" {
		s.file, s.fileErr = os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	}
	return s
}

func (s *sink) drain(r io.Reader, budget *outputBudget) {
	buf := make([]byte, 64<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			s.st.Observed += int64(n)
			keep := budget.add(n)
			chunk := buf[:keep]
			if s.file != nil {
				if _, werr := s.file.Write(chunk); werr != nil && s.st.IOError == nil {
					s.st.IOError = werr
				} else {
					s.st.Retained += int64(len(chunk))
				}
			} else if s.fileErr == nil {
				room := s.limit - len(s.excerpt)
				if room > 0 {
					take := chunk[:min(len(chunk), room)]
					s.excerpt = append(s.excerpt, take...)
					s.st.Retained += int64(len(take))
				}
			}
		}
		if err != nil {
			s.eof = errors.Is(err, io.EOF)
			return
		}
	}
}

func (s *sink) close() Stream {
	if s.file != nil {
		if err := s.file.Close(); err != nil && s.st.IOError == nil {
			s.st.IOError = err
		}
	}
	if s.fileErr != nil && s.st.IOError == nil {
		s.st.IOError = s.fileErr
	}
	s.st.Excerpt = s.excerpt
	s.st.Complete = s.eof && s.st.Retained == s.st.Observed && s.st.IOError == nil
	return s.st
}
