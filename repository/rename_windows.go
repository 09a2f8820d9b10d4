package repository

import (
	"errors"

	"golang.org/x/sys/windows"
)

// renameNoReplace renames old to new atomically (on one volume) and fails with errExists
// when new exists, even as an empty directory: MoveFileEx without
// MOVEFILE_REPLACE_EXISTING refuses any existing target.
func renameNoReplace(old, new string) error {
	from, err := windows.UTF16PtrFromString(old)
	if err != nil {
		return err
	}
	to, err := windows.UTF16PtrFromString(new)
	if err != nil {
		return err
	}
	err = windows.MoveFileEx(from, to, 0)
	if errors.Is(err, windows.ERROR_ALREADY_EXISTS) || errors.Is(err, windows.ERROR_FILE_EXISTS) {
		return errExists
	}
	return err
}

// dirSyncUnsupported reports whether err says that a directory cannot be synced here:
// FlushFileBuffers needs write access, which a directory handle does not have; NTFS
// journals the directory change itself.
func dirSyncUnsupported(err error) bool { return errors.Is(err, windows.ERROR_ACCESS_DENIED) }
