package tracemodel

import (
	"fmt"
	"math/rand"
	"slices"
	"testing"
)

// refNest is the Nester's contract computed plainly: a linear scan for the earliest held
// slice instead of a heap, and no shortcut for a full buffer.
func refNest(evs []Event, opens map[int]openMark, window, maxHeld int) []Nested {
	var held []Event
	open := map[int64]int64{}
	type tr struct {
		stack   []nestOpen
		last    slotKey
		hasLast bool
	}
	tracks := map[int64]*tr{}
	var out []Nested
	minIdx := func() int {
		m := 0
		for i := range held {
			if (slotKey{held[i].TS, held[i].Dur, held[i].ID}).less(slotKey{held[m].TS, held[m].Dur, held[m].ID}) {
				m = i
			}
		}
		return m
	}
	release := func(i int) {
		e := held[i]
		held = append(held[:i], held[i+1:]...)
		t := tracks[e.Track]
		if t == nil {
			t = &tr{}
			tracks[e.Track] = t
		}
		parent, depth := int64(-1), int32(0)
		k := slotKey{e.TS, e.Dur, e.ID}
		if t.hasLast && k.less(t.last) {
		} else {
			t.last, t.hasLast = k, true
			for len(t.stack) > 0 && t.stack[len(t.stack)-1].end <= e.TS {
				t.stack = t.stack[:len(t.stack)-1]
			}
			end := e.TS + e.Dur
			if len(t.stack) == 0 || end <= t.stack[len(t.stack)-1].end {
				if len(t.stack) > 0 {
					top := t.stack[len(t.stack)-1]
					parent, depth = top.id, top.depth+1
				}
				t.stack = append(t.stack, nestOpen{id: e.ID, end: end, depth: depth})
			} else {
				for j := len(t.stack) - 1; j >= 0; j-- {
					if t.stack[j].end >= end {
						parent, depth = t.stack[j].id, t.stack[j].depth+1
						break
					}
				}
			}
		}
		out = append(out, Nested{Event: e, ParentID: parent, Depth: depth})
	}
	for i, e := range evs {
		if m, ok := opens[i]; ok {
			open[m.id] = m.ts
		}
		delete(open, e.ID)
		held = append(held, e)
		for len(held) > window {
			m := minIdx()
			if len(held) <= maxHeld && len(open) > 0 {
				first := true
				var lo int64
				for _, ts := range open {
					if first || ts < lo {
						lo, first = ts, false
					}
				}
				if held[m].TS >= lo {
					break
				}
			}
			release(m)
		}
	}
	for len(held) > 0 {
		release(minIdx())
	}
	return out
}

// TestNesterMatchesReference compares the Nester (heap, full-buffer shortcut, open
// begins) with refNest on random, partly disordered slices.
func TestNesterMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	for round := 0; round < 300; round++ {
		n := 1 + rng.Intn(400)
		window := 1 + rng.Intn(40)
		maxHeld := window + rng.Intn(60)
		spread := 30
		if round%10 == 9 {
			// Long enough for the run to fill, move its held slices to its front
			// and grow, with wider disorder.
			n, window = 3000+rng.Intn(5000), 1+rng.Intn(2500)
			maxHeld, spread = window+rng.Intn(3000), []int{300, 3000, 20000}[round/10%3]
		}
		evs := make([]Event, n)
		opens := map[int]openMark{}
		clock := int64(0)
		for i := range evs {
			clock += int64(rng.Intn(5))
			ts := clock - int64(rng.Intn(spread)) // out of order now and then
			evs[i] = Event{ID: int64(i), TS: ts, Dur: int64(rng.Intn(40)), Track: int64(rng.Intn(3)), Name: fmt.Sprint("s", i)}
			if rng.Intn(8) == 0 {
				x := int64(rng.Intn(50))
				evs[i].Args.ExternalID = &x
			}
		}
		// Some slices are announced (Open) a few slices before they arrive.
		for i := range evs {
			if rng.Intn(6) == 0 {
				at := max(0, i-rng.Intn(20))
				if _, dup := opens[at]; !dup {
					opens[at] = openMark{ts: evs[i].TS, id: evs[i].ID}
				}
			}
		}
		want := refNest(evs, opens, window, maxHeld)
		var got []Nested
		nest := NewNester(NesterOptions{Window: window, MaxHeld: maxHeld}, nil, func(s *Nested) error {
			got = append(got, s.Clone())
			return nil
		})
		if round%2 == 1 {
			// A short run sends more arrivals to the reorder queue's heap.
			nest.buf.shift = 1 + rng.Intn(8)
		}
		if round%10 == 9 {
			nest.buf.shift = []int{0, 1 + rng.Intn(300)}[round/10%2]
		}
		for i := range evs {
			if m, ok := opens[i]; ok {
				nest.Open(m.id, 0, m.ts)
			}
			if err := nest.Slice(&evs[i]); err != nil {
				t.Fatal(err)
			}
		}
		if err := nest.Flush(); err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("round %d: %d slices, want %d", round, len(got), len(want))
		}
		for i := range want {
			g, w := got[i], want[i]
			if g.ID != w.ID || g.ParentID != w.ParentID || g.Depth != w.Depth || g.TS != w.TS || g.Dur != w.Dur || g.Name != w.Name ||
				(g.Args.ExternalID == nil) != (w.Args.ExternalID == nil) || (g.Args.ExternalID != nil && *g.Args.ExternalID != *w.Args.ExternalID) {
				t.Fatalf("round %d (window %d, max held %d): slice %d is %+v, want %+v", round, window, maxHeld, i, g, w)
			}
		}
	}
}

// TestReorderQueue checks the reorder queue (sorted run and heap) against a sort, on
// keys arriving in order, slightly and far out of order, with releases in between.
func TestReorderQueue(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	for round := 0; round < 200; round++ {
		q := reorderQueue{shift: 1 + rng.Intn(300)}
		var waiting []slotKey
		var clock int64
		spread := []int64{0, 3, 50, 10_000}[round%4]
		for i := 0; i < 2000; i++ {
			if rng.Intn(3) > 0 || len(waiting) == 0 {
				clock += int64(rng.Intn(4))
				k := slotKey{ts: clock - rng.Int63n(spread+1), dur: int64(rng.Intn(3)), id: int64(i)}
				waiting = append(waiting, k)
				q.push(&held{slotKey: k})
				if m := q.min(); m.slotKey != minKey(waiting) {
					t.Fatalf("round %d: min %+v after push, want %+v", round, m.slotKey, minKey(waiting))
				}
				continue
			}
			want := minKey(waiting)
			got := q.pop().id
			if got != want.id {
				t.Fatalf("round %d: popped slot %d, want %d", round, got, want.id)
			}
			waiting = slices.DeleteFunc(waiting, func(k slotKey) bool { return k == want })
			if q.len() != len(waiting) {
				t.Fatalf("round %d: len %d, want %d", round, q.len(), len(waiting))
			}
		}
		for len(waiting) > 0 {
			want := minKey(waiting)
			if got := q.pop().id; got != want.id {
				t.Fatalf("round %d: draining popped slot %d, want %d", round, got, want.id)
			}
			waiting = slices.DeleteFunc(waiting, func(k slotKey) bool { return k == want })
		}
	}
}

func minKey(ks []slotKey) slotKey {
	m := ks[0]
	for _, k := range ks[1:] {
		if k.less(m) {
			m = k
		}
	}
	return m
}
