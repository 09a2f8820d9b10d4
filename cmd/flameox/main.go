// Command flameox gives coding agents bounded, reproducible runtime evidence. It is an
// MCP server over stdio (flameox mcp serve) and a one-shot CLI that mirror each other;
// both are thin projections over the runtime package.
package main

import (
	"errors"
	"io"
	"os"

	"github.com/flameox/flameox/providers/all"
	"github.com/flameox/flameox/runtime"
)

func main() {
	if code, ok := runtime.ServeWorker(all.Registry); ok {
		os.Exit(code)
	}
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run executes one CLI invocation and returns the process exit status.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	cmd := newRootCommand(stdin, stdout, stderr)
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
