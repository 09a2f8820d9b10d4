//go:build unix

package runtime

import (
	"os"
	"os/signal"
	"time"

	"golang.org/x/sys/unix"
)

// limitFileSize lowers this worker's soft RLIMIT_FSIZE to bytes (never raising it), so
// that no file the worker or a process it starts writes grows past the disk budget: the
// write fails (EFBIG) and the kernel sends SIGXFSZ, which the worker notes here instead
// of ignoring. The returned function reports, once the analysis has ended, whether a write
// met the limit. Without a budget, or where the limit cannot be set, it reports false.
func limitFileSize(bytes int64) func() bool {
	var lim unix.Rlimit
	if bytes <= 0 || unix.Getrlimit(unix.RLIMIT_FSIZE, &lim) != nil {
		return func() bool { return false }
	}
	want := uint64(bytes)
	if lim.Cur != unix.RLIM_INFINITY {
		want = min(want, lim.Cur)
	}
	if lim.Max != unix.RLIM_INFINITY {
		want = min(want, lim.Max)
	}
	xfsz := make(chan os.Signal, 1)
	signal.Notify(xfsz, unix.SIGXFSZ)
	lim.Cur = want
	if unix.Setrlimit(unix.RLIMIT_FSIZE, &lim) != nil {
		signal.Stop(xfsz)
		return func() bool { return false }
	}
	return func() bool {
		select {
		case <-xfsz:
			return true
		default:
		}
		// SIGXFSZ is handled before the failed write returns, but it reaches the channel
		// through the runtime's signal loop, which may not have run yet. That loop takes
		// pending signals in ascending order, so once a SIGWINCH raised now (a higher
		// number, ignored by default) has come through, a SIGXFSZ raised before it has.
		flush := make(chan os.Signal, 1)
		signal.Notify(flush, unix.SIGWINCH)
		defer signal.Stop(flush)
		if unix.Kill(os.Getpid(), unix.SIGWINCH) == nil {
			select {
			case <-xfsz:
				return true
			case <-flush:
			case <-time.After(time.Second):
			}
		}
		select {
		case <-xfsz:
			return true
		default:
			return false
		}
	}
}
