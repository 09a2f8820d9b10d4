package broker

import "golang.org/x/sys/windows"

// freeBytes returns the bytes free to this user on dir's volume.
func freeBytes(dir string) (int64, bool) {
	p, err := windows.UTF16PtrFromString(dir)
	if err != nil {
		return 0, false
	}
	var avail, total, free uint64
	if err := windows.GetDiskFreeSpaceEx(p, &avail, &total, &free); err != nil {
		return 0, false
	}
	return int64(min(avail, 1<<63-1)), true
}
