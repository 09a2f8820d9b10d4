package trace

import (
	"context"
	"fmt"
	"math/big"
	"sort"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/trace/otlp"
)

// operation aggregates the spans of one (name, kind, status).
type operation struct {
	name         string
	kind, status int32
	calls, timed int64
	// total is the exact sum of the timed durations, covered the part of them child
	// spans cover.
	total, covered u128
	max            int64
	index          int32
}

func cmpOps(a, b *operation) int {
	if c := b.total.cmp(a.total); c != 0 {
		return c
	}
	if a.calls != b.calls {
		return cmpU(uint64(b.calls), uint64(a.calls))
	}
	if a.name != b.name {
		if a.name < b.name {
			return -1
		}
		return 1
	}
	if a.kind != b.kind {
		return int(a.kind - b.kind)
	}
	return int(a.status - b.status)
}

func cmpU(a, b uint64) int {
	if a < b {
		return -1
	}
	return 1
}

// maxOperations bounds the distinct operations one read aggregates.
const maxOperations = providers.MaxProjectionRows

// otlpOperations ranks an OTLP trace's spans by (name, kind, status).
func otlpOperations(ctx context.Context, in providers.Input, f *filter) (*providers.Analysis, error) {
	type key struct {
		name         string
		kind, status int32
	}
	ops := map[key]*operation{}
	var missing, dropped, excluded int64
	// spans keeps what self time needs of every span, until maxSelfSpans.
	var spans []otlpSelfSpan
	selfKept := true
	st, err := readOTLP(ctx, in, func(s *otlp.Span) error {
		ts, dur, timed := timing(s)
		var self *otlpSelfSpan
		if selfKept {
			if len(spans) == maxSelfSpans {
				spans, selfKept = nil, false
			} else {
				spans = append(spans, otlpSelfSpan{trace: s.TraceID, span: s.SpanID, parent: s.ParentSpanID,
					start: ts, end: ts + dur, op: -1, hasParent: s.HasParent, timed: timed})
				self = &spans[len(spans)-1]
			}
		}
		if f != nil && !f.span(s.Name, otlp.KindName(s.Kind), dur, timed) {
			excluded++
			return nil
		}
		k := key{s.Name, s.Kind, s.StatusCode}
		o := ops[k]
		if o == nil {
			if len(ops) >= maxOperations {
				dropped++
				return nil
			}
			o = &operation{name: s.Name, kind: s.Kind, status: s.StatusCode, index: int32(len(ops))}
			ops[k] = o
		}
		if self != nil {
			self.op = o.index
		}
		o.calls++
		if !timed {
			missing++
			return nil
		}
		o.total.add(dur)
		if o.timed == 0 || dur > o.max {
			o.max = dur
		}
		o.timed++
		return nil
	})
	if err != nil {
		return nil, err
	}
	list := make([]*operation, 0, len(ops))
	for _, o := range ops {
		list = append(list, o)
	}
	if selfKept {
		covered := otlpSelfTime(spans, len(ops))
		for _, o := range list {
			o.covered = covered[o.index]
		}
	}
	spans = nil
	sort.Slice(list, func(i, j int) bool { return cmpOps(list[i], list[j]) < 0 })
	m := otlpTables(st, map[string]any{"operation_count": len(list), "span_count": st.Spans, "missing_duration_count": missing})
	lim := otlpLimitations(st)
	if !selfKept {
		lim = append(lim, fmt.Sprintf("The trace holds more than %d spans: self_duration_ns is not computed.", maxSelfSpans))
	}
	if dropped > 0 {
		lim = append(lim, fmt.Sprintf("More than %d distinct operations: %d spans of further operations were not aggregated.", maxOperations, dropped))
	}
	f.figures(m, excluded)
	switch {
	case len(list) == 0 && excluded > 0:
		lim = append(lim, f.emptyNote(excluded, "spans"))
	case len(list) == 0:
		lim = append(lim, "no_spans_observed: the trace holds no span.")
	}
	// A row's share is of the summed total of the listed rows of its span kind.
	totals := map[int32]*big.Int{}
	for _, o := range list {
		if totals[o.kind] == nil {
			totals[o.kind] = new(big.Int)
		}
		totals[o.kind].Add(totals[o.kind], o.total.big())
	}
	return &providers.Analysis{Provider: provider(), Metrics: m, Limitations: lim,
		Rows: providers.ProjectSlice(list, func(o *operation) gen.TraceOperationRow {
			row := gen.TraceOperationRow{Operation: sliceName(o.name), SpanKind: otlp.KindName(o.kind),
				StatusCode: ptr(otlp.StatusName(o.status)), CallCount: o.calls, TotalDurationNS: bigNanos(o.total.big()),
				ShareOfKind: share(o.total.big(), totals[o.kind])}
			if selfKept {
				row.SelfDurationNS = bigNanos(new(big.Int).Sub(o.total.big(), o.covered.big()))
			}
			if o.timed > 0 {
				row.MeanDurationNS = bigNanos(meanHalfEven(o.total.big(), o.timed))
				row.MaxDurationNS = nanos(o.max)
			}
			return row
		})}, nil
}

// meanHalfEven is total/n rounded half to even.
func meanHalfEven(total *big.Int, n int64) *big.Int {
	d := big.NewInt(n)
	q, r := new(big.Int).QuoRem(total, d, new(big.Int))
	r2 := r.Lsh(r, 1)
	if c := r2.Cmp(d); c > 0 || (c == 0 && q.Bit(0) == 1) {
		q.Add(q, big.NewInt(1))
	}
	return q
}
