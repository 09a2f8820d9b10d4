package bench

import (
	_ "embed"
	"encoding/json"
	"os"
	"path/filepath"

	gen "github.com/flameox/flameox/generated/contracts"
)

// samplesHelper is flameox_benchmark, the module a benchmark-samples workload imports to
// write its document and, with torch_benchmark, to time PyTorch code (DESIGN 12: workload
// helpers ship inside Flameox).
//
//go:embed python/flameox_benchmark.py
var samplesHelper []byte

// torchBenchmarkDefaults are the contract's torch_benchmark defaults (CUE #TorchBenchmark);
// the generator sets no defaults inside a nullable object.
var torchBenchmarkDefaults = map[string]any{"min_run_time_seconds": 0.2, "max_samples": 100, "num_threads": 1, "cuda_event_timing": false}

// torchBenchmarkConfig is FLAMEOX_TORCH_BENCHMARK_CONFIG: the provider's torch_benchmark
// object over its defaults, compact JSON with sorted keys; "" when torch_benchmark is
// null or omitted (catalog 3.1: "optional FLAMEOX_TORCH_BENCHMARK_CONFIG").
func torchBenchmarkConfig(o *gen.BenchmarkSamplesProvider) string {
	if o.TorchBenchmark == nil {
		return ""
	}
	cfg := map[string]any{}
	for k, v := range torchBenchmarkDefaults {
		cfg[k] = v
	}
	for k, v := range o.TorchBenchmark {
		cfg[k] = v
	}
	b, _ := json.Marshal(cfg) // maps marshal with sorted keys
	return string(b)
}

// samplesEnv names the document's path, puts the helper on PYTHONPATH and passes the
// torch_benchmark settings when the request set them.
func samplesEnv(o *gen.BenchmarkSamplesProvider, dir string) map[string]string {
	env := map[string]string{"FLAMEOX_BENCHMARK_OUTPUT": filepath.Join(dir, "benchmark-samples.json")}
	lib := filepath.Join(dir, "python")
	if err := os.MkdirAll(lib, 0o755); err == nil {
		if os.WriteFile(filepath.Join(lib, "flameox_benchmark.py"), samplesHelper, 0o644) == nil {
			env["PYTHONPATH"] = lib
		}
	}
	if cfg := torchBenchmarkConfig(o); cfg != "" {
		env["FLAMEOX_TORCH_BENCHMARK_CONFIG"] = cfg
	}
	return env
}
