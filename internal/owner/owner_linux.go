package owner

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// ProcessStart returns field 22 of /proc/PID/stat (the start time in clock ticks since
// boot), or 0.
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

// noSuchProcess reports whether no process has pid.
func noSuchProcess(pid int) bool { return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) }
