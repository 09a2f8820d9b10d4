package providers_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/providers/all"
)

func TestDetect(t *testing.T) {
	gz := []byte{0x1f, 0x8b, 8, 0}
	tests := []struct {
		name string
		head string
		want []gen.Format
	}{
		{"profile.pstats", "\xfb\x00", []gen.Format{gen.FormatPstats}},
		{"out.prof", "{\x00", []gen.Format{gen.FormatPstats, gen.FormatPprof}},
		{"cpu.prof", string(gz), []gen.Format{gen.FormatPprof}},
		{"cpu.prof", "\x0a\x04", []gen.Format{gen.FormatPprof}},
		{"profile.pb.gz", string(gz), []gen.Format{gen.FormatPprof}},
		{"perf.data", "PERFILE2....", []gen.Format{gen.FormatPerfData}},
		{"x.parquet", "PAR1", []gen.Format{gen.FormatParquet}},
		{"rows", "PAR1....", []gen.Format{gen.FormatParquet}},
		{"trace.speedscope.json", `{"x":1}`, []gen.Format{gen.FormatPySpy, gen.FormatJSON, gen.FormatText}},
		{"p.json", `{"$schema":"https://www.speedscope.app/file-format-schema.json"}`, []gen.Format{gen.FormatPySpy, gen.FormatJSON, gen.FormatText}},
		{"node.cpuprofile", `{"nodes":[{"callFrame":{}}]}`, []gen.Format{gen.FormatCpuprofile, gen.FormatJSON, gen.FormatText}},
		{"bench.json", `{"version":"1.0","benchmarks":[]}`, []gen.Format{gen.FormatPyperf, gen.FormatJSON, gen.FormatText}},
		{"h.json", `{"results":[{"command":"x"}]}`, []gen.Format{gen.FormatHyperfine, gen.FormatJSON, gen.FormatText}},
		{"s.json", `{"schema":"flameox.benchmark-samples.v1"}`, []gen.Format{gen.FormatSamples, gen.FormatJSON, gen.FormatText}},
		{"nv.json", `{"benchmarks":[{"states":[]}]}`, []gen.Format{gen.FormatNvbench, gen.FormatJSON, gen.FormatText}},
		// Keys of a JSON format do not override a suffix that names another format.
		{"h.csv", `"results","command"`, []gen.Format{gen.FormatCSV, gen.FormatText}},
		{"bench.txt", "goos: linux\nBenchmarkX-8   100   12.5 ns/op\n", []gen.Format{gen.FormatGoBench, gen.FormatText}},
		{"bench", "BenchmarkX-8   100   12.5 ns/op\n", []gen.Format{gen.FormatGoBench, gen.FormatText}},
		{"stacks.folded", "main;f 3\n", []gen.Format{gen.FormatPerf, gen.FormatText}},
		{"r.jsonl", `{"a":1}`, []gen.Format{gen.FormatJsonl, gen.FormatText}},
		{"R.NDJSON", `{"a":1}`, []gen.Format{gen.FormatJsonl, gen.FormatText}},
		{"data", ` [1,2]`, []gen.Format{gen.FormatJSON, gen.FormatText}},
		{"notes", "hello", []gen.Format{gen.FormatText}},
		{"app.log", "{not json", []gen.Format{gen.FormatText}},
	}
	r := all.Registry()
	for _, tt := range tests {
		got := r.Detect(tt.name, []byte(tt.head))
		if d := cmp.Diff(tt.want, got); d != "" {
			t.Errorf("Detect(%q, %q) (-want +got):\n%s", tt.name, tt.head, d)
		}
	}
}
