// Package testrun reads test-run evidence: Flameox's pytest event stream (written by the
// flameox_pytest_plugin the pytest capture provider loads) and the observations a
// workload writes to FLAMEOX_OBSERVATIONS_PATH. Decision 0019 says how tests are
// classified and when a run is complete.
package testrun

import (
	"bytes"
	"context"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/providers"
)

// Register adds summarize_failures and inspect_pytest_fixtures, the pytest and
// observations detectors and the pytest and observations capture providers.
func Register(r *providers.Registry) {
	r.Analyzer(providers.Analyze(gen.OperationNameSummarizeFailures, summarize))
	r.Analyzer(providers.Analyze(gen.OperationNameInspectPytestFixtures, inspectFixtures))
	for _, d := range detectors {
		r.Detector(d)
	}
	r.Collector(pytestCollector)
	r.Collector(observationsCollector)
}

var detectors = []providers.Detector{
	{Format: gen.FormatPytest, Container: gen.FormatJsonl, Match: func(_ string, head []byte) bool {
		return bytes.HasPrefix(bytes.TrimLeft(head, " \t\r\n"), []byte(`{"event":"`))
	}},
	{Format: gen.FormatObservations, Container: gen.FormatJsonl, Match: func(_ string, head []byte) bool {
		first, _, _ := bytes.Cut(head, []byte("\n"))
		return bytes.HasPrefix(bytes.TrimLeft(first, " \t\r"), []byte("{")) && bytes.Contains(first, []byte(`"monotonic_ns"`)) &&
			bytes.Contains(first, []byte(`"values"`)) && bytes.Contains(first, []byte(`"phase"`))
	}},
}

func provider() gen.Provider { return gen.Provider{ID: "flameox-testrun", Version: "native-1"} }

func summarize(ctx context.Context, req *providers.Request[gen.NoFields]) (*providers.Analysis, error) {
	in := req.Inputs[0]
	if in.Format == gen.FormatObservations {
		return summarizeObservations(ctx, in, req.Limits)
	}
	return summarizePytest(ctx, in, req.Limits)
}
