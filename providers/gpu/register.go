// Package gpu reads GPU kernel evidence: Compute Sanitizer XML logs (memcheck,
// racecheck, initcheck, synccheck records) and Triton autotune cache entries. It also
// registers the compute-sanitizer capture provider.
package gpu

import (
	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/providers"
)

// Register adds inspect_sanitizer_failures, the compute-sanitizer detector and the
// compute-sanitizer capture provider.
func Register(r *providers.Registry) {
	r.Analyzer(providers.Analyze(gen.OperationNameInspectSanitizerFailures, inspectSanitizer))
	r.Detector(sanitizerDetector)
	r.Collector(sanitizerCollector)
}
