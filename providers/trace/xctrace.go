package trace

import (
	"runtime"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/providers"
)

// xctraceTrace is where `xcrun xctrace record --output` would write its bundle.
const xctraceTrace = "xctrace/capture.trace"

// xctraceCollector is the catalog's xctrace capture provider. It records nothing: off
// macOS xcrun xctrace does not exist, and on macOS its output, an Instruments .trace
// bundle, is a directory this build cannot read (sources are files, and the catalog's
// reading goes through `xctrace export`, not implemented). So every admission answers
// with the unavailable state and what to use instead, before anything runs.
var xctraceCollector = providers.Collect(providers.CollectorSpec[gen.XctraceProvider]{Kind: "xctrace", File: xctraceTrace,
	Admit: func([]providers.Case) (*providers.Executable, error) {
		return nil, xctraceUnavailable(runtime.GOOS)
	}})

// xctraceUnavailable is the xctrace provider's unavailable state on host os goos.
func xctraceUnavailable(goos string) *providers.UnavailableError {
	msg := "xctrace records Instruments traces with xcrun xctrace, which exists only on macOS; this host runs " + goos
	if goos == "darwin" {
		msg = "xctrace's Instruments traces (.trace bundles) cannot be read by this build of Flameox"
	}
	return &providers.UnavailableError{Provider: "xctrace", Executable: "xcrun", Message: msg,
		Remediation: "Capture with the torch-profiler, rocprofv3 or nsight-systems provider, or record a Perfetto or Chrome trace and analyse it with summarize_trace."}
}
