package broker

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// prestartedFor starts a helper ahead with the task bound max, or skips where none can
// start here; it is abandoned when the test ends.
func prestartedFor(t *testing.T, max int64) (*Prestarted, int) {
	t.Helper()
	impl := prestart(max)
	if impl == nil {
		t.Skip("no containment helper can be started here")
	}
	p := &Prestarted{impl: impl}
	t.Cleanup(p.Abandon)
	return p, impl.h.cmd.Process.Pid
}

// TestPrestartedHelperRunsTheInvocation: a helper started ahead runs the invocation Run
// hands it as a helper started by Run would: its argv, environment, directory and
// standard streams, its exit status, the same containment, and the helper is the
// workload's parent (it was not started again).
func TestPrestartedHelperRunsTheInvocation(t *testing.T) {
	plain := sh(t, "exit 0")
	base, err := Run(context.Background(), plain)
	if err != nil {
		t.Fatal(err)
	}
	p, helper := prestartedFor(t, taskBound(Spec{}))
	spec := sh(t, `echo "parent $PPID"; echo "dir $(pwd -P)"; echo "var $FLAMEOX_TEST_VAR"; cat; echo oops >&2; exit 3`)
	spec.Env = append(spec.Env, "FLAMEOX_TEST_VAR=a value")
	in := filepath.Join(t.TempDir(), "stdin")
	os.WriteFile(in, []byte("from stdin\n"), 0o600)
	f, err := os.Open(in)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	spec.Stdin, spec.Prestarted = f, p
	res, err := Run(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	dir, _ := filepath.EvalSymlinks(spec.Dir)
	want := "parent " + strconv.Itoa(helper) + "\ndir " + dir + "\nvar a value\nfrom stdin\n"
	if got := string(res.Stdout.Excerpt); got != want {
		t.Errorf("stdout = %q, want %q", got, want)
	}
	if string(res.Stderr.Excerpt) != "oops\n" || res.ExitCode == nil || *res.ExitCode != 3 || res.Termination != "exited" {
		t.Errorf("result = %+v; stderr %q", res, res.Stderr.Excerpt)
	}
	if res.Mechanism != base.Mechanism || res.TaskBound != base.TaskBound || res.MaxTasks != base.MaxTasks {
		t.Errorf("containment %s, task bound %s (%d); a helper Run starts gives %s, %s (%d)",
			res.Mechanism, res.TaskBound, res.MaxTasks, base.Mechanism, base.TaskBound, base.MaxTasks)
	}
	if p.take() != nil {
		t.Error("Run did not take the helper")
	}
	if running(helper) {
		t.Errorf("the helper %d outlives Run", helper)
	}
}

// TestPrestartedHelperWithAnotherTaskBound: an invocation with another task bound runs
// under the helper started ahead, its cgroup's pids.max made that bound first (where the
// bound is a cgroup's).
func TestPrestartedHelperWithAnotherTaskBound(t *testing.T) {
	p, helper := prestartedFor(t, 32)
	kind, dir := p.impl.tl.kind, p.impl.tl.dir
	if kind != "cgroup" && kind != "cgroup_v1" {
		t.Skipf("the task bound here is %q, not a cgroup's", kind)
	}
	spec := sh(t, `echo $PPID; cat `+filepath.Join(dir, "pids.max"))
	spec.MaxTasks, spec.Prestarted = 64, p
	res, err := Run(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(res.Stdout.Excerpt); got != strconv.Itoa(helper)+"\n64\n" || res.MaxTasks != 64 || res.TaskBound != kind {
		t.Errorf("stdout %q, task bound %s %d; want the helper %d as parent under pids.max 64", got, res.TaskBound, res.MaxTasks, helper)
	}
}

// TestPrestartedHelperThatDoesNotFit: an invocation without a task bound is started as
// without the helper started ahead, which is ended; so is a helper abandoned unused, and
// neither leaves its scope or its task group behind.
func TestPrestartedHelperThatDoesNotFit(t *testing.T) {
	p, helper := prestartedFor(t, 32)
	dirs := []string{}
	if sc := p.impl.sc; sc != nil {
		dirs = append(dirs, sc.dir)
	}
	if tl := p.impl.tl; tl != nil && tl.dir != "" {
		dirs = append(dirs, tl.dir)
	}
	spec := sh(t, `echo $PPID`)
	spec.MaxTasks, spec.Prestarted = -1, p
	res, err := Run(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(res.Stdout.Excerpt)); got == strconv.Itoa(helper) || res.ExitCode == nil || *res.ExitCode != 0 {
		t.Errorf("the workload (parent %s) without a task bound ran under the helper started with one; result %+v", got, res)
	}
	if running(helper) {
		t.Errorf("the helper %d that did not fit outlives Run", helper)
	}
	for _, d := range dirs {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is left: %v", d, err)
		}
	}

	q, unused := prestartedFor(t, 32)
	q.Abandon()
	q.Abandon()
	if running(unused) {
		t.Errorf("the abandoned helper %d still runs", unused)
	}
	if err := syscall.Kill(unused, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("the abandoned helper %d was not reaped: %v", unused, err)
	}
}

// TestHelperClonesIntoTheScope: the helper, started ahead or by Run, stays outside the
// scope and clones the workload into it, a member from its start (its own
// /proc/self/cgroup names a scope of this process, its parent's does not).
func TestHelperClonesIntoTheScope(t *testing.T) {
	if sc := newScope(); sc == nil {
		t.Skip("no cgroup v2 scope can be created here")
	} else {
		sc.remove()
	}
	for _, ahead := range []bool{false, true} {
		t.Run(map[bool]string{false: "started by Run", true: "started ahead"}[ahead], func(t *testing.T) {
			spec := sh(t, `grep '^0::' /proc/self/cgroup; grep '^0::' /proc/$PPID/cgroup`)
			scopeOf := func(line string) bool { return strings.HasPrefix(filepath.Base(line), ownerPrefix()) }
			if ahead {
				p, _ := prestartedFor(t, taskBound(Spec{}))
				want := "/" + filepath.Base(p.impl.sc.dir) // this helper's own scope
				scopeOf = func(line string) bool { return strings.HasSuffix(line, want) }
				spec.Prestarted = p
			}
			res, err := Run(context.Background(), spec)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(string(res.Stdout.Excerpt)), "\n")
			if len(lines) != 2 || !scopeOf(lines[0]) || scopeOf(lines[1]) || res.Mechanism != "cgroup" {
				t.Errorf("the workload's and its parent's cgroups are %q under %s containment; want the workload alone in a scope of this process", lines, res.Mechanism)
			}
		})
	}
}
