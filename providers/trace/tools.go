package trace

import (
	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/prepare"
)

// tools are the records of the preparable providers this family uses (decision 0068):
// the host tools that capture or read traces and the formats it reads natively.
var tools = []prepare.Tool{nsysTool, traceProcessorTool, rocprofTool,
	{ID: gen.PreparableProviderOtlp, Class: prepare.BuiltIn,
		Note: "Flameox reads OTLP/JSON and OTLP/protobuf trace exports natively; nothing to install."},
	{ID: gen.PreparableProviderTorch, Class: prepare.Workload,
		Note: "The workload's Python interpreter needs torch>=2.7 (<python> -m pip install 'torch>=2.7'); the torch-profiler provider probes it before a capture."},
}

// nsysTool is Nsight Systems: nsys converts .nsys-rep reports and captures.
var nsysTool = prepare.Tool{ID: gen.PreparableProviderNsightSystems, Class: prepare.HostTool, Executables: []string{"nsys"}, Variable: "FLAMEOX_NSYS",
	Install: map[string]string{
		"":       "Install NVIDIA Nsight Systems (from developer.nvidia.com/nsight-systems) so that nsys is on PATH, or set FLAMEOX_NSYS to it.",
		"debian": "Install NVIDIA Nsight Systems from NVIDIA's CUDA apt repository (apt-get install nsight-systems-cli) so that nsys is on PATH, or set FLAMEOX_NSYS to it.",
		"fedora": "Install NVIDIA Nsight Systems from NVIDIA's CUDA dnf repository (dnf install nsight-systems-cli) so that nsys is on PATH, or set FLAMEOX_NSYS to it.",
	},
	Note: "Flameox reads its SQLite exports natively and converts .nsys-rep files with nsys."}

// traceProcessorTool is Perfetto's Trace Processor, which reads what the native Perfetto
// decoder does not (decision 0016, item 6).
var traceProcessorTool = prepare.Tool{ID: gen.PreparableProviderPerfetto, Class: prepare.HostTool,
	Executables: []string{"trace_processor_shell", "trace_processor"}, Variable: "FLAMEOX_TRACE_PROCESSOR",
	Install: map[string]string{
		"": "Download Trace Processor (curl -LO https://get.perfetto.dev/trace_processor) and make it executable, on PATH as trace_processor_shell, or set FLAMEOX_TRACE_PROCESSOR to it.",
	},
	Note: "Flameox reads Perfetto protobuf traces natively; Trace Processor is used only for what the native reader does not decode."}

// rocprofTool is ROCm's rocprofv3, which captures rocprof-pftrace traces.
var rocprofTool = prepare.Tool{ID: gen.PreparableProviderRocprofv3, Class: prepare.HostTool, Executables: []string{"rocprofv3"},
	Install: map[string]string{
		"":       "Install ROCm's rocprofiler-sdk (rocprofv3) from AMD's ROCm packages so that rocprofv3 is on PATH.",
		"debian": "Install rocprofiler-sdk from AMD's ROCm apt repository (apt-get install rocprofiler-sdk) so that rocprofv3 is on PATH.",
		"ubuntu": "Install rocprofiler-sdk from AMD's ROCm apt repository (apt-get install rocprofiler-sdk) so that rocprofv3 is on PATH.",
		"fedora": "Install rocprofiler-sdk from AMD's ROCm dnf repository (dnf install rocprofiler-sdk) so that rocprofv3 is on PATH.",
	},
	Note: "It needs an AMD GPU with ROCm to run a workload."}
