package trace

import (
	"context"
	"fmt"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/trace/otlp"
)

// maxOTLPTraces bounds the distinct trace ids one read numbers (the slice rows' track_id).
const maxOTLPTraces = 1 << 22

// otlpSlice is one span selected as a slice.
type otlpSlice struct {
	id, ts, dur, track int64
	name               string
	kind               int32
	service            *string
	trace              [16]byte
	parentSpan         [8]byte
	hasParent          bool
	parent             *int64
}

func otlpByStart(a, b *otlpSlice) bool {
	if a.ts != b.ts {
		return a.ts < b.ts
	}
	if a.dur != b.dur {
		return a.dur > b.dur
	}
	return a.id < b.id
}

func otlpByStartID(a, b *otlpSlice) bool {
	if a.ts != b.ts {
		return a.ts < b.ts
	}
	return a.id < b.id
}

type spanKey struct {
	trace [16]byte
	span  [8]byte
}

// otlpSlices is the ranked population of summarize_trace and inspect_trace_window over
// an OTLP source: the timed spans pick accepts, as slices.
func otlpSlices(in providers.Input, f *filter, less func(a, b *otlpSlice) bool, pick func(ts, dur int64) bool,
	figures func(m map[string]any, n int64) string, row func(s *otlpSlice) any) providers.Rows {
	return &ranked[otlpSlice]{less: less,
		fill: func(ctx context.Context, keep func(*otlpSlice)) (int64, *providers.Page, error) {
			traces := map[[16]byte]int64{}
			var n, untimed, excluded int64
			var c otlpSlice
			st, err := readOTLP(ctx, in, func(s *otlp.Span) error {
				t, ok := traces[s.TraceID]
				if !ok {
					if len(traces) >= maxOTLPTraces {
						return &providers.LimitError{Source: in.Index, Limit: maxOTLPTraces, Unit: "traces",
							Message: fmt.Sprintf("source %d holds more than %d distinct trace ids", in.Index, maxOTLPTraces)}
					}
					t = int64(len(traces))
					traces[s.TraceID] = t
				}
				ts, dur, ok := timing(s)
				if !ok {
					untimed++
					return nil
				}
				if !pick(ts, dur) {
					return nil
				}
				if !f.span(s.Name, otlp.KindName(s.Kind), dur, true) {
					excluded++
					return nil
				}
				n++
				c = otlpSlice{id: s.Ordinal, ts: ts, dur: dur, track: t, name: s.Name, kind: s.Kind, service: s.Service,
					trace: s.TraceID, parentSpan: s.ParentSpanID, hasParent: s.HasParent}
				keep(&c)
				return nil
			})
			if err != nil {
				return 0, nil, err
			}
			m := otlpTables(st, nil)
			m["trace_count"] = len(traces)
			m["untimed_span_count"] = untimed
			lim := otlpLimitations(st)
			empty := figures(m, n)
			f.figures(m, excluded)
			switch {
			case n == 0 && excluded > 0:
				lim = append(lim, f.emptyNote(excluded, "spans"))
			case n == 0:
				lim = append(lim, empty)
			}
			return n, &providers.Page{Metrics: m, Limitations: lim}, nil
		},
		rows: func(ctx context.Context, sel []otlpSlice) ([]any, error) {
			if err := otlpParents(ctx, in, sel); err != nil {
				return nil, err
			}
			out := make([]any, len(sel))
			for i := range sel {
				out[i] = row(&sel[i])
			}
			return out, nil
		}}
}

// otlpParents resolves the parent span ordinals of a page: the first span in the file
// with the parent's trace and span id. It reads the source again only when the page holds
// a span with a parent.
func otlpParents(ctx context.Context, in providers.Input, sel []otlpSlice) error {
	want := map[spanKey]*int64{}
	for i := range sel {
		if sel[i].hasParent {
			want[spanKey{sel[i].trace, sel[i].parentSpan}] = nil
		}
	}
	if len(want) == 0 {
		return nil
	}
	if _, err := readOTLP(ctx, in, func(s *otlp.Span) error {
		k := spanKey{s.TraceID, s.SpanID}
		if p, ok := want[k]; ok && p == nil {
			id := s.Ordinal
			want[k] = &id
		}
		return nil
	}); err != nil {
		return err
	}
	for i := range sel {
		if sel[i].hasParent {
			// A span that names itself as its parent has none.
			if p := want[spanKey{sel[i].trace, sel[i].parentSpan}]; p != nil && *p != sel[i].id {
				sel[i].parent = p
			}
		}
	}
	return nil
}

func otlpSliceRow(s *otlpSlice) any {
	kind := otlp.KindName(s.kind)
	return gen.TraceSliceRow{ID: s.id, ParentID: s.parent, Name: sliceName(s.name), Ts: nanos(s.ts), Dur: nanos(s.dur),
		TrackID: s.track, Category: &kind, ProcessName: s.service, Phase: "span"}
}

// summarizeOTLP is summarize_trace on an OTLP trace: its spans with a positive duration
// as slices, by start.
func summarizeOTLP(in providers.Input, f *filter) *providers.Analysis {
	return &providers.Analysis{Provider: provider(), Rows: otlpSlices(in, f, otlpByStart,
		func(_, dur int64) bool { return dur > 0 },
		func(m map[string]any, n int64) string {
			m["slice_count"] = n
			return "no_slices_observed: the trace holds no span with a positive duration."
		}, otlpSliceRow)}
}

// windowOTLP is inspect_trace_window on an OTLP trace: its spans overlapping [start,
// end), by start and id.
func windowOTLP(in providers.Input, start, end int64, f *filter) *providers.Analysis {
	return &providers.Analysis{Provider: provider(), Rows: otlpSlices(in, f, otlpByStartID,
		func(ts, dur int64) bool { return overlaps(ts, dur, start, end) },
		func(m map[string]any, n int64) string {
			m["matching_slice_count"] = n
			m["start_ns"], m["end_ns"] = nanos(start), nanos(end)
			return "no_slices_in_window: no span of the trace overlaps the window; the metrics count the whole trace."
		},
		func(s *otlpSlice) any {
			kind := otlp.KindName(s.kind)
			return gen.TraceWindowRow{ID: s.id, ParentID: s.parent, Name: sliceName(s.name), Category: &kind,
				Ts: nanos(s.ts), Dur: nanos(s.dur), TrackID: s.track}
		})}
}
