// Package gpu reads GPU kernel evidence: Compute Sanitizer XML logs (memcheck,
// racecheck, initcheck, synccheck records), Triton autotune cache entries and Flameox's
// Triton listener JSONL. It also registers the compute-sanitizer and triton capture
// providers.
package gpu

import (
	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/providers"
)

// Register adds inspect_sanitizer_failures and inspect_triton_autotune, the
// compute-sanitizer, triton-cache and triton (listener) detectors and the
// compute-sanitizer and triton capture providers.
func Register(r *providers.Registry) {
	r.Analyzer(providers.Analyze(gen.OperationNameInspectSanitizerFailures, inspectSanitizer))
	r.Detector(sanitizerDetector)
	r.Collector(sanitizerCollector)
	r.Analyzer(providers.Analyze(gen.OperationNameInspectTritonAutotune, inspectTriton))
	r.Detector(tritonDetector)
	r.Detector(listenerDetector)
	r.Collector(tritonCollector)
	r.Tool(sanitizerTool)
	r.Tool(tritonTool)
}
