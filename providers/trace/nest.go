package trace

// Nested is a slice with its place on its track: the ID of its parent (-1 for none) and
// its depth (the number of its ancestors).
type Nested struct {
	Event
	ParentID int64
	Depth    int32
}

// MetaSink receives what a Nester does not reorder: tracks and names (a Sink without
// Slice).
type MetaSink interface {
	Track(t Track)
	ThreadName(pid, tid int64, name string)
	ProcessName(pid int64, name string)
}

// NesterOptions bound a Nester's memory. A zero field takes its default.
type NesterOptions struct {
	// Window is the number of slices the reorder buffer holds before it releases the
	// earliest. Default 65,536.
	Window int
	// MaxHeld bounds the slices held while a begun slice (Opener.Open) has not arrived:
	// past Window the Nester holds the slices that start at or after the earliest open
	// begin, up to MaxHeld slices in all. Default 262,144; at least Window.
	MaxHeld int
}

// DefaultNesterOptions are the values a zero NesterOptions field takes.
var DefaultNesterOptions = NesterOptions{Window: 1 << 16, MaxHeld: 1 << 18}

// Nester takes a decoder's slices (it is a Sink, and an Opener) and releases them to a
// callback ordered by start, each with its parent and depth on its track, in memory
// bounded by its options and the open stacks of its tracks, never by the trace.
//
// Order: by (TS, longer Dur first, ID), so that on equal starts a parent comes before
// its children. Parent rule (as Perfetto's trace_processor nests slices): on the same
// track, the parent of S is the innermost slice P released before S with
// P.TS <= S.TS < P.TS+P.Dur and S.TS+S.Dur <= P.TS+P.Dur; a slice starting exactly where
// another ends is its sibling, and a slice of zero duration has no children.
//
// Producers write slices out of start order (Chrome writes X events when they end,
// children first; B/E slices arrive at their E). The Nester holds Window slices in a
// heap keyed by (TS, -Dur, ID) and releases the earliest once it holds more; it holds
// longer (up to MaxHeld) while a slice the decoder announced through Open has not
// arrived and the earliest held slice starts at or after it, so that a long-open B root
// comes out before its children. A slice released after a slice of its track with a
// later key (disorder beyond the window) still comes out, with ParentID -1 and Depth 0,
// and is counted by Unordered; it does not take part in nesting. A slice that starts
// inside the innermost open slice but ends after it is counted by Overlaps; it takes the
// innermost slice that contains it as parent and is not a parent itself.
//
// The Nested value passed to the callback, and the Args it points to, are reused after
// the callback returns; a callback that keeps it copies it.
type Nester struct {
	meta MetaSink
	emit func(*Nested) error
	opts NesterOptions

	slab []slot
	free []int32
	heap []heapEntry

	opens   []openMark // a min-heap by (ts, id), with stale marks removed lazily
	openSet map[int64]int64

	tracks map[int64]*nestTrack

	unordered, overlaps, released int64
	out                           Nested
	store                         packedArgs
	err                           error
}

type slot struct {
	id, ts, dur, track int64
	name, cat, phase   string
	args               packedArgs
}

type openMark struct{ ts, id int64 }

type nestTrack struct {
	stack   []nestOpen
	last    slotKey
	hasLast bool
}

type nestOpen struct {
	id, end int64
	depth   int32
}

type slotKey struct{ ts, dur, id int64 }

// heapEntry keeps a slot's key beside its index, so that the heap compares without
// touching the slab.
type heapEntry struct {
	slotKey
	slot int32
}

func (a slotKey) less(b slotKey) bool {
	if a.ts != b.ts {
		return a.ts < b.ts
	}
	if a.dur != b.dur {
		return a.dur > b.dur
	}
	return a.id < b.id
}

// NewNester returns a Nester that releases slices to emit (an error from emit stops it
// and is returned by later Slice and Flush calls) and forwards tracks and names to meta
// (nil: dropped).
func NewNester(opts NesterOptions, meta MetaSink, emit func(*Nested) error) *Nester {
	if opts.Window <= 0 {
		opts.Window = DefaultNesterOptions.Window
	}
	if opts.MaxHeld <= 0 {
		opts.MaxHeld = DefaultNesterOptions.MaxHeld
	}
	opts.MaxHeld = max(opts.MaxHeld, opts.Window)
	return &Nester{meta: meta, emit: emit, opts: opts, openSet: make(map[int64]int64), tracks: make(map[int64]*nestTrack)}
}

// Unordered counts the slices released after a later-starting slice of their track.
func (n *Nester) Unordered() int64 { return n.unordered }

// Overlaps counts the slices that start inside a slice of their track and end after it.
func (n *Nester) Overlaps() int64 { return n.overlaps }

// Released counts the slices released.
func (n *Nester) Released() int64 { return n.released }

// Track forwards to the MetaSink.
func (n *Nester) Track(t Track) {
	if n.meta != nil {
		n.meta.Track(t)
	}
}

// ThreadName forwards to the MetaSink.
func (n *Nester) ThreadName(pid, tid int64, name string) {
	if n.meta != nil {
		n.meta.ThreadName(pid, tid, name)
	}
}

// ProcessName forwards to the MetaSink.
func (n *Nester) ProcessName(pid int64, name string) {
	if n.meta != nil {
		n.meta.ProcessName(pid, name)
	}
}

// Open notes a begun slice that will arrive at its end (see Opener).
func (n *Nester) Open(id, track, ts int64) {
	n.openSet[id] = ts
	n.opens = append(n.opens, openMark{ts, id})
	i := len(n.opens) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !markLess(n.opens[i], n.opens[p]) {
			break
		}
		n.opens[i], n.opens[p] = n.opens[p], n.opens[i]
		i = p
	}
}

func markLess(a, b openMark) bool { return a.ts < b.ts || (a.ts == b.ts && a.id < b.id) }

// minOpen returns the earliest start of the open begins that have not arrived.
func (n *Nester) minOpen() (int64, bool) {
	for len(n.opens) > 0 {
		m := n.opens[0]
		if ts, ok := n.openSet[m.id]; ok && ts == m.ts {
			return m.ts, true
		}
		last := len(n.opens) - 1
		n.opens[0] = n.opens[last]
		n.opens = n.opens[:last]
		i := 0
		for {
			l, r, s := 2*i+1, 2*i+2, i
			if l < last && markLess(n.opens[l], n.opens[s]) {
				s = l
			}
			if r < last && markLess(n.opens[r], n.opens[s]) {
				s = r
			}
			if s == i {
				break
			}
			n.opens[i], n.opens[s] = n.opens[s], n.opens[i]
			i = s
		}
	}
	return 0, false
}

// Slice buffers a slice, releasing the earliest ones beyond the window.
func (n *Nester) Slice(e *Event) error {
	if n.err != nil {
		return n.err
	}
	var p packedArgs
	p.pack(&e.Args)
	return n.slice(e.ID, e.TS, e.Dur, e.Track, e.Name, e.Category, e.Phase, &p)
}

// slice is Slice with the arguments packed.
func (n *Nester) slice(id, ts, dur, track int64, name, cat, phase string, args *packedArgs) error {
	if n.err != nil {
		return n.err
	}
	if len(n.openSet) > 0 {
		delete(n.openSet, id)
	}
	var i int32
	if k := len(n.free); k > 0 {
		i = n.free[k-1]
		n.free = n.free[:k-1]
	} else {
		n.slab = append(n.slab, slot{})
		i = int32(len(n.slab) - 1)
	}
	s := &n.slab[i]
	*s = slot{id: id, ts: ts, dur: dur, track: track, name: name, cat: cat, phase: phase, args: *args}
	k := slotKey{ts, dur, id}
	if len(n.heap) >= n.opts.Window && len(n.heap) > 0 {
		// The buffer is full: pushing the slice would release the earliest of it and
		// the buffer. Do both in one step when nothing open holds the release back (the
		// common case): release the slice itself when it is the earliest, else replace
		// the root with it.
		first := k.less(n.heap[0].slotKey)
		at := n.heap[0].ts
		if first {
			at = ts
		}
		if len(n.heap)+1 > n.opts.MaxHeld || !n.heldBack(at) {
			if !first {
				top := n.heap[0].slot
				n.heap[0] = heapEntry{k, i}
				n.down(0)
				i = top
			}
			if err := n.release(i); err != nil {
				return err
			}
			return n.drain()
		}
	}
	n.push(i)
	return n.drain()
}

// heldBack reports whether an open begin that has not arrived starts at or before ts,
// so that a slice starting at ts waits for it.
func (n *Nester) heldBack(ts int64) bool {
	if len(n.openSet) == 0 {
		n.opens = n.opens[:0] // every mark is stale
		return false
	}
	open, ok := n.minOpen()
	return ok && ts >= open
}

// drain releases the earliest slices beyond the window.
func (n *Nester) drain() error {
	for len(n.heap) > n.opts.Window {
		if len(n.heap) <= n.opts.MaxHeld && n.heldBack(n.heap[0].ts) {
			break
		}
		if err := n.release(n.pop()); err != nil {
			return err
		}
	}
	return nil
}

// Flush releases every slice held. Call it once the decoder has returned.
func (n *Nester) Flush() error {
	for len(n.heap) > 0 && n.err == nil {
		if err := n.release(n.pop()); err != nil {
			return err
		}
	}
	return n.err
}

// The buffer is a 4-ary min-heap: half the levels of a binary one, and the children
// of an entry share a cache line or two.
func (n *Nester) push(i int32) {
	s := &n.slab[i]
	n.heap = append(n.heap, heapEntry{slotKey{s.ts, s.dur, s.id}, i})
	h := n.heap
	j := len(h) - 1
	e := h[j]
	for j > 0 {
		p := (j - 1) / 4
		if !e.less(h[p].slotKey) {
			break
		}
		h[j] = h[p]
		j = p
	}
	h[j] = e
}

func (n *Nester) pop() int32 {
	h := n.heap
	top := h[0].slot
	last := len(h) - 1
	h[0] = h[last]
	n.heap = h[:last]
	if last > 0 {
		n.down(0)
	}
	return top
}

// down moves entry j down to its place.
func (n *Nester) down(j int) {
	h := n.heap
	e := h[j]
	for {
		c := 4*j + 1
		if c >= len(h) {
			break
		}
		m := c
		for k, end := c+1, min(c+4, len(h)); k < end; k++ {
			if h[k].less(h[m].slotKey) {
				m = k
			}
		}
		if !h[m].less(e.slotKey) {
			break
		}
		h[j] = h[m]
		j = m
	}
	h[j] = e
}

// release places slot i on its track and hands it to the callback.
func (n *Nester) release(i int32) error {
	s := &n.slab[i]
	tr := n.tracks[s.track]
	if tr == nil {
		tr = &nestTrack{}
		n.tracks[s.track] = tr
	}
	parent, depth := int64(-1), int32(0)
	k := slotKey{s.ts, s.dur, s.id}
	if tr.hasLast && k.less(tr.last) {
		n.unordered++
	} else {
		tr.last, tr.hasLast = k, true
		for len(tr.stack) > 0 && tr.stack[len(tr.stack)-1].end <= s.ts {
			tr.stack = tr.stack[:len(tr.stack)-1]
		}
		end := s.ts + s.dur
		if len(tr.stack) == 0 || end <= tr.stack[len(tr.stack)-1].end {
			if len(tr.stack) > 0 {
				top := tr.stack[len(tr.stack)-1]
				parent, depth = top.id, top.depth+1
			}
			tr.stack = append(tr.stack, nestOpen{id: s.id, end: end, depth: depth})
		} else {
			n.overlaps++
			for j := len(tr.stack) - 1; j >= 0; j-- {
				if tr.stack[j].end >= end {
					parent, depth = tr.stack[j].id, tr.stack[j].depth+1
					break
				}
			}
		}
	}
	n.out = Nested{Event: Event{ID: s.id, TS: s.ts, Dur: s.dur, Track: s.track, Name: s.name, Category: s.cat,
		Phase: s.phase, Args: s.args.expand(&n.store)}, ParentID: parent, Depth: depth}
	*s = slot{}
	n.free = append(n.free, i)
	n.released++
	if err := n.emit(&n.out); err != nil {
		n.err = err
		return err
	}
	return nil
}
