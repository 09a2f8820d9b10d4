//go:build !unix

package runtime

// limitFileSize has no per-file limit to set here (RLIMIT_FSIZE is Unix's): the broker's
// measurement of the worker's directory is the only bound on its disk.
func limitFileSize(int64) func() bool { return func() bool { return false } }
