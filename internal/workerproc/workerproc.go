// Package workerproc starts the process of an analysis worker (decision 0030): this
// executable again, under the broker, in a scratch directory of its own, waiting on its
// standard input for the request. The runtime hands requests to the workers it starts
// with Start; package ahead starts one with it while a CLI analysis is still
// initializing its packages (decision 0067, eleventh addendum), which is why this package
// needs nothing the runtime's packages initialize.
package workerproc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/broker"
	"github.com/flameox/flameox/internal/owner"
	"github.com/flameox/flameox/internal/sourcefile"
)

const (
	// Variable names the request file of a process started as an analysis worker.
	Variable = "FLAMEOX_ANALYSIS_WORKER"
	// WarmVariable carries the bytes of heap a spare faults in while it waits.
	WarmVariable = "FLAMEOX_ANALYSIS_WORKER_WARM"
	// InProcessVariable set to 1 analyzes every input in the calling process: no worker
	// starts.
	InProcessVariable = "FLAMEOX_ANALYSIS_IN_PROCESS"
	// ScratchPrefix begins the name of every worker's scratch directory in the system
	// temporary directory: flameox-worker-PID-START-RANDOM, the owner tag of the process
	// that starts the worker, so that a later start removes the directory of a process
	// killed before it could.
	ScratchPrefix = "flameox-worker-"
	// InProcessBytes is the input size below which an analysis runs in the calling
	// process: a worker costs a process start and a runtime (decision 0030 has the
	// figures), and uncompressed inputs this small cannot expand past the decoders' own
	// bounds.
	InProcessBytes = 256 << 10
	// ReplySlack is what a worker's reply may hold beyond the contract's largest page:
	// the envelope and the escaping of the reply's own JSON. The reply is bounded by the
	// contract's max_result_bytes, not the request's: a page's first row is returned
	// whole even when it alone passes the request's budget (decision 0011).
	ReplySlack = 4 << 20
	// StorageReserveBytes must stay free on the temporary directory's filesystem while a
	// worker runs (the runtime's reserve for its scratch).
	StorageReserveBytes = 64 << 20
)

// TempVariables are the environment variables that name the temporary directory, for
// Go (TMPDIR; TMP and TEMP on Windows) and for SQLite (SQLITE_TMPDIR first).
var TempVariables = []string{"TMPDIR", "TMP", "TEMP", "SQLITE_TMPDIR"}

// ErrScratch marks a Start that could not create the worker's scratch directory.
var ErrScratch = errors.New("the worker's scratch directory cannot be created")

// Scratch creates a worker's scratch directory in the system temporary directory.
func Scratch() (string, error) {
	return os.MkdirTemp("", ScratchPrefix+owner.Tag()+"-")
}

// Env is env (the caller's) with the request file named and every temporary directory
// variable pointing at tmp; earlier values of those variables are dropped, as a process
// that reads the first of duplicates would otherwise use them. warm > 0 asks the worker
// to fault in that many bytes of heap while it waits.
func Env(env []string, reqFile, tmp string, warm int64) []string {
	drop := append([]string{Variable, WarmVariable}, TempVariables...)
	out := make([]string, 0, len(env)+len(drop))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if !containsKey(drop, k) {
			out = append(out, kv)
		}
	}
	out = append(out, Variable+"="+reqFile)
	if warm > 0 {
		out = append(out, WarmVariable+"="+strconv.FormatInt(warm, 10))
	}
	for _, k := range TempVariables {
		out = append(out, k+"="+tmp)
	}
	return out
}

// containsKey reports whether keys holds k, ignoring case on Windows, whose environment
// names are case-insensitive.
func containsKey(keys []string, k string) bool {
	for _, x := range keys {
		if x == k || runtime.GOOS == "windows" && strings.EqualFold(x, k) {
			return true
		}
	}
	return false
}

// OverInProcess is the rule that sends inputs to a worker, for the input at path (a
// directory or not) that brings the inputs' bytes so far to total: a directory, a
// total over InProcessBytes, or a compressed file (gzip, or Parquet, whose pages may
// declare any decompressed size).
func OverInProcess(total int64, dir bool, path string) bool {
	return dir || total > InProcessBytes || compressed(path)
}

// compressed reports whether a file opens with the gzip or the Parquet magic.
func compressed(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var magic [4]byte
	n, _ := io.ReadFull(f, magic[:])
	return sourcefile.IsGzip(magic[:n]) || n == 4 && string(magic[:]) == "PAR1"
}

// Likely reports whether an analysis of the files at paths runs in a worker by what a
// stat and their first bytes say (OverInProcess). A path that cannot be read says
// nothing, nor does one that is neither a regular file nor a directory: opening a FIFO
// would wait for its writer, and the analysis refuses it anyway.
func Likely(paths []string) bool {
	var total int64
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil || !st.Mode().IsRegular() && !st.IsDir() {
			continue
		}
		total += st.Size()
		if OverInProcess(total, st.IsDir(), p) {
			return true
		}
	}
	return false
}

// Config is what Start needs.
type Config struct {
	// Exe is the executable to start: this program, whose main serves a worker first
	// thing when Variable is set.
	Exe string
	// Bounds are the worker's time, memory and disk bounds; nil starts a spare, unbounded
	// until Process.Arm carries a request's bounds.
	Bounds *broker.Bounds
	// Warm is the heap a spare faults in while it waits (0: none).
	Warm int64
	// Launch runs the broker (nil: broker.Run); tests record or replace launches.
	Launch func(context.Context, broker.Spec) (*broker.Result, error)
}

// A Process is a started worker. Its request goes to ReqFile, then one byte on Ready
// (the write end of its standard input) says the request is whole; the input's end
// without that byte tells it to exit with no analysis. Its reply is ReplyFile; Replied
// is closed once it has closed its output, Done once the launch has returned, after
// which Res and Err hold what the broker reported.
type Process struct {
	Dir, ReqFile, ReplyFile string
	Spec                    broker.Spec
	Ready                   *os.File
	// Arm takes a spare's bounds (nil for a worker started under its own).
	Arm     chan broker.Bounds
	Cancel  context.CancelFunc
	Done    chan struct{}
	Replied chan struct{}
	Res     *broker.Result
	Err     error
}

// Start creates a worker's scratch directory and launches it under ctx. The worker is
// this program's code: the Go runtime bounds its threads and every process it starts
// runs under a broker of its own, so it starts without the containment helper and the
// kernel's task bound (broker.Spec.Direct): the helper is one more start of this binary
// and its exit after the worker's (3 to 4 ms of a CLI call through the worker here).
func Start(ctx context.Context, c Config) (*Process, error) {
	dir, err := Scratch()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrScratch, err)
	}
	// The worker's own directory: its working directory and TMPDIR, measured against the
	// disk budget; request.json and reply.json stay beside it, outside the measure.
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("%w: %w", ErrScratch, err)
	}
	p := &Process{Dir: dir, ReqFile: filepath.Join(dir, "request.json"), ReplyFile: filepath.Join(dir, "reply.json"),
		Done: make(chan struct{}), Replied: make(chan struct{})}
	// The reply is bounded by the contract's max_result_bytes, not the request's
	// (ReplySlack), so one bound serves every request.
	p.Spec = broker.Spec{Path: c.Exe, Args: []string{c.Exe}, Dir: tmp, Direct: true,
		Env:        Env(os.Environ(), p.ReqFile, tmp, c.Warm),
		StdoutFile: p.ReplyFile, StdoutClosed: p.Replied, ExcerptBytes: 4096, MaxOutputBytes: gen.LimitMaxima.MaxResultBytes + ReplySlack,
		WritableRoots: []string{tmp}, ReserveDir: tmp, ReserveBytes: StorageReserveBytes}
	if b := c.Bounds; b != nil {
		p.Spec.Timeout, p.Spec.MaxRSSBytes, p.Spec.MaxWritableGrowth = b.Timeout, b.MaxRSSBytes, b.MaxWritableGrowth
	} else {
		p.Arm = make(chan broker.Bounds, 1)
		p.Spec.Arm = p.Arm
	}
	stdin, ready, err := os.Pipe()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	p.Spec.Stdin, p.Ready = stdin, ready
	launch := c.Launch
	if launch == nil {
		launch = broker.Run
	}
	ctx, p.Cancel = context.WithCancel(ctx)
	go func() {
		defer close(p.Done)
		defer stdin.Close()
		p.Res, p.Err = launch(ctx, p.Spec)
	}()
	return p, nil
}

// Release is called by a worker whose reply is whole (its standard output closed), with
// its request file: it removes its request and its working directory (the scratch's
// tmp, with whatever the analysis left there) while the caller reads the reply, so that
// the caller removes only the reply and the directory once the worker has ended.
// Directories cost a fraction of a millisecond each to remove on ext4 here, and the
// caller's removal came after its answer: about 1 ms of a CLI analysis's end. Nothing
// outside the worker's own scratch is touched, and a failure leaves the rest to the
// caller.
func Release(reqFile string) {
	dir := filepath.Dir(reqFile)
	if !strings.HasPrefix(filepath.Base(dir), ScratchPrefix) {
		return
	}
	os.Remove(reqFile)
	tmp := filepath.Join(dir, "tmp")
	// A working directory cannot be removed on Windows.
	if wd, err := os.Getwd(); err == nil && wd == tmp {
		os.Chdir(dir)
	}
	os.RemoveAll(tmp)
}

// Stop ends a worker before its request: the input's end tells it to exit, and the
// cancellation stops its launch; Stop returns once the launch has.
func (p *Process) Stop() {
	p.Ready.Close()
	p.Cancel()
	<-p.Done
}

// Abandon stops a worker that no analysis used and removes its scratch directory.
func (p *Process) Abandon() {
	p.Stop()
	os.RemoveAll(p.Dir)
}
