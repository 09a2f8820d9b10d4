package runtime

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/semaphore"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/failure"
)

// The worker budget (issue 40, item 5; decision 0047): each analysis worker is bounded by
// its request's limits.max_memory_bytes, but nothing bounded how many ran at once, so 20
// concurrent analyses started 20 workers and the machine's memory, not any bound of ours,
// decided which were killed. One budget per process now admits a worker only when a slot
// is free and its memory bound fits in what the running workers' bounds leave of the
// memory budget; a request waits for both in arrival order, and its cancellation or
// deadline takes it out of the queue with the usual CANCELLED or timeout failure.

// MaxWorkersVariable sets how many analysis workers a process runs at once (a positive
// integer); WorkerMemoryVariable sets the memory budget the running workers' bounds
// share, in bytes. Both are read once per process, at the first runtime start.
const (
	MaxWorkersVariable   = "FLAMEOX_MAX_WORKERS"
	WorkerMemoryVariable = "FLAMEOX_WORKER_MEMORY_BYTES"
)

// workerBudget is a weighted semaphore in two dimensions: worker slots and bytes of
// max_memory_bytes. Each is golang.org/x/sync/semaphore's FIFO, context-aware semaphore.
type workerBudget struct {
	slots   *semaphore.Weighted
	workers int64
	// memory is the memory semaphore and its bytes, made at the first acquire: the
	// default reads the machine's memory (/proc/meminfo and the cgroup limits, 0.3 to
	// 0.4 ms), which a call that starts no worker never needs.
	memory func() (*semaphore.Weighted, int64)
	// waiting and running count the requests in the queue and holding a slot (tests and
	// diagnostics read them).
	waiting, running atomic.Int64
}

func newWorkerBudget(workers, bytes int64) *workerBudget {
	return newLazyBudget(workers, func() int64 { return bytes })
}

// newLazyBudget is the budget of workers slots whose memory bytes are known on first use.
func newLazyBudget(workers int64, bytes func() int64) *workerBudget {
	return &workerBudget{slots: semaphore.NewWeighted(workers), workers: workers,
		memory: sync.OnceValues(func() (*semaphore.Weighted, int64) {
			n := bytes()
			return semaphore.NewWeighted(n), n
		})}
}

// acquire waits until a worker slot is free and bound bytes fit in the memory budget (the
// whole budget for a bound larger than it: that worker runs alone), or until ctx is done,
// whose error it then returns. release gives both back; it may be called more than once.
func (b *workerBudget) acquire(ctx context.Context, bound int64) (release func(), err error) {
	b.waiting.Add(1)
	defer b.waiting.Add(-1)
	if err := b.slots.Acquire(ctx, 1); err != nil {
		return nil, err
	}
	memory, bytes := b.memory()
	weight := min(max(bound, 0), bytes)
	if err := memory.Acquire(ctx, weight); err != nil {
		b.slots.Release(1)
		return nil, err
	}
	b.running.Add(1)
	var once sync.Once
	return func() {
		once.Do(func() {
			b.running.Add(-1)
			memory.Release(weight)
			b.slots.Release(1)
		})
	}, nil
}

// processBudget is the budget every runtime of this process shares.
var processBudget = sync.OnceValues(func() (*workerBudget, error) {
	return budgetFromEnvironment(os.Getenv, goruntime.NumCPU(), machineMemory)
})

// budgetFromEnvironment is the budget the environment sets, else the defaults: half the
// CPUs (at least two) and half the memory (the smaller of the machine's and its cgroup
// limit; unbounded when neither can be read, the slots then being the only bound). The
// variables are checked here; memory is read at the budget's first use, and only when
// WorkerMemoryVariable does not set the bytes.
func budgetFromEnvironment(getenv func(string) string, cpus int, memory func() int64) (*workerBudget, error) {
	workers := int64(max(2, cpus/2))
	var bytes int64 // set by WorkerMemoryVariable; 0: from memory
	for _, v := range []struct {
		name string
		to   *int64
	}{{MaxWorkersVariable, &workers}, {WorkerMemoryVariable, &bytes}} {
		s := strings.TrimSpace(getenv(v.name))
		if s == "" {
			continue
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 1 {
			return nil, failure.New(gen.FailureCodeInvalidInput, "%s must be a positive integer, not %q", v.name, s).
				With("configuration_variable", v.name)
		}
		*v.to = n
	}
	if bytes > 0 {
		return newWorkerBudget(workers, bytes), nil
	}
	return newLazyBudget(workers, func() int64 {
		if m := memory(); m > 0 {
			return m / 2
		}
		return 1<<63 - 1
	}), nil
}

// machineMemory is the memory this process may use, in bytes: the smaller of the
// machine's (MemTotal) and the tightest memory limit of its cgroups (v2 memory.max, v1
// memory.limit_in_bytes, at its cgroup and every ancestor); 0 when none can be read.
func machineMemory() int64 {
	total := memTotal("/proc/meminfo")
	if c := cgroupMemoryLimit("/proc/self/cgroup", "/sys/fs/cgroup"); c > 0 && (total <= 0 || c < total) {
		total = c
	}
	return total
}

// memTotal reads MemTotal from a meminfo file; 0 when it cannot.
func memTotal(path string) int64 {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
			fields := strings.Fields(rest)
			if len(fields) == 2 && fields[1] == "kB" {
				if n, err := strconv.ParseInt(fields[0], 10, 64); err == nil && n > 0 {
					return n << 10
				}
			}
		}
	}
	return 0
}

// cgroupMemoryLimit is the tightest memory limit of the cgroups that the cgroup file (as
// /proc/self/cgroup) names, under the cgroup mount root: each cgroup's own and its
// ancestors' (a container sees its own cgroup at the root). 0 when none is set.
func cgroupMemoryLimit(cgroupFile, root string) int64 {
	b, err := os.ReadFile(cgroupFile)
	if err != nil {
		return 0
	}
	var limit int64
	for line := range strings.Lines(string(b)) {
		parts := strings.SplitN(strings.TrimSpace(line), ":", 3)
		if len(parts) != 3 {
			continue
		}
		var dir, file string
		switch {
		case parts[0] == "0" && parts[1] == "":
			dir, file = root, "memory.max"
		case hasController(parts[1], "memory"):
			dir, file = filepath.Join(root, "memory"), "memory.limit_in_bytes"
		default:
			continue
		}
		for p := filepath.Clean("/" + parts[2]); ; p = filepath.Dir(p) {
			if n := readLimit(filepath.Join(dir, p, file)); n > 0 && (limit == 0 || n < limit) {
				limit = n
			}
			if p == "/" {
				break
			}
		}
	}
	return limit
}

func hasController(list, name string) bool {
	for c := range strings.SplitSeq(list, ",") {
		if c == name {
			return true
		}
	}
	return false
}

// readLimit reads a cgroup memory limit file; 0 for "max", a missing file or a value
// that says no limit (cgroup v1 writes a page-rounded 2^63-1).
func readLimit(path string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || n <= 0 || n >= 1<<62 {
		return 0
	}
	return n
}

// withWorkerBudget gives the runtime its own budget instead of the process's (tests).
func withWorkerBudget(b *workerBudget) Option {
	return func(rt *Runtime) { rt.workers = b }
}
