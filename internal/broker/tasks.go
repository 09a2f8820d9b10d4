package broker

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
)

// The task bound (issue 40, item 7; decision 0049): every invocation may hold at most so
// many tasks (processes and their threads) at once; a fork or thread creation past it
// fails with EAGAIN in the workload. A fork loop filled a 1,500-task container cap in
// 4 s before there was one.

// DefaultMaxTasks is the task bound of an invocation when FLAMEOX_MAX_TASKS is unset. It
// is far above what a profiled workload holds (a build at -j64, pytest-xdist on every
// core, a JVM or a runtime with a thread per core: a few hundred tasks) and below the
// container cap where the fork loop was seen (1,500), so a runaway workload exhausts its
// own bound before its container's and Flameox itself can still start processes. A
// thread-heavy workload on a very large machine may need FLAMEOX_MAX_TASKS raised.
const DefaultMaxTasks = 1024

// MaxTasksVariable sets the task bound of every invocation of this process (an integer
// from 1 to MaxTasksCeiling), read once per process.
const MaxTasksVariable = "FLAMEOX_MAX_TASKS"

// MaxTasksCeiling is the largest task bound MaxTasksVariable accepts: the kernel's
// largest pid_max.
const MaxTasksCeiling = 4194304

// MaxTasksFromEnvironment returns the task bound the environment sets, else
// DefaultMaxTasks; an error says why a set value is refused.
func MaxTasksFromEnvironment(getenv func(string) string) (int64, error) {
	s := strings.TrimSpace(getenv(MaxTasksVariable))
	if s == "" {
		return DefaultMaxTasks, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 1 || n > MaxTasksCeiling {
		return DefaultMaxTasks, fmt.Errorf("%s must be an integer from 1 to %d, not %q", MaxTasksVariable, MaxTasksCeiling, s)
	}
	return n, nil
}

// processMaxTasks is the task bound of an invocation whose Spec leaves it zero. A value
// the variable cannot set leaves the default in force; a caller that should refuse it
// checks MaxTasksFromEnvironment when it starts.
var processMaxTasks = sync.OnceValue(func() int64 {
	n, _ := MaxTasksFromEnvironment(os.Getenv)
	return n
})

// taskBound is the bound an invocation of spec runs under; 0 for none.
func taskBound(spec Spec) int64 {
	switch {
	case spec.MaxTasks > 0:
		return spec.MaxTasks
	case spec.MaxTasks < 0:
		return 0
	}
	return processMaxTasks()
}
