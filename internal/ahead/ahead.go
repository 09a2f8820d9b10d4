// Package ahead starts the containment helper of a `flameox capture` call while the
// process is still initializing its packages (decision 0067, eighth addendum). The
// helper re-executes the binary and takes about 3 ms to start on a 2-core machine;
// started when the capture command ran, it was still starting when the first execution
// wanted it. This package's initialization is the earliest point at which the process
// can know a capture follows and has the broker to start it with: it runs once the
// broker and its dependencies are initialized (os/exec, path/filepath and regexp among
// them, which initialize late), before the last 30% of the binary's packages. A
// process whose arguments are not a capture call (a test binary, mcp serve, an analysis
// worker, the helper itself) starts nothing.
//
// The runtime's StartCaptureHelper takes the helper (Take); the CLI's run ends one that
// no capture took (Abandon) before it returns.
//
// It also catches the shutdown signals of a capture, an analysis or a server from its
// initialization (SignalCall): os/signal's first Notify waits for a thread of the
// runtime's several times, 0.1 to 3 ms on a 2-core machine, which the call would
// otherwise wait for just before its work starts. NotifyContext takes over from it.
package ahead

import (
	"context"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"

	"github.com/flameox/flameox/internal/broker"
)

// ShutdownSignals end a server, a capture or an analysis: in-flight work is cancelled,
// which kills its workloads and removes its scratch, before the process exits.
var ShutdownSignals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP}

var (
	mu      sync.Mutex
	started chan *broker.Prestarted
	// early receives the shutdown signals from initialization until NotifyContext
	// (SignalCall); registered once earlyReady is closed.
	early      chan os.Signal
	earlyReady chan struct{}
)

func init() {
	args := os.Args[1:]
	if SignalCall(args) {
		e, ready := make(chan os.Signal, 1), make(chan struct{})
		early, earlyReady = e, ready
		go func() { signal.Notify(e, ShutdownSignals...); close(ready) }()
	}
	if !CaptureCall(args) {
		return
	}
	c := make(chan *broker.Prestarted, 1)
	started = c
	go func() { c <- broker.Prestart() }()
}

// NotifyContext is signal.NotifyContext(parent, ShutdownSignals...). In a call whose
// initialization catches the shutdown signals (SignalCall), it takes over from that
// catch: the context is registered first, then the catch is stopped, and a signal the
// catch received cancels the context at once. So a signal ends the call whenever it
// comes: before the catch is registered (by a goroutine of initialization) by its
// default action, as in any call, and after it, by cancelling the call's work.
func NotifyContext(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, stop := signal.NotifyContext(parent, ShutdownSignals...)
	mu.Lock()
	e, ready := early, earlyReady
	early, earlyReady = nil, nil
	mu.Unlock()
	if e == nil {
		return ctx, stop
	}
	<-ready
	signal.Stop(e)
	select {
	case <-e:
		caught, cancel := context.WithCancel(ctx)
		cancel()
		return caught, func() { cancel(); stop() }
	default:
		return ctx, stop
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

// Take returns the channel on which the helper started during initialization arrives
// (nil there when none could start), once; nil when none was started or it was taken or
// abandoned.
func Take() chan *broker.Prestarted {
	mu.Lock()
	defer mu.Unlock()
	c := started
	started = nil
	return c
}

// Abandon ends the helper started during initialization unless it was taken.
func Abandon() {
	if c := Take(); c != nil {
		(<-c).Abandon()
	}
}
