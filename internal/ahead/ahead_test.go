package ahead

import (
	"slices"
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

// TestAnalyzePaths: the paths of an analyze call are its words after the operation,
// with the analyze command's flag values skipped ("--name value" and "--name=value") and
// the words after "--" kept; a call for help, one over preserved evidence and any other
// command have none.
func TestAnalyzePaths(t *testing.T) {
	for _, c := range []struct {
		args []string
		want []string
		ok   bool
	}{
		{[]string{"analyze", "rank_cpu_hotspots", "a.pstats"}, []string{"a.pstats"}, true},
		{[]string{"--json", "analyze", "rank_cpu_hotspots", "a", "b"}, []string{"a", "b"}, true},
		{[]string{"analyze", "--arguments", `{"page_size":5}`, "rank_cpu_hotspots", "a"}, []string{"a"}, true},
		{[]string{"analyze", "rank_cpu_hotspots", "--format", "pstats", "a", "--limits={}", "b", "--preserve"}, []string{"a", "b"}, true},
		{[]string{"analyze", "rank_cpu_hotspots", "--continuation", "tok", "--rescue-to", "/r", "a"}, []string{"a"}, true},
		{[]string{"analyze", "rank_cpu_hotspots", "--", "-odd", "--help"}, []string{"-odd", "--help"}, true},
		{[]string{"analyze", "rank_cpu_hotspots", "-"}, []string{"-"}, true},
		{[]string{"analyze", "rank_cpu_hotspots"}, nil, false},
		{[]string{"analyze", "rank_cpu_hotspots", "--evidence", "ev1"}, nil, false},
		{[]string{"analyze", "rank_cpu_hotspots", "--evidence=ev1"}, nil, false},
		{[]string{"analyze", "rank_cpu_hotspots", "a", "--help"}, nil, false},
		{[]string{"-h", "analyze", "rank_cpu_hotspots", "a"}, nil, false},
		{[]string{"capture", "--", "analyze", "x", "y"}, nil, false},
		{[]string{"help", "analyze", "x", "y"}, nil, false},
		{[]string{"--", "analyze", "x", "y"}, nil, false},
		{[]string{"analyze", "--", "rank_cpu_hotspots", "a"}, []string{"a"}, true},
		{nil, nil, false},
	} {
		got, ok := AnalyzePaths(c.args)
		if ok != c.ok || !slices.Equal(got, c.want) {
			t.Errorf("AnalyzePaths(%q) = %q, %v; want %q, %v", c.args, got, ok, c.want, c.ok)
		}
	}
}
