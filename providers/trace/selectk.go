package trace

import (
	"context"
	"encoding/json"

	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/trace/tracemodel"
)

// ranked is a Rows that reads the whole population on every Page and keeps only the
// rows up to the page's end: fill offers every row of one read to keep and returns the
// population size and the read's metrics and limitations; encode projects kept row i.
type ranked[T any] struct {
	less func(a, b *T) bool
	own  func(*T)
	// fill reads the trace, offers each row, and returns the population size.
	fill func(ctx context.Context, keep func(*T)) (int64, *providers.Page, error)
	// rows projects the selected items (in order) into encodable rows.
	rows func(ctx context.Context, sel []T) ([]any, error)
}

func (r *ranked[T]) Page(ctx context.Context, offset, limit int64, fits func(json.RawMessage) bool) (*providers.Page, error) {
	end := min(offset+limit, int64(providers.MaxProjectionRows))
	h := &tracemodel.TopK[T]{K: int(end + 1), Less: r.less, Own: r.own}
	total, page, err := r.fill(ctx, h.Offer)
	if err != nil {
		return nil, err
	}
	if page == nil {
		page = &providers.Page{}
	}
	reach := min(total, int64(providers.MaxProjectionRows))
	if offset > 0 && offset >= reach {
		return nil, &providers.OffsetError{Offset: offset, Available: reach}
	}
	sel := h.Sorted()
	if int64(len(sel)) > offset {
		sel = sel[offset:min(int64(len(sel)), end)]
	} else {
		sel = nil
	}
	rows, err := r.rows(ctx, sel)
	if err != nil {
		return nil, err
	}
	stop := offset
	for _, row := range rows {
		b, err := providers.EncodeRow(row)
		if err != nil {
			return nil, err
		}
		if fits != nil && !fits(b) {
			break
		}
		page.Rows = append(page.Rows, b)
		stop++
	}
	page.More = stop < reach
	page.Observed = stop
	if page.More {
		page.Observed++
	}
	page.Limited = !page.More && total > int64(providers.MaxProjectionRows)
	return page, nil
}

// query is a ranked population of the slices of one trace: the slices pick accepts, in
// less order, with the operation's figures, and rows projected from the selected page.
type query struct {
	in   providers.Input
	tp   *traceProcessor
	less func(a, b *slice) bool
	// pick says whether a slice belongs to the population and with which event kind;
	// it may count what the figures report (reset by begin before every read).
	pick  func(*tracemodel.Nested) (kind string, ok bool)
	begin func()
	// figures adds the operation's metrics for a population of n, and the limitation
	// an empty population carries.
	figures func(m map[string]any, n int64) (empty string)
	project func(ctx context.Context, sc *scan, sel []slice) ([]any, error)
	// filter narrows the population pick accepts (nil: no filter).
	filter *filter
}

func (q *query) rows() providers.Rows {
	var sc *scan
	return &ranked[slice]{less: q.less, own: ownSlice,
		fill: func(ctx context.Context, keep func(*slice)) (int64, *providers.Page, error) {
			if q.begin != nil {
				q.begin()
			}
			var n, excluded int64
			var err error
			// c is reused for every candidate: keep copies (and owns) only what it keeps,
			// so a candidate costs no allocation.
			var c slice
			sc, err = read(ctx, q.in, q.tp, func(s *tracemodel.Nested) error {
				kind, ok := q.pick(s)
				if !ok {
					return nil
				}
				if !q.filter.passKind(s, kind) {
					excluded++
					return nil
				}
				n++
				c = slice{Nested: *s, kind: kind}
				keep(&c)
				return nil
			})
			if err != nil {
				return 0, nil, err
			}
			m := sc.metrics()
			lim := sc.limitations()
			empty := q.figures(m, n)
			q.filter.figures(m, excluded)
			switch {
			case n == 0 && excluded > 0:
				lim = append(lim, q.filter.emptyNote(excluded, "slices"))
			case n == 0:
				lim = append(lim, empty)
			}
			return n, &providers.Page{Metrics: m, Limitations: lim}, nil
		},
		rows: func(ctx context.Context, sel []slice) ([]any, error) { return q.project(ctx, sc, sel) }}
}
