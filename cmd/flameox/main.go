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
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run executes one CLI invocation and returns the process exit status.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	cmd := newRootCommand(stdin, stdout, stderr)
	cmd.SetArgs(args)
	if err := cmd.Execute(); err != nil {
		var st exitStatus
		if errors.As(err, &st) {
			return int(st)
		}
		writeFailure(stderr, asFailure(err))
		return 1
	}
	return 0
}

// newRuntime builds the runtime over every evidence family; limits is the raw --limits
// JSON. It is the only place that hands providers to the runtime.
func newRuntime(limits []byte, opts ...runtime.Option) (*runtime.Runtime, error) {
	return runtime.New(all.Registry(), limits, opts...)
}
