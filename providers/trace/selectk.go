package trace

import (
	"context"
	"encoding/json"
	"sort"

	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/trace/tracemodel"
)

// topK keeps the k smallest items under less, in bounded memory: a max-heap whose root
// is the largest kept item.
type topK[T any] struct {
	k    int
	less func(a, b *T) bool
	// own makes a kept item independent of the reader's reused buffers.
	own   func(*T)
	items []T
}

// offer keeps v when it is among the k smallest seen; only a kept item is owned, so
// rejected candidates cost no copy.
func (h *topK[T]) offer(v *T) {
	if h.k <= 0 {
		return
	}
	if len(h.items) < h.k {
		if h.own != nil {
			h.own(v)
		}
		h.items = append(h.items, *v)
		h.up(len(h.items) - 1)
		return
	}
	if h.less(v, &h.items[0]) {
		if h.own != nil {
			h.own(v)
		}
		h.items[0] = *v
		h.down(0)
	}
}

// up and down restore the max-heap order (the root is the largest item) after item j
// changed.
func (h *topK[T]) up(j int) {
	for j > 0 {
		p := (j - 1) / 2
		if !h.less(&h.items[p], &h.items[j]) {
			break
		}
		h.items[p], h.items[j] = h.items[j], h.items[p]
		j = p
	}
}

func (h *topK[T]) down(j int) {
	n := len(h.items)
	for {
		l := 2*j + 1
		if l >= n {
			return
		}
		c := l
		if r := l + 1; r < n && h.less(&h.items[l], &h.items[r]) {
			c = r
		}
		if !h.less(&h.items[j], &h.items[c]) {
			return
		}
		h.items[j], h.items[c] = h.items[c], h.items[j]
		j = c
	}
}

// sorted returns the kept items in ascending order.
func (h *topK[T]) sorted() []T {
	out := append([]T(nil), h.items...)
	sort.Slice(out, func(i, j int) bool { return h.less(&out[i], &out[j]) })
	return out
}

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
	h := &topK[T]{k: int(end + 1), less: r.less, own: r.own}
	total, page, err := r.fill(ctx, h.offer)
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
	sel := h.sorted()
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
