package trace

import (
	"context"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/providers"
)

// summarizeOperations is summarize_trace_operations: view "tables" of a source that has
// it, a source's own operations (operationSource: OTLP spans, Nsight Systems tables),
// else the slices of a slice source ranked by name and category (sliceOperations).
func summarizeOperations(ctx context.Context, req *providers.Request[gen.TraceSliceFields]) (*providers.Analysis, error) {
	if a, ok, err := tablesView(ctx, gen.OperationNameSummarizeTraceOperations, req); ok || err != nil {
		return a, err
	}
	in, f := req.Inputs[0], sliceFilter(req.Fields)
	src, err := open(in)
	if err != nil {
		return nil, err
	}
	if s, ok := src.(operationSource); ok {
		return s.operations(ctx, req.Limits, f)
	}
	tp, err := admitTraceProcessor(ctx, in, req.Limits)
	if err != nil {
		return nil, err
	}
	return sliceOperations(ctx, in, tp, f, &providers.Analysis{Provider: provider()})
}
