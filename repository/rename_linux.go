package repository

import (
	"errors"

	"golang.org/x/sys/unix"
)

// renameExcl is renameat2 with RENAME_NOREPLACE.
func renameExcl(old, new string) error {
	return unix.Renameat2(unix.AT_FDCWD, old, unix.AT_FDCWD, new, unix.RENAME_NOREPLACE)
}

// exclUnsupported reports whether err says renameat2 is unavailable (an old kernel or a
// file system without RENAME_NOREPLACE).
func exclUnsupported(err error) bool {
	return errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EINVAL)
}
