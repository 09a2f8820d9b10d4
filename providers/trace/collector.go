package trace

import (
	_ "embed"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/prepare"
	"github.com/flameox/flameox/providers"
)

//go:embed python/flameox_torch_profiler.py
var torchHelper []byte

// torchTrace is the trace of the first profiling cycle, relative to the execution
// directory.
const torchTrace = "torch-profiler/torch-trace-cycle-0000.json"

// torchConfig is FLAMEOX_TORCH_PROFILER_CONFIG: compact JSON with sorted keys.
func torchConfig(o *gen.TorchProfilerProvider) string {
	acts := make([]string, 0, len(o.Activities))
	for _, a := range o.Activities {
		if s, ok := a.(string); ok {
			acts = append(acts, s)
		}
	}
	if len(acts) == 0 {
		// The contract's default (CUE: activities *["cpu"]); the generator sets no list defaults.
		acts = []string{"cpu"}
	}
	cfg := map[string]any{
		"mode": "sdk", "activities": acts,
		"schedule":      map[string]any{"skip_first": o.SkipFirst, "wait": o.Wait, "warmup": o.Warmup, "active": o.Active, "repeat": 1},
		"record_shapes": o.RecordShapes, "profile_memory": o.ProfileMemory, "with_stack": o.WithStack,
		"with_flops": o.WithFlops, "with_modules": o.WithModules,
	}
	b, _ := json.Marshal(cfg) // maps marshal with sorted keys
	return string(b)
}

func torchUnavailable(why string) error {
	return &providers.UnavailableError{Provider: "torch-profiler", Module: "torch",
		Message:     "the torch-profiler provider needs PyTorch in the workload's Python: " + why,
		Remediation: "Install PyTorch for the workload's interpreter (<python> -m pip install torch, or a system package such as Debian's python3-torch for the system Python), or run the workload with an interpreter that has it, then retry."}
}

func python(base string) bool { return strings.HasPrefix(base, "python") }

var torchCollector = providers.Collect(providers.CollectorSpec[gen.TorchProfilerProvider]{Kind: "torch-profiler", File: torchTrace,
	MissingHint: "A torch-profiler workload writes its trace only through the helper: it must run its steps inside `with flameox_torch_profiler.profiler() as prof:` and call `prof.step()` after each step (at least once, and at least skip_first + wait times) so that the schedule reaches its recorded steps.",
	// A Python workload is checked for torch before it runs; any other argv (a wrapper
	// script) finds out when the helper cannot import torch.
	Admit: func(cases []providers.Case) (*providers.Executable, error) {
		for _, c := range cases {
			if !python(filepath.Base(c.Argv[0])) {
				continue
			}
			// The interpreter is asked as the workload names it (made absolute): a
			// virtual environment's python is a symlink whose own directory holds
			// pyvenv.cfg, so probing the resolved file would ask the base interpreter.
			exe := c.Launch()
			if _, ok := providers.Probe(exe, "-c", "import torch.profiler"); !ok {
				return nil, torchUnavailable(filepath.Base(c.Argv[0]) + " cannot import torch.profiler")
			}
		}
		return nil, nil
	},
	// An activity listed twice is a mistake the schema cannot state (unique items).
	Check: func(o *gen.TorchProfilerProvider) error {
		return providers.UniqueItems([]any{"provider", "activities"}, o.Activities, []string{"cpu", "cuda", "cuda_if_available"})
	},
	// The helper module is written into the execution directory and put on PYTHONPATH.
	Env: func(o *gen.TorchProfilerProvider, dir string) map[string]string {
		lib := filepath.Join(dir, "python")
		if err := os.MkdirAll(lib, 0o755); err == nil {
			_ = os.WriteFile(filepath.Join(lib, "flameox_torch_profiler.py"), torchHelper, 0o644)
		}
		return map[string]string{
			"FLAMEOX_TORCH_PROFILER_CONFIG":      torchConfig(o),
			"FLAMEOX_TORCH_PROFILER_OUTPUT_ROOT": filepath.Join(dir, filepath.Dir(torchTrace)),
			"PYTHONPATH":                         lib,
		}
	}})

// rocprofTrace is rocprofv3's Perfetto output for -d rocprof -o rocprofv3.
const rocprofTrace = "rocprof/rocprofv3_results.pftrace"

var rocprofCollector = providers.Collect(providers.CollectorSpec[gen.Rocprofv3Provider]{Kind: "rocprofv3", File: rocprofTrace,
	Admit: func([]providers.Case) (*providers.Executable, error) {
		return providers.LocateAndBind(rocprofTool, prepare.Need{Purpose: "to capture with the rocprofv3 provider"})
	},
	Check: func(o *gen.Rocprofv3Provider) error {
		if !o.HipTrace && !o.KernelTrace && !o.MemoryCopyTrace && !o.MemoryAllocationTrace && !o.ScratchMemoryTrace && !o.MarkerTrace {
			return &providers.FieldError{Field: []any{"provider"},
				Accepted: []string{"hip_trace", "kernel_trace", "memory_copy_trace", "memory_allocation_trace", "scratch_memory_trace", "marker_trace"},
				Message:  "rocprofv3 needs at least one trace kind set to true"}
		}
		return nil
	},
	Command: rocprofCommand})

// rocprofCommand is rocprofv3 --output-format pftrace -o rocprofv3 -d DIR/rocprof [kinds] -- argv.
func rocprofCommand(o *gen.Rocprofv3Provider, exe *providers.Executable, c providers.Case, dir string) []string {
	argv := []string{exe.Path, "--output-format", "pftrace", "-o", "rocprofv3", "-d", filepath.Join(dir, filepath.Dir(rocprofTrace))}
	for _, k := range []struct {
		on   bool
		flag string
	}{{o.HipTrace, "--hip-trace"}, {o.KernelTrace, "--kernel-trace"}, {o.MemoryCopyTrace, "--memory-copy-trace"},
		{o.MemoryAllocationTrace, "--memory-allocation-trace"}, {o.ScratchMemoryTrace, "--scratch-memory-trace"}, {o.MarkerTrace, "--marker-trace"}} {
		if k.on {
			argv = append(argv, k.flag)
		}
	}
	return append(append(argv, "--", c.Launch()), c.Argv[1:]...)
}
