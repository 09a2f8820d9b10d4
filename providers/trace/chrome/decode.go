package chrome

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/trace/tracemodel"
)

// Limits bound what Decode reads; exceeding one is a *providers.LimitError
// naming the bound. A zero field takes its default (DefaultLimits).
type Limits struct {
	// MaxDepth bounds the JSON nesting depth of the document (the top-level array or
	// object is depth 1, an event is depth 2 or 3, its args one deeper). Default 64.
	MaxDepth int
	// MaxOpenPerTrack bounds the begun, unfinished B (per thread) or async b (per async
	// track) slices. Default 10,000.
	MaxOpenPerTrack int
	// MaxTracks bounds the distinct tracks: threads (pid, tid) with slices and async
	// tracks (pid, cat, id scope). Default 65,536.
	MaxTracks int
	// MaxStringBytes bounds one string that is kept: names, categories, object keys,
	// phases, ids, scopes, args read into Args (and the compact text of "Input Dims").
	// Skipped strings are not bounded. Default 1 MiB.
	MaxStringBytes int
	// MaxEvents bounds the trace events read. Default 1<<28 (268,435,456).
	MaxEvents int64
}

// DefaultLimits are the bounds a zero Limits field takes.
var DefaultLimits = Limits{
	MaxDepth:        64,
	MaxOpenPerTrack: 10_000,
	MaxTracks:       1 << 16,
	MaxStringBytes:  1 << 20,
	MaxEvents:       1 << 28,
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits
	if l.MaxDepth > 0 {
		d.MaxDepth = l.MaxDepth
	}
	if l.MaxOpenPerTrack > 0 {
		d.MaxOpenPerTrack = l.MaxOpenPerTrack
	}
	if l.MaxTracks > 0 {
		d.MaxTracks = l.MaxTracks
	}
	if l.MaxStringBytes > 0 {
		d.MaxStringBytes = l.MaxStringBytes
	}
	if l.MaxEvents > 0 {
		d.MaxEvents = l.MaxEvents
	}
	return d
}

// Decode reads Chrome Trace Event JSON (Chrome DevTools, Kineto/torch.profiler,
// JAX) from r, streaming, and delivers its slices, tracks and names to sink in file
// order. source is the input index set on returned errors.
//
// Both shapes are read: a top-level array of events, or an object whose "traceEvents"
// array holds them (its other members are skipped). A top-level array may end without
// its "]", after an event or a trailing comma: it is read and Stats.Truncated is set.
// Anything else malformed is a *providers.DecodeError naming the event index; a bound
// of lim exceeded is a *providers.LimitError. Read errors that are providers errors
// (and context errors) are returned as they are; other read errors become a
// DecodeError. ctx is checked every 1,024 events.
//
// Numbers: "ts" and "dur" are µs, integers or decimals with an optional exponent, and
// are converted to int64 ns exactly from their text, never through float64 (Kineto's
// epoch µs 1700000000000000.123 is 1700000000000000123 ns). Digits below 1 ns are
// rounded half to even (0.0005 µs is 0 ns, 0.0015 µs is 2 ns). A value outside int64
// ns is a DecodeError; an X with a negative "dur" and an E before its B are no slices
// and are counted in InvalidIntervals (the E still closes its B).
//
// Phases: X is a complete slice (a missing "dur" is 0); B/E are matched per (pid, tid)
// as a stack (an E without an open B is counted in UnmatchedEnds; Bs open at the end
// are counted in UnfinishedBegins and not delivered; the slice takes the B's name, and
// its args with the E's args filling those the B lacks); b/e are matched per (pid,
// cat, id scope) as a stack on an async track of their own (Track.Async; its Name is
// the first b's name, its TID the first b's tid); n, i, I and R are counted as
// Instants, C as Counters, s, t and f as Flows; M thread_name and process_name (with a
// string args.name) go to sink.ThreadName and sink.ProcessName, other M events are
// counted as Metadata; an event without a phase or of any other phase is counted as
// Ignored.
//
// Identities: Event.ID is the zero-based ordinal, in file order, of the event that
// began the slice. "pid" and "tid" may be numbers or strings; an integer (or a string
// holding one) is its value, anything else maps to FNV-1a 64 of its text with the top
// bit set (a negative value, stable across reads and unlikely to meet a real id). Track
// IDs are 0, 1, 2, … in the order the tracks first appear.
//
// Strings are decoded (escapes included); invalid UTF-8 in names and categories is
// replaced with U+FFFD. The decoder checks the JSON grammar of the values it skips but
// not control characters inside strings.
func Decode(ctx context.Context, r io.Reader, source int, lim Limits, sink tracemodel.Sink) (*tracemodel.Stats, error) {
	d := newDecoder(ctx, r, source, lim)
	d.disp = newDispatcher(source, d.lim, sink)
	if err := d.parse(); err != nil {
		return nil, err
	}
	return d.disp.stats(&d.st), nil
}

func newDecoder(ctx context.Context, r io.Reader, source int, lim Limits) *decoder {
	return &decoder{ctx: ctx, s: newScanner(r), src: source, lim: lim.withDefaults(), idx: -1}
}

// parse reads the document, handing over every event; its errors are classified.
func (d *decoder) parse() error {
	if err := d.run(); err != nil {
		return d.classify(err)
	}
	if d.s.rerr != nil {
		return d.classify(d.s.rerr)
	}
	return nil
}

// decoder parses the document and its events; it hands each event, as it has
// read it, to a dispatcher (directly, or through a stage to another goroutine).
type decoder struct {
	ctx context.Context
	s   *scanner
	src int
	lim Limits
	// st counts Events and sets Truncated; the dispatcher counts the rest.
	st tracemodel.Stats

	// idx is the ordinal of the event being read, -1 outside the events.
	idx     int64
	evDepth int

	// The event being read.
	parsedEvent
	key, tmp, digits []byte

	// The event goes to stage when it is set, else to disp.
	disp  *dispatcher
	stage *eventStage
}

func (d *decoder) decodeError(format string, a ...any) error {
	return &providers.DecodeError{Source: d.src, Message: fmt.Sprintf(format, a...),
		Details: map[string]any{"event": d.idx, "byte": d.s.offset()}}
}

func (d *decoder) limitError(limit int64, unit, format string, a ...any) error {
	return &providers.LimitError{Source: d.src, Limit: limit, Unit: unit, Message: fmt.Sprintf(format, a...),
		Details: map[string]any{"event": d.idx}}
}

// where names the place of an error: the event, or the document around the events.
func (d *decoder) where() string {
	if d.idx >= 0 {
		return fmt.Sprintf("event %d", d.idx)
	}
	return fmt.Sprintf("the document (byte %d)", d.s.offset())
}

// classify turns scanner errors and read errors into providers errors.
func (d *decoder) classify(err error) error {
	if d.s.rerr != nil && (err == errEOF || err == errSyntax || err == d.s.rerr) {
		rerr := d.s.rerr
		var de *providers.DecodeError
		var le *providers.LimitError
		var ie *providers.InputError
		if errors.As(rerr, &de) || errors.As(rerr, &le) || errors.As(rerr, &ie) ||
			errors.Is(rerr, context.Canceled) || errors.Is(rerr, context.DeadlineExceeded) {
			return rerr
		}
		return &providers.DecodeError{Source: d.src, Err: rerr,
			Message: fmt.Sprintf("the input could not be read past byte %d", d.s.off+int64(d.s.end))}
	}
	switch err {
	case errSyntax:
		return d.decodeError("%s is not valid JSON at byte %d", d.where(), d.s.offset())
	case errEOF:
		return d.decodeError("the input ends inside %s", d.where())
	case errStringLong:
		return d.limitError(int64(d.lim.MaxStringBytes), "bytes", "%s has a string longer than %d bytes (max_string_bytes)", d.where(), d.lim.MaxStringBytes)
	case errDepth:
		return d.limitError(int64(d.lim.MaxDepth), "levels", "%s nests deeper than %d levels (max_depth)", d.where(), d.lim.MaxDepth)
	case errNumberLong:
		return d.limitError(maxNumberBytes, "bytes", "%s has a number longer than %d bytes", d.where(), maxNumberBytes)
	}
	return err
}

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

func (d *decoder) run() error {
	s := d.s
	c := s.peek()
	if c == 0xEF && s.ensure(3) && bytes.Equal(s.buf[s.pos:s.pos+3], utf8BOM) {
		s.pos += 3
		c = s.peek()
	}
	switch c {
	case -1:
		if d.s.rerr != nil {
			// Nothing could be read: a corrupt stream, not an empty one.
			return d.classify(d.s.rerr)
		}
		return d.decodeError("the input is empty")
	case '[':
		s.pos++
		d.evDepth = 2
		if err := d.events(true); err != nil {
			return err
		}
	case '{':
		if err := d.object(); err != nil {
			return err
		}
	default:
		return d.decodeError("the input is not a Trace Event JSON array or object")
	}
	if c := s.peek(); c >= 0 {
		return d.decodeError("the input holds data after the trace at byte %d", s.offset())
	}
	return nil
}

// object reads a top-level object, the events from its "traceEvents".
func (d *decoder) object() error {
	s := d.s
	s.pos++
	seen := false
	c := s.peek()
	if c == '}' {
		s.pos++
	} else {
		for {
			if c != '"' {
				return syntaxOrEOF(c)
			}
			var err error
			if d.key, err = s.readString(d.key[:0], d.lim.MaxStringBytes); err != nil {
				return err
			}
			if c = s.peek(); c != ':' {
				return syntaxOrEOF(c)
			}
			s.pos++
			if string(d.key) == "traceEvents" && !seen {
				if c = s.peek(); c != '[' {
					return d.decodeError("traceEvents is not an array")
				}
				s.pos++
				seen = true
				d.evDepth = 3
				err = d.events(false)
			} else {
				err = s.skipValue(2, d.lim.MaxDepth, nil)
			}
			if err != nil {
				return err
			}
			c = s.peek()
			if c == ',' {
				s.pos++
				c = s.peek()
				continue
			}
			if c == '}' {
				s.pos++
				break
			}
			return syntaxOrEOF(c)
		}
	}
	if !seen {
		return d.decodeError("the object has no traceEvents array")
	}
	return nil
}

// events reads an array of events after its "[". top is set for a top-level array,
// which may end without its "]".
func (d *decoder) events(top bool) error {
	s := d.s
	c := s.peek()
	next := d.idx + 1
	for {
		if c == ']' {
			s.pos++
			d.idx = -1
			return nil
		}
		if c < 0 && top && s.rerr == nil {
			d.st.Truncated = true
			d.idx = -1
			return nil
		}
		d.idx = next
		if c != '{' {
			if c < 0 {
				return errEOF
			}
			return d.decodeError("event %d is not an object", d.idx)
		}
		if next >= d.lim.MaxEvents {
			return d.limitError(d.lim.MaxEvents, "events", "the trace has more than %d events (max_events)", d.lim.MaxEvents)
		}
		if next&1023 == 0 {
			if err := d.ctx.Err(); err != nil {
				return err
			}
		}
		if err := d.event(); err != nil {
			return err
		}
		next++
		d.st.Events++
		c = s.peek()
		switch {
		case c == ',':
			s.pos++
			c = s.peek()
		case c == ']':
		case c < 0 && top && s.rerr == nil:
			d.st.Truncated = true
			d.idx = -1
			return nil
		default:
			return syntaxOrEOF(c)
		}
	}
}

// event reads the event object at pos and acts on it.
func (d *decoder) event() error {
	if fastEvents && (d.eventFast() || d.refill() && d.eventFast()) {
		return d.deliver()
	}
	d.resetEvent()
	if err := d.members(d.evDepth, d.member); err != nil {
		return err
	}
	return d.deliver()
}

// refill reads on when the event at pos may run past the buffer's end, where the fast
// path gives up: it moves the unread bytes to the buffer's start and reads until half
// the buffer is unread or the input ends, and reports whether it read more. It does
// not grow the buffer, so an event longer than half of it is read by the general path.
func (d *decoder) refill() bool {
	s := d.s
	if s.eof || s.end-s.pos >= len(s.buf)/2 {
		return false
	}
	end := s.end - s.pos
	s.ensure(len(s.buf) / 2)
	return s.end-s.pos > end
}

// deliver hands the event just read over to be dispatched.
func (d *decoder) deliver() error {
	d.ord, d.end = d.idx, d.s.offset()
	if d.stage != nil {
		return d.stage.add(&d.parsedEvent)
	}
	return d.disp.dispatch(&d.parsedEvent)
}

// resetEvent clears the fields an event sets, before it is read.
func (d *decoder) resetEvent() {
	d.ph, d.name, d.cat, d.scope, d.id = d.ph[:0], d.name[:0], d.cat[:0], d.scope[:0], d.id[:0]
	d.idKind, d.hasTS, d.ts, d.dur, d.pid, d.tid, d.argSet = 0, false, 0, 0, 0, 0, 0
}

// member reads the value, whose first byte is c, of the event member whose key is in
// d.key.
func (d *decoder) member(c int) (err error) {
	switch eventKey(d.key) {
	case keyPh:
		err = d.readStr(&d.ph, c)
	case keyName:
		err = d.readStr(&d.name, c)
	case keyCat:
		err = d.readStr(&d.cat, c)
	case keyTS:
		d.ts, err = d.micros(c, "ts")
		d.hasTS = true
	case keyDur:
		d.dur, err = d.micros(c, "dur")
	case keyPid:
		d.pid, err = d.ident(c)
	case keyTid:
		d.tid, err = d.ident(c)
	case keyID:
		err = d.idText(c, 'i')
	case keyID2:
		err = d.id2(c)
	case keyScope:
		err = d.readStr(&d.scope, c)
	case keyArgs:
		err = d.args(c)
	default:
		err = d.s.skipValue(d.evDepth+1, d.lim.MaxDepth, nil)
	}
	return err
}
