package ahead

import (
	"testing"
)

// TestCaptureCall: the capture command is the first word that is not a flag, and a call
// that asks for help, or names capture only after "--" or as an argument, is not one.
func TestCaptureCall(t *testing.T) {
	for _, c := range []struct {
		args []string
		want bool
	}{
		{[]string{"capture", "--provider", "direct", "--", "true"}, true},
		{[]string{"--json", "capture", "--provider", "perf", "--", "python3", "-h"}, true},
		{[]string{"capture"}, true},
		{[]string{"capture", "--help"}, false},
		{[]string{"-h", "capture"}, false},
		{[]string{"help", "capture"}, false},
		{[]string{"analyze", "rank_cpu_hotspots", "capture"}, false},
		{[]string{"--", "capture"}, false},
		{[]string{"mcp", "serve"}, false},
		{[]string{"--version"}, false},
		{nil, false},
	} {
		if got := CaptureCall(c.args); got != c.want {
			t.Errorf("CaptureCall(%q) = %v, want %v", c.args, got, c.want)
		}
	}
}
