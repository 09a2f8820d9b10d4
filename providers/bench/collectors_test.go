package bench

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/flameox/flameox/providers"
)

func collectorOf(t *testing.T, kind string) providers.Collector {
	t.Helper()
	for _, c := range collectors {
		if c.Kind() == kind {
			return c
		}
	}
	t.Fatalf("no %s collector", kind)
	return nil
}

// TestPyperfMinTime: the pyperf command carries --min-time (catalog 3.1: "min_time
// (0.1; >0-60 s)" and "--min-time X"), the default 0.1 when omitted, as pyperf's
// float option reads it.
func TestPyperfMinTime(t *testing.T) {
	c := collectorOf(t, "pyperf")
	cs := providers.Case{Argv: []string{"bench", "arg"}, Executable: providers.Executable{Path: "/bin/bench"}}
	exe := &providers.Executable{Path: "/usr/bin/python3"}
	for _, tt := range []struct {
		fields map[string]any
		want   string
	}{
		{map[string]any{"kind": "pyperf"}, "0.1"},
		{map[string]any{"kind": "pyperf", "min_time": 0.5}, "0.5"},
		{map[string]any{"kind": "pyperf", "min_time": 60}, "60"},
		{map[string]any{"kind": "pyperf", "min_time": 1e-05}, "1e-05"},
	} {
		o, err := c.Options(tt.fields)
		if err != nil {
			t.Fatal(err)
		}
		argv := o.Command(exe, cs, "/d")
		i := slices.Index(argv, "--min-time")
		if i < 0 || argv[i+1] != tt.want {
			t.Errorf("%v: argv = %q, want --min-time %s", tt.fields, argv, tt.want)
		}
		if dash := slices.Index(argv, "--"); dash < i || !slices.Equal(argv[dash+1:], []string{"/bin/bench", "arg"}) {
			t.Errorf("the workload argv must follow --: %q", argv)
		}
	}
}

// TestTorchBenchmarkConfig: torch_benchmark is passed as FLAMEOX_TORCH_BENCHMARK_CONFIG,
// compact sorted JSON over the contract's defaults; null or omitted passes none. The
// helper module is on PYTHONPATH either way.
func TestTorchBenchmarkConfig(t *testing.T) {
	c := collectorOf(t, "benchmark-samples")
	for _, tt := range []struct {
		fields map[string]any
		want   string
	}{
		{map[string]any{"kind": "benchmark-samples"}, ""},
		{map[string]any{"kind": "benchmark-samples", "torch_benchmark": nil}, ""},
		{map[string]any{"kind": "benchmark-samples", "torch_benchmark": map[string]any{}},
			`{"cuda_event_timing":false,"max_samples":100,"min_run_time_seconds":0.2,"num_threads":1}`},
		{map[string]any{"kind": "benchmark-samples", "torch_benchmark": map[string]any{"max_samples": 5, "num_threads": 2, "cuda_event_timing": true}},
			`{"cuda_event_timing":true,"max_samples":5,"min_run_time_seconds":0.2,"num_threads":2}`},
	} {
		o, err := c.Options(tt.fields)
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		env := o.Env(dir)
		cfg, set := env["FLAMEOX_TORCH_BENCHMARK_CONFIG"]
		if cfg != tt.want || set != (tt.want != "") {
			t.Errorf("%v: config %q (set %v), want %q", tt.fields, cfg, set, tt.want)
		}
		if env["FLAMEOX_BENCHMARK_OUTPUT"] != filepath.Join(dir, "benchmark-samples.json") {
			t.Errorf("output = %q", env["FLAMEOX_BENCHMARK_OUTPUT"])
		}
		if b, err := os.ReadFile(filepath.Join(env["PYTHONPATH"], "flameox_benchmark.py")); err != nil || len(b) == 0 {
			t.Errorf("the helper is not on PYTHONPATH: %v", err)
		}
		if tt.want != "" && !json.Valid([]byte(cfg)) {
			t.Errorf("config is not JSON: %s", cfg)
		}
	}
}
