//go:build linux || darwin

package repository

import (
	"errors"
	"os"
	"syscall"
)

// The status of a shard directory (the inventory cache's key) comes from the OS: stat(2)
// on Linux and macOS (this file, with statOf in stat_linux.go and stat_darwin.go), the
// file's volume, index and times on Windows (stat_windows.go).

// lstatStatus returns the status of p without following a link, and whether p is a
// directory.
func lstatStatus(p string) (shardStat, bool, error) {
	var st syscall.Stat_t
	if err := syscall.Lstat(p, &st); err != nil {
		return shardStat{}, false, err
	}
	return statOf(&st), st.Mode&syscall.S_IFMT == syscall.S_IFDIR, nil
}

// openDirNoFollow opens the directory p for reading; a link or anything but a directory
// fails with an error notADirectory accepts.
func openDirNoFollow(p string) (*os.File, error) {
	return os.OpenFile(p, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW, 0)
}

// notADirectory reports whether err is openDirNoFollow's refusal of a link or a
// non-directory.
func notADirectory(err error) bool {
	return errors.Is(err, syscall.ELOOP) || errors.Is(err, syscall.ENOTDIR)
}

// fileStatus returns the status of the open file f and whether it is a directory.
func fileStatus(f *os.File) (shardStat, bool, error) {
	fi, err := f.Stat()
	if err != nil {
		return shardStat{}, false, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return shardStat{}, false, nil
	}
	return statOf(st), fi.IsDir(), nil
}
