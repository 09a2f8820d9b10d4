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
package ahead

import (
	"os"
	"strings"
	"sync"

	"github.com/flameox/flameox/internal/broker"
)

var (
	mu      sync.Mutex
	started chan *broker.Prestarted
)

func init() {
	if !CaptureCall(os.Args[1:]) {
		return
	}
	c := make(chan *broker.Prestarted, 1)
	started = c
	go func() { c <- broker.Prestart() }()
}

// CaptureCall says whether a CLI call with args (after the program name) is the
// capture command run for a capture: its first word that is not a flag is "capture", and
// it asks for no help (-h or --help before a "--"). The root's flags take no value, so
// that word is the command as cobra finds it; a call this misreads only starts a helper
// that Abandon ends, or starts none and the command starts its own.
func CaptureCall(args []string) bool {
	command := ""
	for _, a := range args {
		if a == "--" {
			break
		}
		if a == "-h" || a == "--help" {
			return false
		}
		if command == "" && !strings.HasPrefix(a, "-") {
			if command = a; command != "capture" {
				return false
			}
		}
	}
	return command == "capture"
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
