package main

import (
	"slices"
	"strings"
	"testing"
)

var testProviders = []captureProvider{
	{Kind: "direct", Outputs: map[string]string{"stdout": "text", "stderr": "text"}, Released: true},
	{Kind: "pyperf", Outputs: map[string]string{"benchmark": "pyperf"}, Released: true},
	{Kind: "hyperfine", Outputs: map[string]string{"benchmark": "hyperfine"}, Released: true},
}

func TestCaptureSourceCap(t *testing.T) {
	tests := []struct {
		name       string
		maxSources int
		kinds      []string
		want       sourceCap
	}{
		{"direct yields stdout and stderr", 32, []string{"direct"}, sourceCap{Sources: 32, ArtifactsPerExecution: 2, Blocks: 8}},
		{"one artifact per execution", 32, []string{"pyperf", "hyperfine"}, sourceCap{Sources: 32, ArtifactsPerExecution: 1, Blocks: 16}},
		{"the largest provider decides", 32, []string{"pyperf", "direct"}, sourceCap{Sources: 32, ArtifactsPerExecution: 2, Blocks: 8}},
		{"operation cardinality below 32", 12, []string{"direct"}, sourceCap{Sources: 12, ArtifactsPerExecution: 2, Blocks: 3}},
		{"two cases do not fit", 3, []string{"direct"}, sourceCap{Sources: 3, ArtifactsPerExecution: 2, Blocks: 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := captureSourceCap(operation{Name: "op", MaxSources: tt.maxSources}, tt.kinds, testProviders)
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestCaptureDescription(t *testing.T) {
	op := operation{Name: "rank_cpu_hotspots", Description: "Rank the functions of one CPU profile."}
	if d := captureDescription(op, sourceCap{}); strings.Contains(strings.ToLower(d), "experiment") || strings.Contains(d, "block") {
		t.Errorf("a capture tool without experiments mentions them: %s", d)
	}
	op = operation{Name: "preview_artifact", Description: "Page through artifacts.", Experiment: true}
	d := captureDescription(op, sourceCap{Sources: 32, ArtifactsPerExecution: 2, Blocks: 8})
	for _, want := range []string{"paired experiment", "2 artifacts", "at most 32 sources", "two cases fit at most 8 blocks", "then page through artifacts."} {
		if !strings.Contains(d, want) {
			t.Errorf("description lacks %q: %s", want, d)
		}
	}
}

// TestDescribeBlocks: the schema keeps blocks 1-100 as the seed says (admission checks
// the source arithmetic) and states the arithmetic.
func TestDescribeBlocks(t *testing.T) {
	exp := schema{"anyOf": []any{
		schema{"type": "object", "properties": schema{"blocks": schema{"type": "integer", "minimum": 1, "maximum": 100}}},
		schema{"type": "null"},
	}}
	if err := describeBlocks(exp, sourceCap{Sources: 32, ArtifactsPerExecution: 2, Blocks: 8}); err != nil {
		t.Fatal(err)
	}
	blocks := exp["anyOf"].([]any)[0].(schema)["properties"].(schema)["blocks"].(schema)
	if blocks["maximum"] != 100 || blocks["minimum"] != 1 {
		t.Errorf("blocks bounds = %v..%v, want 1..100", blocks["minimum"], blocks["maximum"])
	}
	for _, want := range []string{"cases x blocks x 2 <= 32 sources", "LIMIT_EXCEEDED"} {
		if !strings.Contains(blocks["description"].(string), want) {
			t.Errorf("description lacks %q: %v", want, blocks["description"])
		}
	}
	if err := describeBlocks(exp, sourceCap{Sources: 1000, ArtifactsPerExecution: 1, Blocks: 500}); err == nil {
		t.Error("a source cap that fits more blocks than the declared maximum was accepted")
	}
}

func TestCaptureTitle(t *testing.T) {
	for in, want := range map[string]string{
		"Rank CPU hotspots":    "Capture and rank CPU hotspots",
		"Preview artifact":     "Capture and preview artifact",
		"GPU kernel summary":   "Capture and GPU kernel summary",
		"Summarize benchmarks": "Capture and summarize benchmarks",
	} {
		if got := captureTitle(in); got != want {
			t.Errorf("captureTitle(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestFormatNames: the formats are the sorted union of the operations' lists, each once.
func TestFormatNames(t *testing.T) {
	m := &model{ops: []operation{
		{Name: "b", Formats: []string{"pstats", "perf"}},
		{Name: "a", Formats: []string{"perf", "coverage", "pstats"}},
	}}
	got := m.formatNames()
	want := []string{"coverage", "perf", "pstats"}
	if !slices.Equal(got, want) {
		t.Fatalf("formatNames() = %v, want %v", got, want)
	}
}
