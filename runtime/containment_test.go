package runtime

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/broker"
)

// fakeBroker makes every capture invocation answer res and err.
func fakeBroker(t *testing.T, res *broker.Result, err error) {
	t.Helper()
	old := runBroker
	runBroker = func(context.Context, broker.Spec) (*broker.Result, error) { return res, err }
	t.Cleanup(func() { runBroker = old })
}

// TestCaptureUncontainedIsUnavailable: where the OS will not contain the workload (a
// Windows Job Object refused), the capture answers UNAVAILABLE_CAPABILITY with the
// operator's remediation and leaves no scratch (issue 34: "capture runs each invocation
// in a Job Object ... or answers typed unavailable"; seed 001: "the attempted tool
// returns typed remediation").
func TestCaptureUncontainedIsUnavailable(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	fakeBroker(t, &broker.Result{Termination: "unreported", ReadersSettled: true, WritableComplete: true},
		fmt.Errorf("%w: %w", broker.ErrStart, broker.ErrUncontained))
	rt := newRuntime(t)
	_, f := capture(t, rt, map[string]any{"target": target(t.TempDir(), "true"), "provider": direct()})
	if f == nil || f.Code != gen.FailureCodeUnavailableCapability || f.Details["reason"] != "uncontained" ||
		f.NextAction == nil || f.NextAction.OperatorAction == nil {
		t.Fatalf("failure = %+v", f)
	}
	// Only the session's own directory stays, empty of captures (and the stamp of the
	// start's sweep for gone owners' scratch).
	err := filepath.WalkDir(tmp, func(p string, d fs.DirEntry, err error) error {
		if base := filepath.Base(p); err == nil && p != tmp && !strings.HasPrefix(base, "flameox-session-") && !strings.HasPrefix(base, sweptStampPrefix) {
			t.Errorf("left in TMPDIR: %s", p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestCaptureRecordsContainmentGaps: the execution's containment names the mechanism in
// force and what it could not hold (issue 34 item 3: "the result says which mechanism
// was in force and what it cannot contain").
func TestCaptureRecordsContainmentGaps(t *testing.T) {
	code := 0
	fakeBroker(t, &broker.Result{Termination: "exited", ExitCode: &code, Started: true, ReadersSettled: true, WritableComplete: true,
		Mechanism: "process_group", Gaps: []string{broker.GapDetachedDescendants, broker.GapBrokerDeath}}, nil)
	rt := newRuntime(t)
	res, f := capture(t, rt, map[string]any{"target": target(t.TempDir(), "true"), "provider": direct()})
	if f != nil {
		t.Fatal(f)
	}
	c := res.Capture.Executions[0].Containment
	if c.Mechanism == nil || *c.Mechanism != "process_group" {
		t.Errorf("mechanism = %v", c.Mechanism)
	}
	if d := cmp.Diff([]string{"detached_descendants", "survives_broker_death"}, c.Gaps); d != "" {
		t.Errorf("gaps (-want +got):\n%s", d)
	}
}
