package testtool

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/flameox/flameox/internal/subreaper"
)

// WaitingHelpers lists this process's children that are containment helpers started
// ahead, waiting for an invocation (their arguments hold subreaper.ArgWaiting).
func WaitingHelpers() []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		cmdline, err2 := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || err2 != nil {
			continue
		}
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(os.Getpid()) && bytes.Contains(cmdline, []byte(subreaper.ArgWaiting)) {
			out = append(out, pid)
		}
	}
	return out
}
