package perfetto

import (
	"github.com/flameox/flameox/providers/internal/protowalk"
	"github.com/flameox/flameox/providers/internal/protowire"
	"github.com/flameox/flameox/providers/trace/tracemodel"
)

// openSlice is a begun slice waiting for its end on its track.
type openSlice struct {
	id, ts    int64
	name, cat string
	args      tracemodel.Args
}

// Legacy event phases (Trace Event Format characters).
const (
	phBegin    = 'B'
	phEnd      = 'E'
	phComplete = 'X'
)

// event is what parseTrackEvent takes of a TrackEvent (and its legacy_event).
type event struct {
	typ                     uint64
	hasType                 bool
	nameIID                 uint64
	hasNameIID              bool
	name                    []byte
	hasName                 bool
	cats                    [][]byte
	catIIDs                 []uint64
	track                   uint64
	hasTrack                bool
	absUs, deltaUs          int64
	hasAbsUs, hasDeltaUs    bool
	annotations             [][]byte
	flows                   int64
	legacy                  bool
	phase                   int64
	durUs                   int64
	hasDur                  bool
	legacyNameIID           uint64
	hasLegacyName           bool
	pidOverride, tidOverrid int64
	hasPID, hasTID          bool
	bind                    bool
}

func (d *decoder) parseTrackEvent(b []byte, e *event) bool {
	ok, err := eachField(b, func(f protowalk.Field) error {
		switch f.Num {
		case 3:
			if !ints(f, func(v uint64) {
				if len(e.catIIDs) < 64 {
					e.catIIDs = append(e.catIIDs, v)
				}
			}) {
				return errBadWire
			}
		case 22:
			if f.Type != protowire.BytesType {
				return errBadWire
			}
			if len(e.cats) < 64 {
				e.cats = append(e.cats, f.Bytes)
			}
		case 10:
			e.nameIID, e.hasNameIID, e.hasName = f.Value, true, false
		case 23:
			if f.Type != protowire.BytesType {
				return errBadWire
			}
			e.name, e.hasName, e.hasNameIID = f.Bytes, true, false
		case 9:
			e.typ, e.hasType = f.Value, true
		case 11:
			e.track, e.hasTrack = f.Value, true
		case 1:
			e.deltaUs, e.hasDeltaUs, e.hasAbsUs = int64(f.Value), true, false
		case 16:
			e.absUs, e.hasAbsUs, e.hasDeltaUs = int64(f.Value), true, false
		case 4:
			if f.Type != protowire.BytesType {
				return errBadWire
			}
			if len(e.annotations) < 256 {
				e.annotations = append(e.annotations, f.Bytes)
			}
		case 47, 48:
			n, ok := f.Fixed64s()
			if !ok {
				return errBadWire
			}
			e.flows += n
		case 36, 42:
			if !ints(f, func(uint64) { e.flows++ }) {
				return errBadWire
			}
		case 6:
			if f.Type != protowire.BytesType {
				return errBadWire
			}
			e.legacy = true
			ok, _ := eachField(f.Bytes, func(g protowalk.Field) error {
				switch g.Num {
				case 1:
					e.legacyNameIID, e.hasLegacyName = g.Value, true
				case 2:
					e.phase = int64(int32(g.Value))
				case 3:
					e.durUs, e.hasDur = int64(g.Value), true
				case 8:
					e.bind = true
				case 13:
					if g.Value != 0 {
						e.bind = true
					}
				case 18:
					e.pidOverride, e.hasPID = int64(int32(g.Value)), true
				case 19:
					e.tidOverrid, e.hasTID = int64(int32(g.Value)), true
				}
				return nil
			})
			if !ok {
				return errBadWire
			}
		}
		return nil
	})
	return ok && err == nil
}

func (d *decoder) trackEvent(seq *sequence, p *packet) error {
	var e event
	if !d.parseTrackEvent(p.trackEvent, &e) {
		return d.malformed("track_event")
	}
	d.stats.Flows += e.flows
	if e.bind {
		d.stats.Flows++
	}

	// What the event is.
	const (
		kBegin = iota + 1
		kEnd
		kComplete
		kInstant
		kCounter
		kMetadata
		kFlow
		kIgnored
	)
	kind := kIgnored
	switch {
	case e.hasType && e.typ != 0:
		switch e.typ {
		case 1:
			kind = kBegin
		case 2:
			kind = kEnd
		case 3:
			kind = kInstant
		case 4:
			kind = kCounter
		}
	case e.legacy:
		switch e.phase {
		case phBegin:
			kind = kBegin
		case phEnd:
			kind = kEnd
		case phComplete:
			kind = kComplete
		case 'I', 'i', 'R', 'n':
			kind = kInstant
		case 'C':
			kind = kCounter
		case 'M':
			kind = kMetadata
		case 's', 't', 'f':
			kind = kFlow
		}
	}
	ts, res := d.timestamp(seq, p, &e)
	end := ts
	if res == tsOK && kind == kComplete && e.hasDur && e.durUs < 0 {
		// A legacy complete event that ends before it starts is no slice: counted with
		// the begin/end pairs that do.
		d.info.NegativeDurations++
		return nil
	}
	if res == tsOK && kind == kComplete && e.hasDur && e.durUs > 0 {
		if end, res = nsAfter(ts, e.durUs); res != tsOK {
			res = tsOutOfRange
		}
	}
	if res != tsOK && kind != kIgnored {
		if res == tsOutOfRange {
			d.info.OutOfRangeTimestamps++
		} else {
			d.info.UnresolvedTimestamps++
		}
		d.stats.Ignored++
		return nil
	}
	switch kind {
	case kInstant:
		d.stats.Instants++
		return nil
	case kCounter:
		d.stats.Counters++
		return nil
	case kMetadata:
		d.stats.Metadata++
		return nil
	case kFlow:
		if !e.bind {
			d.stats.Flows++
		}
		return nil
	case kIgnored:
		d.stats.Ignored++
		return nil
	}

	track, err := d.trackFor(seq, &e)
	if err != nil {
		return err
	}

	switch kind {
	case kEnd:
		st := d.open[track]
		if len(st) == 0 {
			d.stats.UnmatchedEnds++
			return nil
		}
		o := st[len(st)-1]
		d.open[track] = st[:len(st)-1]
		if ts < o.ts {
			// The end closes its begin, but the interval is no slice: counted and said,
			// and nothing waits for it any more.
			d.info.NegativeDurations++
			if d.opener != nil {
				d.opener.Close(o.id)
			}
			return nil
		}
		if len(e.annotations) > 0 {
			d.annotate(seq, &e, &o.args)
		}
		return d.emit(track, o, ts)
	case kBegin, kComplete:
		o := openSlice{id: d.packet, ts: ts}
		if o.name, err = d.eventName(seq, &e); err != nil {
			return err
		}
		if o.cat, err = d.category(seq, &e); err != nil {
			return err
		}
		if len(e.annotations) > 0 {
			d.annotate(seq, &e, &o.args)
		}
		d.announce(track)
		if kind == kComplete {
			return d.emit(track, o, end)
		}
		st := d.open[track]
		if len(st) >= d.lim.MaxOpenSlices {
			return d.limit("max_open_slices", int64(d.lim.MaxOpenSlices), "slices",
				"a track of the Perfetto trace has more than %d open slices", d.lim.MaxOpenSlices)
		}
		d.open[track] = append(st, o)
		if d.opener != nil {
			// The slice arrives at its end; a Nester holds later slices for it.
			d.opener.Open(o.id, track, ts)
		}
	}
	return nil
}

func (d *decoder) emit(track int64, o openSlice, end int64) error {
	d.ev = tracemodel.Event{ID: o.id, TS: o.ts, Dur: end - o.ts, Track: track, Name: o.name, Category: o.cat, Phase: "X", Args: o.args}
	d.stats.Slices++
	return d.sink.Slice(&d.ev)
}

// annotate maps the top-level debug annotations whose names are model.Args keys.
// Nested (dict/array) annotations are not read.
func (d *decoder) annotate(seq *sequence, e *event, a *tracemodel.Args) {
	for _, b := range e.annotations {
		var name string
		var iv int64
		var sv string
		hasInt, hasStr := false, false
		ok, _ := eachField(b, func(f protowalk.Field) error {
			switch f.Num {
			case 1:
				name = seq.annNames[f.Value]
			case 10:
				if f.Type == protowire.BytesType && len(f.Bytes) <= 64 {
					name = string(f.Bytes)
				}
			case 3, 4:
				if f.Type == protowire.VarintType {
					iv, hasInt = int64(f.Value), true
				}
			case 6:
				if f.Type == protowire.BytesType && len(f.Bytes) <= d.lim.MaxStringBytes {
					sv, hasStr = string(f.Bytes), true
				}
			case 17:
				if s, ok := seq.annStrs[f.Value]; ok {
					sv, hasStr = s, true
				}
			}
			return nil
		})
		if !ok {
			continue
		}
		switch name {
		case "File", "file", "filename", "fileName":
			if hasStr {
				s := sv
				a.Filename = &s
			}
		case "Line", "line", "lineNumber":
			if hasInt {
				v := iv
				a.Line = &v
			}
		case "correlation", "correlation_id":
			if hasInt {
				v := iv
				a.CorrelationID = &v
			}
		case "device", "device_id":
			if hasInt {
				v := iv
				a.Device = &v
			}
		case "stream":
			if hasInt {
				v := iv
				a.Stream = &v
			}
		case "External id":
			if hasInt {
				v := iv
				a.ExternalID = &v
			}
		}
	}
}
