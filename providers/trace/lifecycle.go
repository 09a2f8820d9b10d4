package trace

import (
	"context"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/providers"
)

// summarizeLifecycle is summarize_trace_lifecycle: view "tables" of a source that has
// it, else the transitions of a lifecycleSource (OTLP spans, an Nsight Systems export's
// activity, calls and ranges).
func summarizeLifecycle(ctx context.Context, req *providers.Request[gen.TableViewFields]) (*providers.Analysis, error) {
	if a, ok, err := tablesView(ctx, gen.OperationNameSummarizeTraceLifecycle, req); ok || err != nil {
		return a, err
	}
	in := req.Inputs[0]
	src, err := open(in)
	if err != nil {
		return nil, err
	}
	s, ok := src.(lifecycleSource)
	if !ok {
		return nil, unsupported(in)
	}
	return s.lifecycle(ctx, req.Limits)
}
