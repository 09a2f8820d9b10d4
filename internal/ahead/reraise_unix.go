//go:build unix

package ahead

import (
	"os"
	"os/signal"
	"syscall"
)

// reraise gives sig its default action: the catch stops taking it, and the process sends
// it to itself again (a signal ignored when the process started stays ignored).
func reraise(sig os.Signal) {
	signal.Reset(sig)
	if s, ok := sig.(syscall.Signal); ok {
		syscall.Kill(os.Getpid(), s)
	}
}
