package owner

import (
	"errors"

	"golang.org/x/sys/windows"
)

// ProcessStart returns the creation time of pid in 100-nanosecond intervals since
// 1601-01-01 (GetProcessTimes), or 0.
func ProcessStart(pid int) uint64 {
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
	if err != nil {
		return 0
	}
	defer windows.CloseHandle(h)
	var created, exited, kernel, user windows.Filetime
	if err := windows.GetProcessTimes(h, &created, &exited, &kernel, &user); err != nil {
		return 0
	}
	return uint64(created.HighDateTime)<<32 | uint64(created.LowDateTime)
}

// noSuchProcess reports whether no running process has pid: none can be opened with it
// (ERROR_INVALID_PARAMETER), or the one that can has exited (its pid is only held by an
// open handle).
func noSuchProcess(pid int) bool {
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION|windows.SYNCHRONIZE, false, uint32(pid))
	if err != nil {
		return errors.Is(err, windows.ERROR_INVALID_PARAMETER)
	}
	defer windows.CloseHandle(h)
	ev, err := windows.WaitForSingleObject(h, 0)
	return err == nil && ev == windows.WAIT_OBJECT_0
}
