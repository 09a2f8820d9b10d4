package testtool

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"

	"github.com/flameox/flameox/internal/procfs"
)

// PeakTreeRSS runs cmd to completion and returns the peak resident memory of its process
// tree: the largest sum, over samples every 2 ms, of the resident set of the process and
// of every process descended from it (found by parent links in /proc, since this kernel
// may not list /proc/PID/task/TID/children), and at least the process's own high-water
// mark. A CLI whose analysis runs in a worker process is measured with its worker. It
// scans the whole process table at each sample: keep it out of timed runs.
func PeakTreeRSS(cmd *exec.Cmd) (uint64, error) {
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	root := cmd.Process.Pid
	var own uint64
	var err error
	peak := sampleMax(func() uint64 {
		own = max(own, statusKB(root, "VmHWM:")<<10)
		return treeRSS(root)
	}, func() { err = cmd.Wait() })
	if err != nil {
		return 0, fmt.Errorf("%v\n%s", err, out.Bytes())
	}
	return max(peak, own), nil
}

// treeRSS sums VmRSS over root and its live descendants.
func treeRSS(root int) uint64 {
	parent := map[int]int{}
	for _, p := range procfs.Scan() {
		parent[p.PID] = p.PPID
	}
	var total uint64
	for pid := range parent {
		for p, hops := pid, 0; p > 1 && hops < 64; p, hops = parent[p], hops+1 {
			if p == root {
				total += statusKB(pid, "VmRSS:") << 10
				break
			}
		}
	}
	return total
}

// statusKB reads one kB field of /proc/PID/status (VmRSS:, VmHWM:), 0 when absent.
func statusKB(pid int, field string) uint64 {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	_, rest, ok := bytes.Cut(raw, []byte(field))
	if !ok {
		return 0
	}
	var kb uint64
	fmt.Sscan(string(rest), &kb)
	return kb
}
