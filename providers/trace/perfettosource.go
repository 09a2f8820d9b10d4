package trace

import (
	"context"
	"fmt"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/trace/perfetto"
	"github.com/flameox/flameox/providers/trace/tracemodel"
)

// perfettoSource is a Perfetto protobuf trace (Perfetto, rocprofv3): a slice source whose
// track events perfetto.Decode reads, and which trace_processor_shell reads instead when
// it holds only data the native decoder does not read (processorSource).
type perfettoSource struct{ sourceBase }

// slices decodes the trace's track events into nest, the decoding pipelined with two
// CPUs. A trace with nothing native but unread data needs trace_processor_shell; a cut
// trace keeps what was read, but an empty read of a damaged file is no evidence
// (decision 0016, item 10).
func (p perfettoSource) slices(ctx context.Context, nest *tracemodel.Nester, s *scan) error {
	in := p.in
	r, err := providers.OpenReadAhead(ctx, in, maxTraceBytes)
	if err != nil {
		return err
	}
	defer r.Close()
	decode := func(ctx context.Context, sink tracemodel.Sink) (err error) {
		s.stats, s.perfetto, err = perfetto.Decode(ctx, r, in.Index, perfetto.Limits{}, sink)
		return err
	}
	if pipeline {
		err = decodePipelined(ctx, nest, decode)
	} else {
		err = decode(ctx, nest)
	}
	if err != nil {
		return err
	}
	if info := s.perfetto; info != nil {
		if info.NothingNative() && info.UnreadDataPackets() > 0 {
			return traceProcessorNeeded(in, info)
		}
		if info.Cut != nil && s.stats.Slices == 0 {
			return &providers.DecodeError{Source: in.Index,
				Message: fmt.Sprintf("source %d: the Perfetto trace is cut before any slice could be read: %s", in.Index, info.Cut),
				Details: map[string]any{"offset": info.Cut.Offset, "packets": info.Cut.Packets}}
		}
	}
	return nil
}

// admit binds trace_processor_shell when the trace needs it (admitPerfetto).
func (p perfettoSource) admit(ctx context.Context, limits gen.EffectiveLimits) (*traceProcessor, error) {
	return admitPerfetto(ctx, p.in, limits)
}
