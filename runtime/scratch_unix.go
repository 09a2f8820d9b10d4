//go:build unix

package runtime

import (
	"io/fs"
	"os"
	"syscall"
)

// ownedBySelf reports whether this process's user owns the file.
func ownedBySelf(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && st.Uid == uint32(os.Getuid())
}
