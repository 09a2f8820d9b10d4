package main

import (
	"os"

	"golang.org/x/sys/windows"
)

// isTerminal reports whether v is an open file on a console (decision 0028). Anything that
// is not an *os.File (a test's buffer, a pipe wrapper) is not a terminal.
func isTerminal(v any) bool {
	f, ok := v.(*os.File)
	if !ok || f == nil {
		return false
	}
	var mode uint32
	return windows.GetConsoleMode(windows.Handle(f.Fd()), &mode) == nil
}
