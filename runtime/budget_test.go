package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/broker"
	"github.com/flameox/flameox/internal/failure"
	"github.com/flameox/flameox/providers/all"
	"github.com/flameox/flameox/repository"
)

// waitUntil polls cond until it holds; go test's timeout bounds the wait. Nothing here
// asserts how long anything took.
func waitUntil(cond func() bool) {
	for !cond() {
		time.Sleep(time.Millisecond)
	}
}

// gauge counts holders and remembers the most at once.
type gauge struct {
	mu        sync.Mutex
	now, most int
	total     int
	entered   chan struct{}
	gate      chan struct{}
	gateOnce  sync.Once
}

func newGauge(size int) *gauge {
	return &gauge{entered: make(chan struct{}, size), gate: make(chan struct{})}
}

// hold counts one holder in, signals entered, waits for the gate and counts it out.
func (g *gauge) hold() {
	g.mu.Lock()
	g.now++
	g.total++
	g.most = max(g.most, g.now)
	g.mu.Unlock()
	g.entered <- struct{}{}
	<-g.gate
	g.mu.Lock()
	g.now--
	g.mu.Unlock()
}

func (g *gauge) open() { g.gateOnce.Do(func() { close(g.gate) }) }

func (g *gauge) counts() (most, total int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.most, g.total
}

// TestWorkerBudgetAdmitsAtMostN: of ten requests for three slots three hold one and seven
// wait; as holders leave the others get in, never more than three at once.
func TestWorkerBudgetAdmitsAtMostN(t *testing.T) {
	b := newWorkerBudget(3, 1<<40)
	g := newGauge(10)
	t.Cleanup(g.open)
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() {
			release, err := b.acquire(context.Background(), 1<<20)
			if err != nil {
				t.Error(err)
				return
			}
			defer release()
			g.hold()
		})
	}
	for range 3 {
		<-g.entered
	}
	waitUntil(func() bool { return b.waiting.Load() == 7 })
	select {
	case <-g.entered:
		t.Fatal("a fourth request got a slot while three held one")
	default:
	}
	if n := b.running.Load(); n != 3 {
		t.Fatalf("%d running, want 3", n)
	}
	g.open()
	wg.Wait()
	if most, total := g.counts(); most != 3 || total != 10 {
		t.Fatalf("at most %d at once over %d, want 3 over 10", most, total)
	}
	if b.running.Load() != 0 || b.waiting.Load() != 0 {
		t.Fatalf("%d running and %d waiting at the end", b.running.Load(), b.waiting.Load())
	}
}

// TestWorkerBudgetMemory: bounds share the memory budget (three 1 GiB bounds fit in
// 3 GiB, a fourth waits although slots are free); a bound larger than the budget takes
// all of it and runs alone.
func TestWorkerBudgetMemory(t *testing.T) {
	b := newWorkerBudget(8, 3<<30)
	var held []func()
	for range 3 {
		release, err := b.acquire(context.Background(), 1<<30)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, release)
	}
	got := make(chan func(), 1)
	go func() {
		release, err := b.acquire(context.Background(), 1<<30)
		if err != nil {
			t.Error(err)
		}
		got <- release
	}()
	waitUntil(func() bool { return b.waiting.Load() == 1 })
	select {
	case <-got:
		t.Fatal("a fourth 1 GiB bound was admitted into a 3 GiB budget")
	default:
	}
	held[0]()
	held[0]() // a second release gives nothing back twice
	(<-got)()
	for _, r := range held[1:] {
		r()
	}
	// Larger than the budget: admitted alone, as the whole budget.
	release, err := b.acquire(context.Background(), 16<<30)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := b.acquire(ctx, 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("a request behind an oversized bound: %v, want context.Canceled", err)
	}
	release()
	if release, err := b.acquire(context.Background(), 3<<30); err != nil {
		t.Fatal(err)
	} else {
		release()
	}
}

// TestWorkerBudgetCancelledWaiterLeavesTheQueue: a cancelled waiter, and one whose
// deadline passes, leave the queue without taking what they waited for; the waiter behind
// them gets the slot when it is released.
func TestWorkerBudgetCancelledWaiterLeavesTheQueue(t *testing.T) {
	b := newWorkerBudget(1, 1<<30)
	holder, err := b.acquire(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancelled := make(chan error, 1)
	go func() {
		_, err := b.acquire(ctx, 1)
		cancelled <- err
	}()
	waitUntil(func() bool { return b.waiting.Load() == 1 })
	behind := make(chan func(), 1)
	go func() {
		release, err := b.acquire(context.Background(), 1)
		if err != nil {
			t.Error(err)
		}
		behind <- release
	}()
	waitUntil(func() bool { return b.waiting.Load() == 2 })
	cancel()
	if err := <-cancelled; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled waiter: %v", err)
	}
	deadline, stop := context.WithTimeout(context.Background(), time.Millisecond)
	defer stop()
	if _, err := b.acquire(deadline, 1); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("waiter past its deadline: %v", err)
	}
	if n := b.waiting.Load(); n != 1 {
		t.Fatalf("%d waiting after the cancellations, want 1", n)
	}
	holder()
	(<-behind)()
	if b.running.Load() != 0 || b.waiting.Load() != 0 {
		t.Fatalf("%d running and %d waiting at the end", b.running.Load(), b.waiting.Load())
	}
}

// fakeWorkerRuntime is a runtime whose worker launches are fake: each holds g until its
// gate opens and then fails to start. Its budget is b.
func fakeWorkerRuntime(t *testing.T, b *workerBudget, g *gauge) *Runtime {
	t.Helper()
	rt, err := New(all.Registry(), nil, WithAnalysisWorker(filepath.Join(t.TempDir(), "no-worker")), withWorkerBudget(b),
		WithStore(repository.Location{Dir: filepath.Join(t.TempDir(), "store"), Source: repository.SourceExplicit}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rt.Close)
	rt.launch = func(context.Context, broker.Spec) (*broker.Result, error) {
		g.hold()
		return nil, errors.New("fake launcher")
	}
	return rt
}

// workerInputArgs are the arguments of an analysis of a text file above the in-process size: its analysis needs a worker.
func workerInputArgs(t *testing.T, limits map[string]any) []byte {
	t.Helper()
	p := filepath.Join(t.TempDir(), "big.txt")
	if err := os.WriteFile(p, []byte(strings.Repeat("a line of text\n", inProcessBytes/15+1)), 0o600); err != nil {
		t.Fatal(err)
	}
	args := map[string]any{"sources": []any{map[string]any{"kind": "path", "path": p}}}
	if limits != nil {
		args["limits"] = limits
	}
	raw, _ := json.Marshal(args)
	return raw
}

// TestWorkerLaunchesAreBounded: six concurrent analyses that each need a worker, under a
// budget of two: two workers run at once, never more, and all six run in turn.
func TestWorkerLaunchesAreBounded(t *testing.T) {
	b, g := newWorkerBudget(2, 1<<40), newGauge(6)
	t.Cleanup(g.open)
	rt := fakeWorkerRuntime(t, b, g)
	raw := workerInputArgs(t, nil)
	var wg sync.WaitGroup
	for range 6 {
		wg.Go(func() {
			if _, f := rt.Analyze(context.Background(), "preview_artifact", raw); f == nil || f.Code != gen.FailureCodeInternalFailure {
				t.Errorf("failure = %v, want the fake launcher's INTERNAL_FAILURE", f)
			}
		})
	}
	<-g.entered
	<-g.entered
	waitUntil(func() bool { return b.waiting.Load() == 4 })
	select {
	case <-g.entered:
		t.Fatal("a third worker started while two ran")
	default:
	}
	g.open()
	wg.Wait()
	if most, total := g.counts(); most != 2 || total != 6 {
		t.Fatalf("at most %d workers at once over %d launches, want 2 over 6", most, total)
	}
}

// TestQueuedAnalysisCancellation: an analysis waiting for a worker slot answers CANCELLED
// when its request is cancelled, and LIMIT_EXCEEDED at limits.timeout_seconds when its
// deadline passes first; neither starts a worker or keeps a slot.
func TestQueuedAnalysisCancellation(t *testing.T) {
	b, g := newWorkerBudget(1, 1<<40), newGauge(3)
	t.Cleanup(g.open)
	rt := fakeWorkerRuntime(t, b, g)
	raw := workerInputArgs(t, nil)
	first := make(chan *failure.Failure, 1)
	go func() {
		_, f := rt.Analyze(context.Background(), "preview_artifact", raw)
		first <- f
	}()
	<-g.entered

	ctx, cancel := context.WithCancel(context.Background())
	cancelled := make(chan *failure.Failure, 1)
	go func() {
		_, f := rt.Analyze(ctx, "preview_artifact", raw)
		cancelled <- f
	}()
	waitUntil(func() bool { return b.waiting.Load() == 1 })
	cancel()
	if f := <-cancelled; f == nil || f.Code != gen.FailureCodeCancelled {
		t.Fatalf("cancelled while queued: %v", f)
	}

	_, f := rt.Analyze(context.Background(), "preview_artifact", workerInputArgs(t, map[string]any{"timeout_seconds": 0.05}))
	if f == nil || f.Code != gen.FailureCodeLimitExceeded || f.Details["reason"] != "timeout" {
		t.Fatalf("deadline while queued: %v", f)
	}

	g.open()
	<-first
	if _, f := rt.Analyze(context.Background(), "preview_artifact", raw); f == nil || f.Code != gen.FailureCodeInternalFailure {
		t.Fatalf("after the queue emptied: %v", f)
	}
	if _, total := g.counts(); total != 2 {
		t.Fatalf("%d workers started, want 2 (the queued requests started none)", total)
	}
	if b.running.Load() != 0 || b.waiting.Load() != 0 {
		t.Fatalf("%d running and %d waiting at the end", b.running.Load(), b.waiting.Load())
	}
}

// TestWorkerBudgetFromEnvironment: half the CPUs (at least two) and half the memory by
// default, unbounded memory when it cannot be read; FLAMEOX_MAX_WORKERS and
// FLAMEOX_WORKER_MEMORY_BYTES override them, and a value that is not a positive integer
// is INVALID_INPUT naming the variable.
func TestWorkerBudgetFromEnvironment(t *testing.T) {
	env := func(kv ...string) func(string) string {
		return func(name string) string {
			for i := 0; i < len(kv); i += 2 {
				if kv[i] == name {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	for _, c := range []struct {
		name           string
		getenv         func(string) string
		cpus           int
		memory         int64
		workers, bytes int64
	}{
		{"one CPU", env(), 1, 8 << 30, 2, 4 << 30},
		{"sixteen CPUs", env(), 16, 8 << 30, 8, 4 << 30},
		{"memory unknown", env(), 4, 0, 2, 1<<63 - 1},
		{"overridden", env(MaxWorkersVariable, "5", WorkerMemoryVariable, " 1073741824 "), 16, 8 << 30, 5, 1 << 30},
	} {
		reads := 0
		b, err := budgetFromEnvironment(c.getenv, c.cpus, func() int64 { reads++; return c.memory })
		if err != nil || reads != 0 {
			t.Fatalf("%s: %v, the memory read %d times before the budget's first use", c.name, err, reads)
		}
		if _, bytes := b.memory(); b.workers != c.workers || bytes != c.bytes {
			t.Errorf("%s: %d workers, %d bytes; want %d workers, %d bytes", c.name, b.workers, bytes, c.workers, c.bytes)
		}
		if c.getenv(WorkerMemoryVariable) != "" && reads != 0 {
			t.Errorf("%s: the memory was read though %s sets the bytes", c.name, WorkerMemoryVariable)
		}
	}
	for _, v := range []string{"0", "-1", "two", "1.5"} {
		for _, name := range []string{MaxWorkersVariable, WorkerMemoryVariable} {
			_, err := budgetFromEnvironment(env(name, v), 4, func() int64 { return 8 << 30 })
			var f *failure.Failure
			if !errors.As(err, &f) || f.Code != gen.FailureCodeInvalidInput || f.Details["configuration_variable"] != name {
				t.Errorf("%s=%s: %v, want INVALID_INPUT", name, v, err)
			}
		}
	}
}

// TestMachineMemory: MemTotal, and the tightest cgroup limit along the process's cgroup
// and its ancestors (v2 memory.max, v1 memory.limit_in_bytes; "max" and v1's 2^63-1
// page-rounded are no limit).
func TestMachineMemory(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, body string) string {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if n := memTotal(write("meminfo", "MemFree: 1 kB\nMemTotal:       24683548 kB\n")); n != 24683548<<10 {
		t.Errorf("MemTotal = %d", n)
	}
	if n := memTotal(filepath.Join(dir, "absent")); n != 0 {
		t.Errorf("absent meminfo = %d", n)
	}
	v2 := filepath.Join(dir, "v2")
	write("v2/a/memory.max", "max\n")
	write("v2/a/b/memory.max", "1073741824\n")
	self := write("self-v2", "0::/a/b\n")
	if n := cgroupMemoryLimit(self, v2); n != 1<<30 {
		t.Errorf("v2 leaf limit = %d", n)
	}
	write("v2/a/memory.max", "536870912\n")
	if n := cgroupMemoryLimit(self, v2); n != 512<<20 {
		t.Errorf("v2 parent limit = %d", n)
	}
	v1 := filepath.Join(dir, "v1")
	write("v1/memory/memory.limit_in_bytes", "9223372036854771712\n")
	self1 := write("self-v1", "9:name=systemd:/\n4:cpu,memory:/process_api/x\n0::/\n")
	if n := cgroupMemoryLimit(self1, v1); n != 0 {
		t.Errorf("v1 unlimited = %d", n)
	}
	write("v1/memory/memory.limit_in_bytes", "6442450944\n")
	if n := cgroupMemoryLimit(self1, v1); n != 6<<30 {
		t.Errorf("v1 container limit = %d", n)
	}
}
