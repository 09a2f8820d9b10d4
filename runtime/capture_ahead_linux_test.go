package runtime

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/flameox/flameox/internal/broker"
	"github.com/flameox/flameox/internal/subreaper"
	"github.com/flameox/flameox/internal/testtool"
)

// countPrestarts counts the helpers the runtime starts ahead; it skips where none can
// start here.
func countPrestarts(t *testing.T) *atomic.Int64 {
	t.Helper()
	probe := broker.Prestart()
	if probe == nil {
		t.Skip("no containment helper can be started here")
	}
	probe.Abandon()
	var n atomic.Int64
	old := prestartHelper
	prestartHelper = func() *broker.Prestarted { n.Add(1); return old() }
	t.Cleanup(func() { prestartHelper = old })
	return &n
}

// parentCommandLine is a capture target in dir that prints its parent's command line:
// which helper started it.
func parentCommandLine(dir string) map[string]any {
	return target(dir, "sh", "-c", `tr '\0' ' ' < /proc/$PPID/cmdline`)
}

// TestCaptureStartsItsHelperAhead: a capture's first execution runs under the helper the
// runtime started while the capture was admitted (its parent is that helper, waiting
// until the execution came), a second execution under one started for it; a capture
// that admission refuses ends the helper started for it.
func TestCaptureStartsItsHelperAhead(t *testing.T) {
	starts := countPrestarts(t)
	rt := newRuntime(t)
	dir := t.TempDir()
	res, f := capture(t, rt, map[string]any{
		"target":     parentCommandLine(dir),
		"provider":   direct(),
		"experiment": map[string]any{"cases": []any{map[string]any{"name": "a"}, map[string]any{"name": "b"}}, "blocks": 1, "seed": 1, "practical_threshold": 0}})
	if f != nil {
		t.Fatal(f)
	}
	rt.ending.Wait() // what the call leaves to end after its answer
	blocks, _ := json.Marshal(res.Blocks)
	if n := len(res.Capture.Executions); n != 2 {
		t.Fatalf("%d executions", n)
	}
	if strings.Count(string(blocks), subreaper.ArgWaiting) != 1 || strings.Count(string(blocks), subreaper.Arg+" ") != 1 {
		t.Errorf("the executions' parents, one ahead and one started for it: %s", blocks)
	}
	if starts.Load() != 1 {
		t.Errorf("%d helpers started ahead, want 1", starts.Load())
	}
	if left := testtool.WaitingHelpers(); len(left) > 0 {
		t.Errorf("helpers started ahead outlive the capture: %v", left)
	}

	_, f = capture(t, rt, map[string]any{"target": target(dir, filepath.Join(dir, "no-such-program")), "provider": direct()})
	if f == nil {
		t.Fatal("a capture of a missing program was admitted")
	}
	rt.ending.Wait()
	if starts.Load() != 2 {
		t.Errorf("%d helpers started ahead, want 2", starts.Load())
	}
	if left := testtool.WaitingHelpers(); len(left) > 0 {
		t.Errorf("the helper started ahead of a refused capture outlives it: %v", left)
	}
}

// TestCaptureHelperGivenToTheRuntime: a helper started before the runtime (the CLI's
// capture command) is the one its next capture call uses, instead of one started then;
// one that no capture took is ended by Close.
func TestCaptureHelperGivenToTheRuntime(t *testing.T) {
	starts := countPrestarts(t)
	rt := newRuntime(t, WithCaptureHelper(StartCaptureHelper()))
	res, f := capture(t, rt, map[string]any{"target": parentCommandLine(t.TempDir()), "provider": direct()})
	if f != nil {
		t.Fatal(f)
	}
	if blocks, _ := json.Marshal(res.Blocks); !strings.Contains(string(blocks), subreaper.ArgWaiting) {
		t.Errorf("the execution's parent: %s", blocks)
	}
	if starts.Load() != 1 {
		t.Errorf("%d helpers started, want the one given", starts.Load())
	}
	rt.Close()

	newRuntime(t, WithCaptureHelper(StartCaptureHelper())).Close()
	if starts.Load() != 2 {
		t.Errorf("%d helpers started, want 2", starts.Load())
	}
	if left := testtool.WaitingHelpers(); len(left) > 0 {
		t.Errorf("a helper no capture took outlives Close: %v", left)
	}
}

// TestSpareCaptureHelper: a runtime that keeps a spare helper starts it once a capture
// call has ended, and the next capture's first execution runs under it; Close ends the
// spare left.
func TestSpareCaptureHelper(t *testing.T) {
	starts := countPrestarts(t)
	rt := newRuntime(t, WithSpareCaptureHelper())
	args := map[string]any{"target": parentCommandLine(t.TempDir()), "provider": direct()}
	for i := range 2 {
		if _, f := capture(t, rt, args); f != nil {
			t.Fatal(f)
		}
		// The spare starts after the call: wait for it as Close would, and for its start.
		rt.ending.Wait()
		h := rt.nextHelper.Load()
		if h == nil {
			t.Fatalf("no spare after capture %d", i+1)
		}
		p := <-h.ready
		h.ready <- p
		if starts.Load() != int64(i+2) {
			t.Fatalf("after capture %d: %d helpers started", i+1, starts.Load())
		}
	}
	if left := testtool.WaitingHelpers(); len(left) != 1 {
		t.Errorf("waiting helpers %v, want the spare alone", left)
	}
	rt.Close()
	if left := testtool.WaitingHelpers(); len(left) > 0 {
		t.Errorf("the spare outlives Close: %v", left)
	}
}
