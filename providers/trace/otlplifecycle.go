package trace

import (
	"context"
	"encoding/hex"
	"fmt"
	"math/big"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/trace/otlp"
)

// transition is one lifecycle row: a span start (0), event (1) or end (2).
type transition struct {
	time    uint64
	span    [8]byte
	kind    int8
	event   int32
	ordinal int64
	trace   [16]byte
	parent  [8]byte
	hasPar  bool
	name    string
	evName  string
}

var transitionNames = [...]string{"span_started", "span_event", "span_ended"}

func byLifecycle(a, b *transition) bool {
	if a.time != b.time {
		return a.time < b.time
	}
	if a.span != b.span {
		for i := range a.span {
			if a.span[i] != b.span[i] {
				return a.span[i] < b.span[i]
			}
		}
	}
	if a.kind != b.kind {
		return a.kind < b.kind
	}
	if a.event != b.event {
		return a.event < b.event
	}
	return a.ordinal < b.ordinal
}

// unanos renders unsigned nanoseconds like nanos.
func unanos(v uint64) any {
	if v > 1<<53-1 {
		return new(big.Int).SetUint64(v).String()
	}
	return int64(v)
}

// otlpLifecycle is summarize_trace_lifecycle on an OTLP trace: every span's start, its
// events and its end, in lifecycle order.
func otlpLifecycle(in providers.Input) *providers.Analysis {
	return &providers.Analysis{Provider: provider(), Rows: &ranked[transition]{less: byLifecycle,
		fill: func(ctx context.Context, keep func(*transition)) (int64, *providers.Page, error) {
			var n, missing int64
			var c transition
			st, err := readOTLP(ctx, in, func(s *otlp.Span) error {
				c = transition{span: s.SpanID, ordinal: s.Ordinal, trace: s.TraceID, parent: s.ParentSpanID, hasPar: s.HasParent, name: s.Name}
				offer := func(t uint64, kind int8, ev int32, name string) {
					if t == 0 {
						missing++
						return
					}
					n++
					c.time, c.kind, c.event, c.evName = t, kind, ev, name
					keep(&c)
				}
				offer(s.Start, 0, 0, "")
				for i := range s.Events {
					offer(s.Events[i].Time, 1, int32(i), s.Events[i].Name)
				}
				offer(s.End, 2, 0, "")
				return nil
			})
			if err != nil {
				return 0, nil, err
			}
			m := otlpTables(st, map[string]any{"transition_count": n, "span_count": st.Spans, "event_count": st.Events})
			lim := otlpLimitations(st)
			if missing > 0 {
				m["missing_timestamp_count"] = missing
				lim = append(lim, fmt.Sprintf("%d span starts, ends or events have no timestamp and are not listed.", missing))
			}
			if n == 0 {
				lim = append(lim, "no_spans_observed: the trace holds no timed span.")
			}
			return n, &providers.Page{Metrics: m, Limitations: lim}, nil
		},
		rows: func(_ context.Context, sel []transition) ([]any, error) {
			out := make([]any, len(sel))
			for i := range sel {
				t := &sel[i]
				row := gen.TraceLifecycleRow{Transition: transitionNames[t.kind], TimeUnixNano: unanos(t.time),
					TraceID: hex.EncodeToString(t.trace[:]), SpanID: hex.EncodeToString(t.span[:]), Operation: sliceName(t.name)}
				if t.hasPar {
					p := hex.EncodeToString(t.parent[:])
					row.ParentSpanID = &p
				}
				if t.kind == 1 {
					e := t.evName
					row.EventName = &e
				}
				out[i] = row
			}
			return out, nil
		}}}
}
