package runtime

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/broker"
	"github.com/flameox/flameox/internal/testtool"
	"github.com/flameox/flameox/internal/workerproc"
	"github.com/flameox/flameox/providers/all"
	"github.com/flameox/flameox/repository"
)

// launchRecord is what a recording launcher saw of one worker.
type launchRecord struct {
	requestAtLaunch bool // request.json existed when the worker was launched
	spare           bool // launched unarmed, to wait for a request (Spec.Arm)
	warm            bool // told to warm its heap (workerproc.WarmVariable)
	armed           *broker.Bounds
	ended           bool
	replyBytes      int64 // the reply's bytes the broker wrote to reply.json
	exitCode        *int
}

// recordingLaunch makes rt's workers real (this test binary, through the broker) and
// records each launch, and the bounds a spare was armed with.
func recordingLaunch(rt *Runtime) func() []launchRecord {
	opt, launches := withRecordingLaunch()
	opt(rt)
	return launches
}

// withRecordingLaunch is recordingLaunch as an option, for the workers New starts.
func withRecordingLaunch() (Option, func() []launchRecord) {
	var mu sync.Mutex
	var recs []*launchRecord
	launch := func(ctx context.Context, spec broker.Spec) (*broker.Result, error) {
		var req string
		warm := false
		for _, kv := range spec.Env {
			if v, ok := strings.CutPrefix(kv, WorkerVariable+"="); ok {
				req = v
			}
			warm = warm || strings.HasPrefix(kv, workerproc.WarmVariable+"=")
		}
		_, err := os.Stat(req)
		rec := &launchRecord{requestAtLaunch: err == nil, spare: spec.Arm != nil, warm: warm}
		mu.Lock()
		recs = append(recs, rec)
		mu.Unlock()
		if spec.Arm != nil {
			// The broker arms through this channel, so the test sees the bounds.
			in, out := spec.Arm, make(chan broker.Bounds, 1)
			spec.Arm = out
			go func() {
				select {
				case b := <-in:
					mu.Lock()
					rec.armed = &b
					mu.Unlock()
					out <- b
				case <-ctx.Done():
				}
			}()
		}
		res, rerr := broker.Run(ctx, spec)
		mu.Lock()
		defer mu.Unlock()
		rec.ended = true
		if res != nil {
			// The reply file may be gone already: a server removes it once it has read it.
			rec.replyBytes = res.Stdout.Retained
			rec.exitCode = res.ExitCode
		}
		return res, rerr
	}
	return func(rt *Runtime) { rt.launch = launch }, func() []launchRecord {
		mu.Lock()
		defer mu.Unlock()
		out := make([]launchRecord, len(recs))
		for i, r := range recs {
			out[i] = *r
		}
		return out
	}
}

// waitLaunches returns launches' records once there are at least n (a spare's launch runs
// on a goroutine of its own), or after 10 s, whatever there are then.
func waitLaunches(launches func() []launchRecord, n int) []launchRecord {
	recs := launches()
	for deadline := time.Now().Add(10 * time.Second); len(recs) < n && time.Now().Before(deadline); recs = launches() {
		time.Sleep(10 * time.Millisecond)
	}
	return recs
}

// bigText writes a text file above the in-process size, whose size alone sends its
// analysis to a worker.
func bigText(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "big.txt")
	if err := os.WriteFile(p, []byte(strings.Repeat("a line of text\n", inProcessBytes/15+1)), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestStartedWorkerAnswers: a worker started for an input its size sends to a worker
// (before the hashing pass: TestStartedWorkerAbandoned shows when) reads the request
// written after it and answers exactly as the server process would.
func TestStartedWorkerAnswers(t *testing.T) {
	if testing.Short() {
		t.Skip("starts analysis workers")
	}
	local, worker := newRuntime(t), workerRuntime(t)
	launches := recordingLaunch(worker)
	args := map[string]any{"sources": []any{map[string]any{"kind": "path", "path": bigText(t)}}, "page_size": 2}
	want, _, wf := analyzeJSON(t, local, "preview_artifact", args)
	got, _, gf := analyzeJSON(t, worker, "preview_artifact", args)
	if wf != nil || gf != nil {
		t.Fatalf("in process %v, worker %v", wf, gf)
	}
	if string(got) != string(want) {
		t.Errorf("worker result differs:\n got %s\nwant %s", got, want)
	}
	recs := launches()
	if len(recs) != 1 || recs[0].replyBytes == 0 || recs[0].exitCode == nil || *recs[0].exitCode != 0 {
		t.Errorf("launches = %+v, want one that replied and exited 0", recs)
	}
	noWorkerScratchLeft(t)
}

// TestStartedWorkerAbandoned: the worker of an input its size sends to a worker starts
// before the hashing pass, so a source without its expected SHA-256, which the hashing
// pass refuses, has launched one; it ends without an analysis or a reply (exit 0, the
// input's end without the ready byte), the caller gets the hashing pass's typed failure,
// and nothing is left behind.
func TestStartedWorkerAbandoned(t *testing.T) {
	if testing.Short() {
		t.Skip("starts analysis workers")
	}
	rt := workerRuntime(t)
	launches := recordingLaunch(rt)
	wrong := strings.Repeat("0", 64)
	args := map[string]any{"sources": []any{map[string]any{"kind": "path", "path": bigText(t), "expected_sha256": wrong}}}
	_, _, f := analyzeJSON(t, rt, "preview_artifact", args)
	if f == nil || f.Code != gen.FailureCodeMissingOrChangedInput || f.Details["expected_sha256"] != wrong {
		t.Fatalf("failure = %+v, want MISSING_OR_CHANGED_INPUT for the expected digest", f)
	}
	recs := launches()
	if len(recs) != 1 || recs[0].requestAtLaunch || recs[0].replyBytes != 0 {
		t.Errorf("launches = %+v, want one worker started before its request and ended without a reply", recs)
	} else if c := recs[0].exitCode; c != nil && *c != 0 {
		t.Errorf("abandoned worker exit code %d, want 0 (or killed)", *c)
	}
	noWorkerScratchLeft(t)
	// The runtime analyzes again.
	delete(args["sources"].([]any)[0].(map[string]any), "expected_sha256")
	if _, _, f := analyzeJSON(t, rt, "preview_artifact", args); f != nil {
		t.Fatalf("after the abandoned worker: %v", f)
	}
}

// spareRuntime is workerRuntime keeping a spare worker (as mcp serve does); the test
// ends by closing it.
func spareRuntime(t *testing.T) *Runtime {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	rt, err := New(all.Registry(), nil, WithAnalysisWorker(exe), WithSpareWorker(),
		WithStore(repository.Location{Dir: filepath.Join(t.TempDir(), "store"), Source: repository.SourceExplicit}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rt.Close)
	return rt
}

// TestSpareWorker: a runtime that keeps a spare (mcp serve) starts one once an analysis
// has used a worker; the next analysis takes it, arms it with its own bounds (time,
// memory, disk) and gets the answer the server process gives; Close stops the spare
// without an analysis and leaves nothing behind. Spares warm their heap; a worker started
// for a request does not.
func TestSpareWorker(t *testing.T) {
	if testing.Short() {
		t.Skip("starts analysis workers")
	}
	rt := spareRuntime(t)
	launches := recordingLaunch(rt)
	local := newRuntime(t)
	src := map[string]any{"kind": "path", "path": bigText(t)}
	for call, limits := range []map[string]any{nil, {"max_memory_bytes": 512 << 20, "timeout_seconds": 30}} {
		args := map[string]any{"sources": []any{src}, "page_size": 2}
		if limits != nil {
			args["limits"] = limits
		}
		want, _, wf := analyzeJSON(t, local, "preview_artifact", args)
		got, _, gf := analyzeJSON(t, rt, "preview_artifact", args)
		if wf != nil || gf != nil || string(got) != string(want) {
			t.Fatalf("call %d: worker %s (%v), in process %s (%v)", call, got, gf, want, wf)
		}
		if call == 0 {
			// The spare's launch runs on a goroutine of its own, as it would while an
			// agent reads the answer: the next call comes once it has been launched.
			waitLaunches(launches, 2)
		}
	}
	// The answers came before their workers ended (TestWorkerAnsweredBeforeItEnds); the
	// next spare's launch runs on a goroutine of its own: wait for both.
	rt.ending.Wait()
	recs := waitLaunches(launches, 3)
	if len(recs) != 3 {
		t.Fatalf("launches = %+v, want the first call's worker, the spare the second call took, and the next spare", recs)
	}
	if first := recs[0]; first.spare || first.warm || first.replyBytes == 0 {
		t.Errorf("first call's worker = %+v, want one started for it that replied", first)
	}
	taken := recs[1]
	if !taken.spare || !taken.warm || taken.requestAtLaunch || taken.armed == nil || taken.replyBytes == 0 {
		t.Fatalf("second call's worker = %+v, want the spare, warm, started before the request, armed, with a reply", taken)
	}
	if b := *taken.armed; b.MaxRSSBytes != 512<<20 || b.Timeout <= 0 || b.Timeout > 30*time.Second || b.MaxWritableGrowth != minWorkerDiskBytes {
		t.Errorf("the spare was armed with %+v, want the request's 512 MiB, at most 30 s and the disk budget %d", b, int64(minWorkerDiskBytes))
	}
	if next := recs[2]; !next.spare || !next.warm || next.armed != nil || next.ended {
		t.Errorf("next spare = %+v, want one waiting unarmed", next)
	}
	rt.Close()
	recs = launches()
	if next := recs[2]; !next.ended || next.armed != nil || next.replyBytes != 0 {
		t.Errorf("after Close the spare = %+v, want it ended without a request or a reply", next)
	}
	noWorkerScratchLeft(t)
}

// TestSpareNotTakenUnderSmallMemoryBound: a request whose max_memory_bytes is below
// spareMinMemoryBytes starts a worker of its own (the spare's warm heap would count
// against its bound) and leaves the spare waiting.
func TestSpareNotTakenUnderSmallMemoryBound(t *testing.T) {
	if testing.Short() {
		t.Skip("starts analysis workers")
	}
	rt := spareRuntime(t)
	launches := recordingLaunch(rt)
	src := map[string]any{"kind": "path", "path": bigText(t)}
	if _, _, f := analyzeJSON(t, rt, "preview_artifact", map[string]any{"sources": []any{src}, "page_size": 2}); f != nil {
		t.Fatal(f)
	}
	recs := waitLaunches(launches, 2)
	if len(recs) != 2 || !recs[1].spare {
		t.Fatalf("launches = %+v, want the first call's worker and a spare", recs)
	}
	small := map[string]any{"sources": []any{src}, "page_size": 2, "limits": map[string]any{"max_memory_bytes": 96 << 20}}
	if _, _, f := analyzeJSON(t, rt, "preview_artifact", small); f != nil {
		t.Fatal(f)
	}
	rt.ending.Wait()
	recs = launches()
	if len(recs) != 3 {
		t.Fatalf("launches = %+v, want a third, the small request's own worker", recs)
	}
	if own := recs[2]; own.spare || own.warm || own.replyBytes == 0 {
		t.Errorf("the small request's worker = %+v, want one started for it, not warm, that replied", own)
	}
	if spare := recs[1]; spare.armed != nil || spare.ended {
		t.Errorf("the spare = %+v, want it still waiting unarmed", spare)
	}
	rt.Close()
	noWorkerScratchLeft(t)
}

// TestWorkerAnsweredBeforeItEnds: in a server (a runtime that keeps a spare) the answer
// of a worker that has closed its output with a whole reply comes while the worker has
// not ended (here the test holds its end back), byte for byte the in-process answer; its
// scratch is removed once it has ended, and Close waits for that.
func TestWorkerAnsweredBeforeItEnds(t *testing.T) {
	if testing.Short() {
		t.Skip("starts analysis workers")
	}
	rt := spareRuntime(t)
	hold := make(chan struct{})
	var mu sync.Mutex
	var dirs []string
	rt.launch = func(ctx context.Context, spec broker.Spec) (*broker.Result, error) {
		mu.Lock()
		dirs = append(dirs, filepath.Dir(spec.Dir))
		mu.Unlock()
		res, err := broker.Run(ctx, spec)
		if spec.Arm == nil { // the worker started for the call, not the next spare
			select { // without the early answer, the call fails below after 30 s, not hangs
			case <-hold:
			case <-time.After(30 * time.Second):
			}
		}
		return res, err
	}
	args := map[string]any{"sources": []any{map[string]any{"kind": "path", "path": bigText(t)}}, "page_size": 2}
	want, _, wf := analyzeJSON(t, newRuntime(t), "preview_artifact", args)
	got, _, gf := analyzeJSON(t, rt, "preview_artifact", args)
	if wf != nil || gf != nil || string(got) != string(want) {
		t.Fatalf("worker %s (%v), in process %s (%v)", got, gf, want, wf)
	}
	mu.Lock()
	first := dirs[0]
	mu.Unlock()
	if _, err := os.Stat(first); err != nil {
		t.Fatalf("the worker's scratch is gone before the worker ended: %v", err)
	}
	close(hold)
	rt.Close()
	if _, err := os.Stat(first); !os.IsNotExist(err) {
		t.Errorf("after Close the worker's scratch is still there: %v", err)
	}
	noWorkerScratchLeft(t)
}

// BenchmarkWorkerHandOver: rank_cpu_hotspots on real cProfile output of 5,000 functions
// (about 1 MB, so it runs in a worker) in process, in a worker started for the call, and
// in a runtime that keeps a spare (mcp serve), whose next worker starts while the caller
// is away: the timer stops for 300 ms between calls, as an agent's calls are apart. The
// difference to in-process is what the worker costs the call (issue 36: under 10 ms).
func BenchmarkWorkerHandOver(b *testing.B) {
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	raw := []byte(`{"sources":[{"kind":"path","path":"` + testtool.CProfileFile(b, 5000) + `"}],"page_size":100}`)
	for _, c := range []struct {
		name string
		opts []Option
	}{
		{"inprocess", nil},
		{"worker", []Option{WithAnalysisWorker(exe)}},
		{"spare", []Option{WithAnalysisWorker(exe), WithSpareWorker()}},
	} {
		b.Run(c.name, func(b *testing.B) {
			rt, err := New(all.Registry(), nil, append(c.opts,
				WithStore(repository.Location{Dir: filepath.Join(b.TempDir(), "store"), Source: repository.SourceExplicit}))...)
			if err != nil {
				b.Fatal(err)
			}
			defer rt.Close()
			call := func() {
				if _, f := rt.Analyze(context.Background(), "rank_cpu_hotspots", raw); f != nil {
					b.Fatal(f)
				}
			}
			call() // the first call starts the first spare
			for range b.N {
				b.StopTimer()
				time.Sleep(300 * time.Millisecond)
				b.StartTimer()
				call()
			}
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/call")
		})
	}
	testtool.ReportLoad(b)
}

// TestSpareWorkerBounds: a spare holds no bound until a request arms it; armed, it is
// stopped by that request's timeout and by its cancellation, as a worker started for the
// request is. Every worker here hangs (FLAMEOX_RUNTIME_HELPER=worker-hang, read when the
// process starts), the spares included.
func TestSpareWorkerBounds(t *testing.T) {
	if testing.Short() {
		t.Skip("starts analysis workers")
	}
	t.Setenv("FLAMEOX_RUNTIME_HELPER", "worker-hang")
	rt := spareRuntime(t)
	launches := recordingLaunch(rt)
	raw := func(limits string) []byte {
		return []byte(`{"sources":[{"kind":"path","path":"` + bigText(t) + `"}],"limits":` + limits + `}`)
	}
	// The first worker is started for the call; its timeout stops it and a spare starts.
	// The second call takes the spare, which its own timeout stops.
	for call := range 2 {
		_, f := rt.Analyze(context.Background(), "preview_artifact", raw(`{"timeout_seconds":1}`))
		if f == nil || f.Code != gen.FailureCodeLimitExceeded || f.Details["reason"] != "timeout" {
			t.Fatalf("call %d: failure = %+v, want LIMIT_EXCEEDED (timeout)", call, f)
		}
	}
	// The third takes the next spare and is cancelled.
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	if _, f := rt.Analyze(ctx, "preview_artifact", raw(`{"timeout_seconds":60}`)); f == nil || f.Code != gen.FailureCodeCancelled {
		t.Fatalf("cancelled call: failure = %+v, want CANCELLED", f)
	}
	recs := launches()
	if len(recs) < 3 || recs[0].spare || !recs[1].spare || !recs[2].spare {
		t.Fatalf("launches = %+v, want a worker for the first call, then the spares", recs)
	}
	for i, want := range []time.Duration{time.Second, time.Minute} {
		if b := recs[i+1].armed; b == nil || b.Timeout <= 0 || b.Timeout > want || !recs[i+1].ended {
			t.Errorf("spare %d: armed %+v, ended %v; want a timeout of at most %v and the worker stopped", i+1, b, recs[i+1].ended, want)
		}
	}
}

// TestWorkerAhead: a runtime that starts a worker ahead (the CLI's analyze command, when
// workerproc.Likely says so) launches it as it starts, unarmed and without warming a heap; the
// analysis takes it (under a memory bound below spareMinMemoryBytes too: it has no warm
// heap to count), arms it with the request's bounds and gets the answer the server
// process gives, and no other worker starts; one that no analysis took is stopped by
// Close, with nothing left behind.
func TestWorkerAhead(t *testing.T) {
	if testing.Short() {
		t.Skip("starts analysis workers")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ahead := func() (*Runtime, func() []launchRecord) {
		rec, launches := withRecordingLaunch()
		rt, err := New(all.Registry(), nil, WithAnalysisWorker(exe), rec, WithWorkerAhead(),
			WithStore(repository.Location{Dir: filepath.Join(t.TempDir(), "store"), Source: repository.SourceExplicit}))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(rt.Close)
		return rt, launches
	}
	rt, launches := ahead()
	if recs := waitLaunches(launches, 1); len(recs) != 1 || !recs[0].spare || recs[0].warm {
		t.Fatalf("launches after New = %+v, want one worker, unarmed and cold", recs)
	}
	args := map[string]any{"sources": []any{map[string]any{"kind": "path", "path": bigText(t)}}, "page_size": 2,
		"limits": map[string]any{"max_memory_bytes": spareMinMemoryBytes / 2}}
	want, _, wf := analyzeJSON(t, newRuntime(t), "preview_artifact", args)
	got, _, gf := analyzeJSON(t, rt, "preview_artifact", args)
	if wf != nil || gf != nil || string(got) != string(want) {
		t.Fatalf("worker %s (%v), in process %s (%v)", got, gf, want, wf)
	}
	rt.Close()
	recs := launches()
	if len(recs) != 1 || recs[0].armed == nil || recs[0].armed.MaxRSSBytes != spareMinMemoryBytes/2 || recs[0].replyBytes == 0 {
		t.Fatalf("launches = %+v, want the worker started ahead, armed with the request's memory bound, with a reply", recs)
	}

	rt, launches = ahead()
	waitLaunches(launches, 1)
	rt.Close()
	if recs := launches(); len(recs) != 1 || !recs[0].ended || recs[0].armed != nil || recs[0].replyBytes != 0 {
		t.Errorf("after Close the unused worker = %+v, want it ended without a request or a reply", recs)
	}
	noWorkerScratchLeft(t)
}

// TestWorkerAheadFromInitialization: a CLI analysis whose worker package ahead started
// while the process initialized (ahead.TakeWorker) runs in that worker: the runtime that
// starts a worker ahead takes it instead of launching one, arms it and gets the answer the
// server process gives. A worker of another executable is stopped unused, and the runtime
// starts its own.
func TestWorkerAheadFromInitialization(t *testing.T) {
	if testing.Short() {
		t.Skip("starts analysis workers")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cat, err := exec.LookPath("cat")
	if err != nil {
		t.Skip("no cat to stand in for another executable")
	}
	for _, c := range []struct {
		name            string
		aheadExe        string
		aheadUsed, ours bool
	}{
		{"this executable", exe, true, false},
		{"another executable", cat, false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec, aheadLaunches := withRecordingLaunch()
			var probe Runtime
			rec(&probe)
			p, err := workerproc.Start(context.Background(), workerproc.Config{Exe: c.aheadExe, Launch: probe.launch})
			if err != nil {
				t.Fatal(err)
			}
			ch := make(chan *workerproc.Process, 1)
			ch <- p
			taken := false
			defer func(old func() chan *workerproc.Process) { takeAheadWorker = old }(takeAheadWorker)
			takeAheadWorker = func() chan *workerproc.Process {
				if taken {
					return nil
				}
				taken = true
				return ch
			}
			own, ownLaunches := withRecordingLaunch()
			rt, err := New(all.Registry(), nil, WithAnalysisWorker(exe), own, WithWorkerAhead(),
				WithStore(repository.Location{Dir: filepath.Join(t.TempDir(), "store"), Source: repository.SourceExplicit}))
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close()
			args := map[string]any{"sources": []any{map[string]any{"kind": "path", "path": bigText(t)}}, "page_size": 2}
			want, _, wf := analyzeJSON(t, newRuntime(t), "preview_artifact", args)
			got, _, gf := analyzeJSON(t, rt, "preview_artifact", args)
			if wf != nil || gf != nil || string(got) != string(want) {
				t.Fatalf("worker %s (%v), in process %s (%v)", got, gf, want, wf)
			}
			rt.Close()
			select {
			case <-p.Done:
			case <-time.After(10 * time.Second):
				t.Error("the worker started ahead was neither used nor stopped")
				p.Stop()
				os.RemoveAll(p.Dir)
			}
			ahead, ours := aheadLaunches(), ownLaunches()
			if len(ahead) != 1 || (ahead[0].replyBytes > 0) != c.aheadUsed || (ahead[0].armed != nil) != c.aheadUsed || !ahead[0].ended {
				t.Errorf("the worker started ahead = %+v, want it ended, used: %v", ahead, c.aheadUsed)
			}
			if (len(ours) == 1 && ours[0].replyBytes > 0) != c.ours || len(ours) > 1 {
				t.Errorf("the runtime's own launches = %+v, want one that replied: %v", ours, c.ours)
			}
			noWorkerScratchLeft(t)
		})
	}
}
