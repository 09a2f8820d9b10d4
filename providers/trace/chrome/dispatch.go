package chrome

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"strings"
	"unicode/utf8"

	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/trace/tracemodel"
)

// parsedEvent is one Trace Event as the parser read it: what dispatching it reads. Its
// byte fields are the event's text (argFile, argShapes and argName only when their bit
// of argSet is set); they belong to whoever filled them and are valid until the next
// event.
type parsedEvent struct {
	// ord is the event's ordinal, end the byte offset after it (errors name both).
	ord, end                 int64
	ph, name, cat, scope, id []byte
	idKind                   byte
	hasTS                    bool
	ts, dur, pid, tid        int64
	argSet                   uint16
	argFile, argShapes       []byte
	argName                  []byte
	argVals                  [6]int64
}

// openSlice is a begun B or b slice.
type openSlice struct {
	id, ts    int64
	name, cat string
	args      tracemodel.PackedArgs
}

type trackState struct {
	open []openSlice
}

// dispatcher acts on parsed events in file order: it assigns tracks, matches
// begins with ends, interns strings and delivers slices, tracks and names to its sink.
// It holds all the state that crosses events, so that parsing (decoder) and
// dispatching can run on goroutines of their own (DecodeStaged).
type dispatcher struct {
	src    int
	lim    Limits
	sink   tracemodel.Sink
	opener tracemodel.Opener
	packed tracemodel.PackedSink
	// st holds the counts of dispatching; the parser counts Events and Truncated.
	st tracemodel.Stats

	recent    [1 << recentBits]recentString
	intern    map[string]string
	internLen int
	threads   map[[2]int64]int32
	// lastKey's track is lastThread (-1: none yet): consecutive events are often on
	// one thread.
	lastKey    [2]int64
	lastThread int32
	asyncs     map[string]int32
	tracks     []trackState
	tmp        []byte

	ev       tracemodel.Event
	argStore tracemodel.PackedArgs
	// packScratch holds the packed arguments of the event being dispatched.
	packScratch tracemodel.PackedArgs
}

func newDispatcher(source int, lim Limits, sink tracemodel.Sink) *dispatcher {
	d := &dispatcher{
		src:        source,
		lim:        lim,
		sink:       sink,
		intern:     make(map[string]string),
		threads:    make(map[[2]int64]int32),
		asyncs:     make(map[string]int32),
		lastThread: -1,
	}
	d.opener, _ = sink.(tracemodel.Opener)
	d.packed, _ = sink.(tracemodel.PackedSink)
	return d
}

// stats returns the counts of the whole read: the dispatcher's, with the parser's
// events and truncation and the begins still open.
func (d *dispatcher) stats(parsed *tracemodel.Stats) *tracemodel.Stats {
	st := d.st
	st.Events, st.Truncated = parsed.Events, parsed.Truncated
	for i := range d.tracks {
		st.UnfinishedBegins += int64(len(d.tracks[i].open))
	}
	return &st
}

// internLimit bounds the bytes of interned strings; later strings are allocated. Names
// that repeat (operators, categories, shapes) are few; a trace whose names are all
// distinct (a step number in each) stops growing the map at this bound instead of
// paying an insertion into an ever larger map for every name.
const internLimit = 1 << 20

// str returns b as a string, interned, with invalid UTF-8 replaced. The strings met
// most recently are found in a small direct-mapped cache before the map.
func (d *dispatcher) str(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	e := &d.recent[recentIndex(b)]
	if string(b) == e.raw {
		return e.s
	}
	s, ok := d.intern[string(b)]
	if !ok {
		s = string(b)
		if !utf8.ValidString(s) {
			s = strings.ToValidUTF8(s, "\uFFFD")
		}
		if d.internLen+len(b) <= internLimit {
			d.internLen += len(b)
			d.intern[string(b)] = s
		}
	}
	if len(b) <= maxRecentBytes {
		raw := s // the same bytes, unless invalid UTF-8 was replaced
		if s != string(b) {
			raw = string(b)
		}
		e.raw, e.s = raw, s
	}
	return s
}

// recentString is an entry of dispatcher.recent: the string interned for raw.
type recentString struct{ raw, s string }

const (
	recentBits = 10
	// maxRecentBytes bounds the strings the cache keeps.
	maxRecentBytes = 256
)

// recentIndex hashes b's length and its first and last eight bytes (fewer when it is
// shorter) into an index of dispatcher.recent.
func recentIndex(b []byte) uint64 {
	var lo, hi uint64
	if len(b) >= 8 {
		lo = binary.LittleEndian.Uint64(b)
		hi = binary.LittleEndian.Uint64(b[len(b)-8:])
	} else {
		for i, c := range b {
			lo |= uint64(c) << (8 * i)
		}
	}
	h := (lo ^ bits.RotateLeft64(hi, 29) ^ uint64(len(b))) * 0x9E3779B97F4A7C15
	return h >> (64 - recentBits)
}

func (d *dispatcher) decodeError(e *parsedEvent, format string, a ...any) error {
	return &providers.DecodeError{Source: d.src, Message: fmt.Sprintf(format, a...),
		Details: map[string]any{"event": e.ord, "byte": e.end}}
}

func (d *dispatcher) limitError(e *parsedEvent, limit int64, unit, format string, a ...any) error {
	return &providers.LimitError{Source: d.src, Limit: limit, Unit: unit, Message: fmt.Sprintf(format, a...),
		Details: map[string]any{"event": e.ord}}
}

// packArgs packs the event's arguments.
func (d *dispatcher) packArgs(e *parsedEvent, p *tracemodel.PackedArgs) {
	*p = tracemodel.PackedArgs{Set: e.argSet &^ argName, Vals: e.argVals}
	if e.argSet&tracemodel.ArgFile != 0 {
		p.File = d.str(e.argFile)
	}
	if e.argSet&tracemodel.ArgShapes != 0 {
		p.Shapes = d.str(e.argShapes)
	}
}

// dispatch acts on the event e.
func (d *dispatcher) dispatch(e *parsedEvent) error {
	if len(e.ph) != 1 {
		d.st.Ignored++
		return nil
	}
	switch ph := e.ph[0]; ph {
	case 'X':
		if !e.hasTS {
			return d.decodeError(e, "event %d (ph X) has no ts", e.ord)
		}
		if e.dur < 0 {
			// An interval that ends before it starts is no slice: counted and said,
			// as one bad record of a large trace should not discard the others.
			d.st.InvalidIntervals++
			return nil
		}
		if e.ts > 0 && e.dur > (1<<63-1)-e.ts {
			return d.decodeError(e, "event %d ends outside the int64 nanosecond range", e.ord)
		}
		t, err := d.threadTrack(e, true)
		if err != nil {
			return err
		}
		p := &d.packScratch
		d.packArgs(e, p)
		return d.emit(e.ord, e.ts, e.dur, t, d.str(e.name), d.str(e.cat), "X", p)
	case 'B', 'b':
		if !e.hasTS {
			return d.decodeError(e, "event %d (ph %c) has no ts", e.ord, ph)
		}
		var t int32
		var err error
		if ph == 'B' {
			t, err = d.threadTrack(e, true)
		} else {
			t, err = d.asyncTrack(e, true)
		}
		if err != nil {
			return err
		}
		ts := &d.tracks[t]
		if len(ts.open) >= d.lim.MaxOpenPerTrack {
			return d.limitError(e, int64(d.lim.MaxOpenPerTrack), "slices",
				"event %d begins more than %d unfinished slices on one track (max_open_per_track)", e.ord, d.lim.MaxOpenPerTrack)
		}
		ts.open = append(ts.open, openSlice{id: e.ord, ts: e.ts, name: d.str(e.name), cat: d.str(e.cat)})
		d.packArgs(e, &ts.open[len(ts.open)-1].args)
		if d.opener != nil {
			d.opener.Open(e.ord, int64(t), e.ts)
		}
		return nil
	case 'E', 'e':
		if !e.hasTS {
			return d.decodeError(e, "event %d (ph %c) has no ts", e.ord, ph)
		}
		var t int32
		if ph == 'E' {
			t, _ = d.threadTrack(e, false)
		} else {
			t, _ = d.asyncTrack(e, false)
		}
		if t < 0 || len(d.tracks[t].open) == 0 {
			d.st.UnmatchedEnds++
			return nil
		}
		ts := &d.tracks[t]
		o := &ts.open[len(ts.open)-1]
		if e.ts < o.ts {
			// The end closes its begin, but the interval is no slice: counted and said.
			ts.open = ts.open[:len(ts.open)-1]
			d.st.InvalidIntervals++
			if d.opener != nil {
				d.opener.Close(o.id)
			}
			return nil
		}
		p := &d.packScratch
		d.packArgs(e, p)
		o.args.Fill(p)
		phase := "B"
		if ph == 'e' {
			phase = "b"
		}
		err := d.emit(o.id, o.ts, e.ts-o.ts, t, o.name, o.cat, phase, &o.args)
		ts.open = ts.open[:len(ts.open)-1]
		return err
	case 'n', 'i', 'I', 'R':
		d.st.Instants++
	case 'C':
		d.st.Counters++
	case 's', 't', 'f':
		d.st.Flows++
	case 'M':
		if e.argSet&argName != 0 {
			switch string(e.name) {
			case "thread_name":
				d.sink.ThreadName(e.pid, e.tid, d.str(e.argName))
				return nil
			case "process_name":
				d.sink.ProcessName(e.pid, d.str(e.argName))
				return nil
			}
		}
		d.st.Metadata++
	default:
		d.st.Ignored++
	}
	return nil
}

func (d *dispatcher) emit(id, ts, dur int64, track int32, name, cat, phase string, p *tracemodel.PackedArgs) error {
	d.st.Slices++
	if d.packed != nil {
		return d.packed.SlicePacked(id, ts, dur, int64(track), name, cat, phase, p)
	}
	d.ev = tracemodel.Event{ID: id, TS: ts, Dur: dur, Track: int64(track), Name: name, Category: cat, Phase: phase,
		Args: p.Expand(&d.argStore)}
	return d.sink.Slice(&d.ev)
}

func (d *dispatcher) newTrack(e *parsedEvent, t tracemodel.Track) (int32, error) {
	if len(d.tracks) >= d.lim.MaxTracks {
		return -1, d.limitError(e, int64(d.lim.MaxTracks), "tracks", "event %d opens more than %d tracks (max_tracks)", e.ord, d.lim.MaxTracks)
	}
	t.ID = int64(len(d.tracks))
	d.tracks = append(d.tracks, trackState{})
	d.sink.Track(t)
	return int32(t.ID), nil
}

// threadTrack returns the track of the event's (pid, tid), announcing a new one; -1
// when there is none and create is false.
func (d *dispatcher) threadTrack(e *parsedEvent, create bool) (int32, error) {
	k := [2]int64{e.pid, e.tid}
	if d.lastThread >= 0 && k == d.lastKey {
		return d.lastThread, nil
	}
	t, ok := d.threads[k]
	if !ok {
		if !create {
			return -1, nil
		}
		var err error
		if t, err = d.newTrack(e, tracemodel.Track{PID: e.pid, TID: e.tid}); err != nil {
			return -1, err
		}
		d.threads[k] = t
	}
	d.lastKey, d.lastThread = k, t
	return t, nil
}

// asyncTrack returns the async track of the event's (pid, cat, id scope), -1 when
// there is none and create is false. A global id2 ignores the pid.
func (d *dispatcher) asyncTrack(e *parsedEvent, create bool) (int32, error) {
	k := d.tmp[:0]
	pid := e.pid
	if e.idKind == 'g' {
		pid = 0
	}
	for i := 0; i < 8; i++ {
		k = append(k, byte(pid>>(8*i)))
	}
	k = append(k, e.idKind)
	k = append(k, e.cat...)
	k = append(k, 0)
	k = append(k, e.scope...)
	k = append(k, 0)
	k = append(k, e.id...)
	d.tmp = k
	if t, ok := d.asyncs[string(k)]; ok {
		return t, nil
	}
	if !create {
		return -1, nil
	}
	t, err := d.newTrack(e, tracemodel.Track{PID: e.pid, TID: e.tid, Name: d.str(e.name), Async: true})
	if err != nil {
		return -1, err
	}
	d.asyncs[string(k)] = t
	return t, nil
}
