package repository

import (
	"errors"

	"golang.org/x/sys/unix"
)

// renameExcl is renamex_np with RENAME_EXCL (macOS 10.12).
func renameExcl(old, new string) error { return unix.RenamexNp(old, new, unix.RENAME_EXCL) }

// exclUnsupported reports whether err says the file system has no RENAME_EXCL.
func exclUnsupported(err error) bool {
	return errors.Is(err, unix.ENOTSUP) || errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EINVAL)
}
