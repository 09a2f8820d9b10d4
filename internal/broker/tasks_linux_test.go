package broker

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flameox/flameox/internal/testtool"
)

// forkLoop starts up to 200 background sleeps, one pid per line in pids; dash gives up
// ("Cannot fork", exit 2) at the first fork the bound refuses.
const forkLoop = `i=0; while [ $i -lt 200 ]; do sleep 3005 & echo $! >> pids; i=$((i+1)); done; wait`

// TestTaskBoundStopsAForkLoop: a workload that forks in a loop gets no further than the
// task bound, ends (the shell fails at the refused fork: a capture records
// EXECUTION_FAILURE for that exit) and leaves nothing behind, whichever mechanism
// enforces the bound here.
func TestTaskBoundStopsAForkLoop(t *testing.T) {
	for _, mechanism := range []string{"default", "subreaper", "rlimit", "prestarted"} {
		t.Run(mechanism, func(t *testing.T) {
			var prestarted *Prestarted
			switch mechanism {
			case "prestarted":
				// Started with the default bound: the invocation's 32 is written to its group.
				prestarted, _ = prestartedFor(t, taskBound(Spec{}))
			case "subreaper":
				withContainment(t, "subreaper")
			case "rlimit":
				if os.Geteuid() == 0 {
					t.Skip("root is exempt from RLIMIT_NPROC")
				}
				withContainment(t, "subreaper")
				v1Disabled = true
				t.Cleanup(func() { v1Disabled = false })
			}
			spec := sh(t, forkLoop)
			spec.MaxTasks, spec.Prestarted = 32, prestarted
			// A safety net only: the bound, not the timeout, ends the loop.
			spec.Timeout = 60 * time.Second
			res, err := Run(context.Background(), spec)
			if err != nil {
				t.Fatal(err)
			}
			if res.TaskBound == "" {
				t.Skipf("no task bound can be enforced here (mechanism %s)", res.Mechanism)
			}
			if mechanism == "rlimit" && res.TaskBound != "rlimit" {
				t.Fatalf("task bound = %q, want rlimit", res.TaskBound)
			}
			b, _ := os.ReadFile(filepath.Join(spec.Dir, "pids"))
			started := pidsIn(t, b)
			assertGone(t, started)
			if res.Limit != nil || res.ExitCode == nil || *res.ExitCode == 0 || res.MaxTasks != 32 {
				t.Fatalf("result = %+v; stderr %q", res, res.Stderr.Excerpt)
			}
			if len(started) >= 32 {
				t.Errorf("%d sleeps started under a bound of 32 tasks (%s)", len(started), res.TaskBound)
			}
			if res.TaskBound != "rlimit" && res.TasksRefused < 1 {
				t.Errorf("tasks refused = %d (%s)", res.TasksRefused, res.TaskBound)
			}
			if parent, ok := v1PidsDir(); ok {
				entries, _ := os.ReadDir(parent)
				for _, e := range entries {
					if strings.HasPrefix(e.Name(), ownerPrefix()) {
						t.Errorf("v1 pids group %s was not removed", e.Name())
					}
				}
			}
		})
	}
}

// TestTaskBoundDescriptorsDoNotReachTheWorkload: the cgroup files the helper is given
// are closed before the workload starts (one would let it leave its group).
func TestTaskBoundDescriptorsDoNotReachTheWorkload(t *testing.T) {
	spec := sh(t, "for f in /proc/$$/fd/*; do readlink $f; done; true")
	spec.MaxTasks = 64
	res, err := Run(context.Background(), spec)
	if err != nil || res.ExitCode == nil || *res.ExitCode != 0 {
		t.Fatalf("%+v %v", res, err)
	}
	if out := string(res.Stdout.Excerpt); strings.Contains(out, "cgroup.procs") || strings.Contains(out, "/tasks") {
		t.Errorf("the workload holds a cgroup file (task bound %q):\n%s", res.TaskBound, out)
	}
}

func TestMaxTasksFromEnvironment(t *testing.T) {
	for _, c := range []struct {
		value string
		want  int64
		ok    bool
	}{{"", DefaultMaxTasks, true}, {" 64 ", 64, true}, {"4194304", 4194304, true},
		{"0", DefaultMaxTasks, false}, {"-3", DefaultMaxTasks, false}, {"4194305", DefaultMaxTasks, false}, {"many", DefaultMaxTasks, false}} {
		n, err := MaxTasksFromEnvironment(func(string) string { return c.value })
		if n != c.want || (err == nil) != c.ok {
			t.Errorf("%q: %d, %v", c.value, n, err)
		}
	}
	if taskBound(Spec{MaxTasks: -1}) != 0 || taskBound(Spec{MaxTasks: 7}) != 7 || taskBound(Spec{}) <= 0 {
		t.Error("taskBound: a negative MaxTasks is none, a positive one itself, zero the process default")
	}
}

func TestV1PidsParsing(t *testing.T) {
	mi := filepath.Join(t.TempDir(), "mountinfo")
	os.WriteFile(mi, []byte(strings.Join([]string{
		"30 25 0:26 / /sys/fs/cgroup rw - tmpfs tmpfs ro,mode=755",
		"37 30 0:34 /sub /mnt/pids-bind rw,relatime - cgroup cgroup rw,pids",
		"38 30 0:35 / /sys/fs/cgroup/cpu\\040x rw,relatime - cgroup cgroup rw,cpu",
		"39 30 0:36 / /sys/fs/cgroup/pids shared:9 rw,relatime - cgroup cgroup rw,nsdelegate,pids",
	}, "\n")), 0o600)
	if mp, ok := firstMount(mi, v1PidsMountPoint); !ok || mp != "/sys/fs/cgroup/pids" {
		t.Errorf("v1 pids mount = %q, %v", mp, ok)
	}
	for _, c := range []struct {
		content, want string
		ok            bool
	}{
		{"9:name=systemd:/\n8:pids:/a/b\n0::/", "/a/b", true},
		{"4:cpu,pids:/x\n", "/x", true},
		{"0::/only-v2\n", "", false},
		{"8:pids:/gone (deleted)\n", "", false},
	} {
		if got, ok := v1PidsPath(c.content); got != c.want || ok != c.ok {
			t.Errorf("v1PidsPath(%q) = %q, %v", c.content, got, ok)
		}
	}
}

// TestArtifactGrowth: a collector's output past the bound stops the invocation
// (writable_limit_exceeded), also when it exits before a sample; the retained console
// files in the same directory are the output bound's and are not counted.
func TestArtifactGrowth(t *testing.T) {
	spec := sh(t, "head -c 3000000 /dev/zero > \"$OUT/perf.data\"; sleep 30")
	out := t.TempDir()
	spec.Env = append(spec.Env, "OUT="+out)
	spec.ArtifactDir, spec.MaxArtifactBytes = out, 1<<20
	res, err := Run(context.Background(), spec)
	if err != nil || res.Limit == nil || res.Limit.Kind != "writable_limit_exceeded" || *res.Limit.Observed <= 1<<20 ||
		res.Limit.Configured != 1<<20 || !strings.Contains(res.Limit.Recovery, "max_output_bytes") {
		t.Fatalf("while running: %+v %v", res, err)
	}

	spec = sh(t, "head -c 3000000 /dev/zero > \"$OUT/perf.data\"")
	out = t.TempDir()
	spec.Env = append(spec.Env, "OUT="+out)
	spec.ArtifactDir, spec.MaxArtifactBytes = out, 1<<20
	spec.SampleInterval = time.Hour
	res, err = Run(context.Background(), spec)
	if err != nil || res.Limit == nil || res.Limit.Kind != "writable_limit_exceeded" || res.ExitCode == nil {
		t.Fatalf("final check: %+v %v", res, err)
	}

	spec = sh(t, "head -c 2000000 /dev/zero; head -c 500000 /dev/zero > \"$OUT/perf.data\"")
	out = t.TempDir()
	spec.Env = append(spec.Env, "OUT="+out)
	spec.StdoutFile, spec.StderrFile = filepath.Join(out, "stdout"), filepath.Join(out, "stderr")
	spec.ArtifactDir, spec.MaxArtifactBytes = out, 1<<20
	res, err = Run(context.Background(), spec)
	if err != nil || res.Limit != nil || res.ExitCode == nil || *res.ExitCode != 0 || res.Stdout.Retained != 2000000 {
		t.Fatalf("console beside the artifact: %+v %v", res, err)
	}
}

// TestScopePidsMaxEnablesTheController: a scope without pids.max asks its parent to
// enable the pids controller for its children only where the parent offers one (a
// directory tree standing in for cgroupfs, where the kernel would then add pids.max).
func TestScopePidsMaxEnablesTheController(t *testing.T) {
	for _, offered := range []bool{true, false} {
		parent := t.TempDir()
		controllers := "cpu memory"
		if offered {
			controllers += " pids"
		}
		os.WriteFile(filepath.Join(parent, "cgroup.controllers"), []byte(controllers), 0o600)
		os.WriteFile(filepath.Join(parent, "cgroup.subtree_control"), nil, 0o600)
		dir := filepath.Join(parent, "scope")
		os.Mkdir(dir, 0o700)
		if (&scope{dir: dir}).setPidsMax(32) {
			t.Errorf("offered %v: pids.max reported written where there is none", offered)
		}
		if _, err := os.Stat(filepath.Join(dir, "pids.max")); err == nil {
			t.Errorf("offered %v: a pids.max file was created", offered)
		}
		b, _ := os.ReadFile(filepath.Join(parent, "cgroup.subtree_control"))
		if got := string(b) == "+pids"; got != offered {
			t.Errorf("offered %v: subtree_control = %q", offered, b)
		}
		os.WriteFile(filepath.Join(dir, "pids.max"), []byte("max"), 0o600)
		if !(&scope{dir: dir}).setPidsMax(32) {
			t.Errorf("offered %v: an existing pids.max was not written", offered)
		}
		if b, _ := os.ReadFile(filepath.Join(dir, "pids.max")); string(b) != "32" {
			t.Errorf("pids.max = %q", b)
		}
	}
}

// forkForever forks sleeping children until the bound refuses one, then keeps retrying
// every 10 ms without end, printing each child's pid to pids: the fork loop that holds
// its bound until something stops it.
const forkForever = `import os, time
out = open("pids", "a")
while True:
    try:
        pid = os.fork()
    except OSError:
        time.sleep(0.01)
        continue
    if pid == 0:
        time.sleep(3005)
        os._exit(0)
    out.write("%d\n" % pid); out.flush()
`

// forkOnce forks until the bound refuses one, then backs off: it waits 2 s (twice
// TaskStormWindow), ends its children and exits 0.
const forkOnce = `import os, signal, time
kids = []
while True:
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(3005)
        os._exit(0)
    kids.append(pid)
time.sleep(2)
for k in kids:
    os.kill(k, signal.SIGKILL)
    os.waitpid(k, 0)
`

// python runs script with the python3 on PATH under the broker's test settings.
func python(t *testing.T, script string) Spec {
	t.Helper()
	py := testtool.Require(t, "python3")
	spec := sh(t, "")
	spec.Path, spec.Args = py, []string{"python3", "-c", script}
	return spec
}

// runCounted runs a Python script under a task bound of 32 that counts refusals (a
// cgroup's), with a 60 s timeout as a safety net only; it skips where the bound counts
// none.
func runCounted(t *testing.T, script string) (Spec, *Result) {
	t.Helper()
	spec := python(t, script)
	spec.MaxTasks = 32
	spec.Timeout = 60 * time.Second
	res, err := Run(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if res.TaskBound != "cgroup" && res.TaskBound != "cgroup_v1" {
		t.Skipf("the task bound here (%q, mechanism %s) counts no refusals", res.TaskBound, res.Mechanism)
	}
	return spec, res
}

// TestTaskStormStopsTheTree: a workload that keeps forking at its bound for
// TaskStormWindow is stopped with task_limit_exceeded (issue 40: "a fork bomb filled a
// 1,500-task cap in 4 s"; without a workload budget nothing else would end it), and
// nothing it started survives. Where the bound counts no refusals (rlimit) the storm
// cannot be seen and the test skips.
func TestTaskStormStopsTheTree(t *testing.T) {
	spec, res := runCounted(t, forkForever)
	b, _ := os.ReadFile(filepath.Join(spec.Dir, "pids"))
	assertGone(t, pidsIn(t, b))
	if res.Limit == nil || res.Limit.Kind != "task_limit_exceeded" || res.Limit.Unit != "tasks" || res.Limit.Configured != 32 {
		t.Fatalf("limit = %+v, want task_limit_exceeded at 32 tasks; result %+v", res.Limit, res)
	}
	if res.Limit.Observed != nil && *res.Limit.Observed > 32 {
		t.Errorf("observed %v tasks under a bound of 32", *res.Limit.Observed)
	}
	if !strings.Contains(res.Limit.Recovery, MaxTasksVariable) || res.TasksRefused < 1 || res.Termination != "terminated" {
		t.Errorf("result = %+v, recovery %q", res, res.Limit.Recovery)
	}
}

// TestTaskBoundRefusalThatBacksOffRuns: a workload refused once at its bound that backs
// off and finishes is not stopped: the streak ends at the first sample without a new
// refusal.
func TestTaskBoundRefusalThatBacksOffRuns(t *testing.T) {
	_, res := runCounted(t, forkOnce)
	if res.Limit != nil || res.ExitCode == nil || *res.ExitCode != 0 || res.TasksRefused < 1 {
		t.Fatalf("result = %+v; stderr %q", res, res.Stderr.Excerpt)
	}
}
