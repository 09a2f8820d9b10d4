package trace

import "testing"

// TestOTLPSelfTime checks the covered time of hand-made spans: concurrent children count
// once, a child outliving its parent counts up to the parent's end, a span naming itself
// as parent covers nothing, children of a repeated key go to the first span of that key,
// and a child that is in no listed operation still covers its parent.
func TestOTLPSelfTime(t *testing.T) {
	tr := [16]byte{1}
	other := [16]byte{2}
	sp := func(b byte) [8]byte { return [8]byte{b} }
	span := func(trace [16]byte, id, parent byte, start, end int64, op int32) otlpSelfSpan {
		return otlpSelfSpan{trace: trace, span: sp(id), parent: sp(parent), hasParent: parent != 0,
			start: start, end: end, op: op, timed: end >= start}
	}
	spans := []otlpSelfSpan{
		span(tr, 1, 0, 0, 100, 0),    // P: children cover [10,60] and [90,100]
		span(tr, 2, 1, 30, 60, 1),    // B, concurrent with A
		span(tr, 3, 1, 10, 40, 1),    // A
		span(tr, 4, 1, 90, 150, -1),  // C outlives P, in no listed operation
		span(tr, 5, 5, 0, 100, 2),    // names itself: no children
		span(tr, 1, 0, 200, 300, 3),  // repeats P's key: not a parent
		span(other, 6, 1, 0, 100, 1), // P's span id in another trace: an orphan
		span(tr, 7, 0, 0, 50, 4),     // Q
		span(tr, 8, 7, 10, 10, 1),    // zero-length child covers nothing
		span(tr, 9, 7, 60, 70, 1),    // starts after Q ends
		span(tr, 10, 0, 10, 5, 0),    // untimed
		{trace: tr, span: sp(11), parent: sp(10), hasParent: true, start: 6, end: 8, op: 1, timed: true},
	}
	spans[10].timed = false
	got := otlpSelfTime(spans, 5)
	want := []uint64{60, 0, 0, 0, 0}
	for i, w := range want {
		if got[i].hi != 0 || got[i].lo != w {
			t.Errorf("operation %d covered %v, want %d", i, got[i], w)
		}
	}
}
