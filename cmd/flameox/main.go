// Command flameox gives coding agents bounded, reproducible runtime evidence. It is an
// MCP server over stdio (flameox mcp serve) and a one-shot CLI that mirror each other;
// both are thin projections over the runtime package.
package main

import (
	"errors"
	"io"
	"os"
	"runtime/debug"
	"time"

	"github.com/spf13/cobra"

	"github.com/flameox/flameox/internal/ahead"
	"github.com/flameox/flameox/providers/all"
	"github.com/flameox/flameox/runtime"
)

// cliGCPercent is the GOGC of a one-shot CLI call: it lives for one answer, whose heap
// is small (an input large enough to matter goes to an analysis worker), so collecting
// at every doubling from 4 MB is work it never gets back; mcp serve, which lives for a
// session, and the evidence viewer return to Go's default (serverGCPercent) once started
// (collectAsServer). GOGC set in the environment is kept.
const (
	cliGCPercent    = 400
	serverGCPercent = 100
)

func main() {
	if code, ok := runtime.ServeWorker(all.Registry); ok {
		os.Exit(code)
	}
	setGCPercent(cliGCPercent)
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run executes one CLI invocation and returns the process exit status.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	code := execute(newRootCommandFor(args, stdin, stdout, stderr), args, stderr)
	// A capture call's helper started while the process initialized, which no capture
	// took (a refused flag, an invalid request), ends here.
	ahead.Abandon()
	return code
}

// execute runs the root command cmd on args and returns the process exit status.
func execute(cmd *cobra.Command, args []string, stderr io.Writer) int {
	cmd.SetArgs(args)
	ran, err := cmd.ExecuteC()
	if err != nil {
		var st exitStatus
		if errors.As(err, &st) {
			return int(st)
		}
		f := asFailure(ran, err)
		if speaksToPerson(ran, stderr) {
			writeHumanFailure(stderr, f)
		} else {
			writeFailure(stderr, f)
		}
		return 1
	}
	return 0
}

// newRuntime builds the runtime over every evidence family; limits is the raw --limits
// JSON. It is the only place that hands providers to the runtime.
// Analyses of non-trivial inputs run in worker processes of this executable (decision
// 0030) unless FLAMEOX_ANALYSIS_IN_PROCESS=1.
func newRuntime(limits []byte, opts ...runtime.Option) (*runtime.Runtime, error) {
	if os.Getenv("FLAMEOX_ANALYSIS_IN_PROCESS") != "1" {
		if exe, err := os.Executable(); err == nil {
			opts = append([]runtime.Option{runtime.WithAnalysisWorker(exe)}, opts...)
		}
	}
	return runtime.New(all.Registry(), limits, opts...)
}

// setGCPercent sets the collector's target unless GOGC is set in the environment.
func setGCPercent(percent int) {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(percent)
	}
}

// serverStartup is how long a server (mcp serve, the evidence viewer) collects garbage
// as a one-shot call does (cliGCPercent) before it returns to Go's default: mcp serve's
// start, to the first tools/list answer written, leaves about 4 MB of garbage (the
// catalog, the published schemas, the answer marshaled twice by the SDK) around 1 MB
// live, which the default target would collect before that answer (about 5 ms of a 60 ms
// start here). A client sends initialize and tools/list at once; a second is long past.
const serverStartup = time.Second

// collectAsServer returns the process to serverGCPercent once serverStartup has passed;
// the returned function stops that if the server ends first.
func collectAsServer() (stop func() bool) {
	return time.AfterFunc(serverStartup, func() { setGCPercent(serverGCPercent) }).Stop
}
