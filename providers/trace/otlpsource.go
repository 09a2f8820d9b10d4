package trace

import (
	"bufio"
	"context"
	"fmt"
	"math"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/trace/otlp"
)

// otlpSource is an OpenTelemetry trace, OTLP/JSON or OTLP/protobuf: a span source (its
// slice rows are spans, otlpslices.go), with its own operations (otlpops.go), lifecycle
// (otlplifecycle.go) and, for summarize_trace, view "tables" (otlptables.go). It is no
// slice source: the Nester does not read spans.
type otlpSource struct{ sourceBase }

func (o otlpSource) summarizeSpans(f *filter) *providers.Analysis { return summarizeOTLP(o.in, f) }

func (o otlpSource) windowSpans(start, end int64, f *filter) *providers.Analysis {
	return windowOTLP(o.in, start, end, f)
}

func (o otlpSource) operations(ctx context.Context, _ gen.EffectiveLimits, f *filter) (*providers.Analysis, error) {
	return otlpOperations(ctx, o.in, f)
}

func (o otlpSource) lifecycle(context.Context, gen.EffectiveLimits) (*providers.Analysis, error) {
	return otlpLifecycle(o.in), nil
}

// hasTables: an OTLP trace has view "tables" for summarize_trace (catalog §1.3).
func (o otlpSource) hasTables(op gen.OperationName) bool {
	return op == gen.OperationNameSummarizeTrace
}

func (o otlpSource) tables(ctx context.Context, _ gen.OperationName, f *gen.TableViewFields, _ gen.EffectiveLimits) (*providers.Analysis, error) {
	return otlpTablesAnalysis(ctx, o.in, f.Tables)
}

// readOTLP decodes one OTLP source, calling visit for every span in file order, in the
// encoding otlp.ReadAsProto chooses.
func readOTLP(ctx context.Context, in providers.Input, visit func(*otlp.Span) error) (*otlp.Stats, error) {
	return readOTLPTables(ctx, in, visit, nil)
}

// readOTLPTables is readOTLP, also passing every record whole to tables when it is set.
func readOTLPTables(ctx context.Context, in providers.Input, visit func(*otlp.Span) error, tables otlp.TableSink) (*otlp.Stats, error) {
	r, err := providers.OpenReadAhead(ctx, in, maxTraceBytes)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	br := bufio.NewReaderSize(r, 64<<10)
	head, _ := br.Peek(4096)
	return otlp.Decode(ctx, br, in.Index, otlp.ReadAsProto(in.Path, head), visit, tables)
}

// timing is a span's start and duration, when both timestamps are present, the end is
// not before the start, and both fit int64 nanoseconds.
func timing(s *otlp.Span) (ts, dur int64, ok bool) {
	if s.Start == 0 || s.End == 0 || s.End < s.Start || s.End > math.MaxInt64 {
		return 0, 0, false
	}
	return int64(s.Start), int64(s.End - s.Start), true
}

// otlpTables are the table counts every OTLP result reports.
func otlpTables(st *otlp.Stats, m map[string]any) map[string]any {
	if m == nil {
		m = map[string]any{}
	}
	m["resources_count"], m["scopes_count"], m["spans_count"] = st.Resources, st.Scopes, st.Spans
	m["events_count"], m["links_count"] = st.Events, st.Links
	// The whole file is read: the counts are exact.
	m["counts_are_lower_bounds"] = false
	return m
}

func otlpLimitations(st *otlp.Stats) []string {
	if st.SpansBeforeResource > 0 {
		return []string{fmt.Sprintf("%d spans were written before their resource; their service.name is unknown to a streaming read (process_name null).", st.SpansBeforeResource)}
	}
	return nil
}
