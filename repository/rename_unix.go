//go:build linux || darwin

package repository

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// renameNoReplace renames old to new atomically and fails with errExists when new exists,
// even as an empty directory (renameExcl: renameat2 on Linux, renamex_np on macOS). It
// falls back to rename(2), which refuses a non-empty directory, where the exclusive
// rename is unavailable.
func renameNoReplace(old, new string) error {
	err := renameExcl(old, new)
	if exclUnsupported(err) {
		if _, serr := os.Lstat(new); serr == nil {
			return errExists
		}
		err = os.Rename(old, new)
	}
	if errors.Is(err, unix.EEXIST) || errors.Is(err, unix.ENOTEMPTY) {
		return errExists
	}
	return err
}

// dirSyncUnsupported reports whether err says that a directory cannot be synced here.
func dirSyncUnsupported(error) bool { return false }
