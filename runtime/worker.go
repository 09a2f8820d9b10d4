package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	goruntime "runtime"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/ahead"
	"github.com/flameox/flameox/internal/broker"
	"github.com/flameox/flameox/internal/failure"
	"github.com/flameox/flameox/internal/sourcefile"
	"github.com/flameox/flameox/internal/validate"
	"github.com/flameox/flameox/internal/workerproc"
	"github.com/flameox/flameox/providers"
)

// The analysis worker (issue 21, decision 0030): a decoder reads hostile bytes, so each
// analysis of a non-trivial input runs in a child process of this same executable under
// the request's limits.timeout_seconds and limits.max_memory_bytes (catalog §1.4: they
// bound analysis workers), with a bounded reply. A decoder that still misbehaves costs
// one request: the child is killed and the caller gets a typed failure, never the server.
//
// The parent admits the request and resolves and hashes the sources; the child gets the
// tool, its arguments, the effective limits and the resolved inputs in a request file,
// runs the analysis steps that touch provider code (analyze, bind, page start, page,
// envelope) and writes the result or the failure as one JSON document; the parent
// re-checks the inputs and keeps the session record.

// WorkerVariable names the request file of a process started as an analysis worker.
const WorkerVariable = workerproc.Variable

// inProcessBytes is the input size below which an analysis runs in the server process
// (workerproc.InProcessBytes).
const inProcessBytes = workerproc.InProcessBytes

// WithAnalysisWorker runs analyses of non-trivial inputs in child processes of exe, which
// must call ServeWorker first thing when WorkerVariable is set.
func WithAnalysisWorker(exe string) Option {
	return func(rt *Runtime) { rt.worker = exe }
}

// workerRequest is the request file.
type workerRequest struct {
	Tool      string              `json:"tool"`
	Arguments json.RawMessage     `json:"arguments"`
	Limits    gen.EffectiveLimits `json:"limits"`
	Inputs    []workerInput       `json:"inputs"`
	// DiskBytes is the worker's disk budget (workerDiskBudget): each file it writes is
	// bounded by it (RLIMIT_FSIZE where there is one).
	DiskBytes int64 `json:"disk_bytes"`
}

type workerInput struct {
	Path     string                `json:"path"`
	Size     int64                 `json:"size"`
	SHA256   string                `json:"sha256"`
	Format   gen.Format            `json:"format"`
	Producer *string               `json:"producer"`
	Role     string                `json:"role"`
	Declared bool                  `json:"declared"`
	Evidence *gen.EvidenceSource   `json:"evidence"`
	Reader   *providers.Executable `json:"reader"`
	Members  []sourcefile.Member   `json:"members"`
}

// workerReply is what a worker writes on stdout.
type workerReply struct {
	Result  json.RawMessage `json:"result,omitempty"`
	Token   string          `json:"token,omitempty"`
	Failure *workerFailure  `json:"failure,omitempty"`
	Digest  string          `json:"digest"`
	Offset  int64           `json:"offset"`
	// Mismatch says the continuation does not bind the request: the parent, which holds
	// the session's analyses, explains it.
	Mismatch bool `json:"continuation_mismatch,omitempty"`
}

type workerFailure struct {
	Code           gen.FailureCode `json:"code"`
	Message        string          `json:"message"`
	Retryable      bool            `json:"retryable"`
	FieldPath      []any           `json:"field_path"`
	AcceptedValues []string        `json:"accepted_values"`
	NextAction     *gen.NextAction `json:"next_action"`
	Details        map[string]any  `json:"details"`
}

// integral turns the whole numbers JSON decoding made float64 back into int, as the
// failure held them (an index, a count, a byte size).
func integral(v any) any {
	switch x := v.(type) {
	case float64:
		if x == math.Trunc(x) && math.Abs(x) <= 1<<53 {
			return int(x)
		}
	case []any:
		for i, e := range x {
			x[i] = integral(e)
		}
	case map[string]any:
		for k, e := range x {
			x[k] = integral(e)
		}
	}
	return v
}

func (w *workerFailure) failure() *failure.Failure {
	path := make([]any, len(w.FieldPath))
	for i, e := range w.FieldPath {
		path[i] = integral(e)
	}
	if len(path) == 0 {
		path = nil
	}
	details := map[string]any{}
	for k, v := range w.Details {
		details[k] = integral(v)
	}
	return &failure.Failure{Code: w.Code, Message: w.Message, Retryable: w.Retryable, FieldPath: path,
		AcceptedValues: w.AcceptedValues, NextAction: w.NextAction, Details: details}
}

// inProcess reports whether the resolved inputs are small enough to analyze in the server
// process: their bytes together are below inProcessBytes and none is compressed (gzip,
// Parquet, whose pages may declare any decompressed size) or a directory (a parquetdir).
func inProcess(in []resolved) bool {
	var total int64
	for _, r := range in {
		total += r.size
		if workerproc.OverInProcess(total, r.members != nil, r.path) {
			return false
		}
	}
	return true
}

// workerGCPercent is the worker's GOGC (ServeWorker).
const workerGCPercent = 400

// A spare worker faults in spareWarmBytes of heap while it waits (warmHeap): a fresh
// process pays a page fault for every page its analysis first touches, which on the
// project's VM costs about 14 µs each, and the spare's analysis of 1 MB of cProfile output
// ran 18-23 ms against 10 in the server's warm heap. The freed pages stay with the
// process (they are below the collector's goal at workerGCPercent, which the scavenger
// keeps) and the analysis allocates from them. A request whose max_memory_bytes is below
// spareMinMemoryBytes does not take the spare, whose resident memory the warm heap raises
// by as much: it starts a worker of its own.
const (
	spareWarmBytes      = 8 << 20
	spareMinMemoryBytes = 256 << 20
)

// The worker's disk budget (issue 40, decision 0050). A worker writes only under its
// request-owned scratch directory: it is the worker's working directory and its TMPDIR
// (TMP and TEMP on Windows, SQLITE_TMPDIR for SQLite), where the conversions put their
// files. The budget is workerDiskExpansion times the inputs' bytes, at least
// minWorkerDiskBytes and at most maxWorkerDiskBytes: a converter's output (nsys export,
// perf script) is bounded by that multiple (the parquetdir reader, once the largest writer,
// writes nothing since decision 0057). The floor covers SQLite's and the converters' fixed costs on small inputs;
// the cap keeps one request well inside an ordinary disk. While the worker runs, the
// broker measures the directory and stops the worker past the budget, and it stops it
// when the filesystem falls below StorageReserveBytes free; in the worker, RLIMIT_FSIZE
// (Unix) refuses a single file past it at the write, including a temporary file already
// unlinked, which no measurement of the directory sees.
const (
	workerDiskExpansion = 128
	minWorkerDiskBytes  = 256 << 20
	maxWorkerDiskBytes  = 8 << 30
)

// workerDiskBudget is the disk budget of a worker analyzing in; tests lower it.
var workerDiskBudget = func(in []resolved) int64 {
	total := inputBytes(in)
	if total >= maxWorkerDiskBytes/workerDiskExpansion {
		return maxWorkerDiskBytes
	}
	return max(total*workerDiskExpansion, minWorkerDiskBytes)
}

func inputBytes(in []resolved) int64 {
	var total int64
	for _, r := range in {
		total += max(r.size, 0)
	}
	return total
}

// workerDiskFailure is the failure of a worker that wrote past its disk budget.
func workerDiskFailure(budget, input int64) *failure.Failure {
	return failure.New(gen.FailureCodeLimitExceeded,
		"the analysis wrote more than its scratch disk budget (%d bytes: %d times the inputs' %d bytes, at least %d and at most %d) and was stopped; the input expands on disk past what Flameox analyzes: analyze a smaller artifact or another export of it",
		budget, workerDiskExpansion, input, int64(minWorkerDiskBytes), int64(maxWorkerDiskBytes)).
		With("reason", "disk").With("bound", "worker_disk_bytes").With("limit", budget).With("unit", "bytes").
		With("input_bytes", input)
}

// A startedWorker is an analysis worker started before its request is written
// (decision 0067, second addendum): the worker's process starts and loads its catalog
// while this process hashes the inputs and detects their formats (or, for a spare,
// before the request arrives at all; for a CLI analysis, while the process initializes:
// eleventh addendum). The request then goes to request.json in the worker's scratch
// directory, and one byte on the worker's standard input says it is there; the input's
// end without that byte tells the worker to exit without an analysis. disk is its disk
// budget, release gives back its slot in the process's budget, and used says an analysis
// took it.
type startedWorker struct {
	*workerproc.Process
	disk    int64
	release func()
	used    bool
}

// workerBounds are the bounds of the worker of req over in: its time, memory and disk.
func workerBounds(ctx context.Context, req *request, in []resolved) (broker.Bounds, *failure.Failure) {
	b := broker.Bounds{MaxRSSBytes: req.limits.MaxMemoryBytes, MaxWritableGrowth: workerDiskBudget(in)}
	if d, ok := ctx.Deadline(); ok {
		if b.Timeout = time.Until(d); b.Timeout <= 0 {
			return b, providerFailure(ctx, context.DeadlineExceeded, nil)
		}
	}
	return b, nil
}

// prepareWorker, given req's inputs resolved and sized (their digests may not be known
// yet), waits for the worker's slot and memory in the process's budget (decision
// 0047; the wait counts against limits.timeout_seconds, and cancellation leaves the
// queue), then takes the spare and arms it with the request's bounds, or starts a worker
// under them. The worker waits for its request.
func (rt *Runtime) prepareWorker(ctx context.Context, req *request, in []resolved) (*startedWorker, *failure.Failure) {
	b, f := workerBounds(ctx, req, in)
	if f != nil {
		return nil, f
	}
	release := func() {}
	if rt.workers != nil {
		r, err := rt.workers.acquire(ctx, req.limits.MaxMemoryBytes)
		if err != nil {
			return nil, providerFailure(ctx, err, nil)
		}
		release = r
	}
	if w := rt.spares.takeFor(req.limits.MaxMemoryBytes); w != nil {
		w.release, w.disk = release, b.MaxWritableGrowth
		w.Arm <- b
		// The request's cancellation and deadline stop the spare as they stop a worker
		// started for it (the analysis cancels ctx when it ends, which then cancels a
		// finished run: nothing).
		context.AfterFunc(ctx, w.Cancel)
		return w, nil
	}
	w, f := rt.startProcess(ctx, &b)
	if f != nil {
		release()
		return nil, f
	}
	w.release = release
	return w, nil
}

// startProcess creates a worker's scratch directory and launches it under ctx: under b,
// or, for a spare (b nil), unbounded until a request arms it.
func (rt *Runtime) startProcess(ctx context.Context, b *broker.Bounds) (*startedWorker, *failure.Failure) {
	var warm int64
	if b == nil && (rt.spares == nil || !rt.spares.once) {
		// A spare may wait long; one started ahead of a single analysis (once) is taken
		// within milliseconds, with no time to warm a heap.
		warm = spareWarmBytes
	}
	p, err := workerproc.Start(ctx, workerproc.Config{Exe: rt.worker, Bounds: b, Warm: warm, Launch: rt.launch})
	switch {
	case errors.Is(err, workerproc.ErrScratch):
		return nil, scratchIOFailure(err, "the analysis worker's scratch directory cannot be created")
	case err != nil:
		return nil, failure.Wrap(err, gen.FailureCodeInternalFailure, "the analysis worker could not be started")
	}
	w := &startedWorker{Process: p, release: func() {}}
	if b != nil {
		w.disk = b.MaxWritableGrowth
	}
	return w, nil
}

// abandon stops a started worker that the analysis does not use and removes its scratch
// directory; it does nothing to a nil or a used worker.
func (w *startedWorker) abandon() {
	if w == nil || w.used {
		return
	}
	w.used = true
	w.Abandon()
	w.release()
}

// stop ends the worker before its request: the input's end tells it to exit, and the
// cancellation stops its launch. Its slot in the budget is given back.
func (w *startedWorker) stop() {
	w.Stop()
	w.release()
}

// spares holds the spare worker of a runtime that keeps one (WithSpareWorker), or the
// one worker started ahead of a runtime's analysis (WithWorkerAhead: once).
type spares struct {
	rt     *Runtime
	ctx    context.Context // the runtime's life: Close cancels it
	cancel context.CancelFunc
	mu     sync.Mutex
	spare  *startedWorker
	closed bool
	// once starts one worker and no other after it; started says it has.
	once, started bool
}

// WithWorkerAhead starts one analysis worker as the runtime starts, for a caller that
// knows its analysis goes to a worker before its request is read (the CLI's analyze
// command, when the sizes of its paths alone say so: workerproc.Likely). Its process and
// catalog start while the runtime starts and the request is validated, admitted and
// hashed, and the analysis takes it as it takes a spare (WithSpareWorker), armed with the
// request's bounds; no worker starts after it. Close stops it when no analysis took it
// (decision 0067, fifth addendum).
func WithWorkerAhead() Option {
	return func(rt *Runtime) {
		ctx, cancel := context.WithCancel(context.Background())
		rt.spares = &spares{rt: rt, ctx: ctx, cancel: cancel, once: true}
	}
}

// WithSpareWorker keeps one analysis worker started ahead of need (decision 0067, second
// addendum; issue 36): once an analysis has used a worker, the next one starts, so that a
// later analysis finds its worker's process and catalog ready and pays only the
// hand-over. Every analysis still runs in a fresh process under its own bounds: the spare
// holds no input and no slot of the budget until a request takes it and arms its time,
// memory and disk bounds; Close stops it. mcp serve keeps one; a one-shot CLI call has no
// next analysis.
func WithSpareWorker() Option {
	return func(rt *Runtime) {
		ctx, cancel := context.WithCancel(context.Background())
		rt.spares = &spares{rt: rt, ctx: ctx, cancel: cancel}
	}
}

// take returns the spare, if one is ready (nil otherwise); a spare that has ended (killed
// from outside) is discarded.
func (s *spares) take() *startedWorker {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	w := s.spare
	s.spare = nil
	s.mu.Unlock()
	if w == nil {
		return nil
	}
	select {
	case <-w.Done:
		w.abandon()
		return nil
	default:
		return w
	}
}

// takeFor is take for a request bound to maxMemory bytes: nil under spareMinMemoryBytes,
// where the spare's warm heap would count against the bound (a worker started ahead, once,
// warms none).
func (s *spares) takeFor(maxMemory int64) *startedWorker {
	if s != nil && maxMemory < spareMinMemoryBytes && !s.once {
		return nil
	}
	return s.take()
}

// replenish starts a spare if there is none.
func (s *spares) replenish() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.spare != nil || s.rt.worker == "" || s.once && s.started {
		return
	}
	s.started = true
	if s.once {
		if w := s.rt.aheadWorker(); w != nil {
			s.spare = w
			return
		}
	}
	if w, f := s.rt.startProcess(s.ctx, nil); f == nil {
		s.spare = w
	}
}

// takeAheadWorker returns the channel of the worker a CLI analysis started while it
// initialized (ahead.TakeWorker); tests replace it.
var takeAheadWorker = ahead.TakeWorker

// aheadWorker takes the worker this process started during its initialization, if there
// is one and it is the worker this runtime would start: of its executable, and a spare,
// as startProcess starts one for WithWorkerAhead. Any other is stopped.
func (rt *Runtime) aheadWorker() *startedWorker {
	c := takeAheadWorker()
	if c == nil {
		return nil
	}
	p := <-c
	if p == nil {
		return nil
	}
	w := &startedWorker{Process: p, release: func() {}}
	if p.Spec.Path != rt.worker || p.Arm == nil {
		w.abandon()
		return nil
	}
	return w
}

// close stops the spare and keeps any other from starting.
func (s *spares) close() {
	if s == nil {
		return
	}
	s.mu.Lock()
	s.closed = true
	w := s.spare
	s.spare = nil
	s.mu.Unlock()
	w.abandon()
	s.cancel()
}

// analyzeInWorker runs the analysis of req over its resolved inputs in a worker: w when
// one was started for them (nil: a worker starts now).
func (rt *Runtime) analyzeInWorker(ctx context.Context, req *request, in []resolved, w *startedWorker) (*Result, *failure.Failure) {
	if w == nil {
		var f *failure.Failure
		if w, f = rt.prepareWorker(ctx, req, in); f != nil {
			return nil, f
		}
	}
	w.used = true
	handedOver := false
	defer func() {
		if !handedOver {
			w.Cancel()
			os.RemoveAll(w.Dir)
		}
	}()
	defer rt.spares.replenish()
	args, err := json.Marshal(req.raw)
	if err != nil {
		w.stop()
		return nil, failure.Wrap(err, gen.FailureCodeInternalFailure, "the analysis request has no JSON form")
	}
	wr := workerRequest{Tool: req.tool.Name, Arguments: args, Limits: req.limits, DiskBytes: w.disk}
	for _, r := range in {
		wr.Inputs = append(wr.Inputs, workerInput{Path: r.path, Size: r.size, SHA256: r.sha256, Format: r.format,
			Producer: r.producer, Role: r.role, Declared: r.declared, Evidence: r.evidence, Reader: r.reader, Members: r.members})
	}
	body, _ := json.Marshal(wr)
	if err := os.WriteFile(w.ReqFile, body, 0o600); err != nil {
		w.stop()
		return nil, failure.Wrap(err, gen.FailureCodeIoFailure, "the analysis worker's request cannot be written; check TMPDIR's free space")
	}
	// The byte that starts the analysis; a worker that already ended leaves it unread.
	w.Ready.Write([]byte{'\n'})
	w.Ready.Close()
	if rt.spares != nil {
		// A server answers a whole reply once the worker has closed its output, while the
		// worker's process and its helper's still end (about 10 ms here); the worker's slot
		// in the budget and its scratch are given back when they have (endLater). A reply
		// that is not whole, or a worker that ended first, is judged at its end as before.
		select {
		case <-w.Replied:
			if reply, f := readReply(w.ReplyFile, w.Spec.MaxOutputBytes); f == nil && ctx.Err() == nil {
				handedOver = true
				rt.endLater(w)
				return rt.workerResult(req, in, reply)
			}
		case <-w.Done:
		}
	}
	<-w.Done
	w.release()
	res, err := w.Res, w.Err
	switch {
	case ctx.Err() != nil:
		return nil, providerFailure(ctx, ctx.Err(), nil)
	case err != nil:
		return nil, failure.Wrap(err, gen.FailureCodeInternalFailure, "the analysis worker could not be started")
	case res.Limit != nil:
		return nil, workerLimit(req, res.Limit, w.disk, inputBytes(in))
	}
	reply, f := readReply(w.ReplyFile, w.Spec.MaxOutputBytes)
	if l := threadExhaustion(res.Stderr.Excerpt); f != nil && l != nil {
		return nil, workerLimit(req, l, w.disk, inputBytes(in))
	}
	if f != nil {
		code := -1
		if res.ExitCode != nil {
			code = *res.ExitCode
		}
		return nil, f.With("exit_code", code)
	}
	return rt.workerResult(req, in, reply)
}

// endLater removes the reply file of a worker whose whole reply has been read and waits,
// on a goroutine of its own, for the worker to end, then gives back its slot in the
// budget and removes its scratch; Close waits for every such worker. What the broker
// reports of it then (a bound reached while it exited, the measure of its scratch at the
// end) no longer changes the answer.
func (rt *Runtime) endLater(w *startedWorker) {
	rt.ending.Add(1)
	go func() {
		defer rt.ending.Done()
		// The reply is read; the worker removes the rest of its scratch as it exits
		// (workerproc.Release), so that once it has ended only the directory is left.
		os.Remove(w.ReplyFile)
		<-w.Done
		w.release()
		w.Cancel()
		os.RemoveAll(w.Dir)
	}()
}

// workerResult is the analysis result of a worker's whole reply.
func (rt *Runtime) workerResult(req *request, in []resolved, reply *workerReply) (*Result, *failure.Failure) {
	req.digest, req.offset = reply.Digest, reply.Offset
	if reply.Mismatch {
		return nil, rt.continuationMismatch(req)
	}
	if reply.Failure != nil {
		return nil, reply.Failure.failure()
	}
	out, f := decodeResult(reply)
	if f == nil && out.NextPage != nil {
		// The arguments as the server process builds them: typed values keep their
		// field order, as an in-process result would have it.
		out.NextPage.Arguments = nextPageArguments(req, in, out.Token)
	}
	return out, f
}

// workerLimit is the failure of a worker the broker stopped at a bound; disk is its disk
// budget for input bytes of inputs.
func workerLimit(req *request, l *broker.Limit, disk, input int64) *failure.Failure {
	switch l.Kind {
	case "timeout":
		return providerFailure(context.Background(), context.DeadlineExceeded, nil)
	case "memory_limit_exceeded":
		return failure.New(gen.FailureCodeLimitExceeded,
			"the analysis passed limits.max_memory_bytes (%d bytes) and was stopped; this input needs more memory: raise limits.max_memory_bytes (up to %d), or analyze a smaller artifact",
			req.limits.MaxMemoryBytes, gen.LimitMaxima.MaxMemoryBytes).
			Field(failure.Path("limits", "max_memory_bytes"), []string{"<=" + jsonNumber(float64(gen.LimitMaxima.MaxMemoryBytes))}).
			With("field", "max_memory_bytes").With("reason", "memory").With("limit", req.limits.MaxMemoryBytes)
	case "task_limit_exceeded":
		return failure.New(gen.FailureCodeLimitExceeded,
			"the analysis worker kept starting processes or threads past its task bound (%d tasks) and was stopped; report the artifact's format to the maintainers, or start Flameox with %s raised",
			int64(l.Configured), broker.MaxTasksVariable).
			With("reason", "tasks").With("limit", int64(l.Configured))
	case "writable_limit_exceeded":
		f := workerDiskFailure(disk, input)
		if l.Observed != nil {
			f.With("observed_bytes", int64(*l.Observed))
		}
		return f
	case "storage_reserve_exceeded":
		f := failure.New(gen.FailureCodeIoFailure,
			"the analysis was stopped when the temporary directory's filesystem fell below its free-space reserve (%d bytes)", int64(StorageReserveBytes)).
			With("reason", "no_space_left").With("location", "the system temporary directory (TMPDIR)").With("reserve_bytes", int64(StorageReserveBytes))
		f.Retryable = true
		f.NextAction = &gen.NextAction{WaitAndRetry: &gen.WaitAndRetry{Kind: "wait_and_retry", RetryAfterMS: &retryAfterMS,
			Message: "Free space in the temporary directory (TMPDIR), then retry the same call."}}
		return f
	}
	return failure.New(gen.FailureCodeInternalFailure, "the analysis worker was stopped by its %s bound", l.Kind).With("reason", l.Kind)
}

// readReply reads and decodes the worker's reply file, bounded.
func readReply(path string, max int64) (*workerReply, *failure.Failure) {
	gone := failure.New(gen.FailureCodeInternalFailure,
		"the analysis worker ended without a result (a decoder crashed); the server is unaffected: retry, or report the input").
		With("reason", "worker_crashed")
	f, err := os.Open(path)
	if err != nil {
		return nil, gone
	}
	defer f.Close()
	var reply workerReply
	if err := json.NewDecoder(io.LimitReader(f, max)).Decode(&reply); err != nil || reply.Result == nil && reply.Failure == nil && !reply.Mismatch {
		return nil, gone
	}
	return &reply, nil
}

// decodeResult rebuilds the worker's result; blocks stay the exact JSON the worker wrote,
// so rows keep the catalog's field order.
func decodeResult(reply *workerReply) (*Result, *failure.Failure) {
	// One pass: the blocks (the page's rows) stay the worker's bytes, which the answer
	// writes as they are; the shallower Blocks field takes "blocks" from Result's.
	var wire struct {
		Result
		Blocks []json.RawMessage `json:"blocks"`
	}
	if json.Unmarshal(reply.Result, &wire) != nil {
		return nil, failure.New(gen.FailureCodeInternalFailure, "the analysis worker's result does not decode").With("reason", "worker_reply")
	}
	res := wire.Result
	res.Blocks = make([]any, len(wire.Blocks))
	for i, b := range wire.Blocks {
		res.Blocks[i] = b
	}
	res.Token = reply.Token
	return &res, nil
}

// ServeWorker runs this process as an analysis worker when WorkerVariable names a request
// file, and reports whether it did; it returns the exit code. registry builds the registry
// the server runs with; it is called only in a worker, so that a process that is not one
// builds nothing here. A main function calls it before anything else.
//
// The worker starts before its request is written (startedWorker): it loads the catalog,
// then waits for one byte on its standard input, which says the request file is whole;
// at the input's end without it, the analysis was abandoned and the worker exits at once
// with no reply.
func ServeWorker(registry func() *providers.Registry) (int, bool) {
	path := os.Getenv(WorkerVariable)
	if path == "" {
		return 0, false
	}
	// Nothing this worker starts is a worker.
	os.Unsetenv(WorkerVariable)
	warm, _ := strconv.ParseInt(os.Getenv(workerproc.WarmVariable), 10, 64)
	os.Unsetenv(workerproc.WarmVariable)
	// The collector's target of the analysis (serveWorker) from the start, so that the
	// warm heap stays below its goal and with the process.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(workerGCPercent)
	}
	boundWorkerThreads()
	rt, err := newWorker(registry())
	warmHeap(warm)
	var ready [1]byte
	if n, _ := os.Stdin.Read(ready[:]); n == 0 {
		return 0, true
	}
	reply := serveWorker(rt, err, path)
	if err := json.NewEncoder(os.Stdout).Encode(reply); err != nil {
		return 1, true
	}
	// The reply is whole: a server reads it from here, while this process exits and
	// removes what its scratch holds but the reply.
	os.Stdout.Close()
	workerproc.Release(path)
	return 0, true
}

// serveWorker runs the request in the file at path on rt, the worker's runtime (nil with
// loadErr when the catalog did not load).
func serveWorker(rt *Runtime, loadErr error, path string) (reply workerReply) {
	fail := func(f *failure.Failure) workerReply {
		env := f.Envelope()
		reply.Failure = &workerFailure{Code: f.Code, Message: f.Message, Retryable: f.Retryable, FieldPath: f.FieldPath,
			AcceptedValues: f.AcceptedValues, NextAction: f.NextAction, Details: env.Details}
		return reply
	}
	defer func() {
		// A decoder that panics costs this request only, with a typed failure.
		if p := recover(); p != nil {
			reply = fail(failure.New(gen.FailureCodeInternalFailure, "a decoder failed unexpectedly on this input; the server is unaffected: report the input").
				With("reason", "decoder_panic"))
		}
	}()
	b, err := os.ReadFile(path)
	var wr workerRequest
	if err != nil || json.Unmarshal(b, &wr) != nil {
		return fail(failure.New(gen.FailureCodeInternalFailure, "the analysis worker's request cannot be read"))
	}
	// The garbage collector works harder before the parent's RSS bound would kill us.
	debug.SetMemoryLimit(wr.Limits.MaxMemoryBytes / 4 * 3)
	// A worker lives for one analysis: below that limit it collects when the heap has
	// grown to five times what the last collection kept (GOGC=400) rather than twice, so
	// that a decoder's growing tables are marked a few times rather than at every
	// doubling (on a 256 MB Chrome trace: one collection instead of five, 0.27 s less
	// CPU, the same peak RSS; docs/performance.md). GOGC set in the environment is kept.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(workerGCPercent)
	}
	// No file this worker (or what it starts) writes passes the disk budget.
	wroteTooMuch := limitFileSize(wr.DiskBytes)
	if loadErr != nil {
		return fail(failure.Wrap(loadErr, gen.FailureCodeInternalFailure, "the analysis worker cannot load the catalog"))
	}
	t, ok := rt.byName[wr.Tool]
	if !ok || t.Family != "analysis" {
		return fail(failure.New(gen.FailureCodeInternalFailure, "the analysis worker does not know the tool %q", wr.Tool))
	}
	// The arguments are the instance the parent validated against the tool's schema and
	// admitted: decoded as Validate decodes, they admit the same request here, without
	// compiling the schema a second time (about 0.4 ms of a CLI analysis's critical path).
	inst, err := validate.Decode(wr.Arguments)
	if err != nil {
		return fail(failure.New(gen.FailureCodeInternalFailure, "the analysis worker's request cannot be read"))
	}
	req, f := rt.admit(t, inst)
	if f != nil {
		return fail(f)
	}
	req.limits = wr.Limits
	in := make([]resolved, len(wr.Inputs))
	for i, w := range wr.Inputs {
		in[i] = resolved{path: w.Path, size: w.Size, sha256: w.SHA256, format: w.Format, producer: w.Producer,
			role: w.Role, declared: w.Declared, evidence: w.Evidence, reader: w.Reader, members: w.Members}
	}
	req.inputs = in
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(req.limits.TimeoutSeconds*float64(time.Second)))
	defer cancel()
	res, f := rt.analyzeResolved(ctx, req, in)
	reply.Digest, reply.Offset = req.digest, req.offset
	if wroteTooMuch() {
		// A write reached RLIMIT_FSIZE: whatever the analysis made of the refused write,
		// the answer is the bound.
		return fail(workerDiskFailure(wr.DiskBytes, inputBytes(in)))
	}
	if f != nil && errors.Is(f, errContinuationMismatch) {
		reply.Mismatch = true
		return reply
	}
	if f != nil {
		return fail(f)
	}
	body, err := json.Marshal(res)
	if err != nil {
		return fail(failure.Unencodable(err))
	}
	reply.Result, reply.Token = body, res.Token
	return reply
}

// boundWorkerThreads holds the worker's threads to the task bound of the process that
// started it (FLAMEOX_MAX_TASKS, else broker.DefaultMaxTasks; the worker inherits its
// environment): the worker runs without the kernel's task bound (broker.Spec.Direct), and
// past this bound the Go runtime ends it with "thread exhaustion" (threadExhaustion).
func boundWorkerThreads() { debug.SetMaxThreads(int(workerThreads())) }

// workerThreads is the worker's thread bound: the process's task bound, which the worker
// reads from the environment it inherits, as its parent does.
func workerThreads() int64 {
	n, _ := broker.MaxTasksFromEnvironment(os.Getenv)
	return n
}

// threadExhaustion is the task bound's limit for a worker that the Go runtime ended at
// its thread bound (boundWorkerThreads), read from the worker's standard error ("runtime:
// program exceeds N-thread limit", then "fatal error: thread exhaustion"); nil for any
// other end.
func threadExhaustion(stderr []byte) *broker.Limit {
	if !bytes.Contains(stderr, []byte("fatal error: thread exhaustion")) {
		return nil
	}
	n := workerThreads()
	if _, after, ok := bytes.Cut(stderr, []byte("program exceeds ")); ok {
		if v, _, ok := bytes.Cut(after, []byte("-thread limit")); ok {
			if m, err := strconv.ParseInt(string(v), 10, 64); err == nil {
				n = m
			}
		}
	}
	return &broker.Limit{Kind: "task_limit_exceeded", Configured: float64(n), Unit: "tasks"}
}

// newWorker builds the runtime of a worker: the catalog and the providers, no store, no
// scratch housekeeping.
func newWorker(reg *providers.Registry) (*Runtime, error) {
	rt := &Runtime{limits: gen.LimitDefaults, byName: map[string]*Tool{}, cache: newLRU(1),
		rescues: newRescueMemo(1), scratch: newScratch(), providers: reg, storeErr: errors.New("no store in a worker"), isWorker: true}
	if err := rt.loadCatalog(); err != nil {
		return nil, err
	}
	return rt, nil
}

// warmHeap faults in n bytes of heap and frees them (spareWarmBytes): the analysis that
// follows allocates from pages already mapped.
func warmHeap(n int64) {
	if n <= 0 {
		return
	}
	b := make([]byte, n)
	for i := 0; i < len(b); i += os.Getpagesize() {
		b[i] = 1
	}
	goruntime.KeepAlive(b)
	goruntime.GC()
}

// errContinuationMismatch marks the worker's continuation failure, which the parent explains.
var errContinuationMismatch = fmt.Errorf("continuation mismatch")
