package trace

import (
	"bytes"
	"cmp"
	"slices"
)

// cover measures how much of a parent's interval [start, end) its children cover: the
// union of their intervals clipped to the parent's, the children arriving in start
// order. On properly nested slices it is the sum of the children's durations; on spans
// whose children run concurrently or outlive their parent, it never passes the parent's
// duration, so self time (duration less cover) is never negative.
type cover struct{ end, until, covered int64 }

func newCover(start, end int64) cover { return cover{end: end, until: start} }

// add takes the next child, [start, end), in start order.
func (c *cover) add(start, end int64) {
	start, end = max(start, c.until), min(end, c.end)
	if end > start {
		c.covered += end - start
		c.until = end
	}
}

// maxSelfSpans bounds the spans an OTLP read remembers to compute self time; past it the
// operation rows carry no self_duration_ns and a limitation says so.
const maxSelfSpans = 1 << 20

// otlpSelfSpan is what self time needs of one span: its key, its parent's key, its
// interval (timed only) and the operation it counts towards (-1: none listed).
type otlpSelfSpan struct {
	trace            [16]byte
	span, parent     [8]byte
	start, end       int64
	op               int32
	hasParent, timed bool
}

// otlpSelfTime gives each operation the part of its spans' durations that no child span
// covers: a span's children are the timed spans naming it as parent (the first span in
// the file with that trace and span id, as parent_id does; a span naming itself has
// none). It returns the covered nanoseconds per operation index.
func otlpSelfTime(spans []otlpSelfSpan, ops int) []u128 {
	covered := make([]u128, ops)
	key := func(i int32) ([16]byte, [8]byte) { return spans[i].trace, spans[i].span }
	// parents: every span by key, the first of each key kept.
	parents := make([]int32, len(spans))
	for i := range parents {
		parents[i] = int32(i)
	}
	byKey := func(a, b int32) int {
		ta, sa := key(a)
		tb, sb := key(b)
		if c := bytes.Compare(ta[:], tb[:]); c != 0 {
			return c
		}
		if c := bytes.Compare(sa[:], sb[:]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	}
	slices.SortFunc(parents, byKey)
	parents = slices.CompactFunc(parents, func(a, b int32) bool {
		ta, sa := key(a)
		tb, sb := key(b)
		return ta == tb && sa == sb
	})
	// children: the timed spans with a parent and a positive duration, by parent, then start.
	var children []int32
	for i := range spans {
		if s := &spans[i]; s.hasParent && s.timed && s.end > s.start {
			children = append(children, int32(i))
		}
	}
	slices.SortFunc(children, func(a, b int32) int {
		x, y := &spans[a], &spans[b]
		if c := bytes.Compare(x.trace[:], y.trace[:]); c != 0 {
			return c
		}
		if c := bytes.Compare(x.parent[:], y.parent[:]); c != 0 {
			return c
		}
		return cmp.Compare(x.start, y.start)
	})
	for i := 0; i < len(children); {
		c := &spans[children[i]]
		j := i + 1
		for j < len(children) && spans[children[j]].trace == c.trace && spans[children[j]].parent == c.parent {
			j++
		}
		at, found := slices.BinarySearchFunc(parents, c, func(p int32, c *otlpSelfSpan) int {
			tp, sp := key(p)
			if x := bytes.Compare(tp[:], c.trace[:]); x != 0 {
				return x
			}
			return bytes.Compare(sp[:], c.parent[:])
		})
		if found {
			p := parents[at]
			if ps := &spans[p]; ps.timed && ps.op >= 0 {
				cv := newCover(ps.start, ps.end)
				for _, k := range children[i:j] {
					if k != p {
						cv.add(spans[k].start, spans[k].end)
					}
				}
				covered[ps.op].add(cv.covered)
			}
		}
		i = j
	}
	return covered
}
