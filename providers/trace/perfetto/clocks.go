package perfetto

import (
	"math"

	"github.com/flameox/flameox/providers/internal/protowalk"
	"github.com/flameox/flameox/providers/internal/protowire"
)

// Builtin clock ids (protos/perfetto/common/builtin_clock.proto).
const (
	clockMonotonic = 3
	clockBoottime  = 6
)

// seqClock is a sequence-scoped clock (ids 64-127) as its ClockSnapshot defined it.
type seqClock struct {
	value       int64 // last value, in the clock's units
	base        int64 // value at the snapshot
	mult        int64 // ns per unit
	incremental bool
	anchorClock uint32 // builtin clock listed beside it (0: none)
	anchorNs    int64  // that clock's ns at the snapshot
	// outOfRange is set when the snapshot's figures do not fit int64 nanoseconds.
	outOfRange bool
}

// tsResult is how a timestamp resolved.
type tsResult uint8

const (
	tsOK         tsResult = iota
	tsUnresolved          // no timestamp, an undefined sequence clock, a delta without reference
	tsOutOfRange          // negative or beyond int64 nanoseconds
)

func (d *decoder) clockSnapshot(seq *sequence, b []byte) error {
	type clk struct {
		id          uint32
		ts          uint64
		incremental bool
		mult        uint64
	}
	var cs []clk
	ok, _ := eachField(b, func(f protowalk.Field) error {
		if f.Num == 2 && f.Type == protowire.VarintType && f.Value != 0 && f.Value < 64 {
			d.primary = uint32(f.Value) // primary_trace_clock
		}
		if f.Num != 1 || f.Type != protowire.BytesType {
			return nil
		}
		c := clk{mult: 1}
		ok, _ := eachField(f.Bytes, func(g protowalk.Field) error {
			switch g.Num {
			case 1:
				c.id = uint32(g.Value)
			case 2:
				c.ts = g.Value
			case 3:
				c.incremental = g.Value != 0
			case 4:
				c.mult = g.Value
			}
			return nil
		})
		if !ok {
			return errBadWire
		}
		if len(cs) < 256 {
			cs = append(cs, c)
		}
		return nil
	})
	if !ok {
		return d.malformed("clock_snapshot")
	}
	var anchor *clk
	for i := range cs {
		if cs[i].id > 0 && cs[i].id < 64 {
			anchor = &cs[i]
			break
		}
	}
	for _, c := range cs {
		if c.id < 64 || c.id > 127 {
			continue
		}
		if seq.clocks == nil {
			seq.clocks = map[uint32]*seqClock{}
		}
		if c.mult == 0 {
			c.mult = 1
		}
		k := &seqClock{value: int64(c.ts), base: int64(c.ts), mult: int64(c.mult), incremental: c.incremental}
		ok := c.ts <= math.MaxInt64 && c.mult <= math.MaxInt64
		if anchor != nil {
			k.anchorClock, k.anchorNs = anchor.id, int64(anchor.ts)
			ok = ok && anchor.ts <= math.MaxInt64
		} else if ok {
			k.anchorNs, ok = mulNs(k.base, k.mult)
		}
		k.outOfRange = !ok
		seq.clocks[c.id] = k
	}
	return nil
}

// timestamp is the event's timestamp in ns as trace_processor's track-event tokenizer
// takes it, counting its clock domain in info.Clocks: TrackEvent.timestamp_delta_us
// (added to the sequence's ThreadDescriptor reference, which it advances), else a
// non-zero timestamp_absolute_us (a one-off that leaves the reference alone), both on
// the MONOTONIC clock; else the packet timestamp.
func (d *decoder) timestamp(seq *sequence, p *packet, e *event) (int64, tsResult) {
	var ns int64
	var res tsResult
	switch {
	case e.hasDeltaUs:
		if !seq.hasRef {
			return 0, tsUnresolved
		}
		if ns, res = nsAfter(seq.refNs, e.deltaUs); res == tsOK {
			seq.refNs = ns
		}
	case e.hasAbsUs && e.absUs != 0:
		ns, res = nsAfter(0, e.absUs)
	case p.hasTS:
		if p.tsRes != tsOK {
			return 0, p.tsRes
		}
		if p.seqClk {
			d.info.SequenceClockTimestamps++
		}
		d.info.Clocks[p.domain]++
		return p.tsNs, tsOK
	default:
		return 0, tsUnresolved
	}
	if res != tsOK || ns < 0 {
		return 0, tsOutOfRange
	}
	d.info.Clocks[clockMonotonic]++
	return ns, tsOK
}

// nsAfter is ns + us microseconds; tsOutOfRange when it leaves int64.
func nsAfter(ns, us int64) (int64, tsResult) {
	d, ok := mulNs(us, 1000)
	if !ok {
		return 0, tsOutOfRange
	}
	if ns, ok = addNs(ns, d); !ok {
		return 0, tsOutOfRange
	}
	return ns, tsOK
}

// mulNs is a*b for b > 0; ok is false when it leaves int64.
func mulNs(a, b int64) (int64, bool) {
	if a > math.MaxInt64/b || a < math.MinInt64/b {
		return 0, false
	}
	return a * b, true
}

// addNs is a+b; ok is false when it leaves int64.
func addNs(a, b int64) (int64, bool) {
	s := a + b
	return s, (b >= 0) == (s >= a)
}

// resolve converts a packet timestamp to ns: builtin clocks (ids < 64) are ns already;
// sequence-scoped clocks (64-127) advance (when incremental) and are converted through
// their snapshot into the builtin clock listed beside them. Domain 0 is the trace's
// clock (no clock id).
func (d *decoder) resolve(seq *sequence, p *packet) (ns int64, res tsResult, domain uint32) {
	clock := uint32(0)
	if p.hasClock {
		clock = uint32(p.clock)
	} else if seq.hasDefClock {
		clock = seq.defClock
	}
	if p.ts > math.MaxInt64 {
		return 0, tsOutOfRange, clock
	}
	v := int64(p.ts)
	if clock < 64 || clock > 127 {
		return v, tsOK, clock
	}
	c := seq.clocks[clock]
	if c == nil {
		return 0, tsUnresolved, clock
	}
	p.seqClk = true
	ok := !c.outOfRange
	if c.incremental && ok {
		if v, ok = addNs(c.value, v); ok {
			c.value = v
		}
	}
	if ok {
		ns, ok = mulNs(v-c.base, c.mult) // v and base are >= 0: no overflow
	}
	if ok {
		ns, ok = addNs(c.anchorNs, ns)
	}
	if !ok || ns < 0 {
		return 0, tsOutOfRange, c.anchorClock
	}
	return ns, tsOK, c.anchorClock
}
