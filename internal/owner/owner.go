// Package owner names directories after the process that owns them, so that a later
// process can tell a directory whose owner is gone (killed, crashed) from one that is still
// in use, and remove only the former.
package owner

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// Tag is this process's owner tag: its pid and its start time in clock ticks since boot
// (0 where /proc is unavailable), as "PID-START".
func Tag() string {
	pid := os.Getpid()
	return fmt.Sprintf("%d-%d", pid, ProcessStart(pid))
}

// ProcessStart returns field 22 of /proc/PID/stat (the start time), or 0.
func ProcessStart(pid int) uint64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name (field 2) is parenthesized and may hold spaces.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0
	}
	fields := strings.Fields(string(b[i+1:]))
	if len(fields) < 20 {
		return 0
	}
	v, _ := strconv.ParseUint(fields[19], 10, 64)
	return v
}

// Gone reports whether the process named by name, "PID-START-REST" as built from Tag, is
// provably gone: no process has its pid, or the process with that pid started at another
// time. A name of another shape is never gone.
func Gone(name string) bool {
	parts := strings.SplitN(name, "-", 3)
	if len(parts) != 3 {
		return false
	}
	pid, err := strconv.Atoi(parts[0])
	if err != nil || pid <= 0 {
		return false
	}
	start, err := strconv.ParseUint(parts[1], 10, 64)
	if err != nil {
		return false
	}
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	if start != 0 {
		if now := ProcessStart(pid); now != 0 && now != start {
			return true
		}
	}
	return false
}
