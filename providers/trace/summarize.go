package trace

import (
	"context"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/trace/tracemodel"
)

// summarize is summarize_trace: view "tables" of a source that has it, a span source's
// own slice rows, else the slices of any slice source with a positive duration, by start.
func summarize(ctx context.Context, req *providers.Request[gen.TraceSliceFields]) (*providers.Analysis, error) {
	if a, ok, err := tablesView(ctx, gen.OperationNameSummarizeTrace, req); ok || err != nil {
		return a, err
	}
	in, f := req.Inputs[0], sliceFilter(req.Fields)
	src, err := open(in)
	if err != nil {
		return nil, err
	}
	if s, ok := src.(spanSource); ok {
		return s.summarizeSpans(f), nil
	}
	in, a, tp, done, err := sliceRead(ctx, src, req.Limits)
	if err != nil {
		return nil, err
	}
	context.AfterFunc(ctx, done)
	q := &query{in: in, tp: tp, less: byStart, filter: f,
		pick: func(s *tracemodel.Nested) (string, bool) { return "", s.Dur > 0 },
		figures: func(m map[string]any, n int64) string {
			m["slice_count"] = n
			return "no_slices_observed: the trace holds no slice with a positive duration."
		},
		project: func(_ context.Context, sc *scan, sel []slice) ([]any, error) {
			out := make([]any, len(sel))
			for i := range sel {
				out[i] = sliceRow(sc, &sel[i].Nested)
			}
			return out, nil
		}}
	a.Rows = doneRows{q.rows(), done}
	return tp.bind(a), nil
}

// byStart orders slices by start, depth and id.
func byStart(a, b *slice) bool {
	if a.TS != b.TS {
		return a.TS < b.TS
	}
	if a.Depth != b.Depth {
		return a.Depth < b.Depth
	}
	return a.ID < b.ID
}

// sliceRow is summarize_trace's row of a nested slice.
func sliceRow(sc *scan, n *tracemodel.Nested) gen.TraceSliceRow {
	a := &n.Args
	name, mangled := displayName(n.Name)
	return gen.TraceSliceRow{
		ID: n.ID, ParentID: parent(n), Name: name, MangledName: mangled, Ts: nanos(n.TS), Dur: nanos(n.Dur),
		TrackID: n.Track, Category: optional(n.Category),
		ThreadName: sc.threadName(n.Track), ProcessName: sc.processName(n.Track),
		Filename: a.Filename, Line: a.Line, InputShapes: a.InputShapes, AllocationBytes: a.AllocationBytes,
		Phase: n.Phase, CorrelationID: a.CorrelationID, Device: a.Device, Stream: a.Stream,
	}
}
