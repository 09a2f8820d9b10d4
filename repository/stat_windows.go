package repository

import (
	"errors"
	"os"
	"unsafe"

	"golang.org/x/sys/windows"
)

// On Windows the status of a shard directory is its volume serial number and file index
// (dev and ino), its last write time (mtime: NTFS updates a directory's on every entry
// created, removed or renamed in it) and its change time (ctime), read from an open
// handle that does not follow a reparse point.

// errNotDir is openDirNoFollow's refusal of a reparse point (a link, a junction) or a
// non-directory.
var errNotDir = errors.New("repository: not a directory")

// fileBasicInfo is FILE_BASIC_INFO (GetFileInformationByHandleEx, FileBasicInfo): times in
// 100-nanosecond intervals since 1601-01-01.
type fileBasicInfo struct {
	CreationTime, LastAccessTime, LastWriteTime, ChangeTime int64
	FileAttributes                                          uint32
	_                                                       uint32
}

// epochDelta is 1970-01-01 in 100-nanosecond intervals since 1601-01-01.
const epochDelta = 116444736000000000

// openNoFollow opens p (a directory too) without following a reparse point.
func openNoFollow(p string, access uint32) (windows.Handle, error) {
	name, err := windows.UTF16PtrFromString(p)
	if err != nil {
		return windows.InvalidHandle, err
	}
	return windows.CreateFile(name, access, windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE|windows.FILE_SHARE_DELETE, nil,
		windows.OPEN_EXISTING, windows.FILE_FLAG_BACKUP_SEMANTICS|windows.FILE_FLAG_OPEN_REPARSE_POINT, 0)
}

// handleStatus returns the status of the open file h and whether it is a directory (and
// not a reparse point).
func handleStatus(h windows.Handle) (shardStat, bool, error) {
	var bi windows.ByHandleFileInformation
	if err := windows.GetFileInformationByHandle(h, &bi); err != nil {
		return shardStat{}, false, err
	}
	var basic fileBasicInfo
	if err := windows.GetFileInformationByHandleEx(h, windows.FileBasicInfo, (*byte)(unsafe.Pointer(&basic)), uint32(unsafe.Sizeof(basic))); err != nil {
		return shardStat{}, false, err
	}
	st := shardStat{dev: uint64(bi.VolumeSerialNumber), ino: uint64(bi.FileIndexHigh)<<32 | uint64(bi.FileIndexLow),
		mtime: (basic.LastWriteTime - epochDelta) * 100, ctime: (basic.ChangeTime - epochDelta) * 100}
	isDir := bi.FileAttributes&windows.FILE_ATTRIBUTE_DIRECTORY != 0 && bi.FileAttributes&windows.FILE_ATTRIBUTE_REPARSE_POINT == 0
	return st, isDir, nil
}

// lstatStatus returns the status of p without following a link, and whether p is a
// directory.
func lstatStatus(p string) (shardStat, bool, error) {
	h, err := openNoFollow(p, windows.FILE_READ_ATTRIBUTES)
	if err != nil {
		return shardStat{}, false, err
	}
	defer windows.CloseHandle(h)
	return handleStatus(h)
}

// openDirNoFollow opens the directory p for reading; a reparse point or anything but a
// directory fails with errNotDir.
func openDirNoFollow(p string) (*os.File, error) {
	h, err := openNoFollow(p, windows.GENERIC_READ)
	if err != nil {
		return nil, err
	}
	if _, isDir, err := handleStatus(h); err != nil || !isDir {
		windows.CloseHandle(h)
		if err != nil {
			return nil, err
		}
		return nil, errNotDir
	}
	return os.NewFile(uintptr(h), p), nil
}

// notADirectory reports whether err is openDirNoFollow's refusal of a link or a
// non-directory.
func notADirectory(err error) bool { return errors.Is(err, errNotDir) }

// fileStatus returns the status of the open file f and whether it is a directory.
func fileStatus(f *os.File) (shardStat, bool, error) { return handleStatus(windows.Handle(f.Fd())) }
