// Package broker runs one bound subprocess for a request and owns everything about it
// until it is gone: its own process group, bounded stdout and stderr readers, an optional
// wall-clock timeout, sampled resident memory of the whole process tree, a bound on the
// tasks it holds at once (tasks.go), writable-growth checks of its working directory and
// of a collector's output directory against a pre-launch baseline, a storage reserve,
// and on every exit (normal, limit, cancellation, error) termination of the whole tree
// and settlement of the readers before Run returns. It is trusted local execution with
// bounds, not a sandbox. What holds the tree is the OS's (a container; decision 0055): a
// cgroup v2 scope and a subreaper helper on Linux, the process group on macOS, a Job
// Object on Windows.
package broker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// Spec is one invocation.
type Spec struct {
	// Path is the exact executable; Args is the argv, Args[0] as the caller gave it.
	Path string
	Args []string
	Dir  string
	Env  []string
	// Prestarted, when set, is a helper started ahead for this invocation (Prestart),
	// which Run takes where it fits the invocation; the caller still calls its Abandon
	// after Run.
	Prestarted *Prestarted
	// Stdin, when set, is the workload's standard input (the caller closes its copy
	// after Run has started the workload, or after Run returns); otherwise the null device.
	Stdin *os.File

	// StdoutFile and StderrFile, when set, receive the retained streams (full retention);
	// otherwise the first ExcerptBytes of each stream are kept in memory.
	StdoutFile, StderrFile string
	ExcerptBytes           int
	// StdoutClosed, when set, is closed once the tree's standard output has ended (every
	// process holding it closed it, or the reading stopped) and what it wrote is in
	// StdoutFile or the excerpt. That can come before Run returns: a workload that closes
	// its output when its answer is whole tells the caller so while its tree still exits.
	// It is not closed when Run fails to start the workload.
	StdoutClosed chan<- struct{}
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

	// Direct, on Linux, starts Path itself as the root of the tree, without the
	// containment helper and without the kernel's task bound (MaxTasks is not enforced):
	// for a workload that is this program's own code, whose threads the Go runtime bounds
	// (debug.SetMaxThreads) and whose every child process runs under a broker of its own,
	// as the analysis worker does. The tree is still a process group with the
	// parent-death signal, cloned into a cgroup scope of its own where one can be
	// created, and every other bound holds. macOS and Windows start no helper, so there
	// it changes nothing (a Windows Job Object still bounds the processes).
	Direct bool

	// SampleInterval is the sampling period; zero means 50 ms.
	SampleInterval time.Duration

	// Arm, when set, holds Timeout, MaxRSSBytes and MaxWritableGrowth back until Bounds
	// arrive on it (their values replace the spec's): a workload can start before the
	// bounds of its work are known, and waits unbounded in time, memory and writes until
	// then (the caller gives it no work before). The output bound, the storage reserve and
	// cancellation hold from the start.
	Arm <-chan Bounds
}

// Bounds are the bounds an armed run receives (Spec.Arm); the timeout runs from arming.
type Bounds struct {
	Timeout           time.Duration
	MaxRSSBytes       int64
	MaxWritableGrowth int64
}

// stdin is the workload's standard input for an exec.Cmd: nil (the null device) when
// spec has none, never a nil *os.File, which os/exec would pass on as a closed descriptor.
func (spec Spec) stdin() io.Reader {
	if spec.Stdin == nil {
		return nil
	}
	return spec.Stdin
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
	Kind       string // timeout, output_limit, memory_limit_exceeded, writable_limit_exceeded, storage_reserve_exceeded, task_limit_exceeded
	Configured float64
	Observed   *float64
	Unit       string // seconds, bytes, bytes_free, tasks
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
	// reparents to, killed with all of it at the end), process_group (the process group
	// and the sampled tree only: where the helper could not run, and on macOS) or
	// job_object (Windows: a Job Object holds every process the invocation starts and
	// ends them all at once, and when the broker dies); empty when nothing started.
	Mechanism string
	// Gaps names what the mechanism in force cannot hold, in a fixed order: the Gap
	// constants. Empty where it holds everything this package bounds.
	Gaps []string
	// TaskBound is how the task bound was enforced: cgroup (pids.max of the invocation's
	// cgroup v2 scope), cgroup_v1 (pids.max of a group of the v1 pids hierarchy the
	// helper's forking thread joined before starting the workload in it), rlimit
	// (RLIMIT_NPROC of the workload: the user's tasks at launch plus the bound), job_object (the active-process limit of
	// the invocation's Windows Job Object: processes, not threads), or empty (not
	// enforced: no pids controller could be used and the user is exempt from
	// RLIMIT_NPROC, the process_group mechanism, or no bound).
	TaskBound string
	// MaxTasks is the bound in force; zero when TaskBound is empty.
	MaxTasks int64
	// TasksRefused counts the forks and thread creations the cgroup refused at the bound
	// (pids.events); rlimit refusals cannot be counted.
	TasksRefused int64
}

// taskStorm is the limit of a tree stopped after refusing forks for TaskStormWindow at
// the task bound max; current is the tasks it held (0: not read), refused the refusals
// counted so far.
func taskStorm(max, current, refused int64) *Limit {
	var obs *float64
	if current > 0 {
		v := float64(current)
		obs = &v
	}
	return &Limit{Kind: "task_limit_exceeded", Configured: float64(max), Observed: obs, Unit: "tasks",
		Recovery: fmt.Sprintf("The process tree kept starting processes or threads past its bound of %d tasks for %s (%d refused): a fork or thread loop. "+
			"Bound the workload's parallelism, or start Flameox with %s raised (at most %d).", max, TaskStormWindow, refused, MaxTasksVariable, MaxTasksCeiling)}
}

// ErrStart is returned (wrapped) when the process could not be started.
var ErrStart = errors.New("broker: the process could not be started")

// ErrUncontained is returned (wrapped, with ErrStart) when the OS would not contain the
// process (a Windows Job Object could not be created or assigned); nothing was left
// running. A capture reports the platform unavailable.
var ErrUncontained = errors.New("broker: the process could not be contained here")

// The gaps of a containment mechanism (Result.Gaps).
const (
	// GapDetachedDescendants: a descendant that leaves the process group (setsid,
	// setpgid) and whose parent exits before a sample sees it is reparented out of the
	// tree; it is neither measured nor killed (process_group).
	GapDetachedDescendants = "detached_descendants"
	// GapBrokerDeath: when the broker itself is killed, descendants outlive it (Linux
	// process_group: the parent-death signal reaches the workload only; macOS has none).
	GapBrokerDeath = "survives_broker_death"
	// GapMemoryUnmeasured: the OS gives no resident memory of another process here (macOS
	// without libproc): no RSS samples, no peak, and MaxRSSBytes is not enforced.
	GapMemoryUnmeasured = "memory_unmeasured"
)

// A container holds the process tree of one started invocation. startContained (one per
// OS: contain_linux.go, contain_darwin.go, job_windows.go) starts the workload under the
// strongest containment the OS offers there, records the mechanism, its gaps and the task
// bound in the result, and returns the container; Run owns the rest of the run.
type container interface {
	// wait reaps the root of the tree (a containment helper, or the workload itself).
	wait() error
	// sample returns the resident memory of the workload's processes now, remembering
	// the processes it saw for the end; measured is false where the OS gives no figure.
	sample() (total int64, measured bool)
	// kill ends the whole tree on a limit or cancellation and returns how many processes
	// besides the root it killed; where it reaped the root itself from exited (a helper
	// that ended the tree and exited), reaped is true and waitErr is what wait returned.
	kill(exited <-chan error) (killed int, waitErr error, reaped bool)
	// finish ends whatever of the tree is left once the root is reaped, and records the
	// end: descendants terminated, tasks refused, exit code and termination (killed: the
	// broker ended the run).
	finish(res *Result, waitErr error, killed bool)
	// release frees what the containment still holds; Run defers it.
	release()
}

// A refusalCounter is a container whose task bound counts the forks and thread creations
// it refused (a cgroup's pids.events); Run reads it every sample.
type refusalCounter interface {
	tasksRefused() (refused, current int64, counted bool)
}

// TaskStormWindow is how long a tree may keep hitting its task bound before the broker
// stops it (task_limit_exceeded): a fork loop that retries forever would otherwise hold
// the bound until its timeout or cancellation, and a workload without a budget has no
// timeout. A program that meets the bound once and backs off (make -j, a thread pool
// that retries) is refused for a moment and goes on. The refusals form one streak until a
// sample sees none for longer than taskStormGap: what ends it is an observed quiet, never
// a late sample (a loaded machine delays the sampler, not the workload's refusals).
const TaskStormWindow = time.Second

// taskStormGap is the longest observed quiet within one streak.
const taskStormGap = 250 * time.Millisecond

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
	arm := spec.Arm
	if arm != nil {
		spec.Timeout, spec.MaxRSSBytes, spec.MaxWritableGrowth = 0, 0, 0
	}
	var baseline int64
	if spec.MaxWritableGrowth > 0 || arm != nil && len(spec.WritableRoots) > 0 {
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

	c, err := startContained(spec, outW, errW, res)
	start := time.Now()
	if err != nil {
		outR.Close()
		outW.Close()
		errR.Close()
		errW.Close()
		out.close()
		errs.close()
		res.ReadersSettled = true
		res.Mechanism, res.Gaps = "", nil
		return res, errors.Join(ErrStart, err)
	}
	defer c.release()
	res.Started = true
	outW.Close()
	errW.Close()

	var readers sync.WaitGroup
	readers.Add(2)
	go func() {
		defer readers.Done()
		out.drain(outR, budget)
		if spec.StdoutClosed != nil {
			close(spec.StdoutClosed)
		}
	}()
	go func() { defer readers.Done(); errs.drain(errR, budget) }()

	exited := make(chan error, 1)
	go func() { exited <- c.wait() }()

	var timeout <-chan time.Time
	var timer *time.Timer
	var timeoutStart time.Time
	startTimeout := func() {
		if spec.Timeout > 0 {
			timer = time.NewTimer(spec.Timeout)
			timeout, timeoutStart = timer.C, time.Now()
		}
	}
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	if arm == nil {
		startTimeout()
	}
	ticker := time.NewTicker(interval)
	defer ticker.Stop()

	var peak int64
	var waitErr error
	done := false
	killed := false
	reaped := false
	kill := func() {
		killed = true
		n, werr, ok := c.kill(exited)
		res.DescendantsTerminated += n
		if ok {
			waitErr, reaped = werr, true
		}
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
	rc, _ := c.(refusalCounter)
	var refusedBefore int64
	var refusingSince, lastRefusal time.Time
	for !done {
		select {
		case waitErr = <-exited:
			done = true
		case b, ok := <-arm:
			arm = nil
			if ok {
				spec.Timeout, spec.MaxRSSBytes, spec.MaxWritableGrowth = b.Timeout, b.MaxRSSBytes, b.MaxWritableGrowth
				startTimeout()
			}
		case <-ctx.Done():
			res.Cancelled = true
			stop(nil)
		case <-timeout:
			stop(&Limit{Kind: "timeout", Configured: spec.Timeout.Seconds(), Observed: observed(time.Since(timeoutStart).Seconds()), Unit: "seconds",
				Recovery: "Raise target.budget.timeout_seconds or shorten the workload."})
		case <-budget.exceeded:
			stop(&Limit{Kind: "output_limit", Configured: float64(spec.MaxOutputBytes), Observed: observed(float64(budget.observed())), Unit: "bytes",
				Recovery: "Make the workload print less, or raise limits.max_output_bytes within the server ceiling."})
		case <-ticker.C:
			sample++
			if total, measured := c.sample(); measured {
				res.RSSSamples++
				peak = max(peak, total)
				if spec.MaxRSSBytes > 0 && total > spec.MaxRSSBytes {
					stop(&Limit{Kind: "memory_limit_exceeded", Configured: float64(spec.MaxRSSBytes), Observed: observed(float64(total)), Unit: "bytes",
						Recovery: "Raise target.budget.max_memory_bytes or reduce the workload's memory; the figure is the sampled resident memory of the whole process tree."})
					continue
				}
			}
			if rc != nil {
				if n, current, counted := rc.tasksRefused(); counted {
					now := time.Now()
					switch {
					case n == refusedBefore:
						// A sample that saw none ends the streak once the quiet has lasted
						// taskStormGap; a sample late because this process was not scheduled
						// sees the refusals made meanwhile and continues it.
						if !refusingSince.IsZero() && now.Sub(lastRefusal) > taskStormGap {
							refusingSince = time.Time{}
						}
					case refusingSince.IsZero():
						refusingSince, refusedBefore, lastRefusal = now, n, now
					default:
						refusedBefore, lastRefusal = n, now
						if now.Sub(refusingSince) >= TaskStormWindow {
							stop(taskStorm(res.MaxTasks, current, n))
							continue
						}
					}
				}
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
	// Whatever ended the run, nothing of the tree outlives it.
	c.finish(res, waitErr, killed)
	if res.RSSSamples > 0 {
		res.PeakRSS = &peak
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
	w := &sizeWalk{skip: skip, complete: true}
	for _, root := range roots {
		resolved, err := filepath.EvalSymlinks(root)
		if err != nil {
			w.complete = false
			continue
		}
		if !w.tree(resolved) {
			break
		}
	}
	return w.total, w.complete
}

// sizeWalk sums the sizes of regular files under one or more roots, as lstat reports
// them, following no link, visiting at most walkEntryBound entries over all its roots
// (every entry counts, the roots too); an entry that cannot be read is left out, as is a
// file named in skip. The walk itself is per platform (tree): the same entries, in an
// order of its own, which matters only where the bound cuts the walk short.
type sizeWalk struct {
	skip     map[string]bool
	total    int64
	entries  int
	complete bool
}

// visit counts one entry and says whether the walk goes on.
func (w *sizeWalk) visit() bool {
	w.entries++
	if w.entries > walkEntryBound {
		w.complete = false
		return false
	}
	return true
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

// recordExit records how the reaped root cmd ended: exited with its code, or terminated
// (killed by a signal); nothing when waitErr says no status (the wait itself failed).
// killCode, when set, is the status the OS gives a process the broker killed (Windows'
// TerminateJobObject): after a kill it counts as terminated, not as an exit.
func recordExit(res *Result, cmd *exec.Cmd, waitErr error, killCode *int) {
	var st *os.ProcessState
	var ee *exec.ExitError
	if errors.As(waitErr, &ee) {
		st = ee.ProcessState
	} else if waitErr == nil {
		st = cmd.ProcessState
	}
	if st == nil {
		return
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Exited() && (killCode == nil || ws.ExitStatus() != *killCode) {
		code := ws.ExitStatus()
		res.ExitCode = &code
		res.Termination = "exited"
	} else {
		res.Termination = "terminated"
	}
}
