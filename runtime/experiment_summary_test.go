package runtime

import (
	"encoding/json"
	"testing"
)

// TestExperimentCaseMedianIntervals: the experiment summary gives each case's median wall
// time with benchstat's 95% interval (stats.MedianInterval, decision 0065) from six
// eligible blocks on, and null under six. Only the shape is checked: the values are real
// wall times.
func TestExperimentCaseMedianIntervals(t *testing.T) {
	rt := newRuntime(t)
	for _, blocks := range []int{5, 6} {
		res, _ := experiment(t, rt, []string{"true"}, []string{"true"}, map[string]any{"blocks": blocks})
		summary := res.Blocks[0].(MetricsBlock).Values
		var medians map[string]*float64
		var intervals map[string]*struct{ Low, High float64 }
		for key, out := range map[string]any{"case_median_wall_time_ns": &medians, "case_median_wall_time_ns_ci": &intervals} {
			b, _ := json.Marshal(summary[key])
			if err := json.Unmarshal(b, out); err != nil {
				t.Fatalf("%s = %s: %v", key, b, err)
			}
		}
		if len(intervals) != 2 || len(medians) != 2 {
			t.Fatalf("%d blocks: medians %v, intervals %v", blocks, medians, intervals)
		}
		for name, iv := range intervals {
			m := medians[name]
			switch {
			case blocks < 6 && iv != nil:
				t.Errorf("%d blocks, case %s: interval %+v, want null", blocks, name, *iv)
			case blocks >= 6 && (iv == nil || m == nil || iv.Low > *m || *m > iv.High):
				t.Errorf("%d blocks, case %s: median %v, interval %v", blocks, name, m, iv)
			}
		}
	}
}
