package bench

import (
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Measurements reach summaries, fits and comparisons one at a time (emitter); what they
// keep is compact. A head holds what a run of values shares (source, benchmark, unit,
// dimensions, scope, phase, worker, variant, trial, block): values point at their head,
// and a head at its series identity, interned once as an index, so no value carries an
// identity of its own.

// emitter receives a source's measurements in order; m is valid during the call only.
type emitter func(m *Measurement) error

// identityKey is a series identity but for the loop count: benchmark, unit,
// dimensions (canonical), scope, phase, worker and variant.
type identityKey struct {
	benchmark, unit, dims, scope, phase, worker, variant string
}

// seriesKey is a series identity: the identity index and the loop count (0 when the
// harness chose it, or for a warmup series of its own).
type seriesKey struct {
	id     int32
	loops  int64
	warmup bool
}

// headKey is everything a head holds.
type headKey struct {
	identityKey
	input        int
	trial, block string
	adaptive     bool
}

// canonicalDims encodes dimensions as sorted, length-prefixed pairs; without drop.
func canonicalDims(d map[string]string, drop string) string {
	if len(d) == 0 {
		return ""
	}
	keys := slices.Sorted(maps.Keys(d))
	var b strings.Builder
	for _, k := range keys {
		if k == drop && drop != "" {
			continue
		}
		v := d[k]
		b.WriteString(strconv.Itoa(len(k)))
		b.WriteByte(':')
		b.WriteString(k)
		b.WriteString(strconv.Itoa(len(v)))
		b.WriteByte(':')
		b.WriteString(v)
	}
	return b.String()
}

func identityOf(m *Measurement, dropDim string) identityKey {
	return identityKey{benchmark: m.Benchmark, unit: m.Unit, dims: canonicalDims(m.Dimensions, dropDim),
		scope: m.Scope, phase: m.Phase, worker: m.Worker, variant: m.Variant}
}

// sameHead reports whether a and b share their head fields.
func sameHead(a, b *Measurement) bool {
	return a.Input == b.Input && a.Benchmark == b.Benchmark && a.Unit == b.Unit && a.Scope == b.Scope &&
		a.Phase == b.Phase && a.Worker == b.Worker && a.Variant == b.Variant && a.Trial == b.Trial &&
		a.Block == b.Block && a.AdaptiveLoops == b.AdaptiveLoops && maps.Equal(a.Dimensions, b.Dimensions)
}

// heads interns heads and their identities.
type heads struct {
	list  []Measurement // head fields only
	ident []int32       // identity of each head
	index map[headKey]int32
	ids   map[identityKey]int32
	last  int32
}

func newHeads() *heads {
	return &heads{index: map[headKey]int32{}, ids: map[identityKey]int32{}, last: -1}
}

// of interns the head of m.
func (h *heads) of(m *Measurement) int32 {
	if h.last >= 0 && sameHead(&h.list[h.last], m) {
		return h.last
	}
	id := identityOf(m, "")
	k := headKey{identityKey: id, input: m.Input, trial: m.Trial, block: m.Block, adaptive: m.AdaptiveLoops}
	i, ok := h.index[k]
	if !ok {
		i = int32(len(h.list))
		h.index[k] = i
		head := *m
		head.Value, head.Integer, head.Run, head.Index, head.Loops, head.Warmup = 0, false, 0, 0, 0, false
		h.list = append(h.list, head)
		n, ok := h.ids[id]
		if !ok {
			n = int32(len(h.ids))
			h.ids[id] = n
		}
		h.ident = append(h.ident, n)
	}
	h.last = i
	return i
}

// series is the series key of a value of head i with loops.
func (h *heads) series(i int32, loops int64) seriesKey {
	if h.list[i].AdaptiveLoops {
		loops = 0
	}
	return seriesKey{id: h.ident[i], loops: loops}
}

// tableValue is one measurement less its head.
type tableValue struct {
	value           float64
	loops           int64
	run, index      int32
	head            int32
	integer, warmup bool
}

// table keeps every measurement of a request compactly, in order, in blocks of
// tableBlock values (a growing table is never copied).
type table struct {
	*heads
	blocks [][]tableValue
	n      int
	// warmups counts the warmups among the values.
	warmups int
}

const tableBlock = 8192

func newTable() *table { return &table{heads: newHeads()} }

func (t *table) add(m *Measurement) error {
	if t.n%tableBlock == 0 {
		t.blocks = append(t.blocks, make([]tableValue, 0, tableBlock))
	}
	b := &t.blocks[len(t.blocks)-1]
	*b = append(*b, tableValue{value: m.Value, loops: m.Loops, run: int32(m.Run), index: int32(m.Index),
		head: t.of(m), integer: m.Integer, warmup: m.Warmup})
	t.n++
	if m.Warmup {
		t.warmups++
	}
	return nil
}

// value is value i.
func (t *table) value(i int) *tableValue { return &t.blocks[i/tableBlock][i%tableBlock] }

// tableOf is the table of ms.
func tableOf(ms []Measurement) *table {
	t := newTable()
	for i := range ms {
		t.add(&ms[i])
	}
	return t
}

// at is measurement i.
func (t *table) at(i int) Measurement {
	v := t.value(i)
	m := t.list[v.head]
	m.Value, m.Integer, m.Run, m.Index, m.Loops, m.Warmup = v.value, v.integer, int(v.run), int(v.index), v.loops, v.warmup
	return m
}
