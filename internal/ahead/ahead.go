// Package ahead starts the containment helper of a `flameox capture` call while the
// process is still initializing its packages (decision 0067, eighth addendum). The
// helper re-executes the binary and takes about 3 ms to start on a 2-core machine;
// started when the capture command ran, it was still starting when the first execution
// wanted it. This package's initialization is the earliest point at which the process
// can know a capture follows and has the broker to start it with: it runs once the
// broker and its dependencies are initialized (os/exec, path/filepath and regexp among
// them, which initialize late), before the last 30% of the binary's packages. A
// process whose arguments are neither a capture call nor an analyze call below (a test
// binary, mcp serve, an analysis worker, the helper itself) starts nothing.
//
// The runtime's StartCaptureHelper takes the helper (Take); the CLI's run ends one that
// no capture took (Abandon) before it returns.
//
// In the same way it starts the analysis worker of a `flameox analyze` call whose paths
// send the analysis to a worker (AnalyzePaths, workerproc.Likely): the worker's process
// start (3 to 6 ms here, on a core it shares with the caller) then overlaps the rest of
// the caller's initialization and the runtime's start, which it followed before (decision
// 0067, eleventh addendum). The runtime takes it (TakeWorker) as the worker it starts
// ahead; Abandon ends one that nothing took.
//
// It also catches the shutdown signals of a capture, an analysis or a server from its
// initialization (SignalCall): os/signal's first Notify waits for a thread of the
// runtime's several times, 0.1 to 3 ms on a 2-core machine, which the call would
// otherwise wait for just before its work starts. NotifyContext registers the call's
// context with that catch; a signal with none registered takes its default action.
package ahead

import (
	"context"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/flameox/flameox/internal/broker"
	"github.com/flameox/flameox/internal/workerproc"
)

// ShutdownSignals end a server, a capture or an analysis: in-flight work is cancelled,
// which kills its workloads and removes its scratch, before the process exits.
var ShutdownSignals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP}

var (
	mu      sync.Mutex
	started chan *broker.Prestarted
	// catching says this process catches the shutdown signals from initialization
	// (SignalCall); registered is closed once the catch is registered, and cancels are
	// the contexts a signal cancels now (NotifyContext).
	catching   bool
	registered chan struct{}
	cancels    = map[*byte]context.CancelFunc{}
	// worker receives the analysis worker started during initialization (nil there when
	// the paths did not call for one, or it could not start).
	worker chan *workerproc.Process
)

func init() {
	args := os.Args[1:]
	// The processes start first: a goroutine started before them (the signals' catch,
	// whose first Notify waits on runtime threads several times) held the second
	// processor until about main, and they waited for it (decision 0067, eleventh
	// addendum).
	if paths, ok := AnalyzePaths(args); ok && os.Getenv(workerproc.InProcessVariable) != "1" {
		w := make(chan *workerproc.Process, 1)
		worker = w
		go func() { w <- startWorker(paths) }()
	}
	if CaptureCall(args) {
		c := make(chan *broker.Prestarted, 1)
		started = c
		go func() { c <- broker.Prestart() }()
	}
	if SignalCall(args) {
		catching, registered = true, make(chan struct{})
		go catch(registered)
	}
}

// catch registers for the shutdown signals, closes registered, and forwards what it
// receives for the rest of the process's life (forward).
func catch(registered chan struct{}) {
	e := make(chan os.Signal, 1)
	signal.Notify(e, ShutdownSignals...)
	close(registered)
	forward(e)
}

// startWorker starts a spare analysis worker of this executable when the files at paths
// send their analysis to one (nil otherwise, or when it cannot start: the runtime then
// starts its own and words the failure).
func startWorker(paths []string) *workerproc.Process {
	if !workerproc.Likely(paths) {
		return nil
	}
	exe, err := os.Executable()
	if err != nil {
		return nil
	}
	p, err := workerproc.Start(context.Background(), workerproc.Config{Exe: exe})
	if err != nil {
		return nil
	}
	return p
}

// NotifyContext is signal.NotifyContext(parent, ShutdownSignals...). In a call whose
// initialization catches the shutdown signals (SignalCall), it registers the context
// with that catch instead, whose goroutine cancels the registered contexts at a signal;
// stop unregisters it. A signal with no context registered, before NotifyContext or after
// stop, takes its default action (reraise), as in a call that catches nothing: the
// process ends. So the catch costs a call nothing but os/signal's first Notify, done on a
// goroutine of initialization (0.1 to 3 ms here, waits on runtime threads), and nothing
// at its end, where unregistering the signals would cost round trips to the runtime's
// signal thread again (about 0.3 ms of every capture or analysis here).
func NotifyContext(parent context.Context) (context.Context, context.CancelFunc) {
	mu.Lock()
	if !catching {
		mu.Unlock()
		return signal.NotifyContext(parent, ShutdownSignals...)
	}
	ctx, cancel := context.WithCancel(parent)
	key := new(byte)
	cancels[key] = cancel
	mu.Unlock()
	return ctx, func() {
		mu.Lock()
		delete(cancels, key)
		mu.Unlock()
		cancel()
	}
}

// forward cancels the registered contexts at each signal the catch e receives, or, with
// none registered, gives the signal its default action.
func forward(e chan os.Signal) {
	for sig := range e {
		mu.Lock()
		cs := make([]context.CancelFunc, 0, len(cancels))
		for _, c := range cancels {
			cs = append(cs, c)
		}
		mu.Unlock()
		if len(cs) == 0 {
			reraise(sig)
			continue
		}
		for _, c := range cs {
			c()
		}
	}
}

// CaptureCall says whether a CLI call with args (after the program name) is the
// capture command run for a capture: its first word that is not a flag is "capture", and
// it asks for no help (-h or --help before a "--"). The root's flags take no value, so
// that word is the command as cobra finds it; a call this misreads only starts a helper
// that Abandon ends, or starts none and the command starts its own.
func CaptureCall(args []string) bool {
	words, ok := commandWords(args, 1)
	return ok && len(words) == 1 && words[0] == "capture"
}

// SignalCall says whether a CLI call with args sets up the shutdown signals as its work
// starts (NotifyContext): capture, analyze and mcp serve, asking for no help. Any other
// call keeps the signals' default (a signal ends it at once) until it sets them up, so
// that no signal is caught by a call that never takes it over.
func SignalCall(args []string) bool {
	words, ok := commandWords(args, 2)
	if !ok || len(words) == 0 {
		return false
	}
	switch words[0] {
	case "capture", "analyze":
		return true
	case "mcp":
		return len(words) == 2 && words[1] == "serve"
	}
	return false
}

// commandWords are the first n words of args that are not flags, before any "--"; ok is
// false for a call that asks for help (-h or --help before a "--"). The root's flags
// take no value, so the first word is the command as cobra finds it.
func commandWords(args []string, n int) (words []string, ok bool) {
	for _, a := range args {
		if a == "--" {
			break
		}
		if a == "-h" || a == "--help" {
			return nil, false
		}
		if len(words) < n && !strings.HasPrefix(a, "-") {
			words = append(words, a)
		}
	}
	return words, true
}

// analyzeValueFlags are the analyze command's flags that take a value (the command
// defines them; a test in package main compares).
var analyzeValueFlags = []string{"arguments", "continuation", "evidence", "format", "limits", "rescue-to"}

// AnalyzeValueFlag reports whether AnalyzePaths reads the analyze command's flag name
// as taking a value.
func AnalyzeValueFlag(name string) bool { return slices.Contains(analyzeValueFlags, name) }

// AnalyzePaths returns the paths of a CLI call with args (after the program name) that
// is the analyze command run on paths: its first word that is not a flag or a flag's
// value is "analyze", before any "--", the second the operation and the rest the paths
// (with those after a "--"). ok is false for any other call, for one that asks for help
// and for one that analyzes preserved evidence (--evidence). The root's flags take no
// value; the analyze command's that do are analyzeValueFlags, as "--name value" or
// "--name=value". A call this misreads only starts a worker that Abandon ends, or starts
// none and the runtime starts its own.
func AnalyzePaths(args []string) (paths []string, ok bool) {
	var words []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			if len(words) == 0 {
				// Nothing names the command before it.
				return nil, false
			}
			words = append(words, args[i+1:]...)
			break
		}
		if a == "-h" || a == "--help" {
			return nil, false
		}
		if name, found := strings.CutPrefix(a, "--"); found {
			name, _, inline := strings.Cut(name, "=")
			if name == "evidence" {
				return nil, false
			}
			if !inline && AnalyzeValueFlag(name) {
				i++
			}
			continue
		}
		if strings.HasPrefix(a, "-") && a != "-" {
			continue
		}
		words = append(words, a)
	}
	if len(words) < 3 || words[0] != "analyze" {
		return nil, false
	}
	return words[2:], true
}

// TakeWorker returns the channel on which the analysis worker started during
// initialization arrives (nil there when none started), once; nil when none was asked
// for or it was taken or abandoned.
func TakeWorker() chan *workerproc.Process { return take(&worker) }

// Take returns the channel on which the helper started during initialization arrives
// (nil there when none could start), once; nil when none was started or it was taken or
// abandoned.
func Take() chan *broker.Prestarted { return take(&started) }

// take returns the channel *c holds and leaves nil there.
func take[T any](c *chan T) chan T {
	mu.Lock()
	defer mu.Unlock()
	v := *c
	*c = nil
	return v
}

// Abandon ends the helper and the analysis worker started during initialization unless
// they were taken: the worker is told to exit, its launch returns and its scratch
// directory is removed.
func Abandon() {
	if c := Take(); c != nil {
		(<-c).Abandon()
	}
	if w := TakeWorker(); w != nil {
		if p := <-w; p != nil {
			p.Abandon()
		}
	}
}
