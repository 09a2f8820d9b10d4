package ahead

import (
	"os"
	"os/signal"
)

// statusControlCExit is the exit status of a Windows console process that a Ctrl-C
// ends by default (STATUS_CONTROL_C_EXIT).
var statusControlCExit uint32 = 0xC000013A

// reraise gives sig its default action: the catch stops taking it, and the process ends
// as the console's default handler ends it, since the event cannot be sent again.
func reraise(sig os.Signal) {
	signal.Reset(sig)
	os.Exit(int(statusControlCExit))
}
