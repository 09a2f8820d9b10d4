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

// TestSignalCall: capture, analyze and mcp serve catch the shutdown signals from
// initialization; a call for help and every other command do not.
func TestSignalCall(t *testing.T) {
	for _, c := range []struct {
		args []string
		want bool
	}{
		{[]string{"capture", "--provider", "direct", "--", "true"}, true},
		{[]string{"analyze", "rank_cpu_hotspots", "a.pstats"}, true},
		{[]string{"--json", "analyze", "x"}, true},
		{[]string{"mcp", "serve"}, true},
		{[]string{"mcp", "--toolsets", "all", "serve"}, false},
		{[]string{"mcp", "inspect", "--full"}, false},
		{[]string{"analyze", "--help"}, false},
		{[]string{"capture", "-h", "--", "x"}, false},
		{[]string{"capture", "--", "sh", "-h"}, true},
		{[]string{"evidence", "show", "x"}, false},
		{[]string{"--version"}, false},
		{[]string{"--", "analyze"}, false},
		{nil, false},
	} {
		if got := SignalCall(c.args); got != c.want {
			t.Errorf("SignalCall(%q) = %v, want %v", c.args, got, c.want)
		}
	}
}
