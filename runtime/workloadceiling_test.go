package runtime

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/failure"
	"github.com/flameox/flameox/providers/all"
)

// TestWorkloadCeiling: an operator's FLAMEOX_MAX_WORKLOAD_SECONDS bounds a capture whose
// request sets no timeout (issue 40 item 7: "without a workload budget a capture has no
// timeout at all"), and a request may only lower it. Unset, the seed's default holds:
// "Both fields default to null" (seed 000), which the other capture tests exercise.
func TestWorkloadCeiling(t *testing.T) {
	t.Setenv(WorkloadCeilingVariable, "1")
	rt := newRuntime(t)
	dir := t.TempDir()

	res, f := capture(t, rt, map[string]any{"target": target(dir, "sh", "-c", "sleep 300 & echo $! > pids; sleep 301"), "provider": direct()})
	if f != nil {
		t.Fatal(f)
	}
	ex := res.Capture.Executions[0]
	if ex.Limit == nil || ex.Limit.Kind != "timeout" || ex.Limit.Configured != 1 || !strings.Contains(ex.Limit.Recovery, WorkloadCeilingVariable) {
		t.Fatalf("limit = %+v", ex.Limit)
	}
	assertGone(t, pidsIn(t, filepath.Join(dir, "pids")))
	if fix := res.Fix(); fix == nil || fix.FieldPath != nil || !strings.Contains(fix.Message, "workload ceiling (1 s) ("+WorkloadCeilingVariable+")") {
		t.Errorf("fix = %+v", fix)
	}

	// Lower is accepted (and is the request's own bound).
	res, f = capture(t, rt, map[string]any{"target": map[string]any{"argv": []string{"sleep", "30"}, "cwd": dir,
		"budget": map[string]any{"timeout_seconds": 0.5}}, "provider": direct()})
	if f != nil {
		t.Fatal(f)
	}
	if l := res.Capture.Executions[0].Limit; l == nil || l.Configured != 0.5 || strings.Contains(l.Recovery, WorkloadCeilingVariable) {
		t.Errorf("limit = %+v", l)
	}

	// Higher is refused before anything runs, with the ceiling as the accepted maximum.
	_, f = capture(t, rt, map[string]any{"target": map[string]any{"argv": []string{"true"}, "cwd": dir,
		"budget": map[string]any{"timeout_seconds": 5}}, "provider": direct()})
	if f == nil || f.Code != gen.FailureCodeLimitExceeded || fmt.Sprint(f.FieldPath) != "[target budget timeout_seconds]" ||
		fmt.Sprint(f.AcceptedValues) != "[<=1]" || f.NextAction == nil || f.NextAction.AdjustRequest == nil {
		t.Fatalf("failure = %+v", f)
	}
}

// TestWorkloadCeilingRefusesABadValue: a ceiling the server cannot read stops it at
// start, typed, rather than running without one.
func TestWorkloadCeilingRefusesABadValue(t *testing.T) {
	for _, v := range []string{"0", "-3", "soon", "86401"} {
		t.Setenv(WorkloadCeilingVariable, v)
		_, err := New(all.Registry(), nil)
		var f *failure.Failure
		if !errors.As(err, &f) || f.Code != gen.FailureCodeInvalidInput || !strings.Contains(f.Message, WorkloadCeilingVariable) {
			t.Errorf("%s=%q: err = %v", WorkloadCeilingVariable, v, err)
		}
	}
}
