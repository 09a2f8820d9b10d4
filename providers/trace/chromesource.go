package trace

import (
	"context"

	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/trace/chrome"
	"github.com/flameox/flameox/providers/trace/tracemodel"
)

// traceEventSource is a Trace Event JSON trace (Chrome, Kineto/torch.profiler, JAX): a
// slice source (chrome.Decode) and nothing besides.
type traceEventSource struct{ sourceBase }

// slices decodes the trace into nest: with two CPUs, parsing on a goroutine of its own
// and dispatching and nesting on this one, so that the two halves of the work share them
// (decision 0034).
func (t traceEventSource) slices(ctx context.Context, nest *tracemodel.Nester, s *scan) (err error) {
	r, err := providers.OpenReadAhead(ctx, t.in, maxTraceBytes)
	if err != nil {
		return err
	}
	defer r.Close()
	if !pipeline {
		s.stats, err = chrome.Decode(ctx, r, t.in.Index, chrome.Limits{}, nest)
		return err
	}
	s.stats, err = chrome.DecodeStaged(ctx, r, t.in.Index, chrome.Limits{}, nest)
	return err
}
