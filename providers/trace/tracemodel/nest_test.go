package tracemodel

import (
	"math/rand"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// randomSlices returns properly nested slices on a few tracks, with the edge cases of
// the parent rule: children starting at their parent's start or ending at its end,
// siblings touching, and zero-duration slices.
func randomSlices(rng *rand.Rand, n, tracks int) []Event {
	var out []Event
	var gen func(track int64, start, end int64, depth int)
	gen = func(track int64, start, end int64, depth int) {
		t := start
		for t < end && len(out) < n {
			if rng.Intn(4) == 0 {
				t += rng.Int63n(5)
			}
			if t > end {
				break
			}
			s := t
			var e int64
			switch rng.Intn(6) {
			case 0:
				e = s // zero duration
			case 1:
				e = end // ends with its parent
			default:
				e = min(end, s+1+rng.Int63n(max(1, (end-s)/2+1)))
			}
			out = append(out, Event{ID: int64(len(out)), TS: s, Dur: e - s, Track: track, Name: "s", Phase: "X"})
			if depth < 8 && e > s && rng.Intn(3) > 0 {
				gen(track, s, e, depth+1)
			}
			t = e
		}
	}
	cursor := make([]int64, tracks)
	for len(out) < n {
		tr := rng.Intn(tracks)
		base := cursor[tr] + rng.Int63n(3) // roots of a track touch or follow each other
		end := base + 1 + rng.Int63n(1000)
		gen(int64(tr), base, end, 0)
		cursor[tr] = end
	}
	// IDs are file ordinals; shuffle them so that they do not follow the start order.
	perm := rng.Perm(len(out))
	for i := range out {
		out[i].ID = int64(perm[i])
	}
	return out
}

// bruteNest applies the parent rule to every pair.
func bruteNest(slices []Event) map[int64][2]int64 {
	key := func(e Event) slotKey { return slotKey{e.TS, e.Dur, e.ID} }
	parent := map[int64]int64{}
	for _, s := range slices {
		best := -1
		for j, p := range slices {
			if p.Track != s.Track || !key(p).less(key(s)) {
				continue
			}
			if p.TS <= s.TS && s.TS < p.TS+p.Dur && s.TS+s.Dur <= p.TS+p.Dur {
				if best < 0 || key(slices[best]).less(key(p)) {
					best = j
				}
			}
		}
		parent[s.ID] = -1
		if best >= 0 {
			parent[s.ID] = slices[best].ID
		}
	}
	out := map[int64][2]int64{}
	for id, p := range parent {
		d := int64(0)
		for q := p; q != -1; q = parent[q] {
			d++
		}
		out[id] = [2]int64{p, d}
	}
	return out
}

func runNester(t *testing.T, opts NesterOptions, in []Event, open func(n *Nester, i int)) (*Nester, []Nested) {
	t.Helper()
	var out []Nested
	n := NewNester(opts, nil, func(x *Nested) error {
		out = append(out, *x)
		return nil
	})
	for i := range in {
		if open != nil {
			open(n, i)
		}
		if err := n.Slice(&in[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := n.Flush(); err != nil {
		t.Fatal(err)
	}
	if len(out) != len(in) {
		t.Fatalf("released %d of %d", len(out), len(in))
	}
	return n, out
}

func TestNesterRandom(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	for round := 0; round < 20; round++ {
		slices := randomSlices(rng, 50+rng.Intn(400), 1+rng.Intn(3))
		want := bruteNest(slices)
		orders := map[string][]Event{}
		start := append([]Event(nil), slices...)
		sort.Slice(start, func(i, j int) bool {
			return slotKey{start[i].TS, start[i].Dur, start[i].ID}.less(slotKey{start[j].TS, start[j].Dur, start[j].ID})
		})
		orders["start"] = start
		// End order, as Chrome writes X events: by end, the inner (later key) first.
		end := append([]Event(nil), slices...)
		sort.Slice(end, func(i, j int) bool {
			a, b := end[i], end[j]
			if a.TS+a.Dur != b.TS+b.Dur {
				return a.TS+a.Dur < b.TS+b.Dur
			}
			return slotKey{b.TS, b.Dur, b.ID}.less(slotKey{a.TS, a.Dur, a.ID})
		})
		orders["end"] = end
		shuffled := append([]Event(nil), slices...)
		rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		orders["shuffled"] = shuffled
		for name, in := range orders {
			n, out := runNester(t, NesterOptions{Window: len(in)}, in, nil)
			got := map[int64][2]int64{}
			for i, x := range out {
				got[x.ID] = [2]int64{x.ParentID, int64(x.Depth)}
				if i > 0 && (slotKey{x.TS, x.Dur, x.ID}).less(slotKey{out[i-1].TS, out[i-1].Dur, out[i-1].ID}) {
					t.Fatalf("round %d %s: released out of order", round, name)
				}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("round %d %s: (-brute +nester)\n%s", round, name, diff)
			}
			if n.Unordered() != 0 || n.Overlaps() != 0 {
				t.Fatalf("round %d %s: unordered %d overlaps %d", round, name, n.Unordered(), n.Overlaps())
			}
		}
		// Start order needs no window at all.
		n, out := runNester(t, NesterOptions{Window: 1}, start, nil)
		got := map[int64][2]int64{}
		for _, x := range out {
			got[x.ID] = [2]int64{x.ParentID, int64(x.Depth)}
		}
		if diff := cmp.Diff(want, got); diff != "" || n.Unordered() != 0 {
			t.Fatalf("round %d start order, window 1: (-brute +nester)\n%s", round, diff)
		}
	}
}

func TestNesterWindowOverflow(t *testing.T) {
	rng := rand.New(rand.NewSource(11))
	slices := randomSlices(rng, 2000, 2)
	rng.Shuffle(len(slices), func(i, j int) { slices[i], slices[j] = slices[j], slices[i] })
	n, out := runNester(t, NesterOptions{Window: 16}, slices, nil)
	if n.Unordered() == 0 {
		t.Fatal("a shuffle beyond the window counted no unordered slice")
	}
	var late int64
	for _, x := range out {
		if x.ParentID == -1 && x.Depth == 0 {
			late++
		}
	}
	if late < n.Unordered() {
		t.Fatalf("%d unordered, %d released without a parent", n.Unordered(), late)
	}
}

// TestNesterHoldsOpenRoot: a B root open across more slices than the window arrives at
// its E, after its children; announced through Open, it still comes out first.
func TestNesterHoldsOpenRoot(t *testing.T) {
	in := []Event{}
	for i := 1; i <= 100; i++ {
		in = append(in, Event{ID: int64(i), TS: int64(10 * i), Dur: 5, Phase: "X"})
	}
	in = append(in, Event{ID: 0, TS: 0, Dur: 10_000, Phase: "B"})
	opts := NesterOptions{Window: 8, MaxHeld: 1000}
	n, out := runNester(t, opts, in, func(n *Nester, i int) {
		if i == 0 {
			n.Open(0, 0, 0)
		}
	})
	if n.Unordered() != 0 || out[0].ID != 0 || out[1].ParentID != 0 || out[1].Depth != 1 {
		t.Fatalf("unordered %d, first %+v, second %+v", n.Unordered(), out[0], out[1])
	}
	// Past MaxHeld the children go out, and the root is counted.
	opts.MaxHeld = 50
	n, out = runNester(t, opts, in, func(n *Nester, i int) {
		if i == 0 {
			n.Open(0, 0, 0)
		}
	})
	if n.Unordered() != 1 || out[0].ID == 0 {
		t.Fatalf("unordered %d, first %+v", n.Unordered(), out[0])
	}
	// Without Open, the window alone releases the children first.
	n, _ = runNester(t, opts, in, nil)
	if n.Unordered() != 1 {
		t.Fatalf("unordered %d", n.Unordered())
	}
}

func TestNesterOverlap(t *testing.T) {
	in := []Event{
		{ID: 0, TS: 0, Dur: 100},
		{ID: 1, TS: 10, Dur: 20},
		{ID: 2, TS: 20, Dur: 40}, // starts inside 1, ends after it: inside 0
		{ID: 3, TS: 100, Dur: 1}, // a sibling of 0: starts where it ends
		{ID: 4, TS: 50, Dur: 0},
		{ID: 5, TS: 50, Dur: 0}, // zero duration: not a parent
	}
	n, out := runNester(t, NesterOptions{}, in, nil)
	got := map[int64][2]int64{}
	for _, x := range out {
		got[x.ID] = [2]int64{x.ParentID, int64(x.Depth)}
	}
	want := map[int64][2]int64{0: {-1, 0}, 1: {0, 1}, 2: {0, 1}, 3: {-1, 0}, 4: {0, 1}, 5: {0, 1}}
	if diff := cmp.Diff(want, got); diff != "" || n.Overlaps() != 1 {
		t.Fatalf("overlaps %d (-want +got)\n%s", n.Overlaps(), diff)
	}
}

// TestNesterClose: a begin announced with Open holds back the slices after it (past the
// window) until it arrives; one that Close says will not arrive holds nothing.
func TestNesterClose(t *testing.T) {
	for _, closed := range []bool{false, true} {
		released := 0
		n := NewNester(NesterOptions{Window: 4, MaxHeld: 100}, nil, func(*Nested) error { released++; return nil })
		n.Open(1, 0, 10)
		if closed {
			n.Close(1)
		}
		for i := int64(0); i < 10; i++ {
			if err := n.Slice(&Event{ID: 2 + i, TS: 20 + i, Dur: 1, Track: 0, Name: "s"}); err != nil {
				t.Fatal(err)
			}
		}
		if want := map[bool]int{false: 0, true: 6}[closed]; released != want {
			t.Errorf("closed %v: %d slices released before the end, want %d", closed, released, want)
		}
	}
}
