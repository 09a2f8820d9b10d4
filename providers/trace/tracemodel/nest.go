package tracemodel

// Nested is a slice with its place on its track: the ID of its parent (-1 for none) and
// its depth (the number of its ancestors).
type Nested struct {
	Event
	ParentID int64
	// ParentName is the parent's name ("" when ParentID < 0).
	ParentName string
	Depth      int32
}

// Clone copies n and the argument values it points to, for a callback that keeps it.
func (n *Nested) Clone() Nested {
	c := *n
	c.Args = n.Args.Clone()
	return c
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
// reorder buffer ordered by (TS, -Dur, ID) and releases the earliest once it holds more;
// it holds longer (up to MaxHeld) while a slice the decoder announced through Open has not
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

	buf reorderQueue
	// in holds the arriving slice.
	in held

	opens   []openMark // a min-heap by (ts, id), with stale marks removed lazily
	openSet map[int64]int64

	// dense holds the tracks whose IDs are below maxDenseTrack (decoders number their
	// tracks from 0 or 1), tracks the others.
	dense  []nestTrack
	tracks map[int64]*nestTrack

	unordered, overlaps, released int64
	out                           Nested
	store                         PackedArgs
	err                           error
}

// held is a slice in the reorder buffer: its key and what it is released with. The
// buffer holds the slices themselves, not indexes into a store beside it, so that
// releasing, which takes them nearly in the order they were added, reads memory in
// order (an index led to a slot last touched a window of arrivals before: a cache
// miss per slice).
type held struct {
	slotKey
	track            int64
	name, cat, phase string
	args             PackedArgs
}

type openMark struct{ ts, id int64 }

type nestTrack struct {
	stack   []nestOpen
	last    slotKey
	hasLast bool
}

type nestOpen struct {
	id, end int64
	name    string
	depth   int32
}

type slotKey struct{ ts, dur, id int64 }

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

// Close forgets the begin Open announced with id: no slice will come for it. Its mark
// in the heap goes stale and is dropped lazily.
func (n *Nester) Close(id int64) { delete(n.openSet, id) }

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
	var p PackedArgs
	p.Pack(&e.Args)
	return n.SlicePacked(e.ID, e.TS, e.Dur, e.Track, e.Name, e.Category, e.Phase, &p)
}

// SlicePacked is Slice with the arguments packed (PackedSink).
func (n *Nester) SlicePacked(id, ts, dur, track int64, name, cat, phase string, args *PackedArgs) error {
	if n.err != nil {
		return n.err
	}
	if len(n.openSet) > 0 {
		delete(n.openSet, id)
	}
	e := &n.in
	*e = held{slotKey: slotKey{ts, dur, id}, track: track, name: name, cat: cat, phase: phase, args: *args}
	if n.buf.len() >= n.opts.Window && n.buf.len() > 0 {
		// The buffer is full: pushing the slice would release the earliest of it and
		// the buffer. Do both in one step when nothing open holds the release back (the
		// common case): release the slice itself when it is the earliest, else replace
		// the root with it.
		root := n.buf.min()
		first := e.less(root.slotKey)
		at := root.ts
		if first {
			at = ts
		}
		if n.buf.len()+1 > n.opts.MaxHeld || !n.heldBack(at) {
			if !first {
				e = n.buf.replaceMin(e)
			}
			if err := n.release(e); err != nil {
				return err
			}
			return n.drain()
		}
	}
	n.buf.push(e)
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
	for n.buf.len() > n.opts.Window {
		if n.buf.len() <= n.opts.MaxHeld && n.heldBack(n.buf.min().ts) {
			break
		}
		if err := n.release(n.buf.pop()); err != nil {
			return err
		}
	}
	return nil
}

// Flush releases every slice held. Call it once the decoder has returned.
func (n *Nester) Flush() error {
	for n.buf.len() > 0 && n.err == nil {
		if err := n.release(n.buf.pop()); err != nil {
			return err
		}
	}
	return n.err
}

// reorderQueue is the reorder buffer: a priority queue of slices by key, made for
// slices that arrive nearly in start order. Slices that arrive after the latest held
// one, or shortly before it (within maxShift entries), go into a sorted run, kept in
// order by insertion; the others go into a heap. The earliest slice is the earlier of
// the run's first and the heap's root, so most arrivals cost an append or a short move,
// and only far-disordered ones a heap operation.
type reorderQueue struct {
	run  []held // sorted by key; run[head:] are held
	head int
	side slotHeap
	// shift bounds how far back in the run an arriving slice is inserted (0:
	// maxShift).
	shift int
}

// maxShift is reorderQueue.shift's default.
const maxShift = 256

func (q *reorderQueue) len() int { return len(q.run) - q.head + q.side.len() }

// sideFirst reports whether the heap holds the earliest slice; the queue is not empty.
func (q *reorderQueue) sideFirst() bool {
	return q.head == len(q.run) || (q.side.len() > 0 && q.side.min().less(q.run[q.head].slotKey))
}

// min is the earliest slice; the queue is not empty.
func (q *reorderQueue) min() *held {
	if q.sideFirst() {
		return q.side.min()
	}
	return &q.run[q.head]
}

// push adds a copy of e.
func (q *reorderQueue) push(e *held) {
	q.run = q.room()
	run := q.run
	n := len(run)
	if n == q.head || !e.less(run[n-1].slotKey) {
		q.run = append(run, *e)
		return
	}
	shift := q.shift
	if shift <= 0 {
		shift = maxShift
	}
	lo := max(q.head, n-shift)
	if e.less(run[lo].slotKey) {
		if lo > q.head {
			q.side.push(e)
			return
		}
	}
	// The first slice of run[lo:n] after e: e goes before it.
	i, j := lo, n-1
	for i < j {
		m := int(uint(i+j) >> 1)
		if e.less(run[m].slotKey) {
			j = m
		} else {
			i = m + 1
		}
	}
	run = append(run, held{})
	copy(run[i+1:], run[i:n])
	run[i] = *e
	q.run = run
}

// room returns the run with room for one more slice at its end: when it is full, the
// held slices are moved to the front if more than half of it has been released (head
// becomes 0), else it grows. push calls it before it computes any index.
func (q *reorderQueue) room() []held {
	if len(q.run) < cap(q.run) {
		return q.run
	}
	if q.head > 0 && q.head >= len(q.run)/2 {
		n := copy(q.run, q.run[q.head:])
		clear(q.run[n:]) // drop the released slices' strings
		q.run, q.head = q.run[:n], 0
		return q.run
	}
	return grow(q.run, 0)
}

// pop removes the earliest slice and returns it; it stays valid until the next push.
func (q *reorderQueue) pop() *held {
	if q.sideFirst() {
		return q.side.pop()
	}
	e := &q.run[q.head]
	q.head++
	if q.head == len(q.run) {
		q.run, q.head = q.run[:0], 0
	}
	return e
}

// replaceMin adds e, which is not earlier than the earliest slice, and removes the
// earliest slice, returning it as pop does.
func (q *reorderQueue) replaceMin(e *held) *held {
	q.push(e)
	return q.pop()
}

// slotHeap is the reorder queue's heap, for the slices that arrive far out of order: a
// 4-ary min-heap of slices by key (half the levels of a binary one).
type slotHeap struct {
	h []held
	// top holds the slice pop removed.
	top held
}

func (q *slotHeap) len() int { return len(q.h) }

// min is the earliest slice; the heap is not empty.
func (q *slotHeap) min() *held { return &q.h[0] }

func (q *slotHeap) push(e *held) {
	q.h = append(q.h, held{})
	h := q.h
	j := len(h) - 1
	for j > 0 {
		p := (j - 1) / 4
		if !e.less(h[p].slotKey) {
			break
		}
		h[j] = h[p]
		j = p
	}
	h[j] = *e
}

// pop removes the earliest slice and returns it; it stays valid until the next pop.
func (q *slotHeap) pop() *held {
	h := q.h
	q.top = h[0]
	last := len(h) - 1
	h[0] = h[last]
	h[last] = held{}
	q.h = h[:last]
	if last > 0 {
		q.down(0)
	}
	return &q.top
}

// down moves slice j down to its place.
func (q *slotHeap) down(j int) {
	h := q.h
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

// grow returns s with room for more: twice its capacity, but no more than full while
// below it (append grows large slices by a quarter, which copies a buffer several times
// over on its way to the window).
func grow[T any](s []T, full int) []T {
	n := max(1024, 2*cap(s))
	if cap(s) < full {
		n = min(n, full)
	}
	g := make([]T, len(s), n)
	copy(g, s)
	return g
}

// maxDenseTrack bounds the track IDs a Nester keeps in a slice rather than a map (an ID
// below it costs the slice up to it: at most 4,096 entries, whatever IDs a decoder
// uses).
const maxDenseTrack = 1 << 12

// track returns the state of the track with this ID.
func (n *Nester) track(id int64) *nestTrack {
	if id >= 0 && id < maxDenseTrack {
		if id >= int64(len(n.dense)) {
			n.dense = append(n.dense, make([]nestTrack, id+1-int64(len(n.dense)))...)
		}
		return &n.dense[id]
	}
	tr := n.tracks[id]
	if tr == nil {
		tr = &nestTrack{}
		n.tracks[id] = tr
	}
	return tr
}

// release places s on its track and hands it to the callback.
func (n *Nester) release(s *held) error {
	tr := n.track(s.track)
	parent, parentName, depth := int64(-1), "", int32(0)
	if tr.hasLast && s.less(tr.last) {
		n.unordered++
	} else {
		tr.last, tr.hasLast = s.slotKey, true
		for len(tr.stack) > 0 && tr.stack[len(tr.stack)-1].end <= s.ts {
			tr.stack = tr.stack[:len(tr.stack)-1]
		}
		end := s.ts + s.dur
		if len(tr.stack) == 0 || end <= tr.stack[len(tr.stack)-1].end {
			if len(tr.stack) > 0 {
				top := tr.stack[len(tr.stack)-1]
				parent, parentName, depth = top.id, top.name, top.depth+1
			}
			tr.stack = append(tr.stack, nestOpen{id: s.id, end: end, name: s.name, depth: depth})
		} else {
			n.overlaps++
			for j := len(tr.stack) - 1; j >= 0; j-- {
				if tr.stack[j].end >= end {
					parent, parentName, depth = tr.stack[j].id, tr.stack[j].name, tr.stack[j].depth+1
					break
				}
			}
		}
	}
	n.out = Nested{Event: Event{ID: s.id, TS: s.ts, Dur: s.dur, Track: s.track, Name: s.name, Category: s.cat,
		Phase: s.phase, Args: s.args.Expand(&n.store)}, ParentID: parent, ParentName: parentName, Depth: depth}
	n.released++
	if err := n.emit(&n.out); err != nil {
		n.err = err
		return err
	}
	return nil
}
