package broker

import (
	"context"
	"testing"
	"time"
)

// TestArm: a run with Spec.Arm holds its time, memory and writable bounds back until
// Bounds arrive, which then replace the spec's; a closed channel arms nothing.
func TestArm(t *testing.T) {
	for _, c := range []struct {
		name   string
		script string
		arm    *Bounds // sent before the run; nil: none sent
		close  bool    // the channel is closed without a value
		limit  string  // the run's limit kind, "" for none
	}{
		// The spec's own bounds (1 ms, 1 byte resident, 1 byte written) would stop this
		// workload at once; held back, it runs to its end.
		{"held back", "head -c 65536 /dev/zero > f; sleep 0.2", nil, false, ""},
		{"closed without bounds", "head -c 65536 /dev/zero > f; sleep 0.2", nil, true, ""},
		{"armed timeout", "sleep 30", &Bounds{Timeout: 100 * time.Millisecond}, false, "timeout"},
		{"armed memory", "sleep 30", &Bounds{MaxRSSBytes: 1}, false, "memory_limit_exceeded"},
		{"armed writes", "head -c 65536 /dev/zero > f; sleep 30", &Bounds{MaxWritableGrowth: 1}, false, "writable_limit_exceeded"},
	} {
		t.Run(c.name, func(t *testing.T) {
			spec := sh(t, c.script)
			spec.Timeout, spec.MaxRSSBytes, spec.WritableRoots, spec.MaxWritableGrowth = time.Millisecond, 1, []string{spec.Dir}, 1
			arm := make(chan Bounds, 1)
			spec.Arm = arm
			if c.arm != nil {
				arm <- *c.arm
			}
			if c.close {
				close(arm)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			res, err := Run(ctx, spec)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case c.limit == "" && (res.Limit != nil || res.ExitCode == nil || *res.ExitCode != 0):
				t.Fatalf("result = %+v (limit %+v), want a clean exit", res, res.Limit)
			case c.limit != "" && (res.Limit == nil || res.Limit.Kind != c.limit):
				t.Fatalf("limit = %+v, want %s", res.Limit, c.limit)
			}
			if c.limit == "timeout" && res.Limit.Configured != 0.1 {
				t.Errorf("timeout configured %v s, want the armed 0.1", res.Limit.Configured)
			}
		})
	}
}
