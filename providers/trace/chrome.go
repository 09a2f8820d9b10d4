package trace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/flameox/flameox/providers"
)

// ChromeLimits bound what DecodeChrome reads; exceeding one is a *providers.LimitError
// naming the bound. A zero field takes its default (DefaultChromeLimits).
type ChromeLimits struct {
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

// DefaultChromeLimits are the bounds a zero ChromeLimits field takes.
var DefaultChromeLimits = ChromeLimits{
	MaxDepth:        64,
	MaxOpenPerTrack: 10_000,
	MaxTracks:       1 << 16,
	MaxStringBytes:  1 << 20,
	MaxEvents:       1 << 28,
}

func (l ChromeLimits) withDefaults() ChromeLimits {
	d := DefaultChromeLimits
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

// Opener is an optional interface of a Sink. A decoder that delivers a slice only when
// it ends (Trace Event B/E and async b/e pairs) calls Open when such a slice begins, so
// that a Nester holds back the slices that start after it until it arrives.
type Opener interface {
	// Open says that the slice with this ID (the ordinal of its begin event) began at ts
	// on track and will be delivered to Slice when it ends, if it ends.
	Open(id, track, ts int64)
	// Close says that the slice Open announced ended without a slice (its end came
	// before its begin), so nothing waits for it.
	Close(id int64)
}

// DecodeChrome reads Chrome Trace Event JSON (Chrome DevTools, Kineto/torch.profiler,
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
func DecodeChrome(ctx context.Context, r io.Reader, source int, lim ChromeLimits, sink Sink) (*Stats, error) {
	d := newChromeDecoder(ctx, r, source, lim)
	d.disp = newChromeDispatcher(source, d.lim, sink)
	if err := d.parse(); err != nil {
		return nil, err
	}
	return d.disp.stats(&d.st), nil
}

func newChromeDecoder(ctx context.Context, r io.Reader, source int, lim ChromeLimits) *chromeDecoder {
	return &chromeDecoder{ctx: ctx, s: newScanner(r), src: source, lim: lim.withDefaults(), idx: -1}
}

// parse reads the document, handing over every event; its errors are classified.
func (d *chromeDecoder) parse() error {
	if err := d.run(); err != nil {
		return d.classify(err)
	}
	if d.s.rerr != nil {
		return d.classify(d.s.rerr)
	}
	return nil
}

// Argument bits of packedArgs.set.
const (
	argFile uint16 = 1 << iota
	argShapes
	argLine
	argBytes
	argCorr
	argDevice
	argStream
	argExternal
	argName // args.name of an M event; never in Args
)

// Indexes of packedArgs.vals.
const (
	valLine = iota
	valBytes
	valCorr
	valDevice
	valStream
	valExternal
)

// packedArgs is Args by value, for slices that are kept (open B/E slices, the Nester's
// buffer) without an allocation per argument.
type packedArgs struct {
	set          uint16
	file, shapes string
	vals         [6]int64
}

var valBits = [6]uint16{argLine, argBytes, argCorr, argDevice, argStream, argExternal}

// argSlot maps an integer argument's key code to its index in packedArgs.vals.
var argSlot = [...]int{argKeyLine: valLine, argKeyBytes: valBytes, argKeyCorr: valCorr,
	argKeyDevice: valDevice, argKeyStream: valStream, argKeyExternal: valExternal}

// expand copies p into store and returns Args pointing into store.
func (p *packedArgs) expand(store *packedArgs) Args {
	*store = *p
	var a Args
	if p.set == 0 {
		return a
	}
	if p.set&argFile != 0 {
		a.Filename = &store.file
	}
	if p.set&argShapes != 0 {
		a.InputShapes = &store.shapes
	}
	ptrs := [6]**int64{&a.Line, &a.AllocationBytes, &a.CorrelationID, &a.Device, &a.Stream, &a.ExternalID}
	for i, bit := range valBits {
		if p.set&bit != 0 {
			*ptrs[i] = &store.vals[i]
		}
	}
	return a
}

// pack sets p from a.
func (p *packedArgs) pack(a *Args) {
	*p = packedArgs{}
	if a.Filename != nil {
		p.set |= argFile
		p.file = *a.Filename
	}
	if a.InputShapes != nil {
		p.set |= argShapes
		p.shapes = *a.InputShapes
	}
	ptrs := [6]*int64{a.Line, a.AllocationBytes, a.CorrelationID, a.Device, a.Stream, a.ExternalID}
	for i, v := range ptrs {
		if v != nil {
			p.set |= valBits[i]
			p.vals[i] = *v
		}
	}
}

// fill sets the arguments of q that p lacks.
func (p *packedArgs) fill(q *packedArgs) {
	if q.set&argFile != 0 && p.set&argFile == 0 {
		p.file = q.file
	}
	if q.set&argShapes != 0 && p.set&argShapes == 0 {
		p.shapes = q.shapes
	}
	for i, bit := range valBits {
		if q.set&bit != 0 && p.set&bit == 0 {
			p.vals[i] = q.vals[i]
		}
	}
	p.set |= q.set
}

// packedSink is implemented by the package's own sinks (the Nester and the pipeline's
// recorder), which keep a slice's arguments packed: a decoder that finds it passes them
// as they are instead of expanding them into Args for Slice to pack again. It is
// otherwise Slice.
type packedSink interface {
	slice(id, ts, dur, track int64, name, cat, phase string, args *packedArgs) error
}

// openSlice is a begun B or b slice.
type openSlice struct {
	id, ts    int64
	name, cat string
	args      packedArgs
}

type trackState struct {
	open []openSlice
}

// chromeDecoder parses the document and its events; it hands each event, as it has
// read it, to a chromeDispatcher (directly, or through a stage to another goroutine).
type chromeDecoder struct {
	ctx context.Context
	s   *scanner
	src int
	lim ChromeLimits
	// st counts Events and sets Truncated; the dispatcher counts the rest.
	st Stats

	// idx is the ordinal of the event being read, -1 outside the events.
	idx     int64
	evDepth int

	// The event being read.
	chromeEvent
	key, tmp, digits []byte

	// The event goes to stage when it is set, else to disp.
	disp  *chromeDispatcher
	stage *eventStage
}

func (d *chromeDecoder) decodeError(format string, a ...any) error {
	return &providers.DecodeError{Source: d.src, Message: fmt.Sprintf(format, a...),
		Details: map[string]any{"event": d.idx, "byte": d.s.offset()}}
}

func (d *chromeDecoder) limitError(limit int64, unit, format string, a ...any) error {
	return &providers.LimitError{Source: d.src, Limit: limit, Unit: unit, Message: fmt.Sprintf(format, a...),
		Details: map[string]any{"event": d.idx}}
}

// where names the place of an error: the event, or the document around the events.
func (d *chromeDecoder) where() string {
	if d.idx >= 0 {
		return fmt.Sprintf("event %d", d.idx)
	}
	return fmt.Sprintf("the document (byte %d)", d.s.offset())
}

// classify turns scanner errors and read errors into providers errors.
func (d *chromeDecoder) classify(err error) error {
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

func (d *chromeDecoder) run() error {
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
func (d *chromeDecoder) object() error {
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
func (d *chromeDecoder) events(top bool) error {
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

// readStr reads a string value into *dst, leaving *dst empty for a value of another kind.
func (d *chromeDecoder) readStr(dst *[]byte, c int) error {
	if c != '"' {
		*dst = (*dst)[:0]
		return d.s.skipValue(d.evDepth+1, d.lim.MaxDepth, nil)
	}
	var err error
	*dst, err = d.s.readString((*dst)[:0], d.lim.MaxStringBytes)
	return err
}

// micros reads a µs number as ns.
func (d *chromeDecoder) micros(c int, field string) (int64, error) {
	if c != '-' && (c < '0' || c > '9') {
		if c < 0 {
			return 0, errEOF
		}
		return 0, d.decodeError("event %d: %s is not a number", d.idx, field)
	}
	if v, ok := d.s.scaledNumber(3); ok {
		return v, nil
	}
	t, err := d.s.readNumber()
	if err != nil {
		return 0, err
	}
	v, _, ok, digits := scaleDecimal(t, 3, d.digits)
	d.digits = digits
	if !ok {
		return 0, d.decodeError("event %d: %s is outside the int64 nanosecond range", d.idx, field)
	}
	return v, nil
}

// ident reads a pid or tid: an integer (or a string holding one) is its value; other
// text maps to its FNV-1a 64 hash with the top bit set.
func (d *chromeDecoder) ident(c int) (int64, error) {
	s := d.s
	var err error
	switch {
	case c == '"':
		if d.tmp, err = s.readString(d.tmp[:0], d.lim.MaxStringBytes); err != nil {
			return 0, err
		}
		return d.identText(d.tmp), nil
	case c == '-' || (c >= '0' && c <= '9'):
		if v, ok := s.scaledNumber(0); ok {
			return v, nil
		}
		t, err := s.readNumber()
		if err != nil {
			return 0, err
		}
		v, exact, ok, digits := scaleDecimal(t, 0, d.digits)
		d.digits = digits
		if ok && exact {
			return v, nil
		}
		return hashIdent(t), nil
	case c == 'n':
		_, err := s.literal()
		return 0, err
	default:
		if c < 0 {
			return 0, errEOF
		}
		return 0, d.decodeError("event %d: pid or tid is neither a number nor a string", d.idx)
	}
}

// identText is the pid or tid written as the string t.
func (d *chromeDecoder) identText(t []byte) int64 {
	if validNumber(t) {
		v, exact, ok, digits := scaleDecimal(t, 0, d.digits)
		d.digits = digits
		if ok && exact && bytes.IndexAny(t, ".eE") < 0 {
			return v
		}
	}
	return hashIdent(t)
}

func hashIdent(b []byte) int64 {
	h := uint64(14695981039346656037)
	for _, c := range b {
		h ^= uint64(c)
		h *= 1099511628211
	}
	return int64(h | 1<<63)
}

// idText reads an async id (number or string) into d.id, tagged with its kind.
func (d *chromeDecoder) idText(c int, kind byte) error {
	s := d.s
	d.idKind = kind
	d.id = d.id[:0]
	switch {
	case c == '"':
		d.id = append(d.id, 's')
		var err error
		d.id, err = s.readString(d.id, d.lim.MaxStringBytes)
		return err
	case c == '-' || (c >= '0' && c <= '9'):
		t, err := s.readNumber()
		if err != nil {
			return err
		}
		d.id = append(append(d.id, 'n'), t...)
		return nil
	default:
		return s.skipValue(d.evDepth+1, d.lim.MaxDepth, nil)
	}
}

// id2 reads {"local": id} or {"global": id}.
func (d *chromeDecoder) id2(c int) error {
	s := d.s
	if c != '{' {
		return s.skipValue(d.evDepth+1, d.lim.MaxDepth, nil)
	}
	return d.members(d.evDepth+1, func(c int) error {
		switch string(d.key) {
		case "local":
			return d.idText(c, 'l')
		case "global":
			return d.idText(c, 'g')
		}
		return s.skipValue(d.evDepth+2, d.lim.MaxDepth, nil)
	})
}

// members reads the object at pos, at nesting depth depth, calling value for each
// member with its key in d.key and the first byte of its value.
func (d *chromeDecoder) members(depth int, value func(c int) error) error {
	s := d.s
	if depth > d.lim.MaxDepth {
		return errDepth
	}
	s.pos++
	c := s.peek()
	if c == '}' {
		s.pos++
		return nil
	}
	for {
		if c != '"' {
			return syntaxOrEOF(c)
		}
		var err error
		if d.key, err = s.readString(d.key[:0], d.lim.MaxStringBytes); err != nil {
			return err
		}
		if err = s.colon(); err != nil {
			return err
		}
		if err = value(s.peek()); err != nil {
			return err
		}
		var more bool
		if c, more, err = s.next(); !more {
			return err
		}
	}
}

// intArg reads an integer argument; values of other kinds (and non-integers) are
// skipped.
func (d *chromeDecoder) intArg(c int, i int, depth int) error {
	s := d.s
	if c != '-' && (c < '0' || c > '9') {
		return s.skipValue(depth, d.lim.MaxDepth, nil)
	}
	if v, ok := s.scaledNumber(0); ok {
		d.argVals[i] = v
		d.argSet |= valBits[i]
		return nil
	}
	t, err := s.readNumber()
	if err != nil {
		return err
	}
	v, exact, ok, digits := scaleDecimal(t, 0, d.digits)
	d.digits = digits
	if ok && exact {
		d.argVals[i] = v
		d.argSet |= valBits[i]
	}
	return nil
}

// args reads the event's "args".
func (d *chromeDecoder) args(c int) error {
	depth := d.evDepth + 1
	if c != '{' {
		return d.s.skipValue(depth, d.lim.MaxDepth, nil)
	}
	return d.members(depth, func(c int) error { return d.arg(argKey(d.key), c, depth+1) })
}

// arg reads the value of the argument k, whose first byte is c, at nesting depth depth.
func (d *chromeDecoder) arg(k keyCode, c, depth int) error {
	s := d.s
	var err error
	switch k {
	case argKeyFile:
		err = d.strArg(c, &d.argFile, argFile, depth)
	case argKeyLine, argKeyBytes, argKeyCorr, argKeyDevice, argKeyStream, argKeyExternal:
		err = d.intArg(c, argSlot[k], depth)
	case argKeyShapes:
		var ok bool
		if c == '[' {
			d.argShapes, ok = s.captureIntArrays(d.argShapes[:0], depth, d.lim.MaxDepth)
		}
		if !ok {
			d.argShapes = d.argShapes[:0]
			err = s.skipValue(depth, d.lim.MaxDepth, &d.argShapes)
		}
		if err == nil && len(d.argShapes) > d.lim.MaxStringBytes {
			err = errStringLong
		}
		d.argSet |= argShapes
	case argKeyName:
		err = d.strArg(c, &d.argName, argName, depth)
	default:
		err = s.skipValue(depth, d.lim.MaxDepth, nil)
	}
	return err
}

// strArg reads a string argument into *dst and sets bit in argSet; a value of another
// kind is skipped and sets nothing.
func (d *chromeDecoder) strArg(c int, dst *[]byte, bit uint16, depth int) error {
	if c != '"' {
		return d.s.skipValue(depth, d.lim.MaxDepth, nil)
	}
	var err error
	*dst, err = d.s.readString((*dst)[:0], d.lim.MaxStringBytes)
	d.argSet |= bit
	return err
}

// keyCode names an object key the decoder acts on: the event members (key...) and the
// arguments (argKey...) it reads; keyOther is any other key.
type keyCode uint8

const (
	keyOther keyCode = iota
	keyPh
	keyName
	keyCat
	keyTS
	keyDur
	keyPid
	keyTid
	keyID
	keyID2
	keyScope
	keyArgs
	argKeyFile
	argKeyLine
	argKeyShapes
	argKeyBytes
	argKeyCorr
	argKeyDevice
	argKeyStream
	argKeyExternal
	argKeyName
)

// eventKey is the code of an event member's key.
func eventKey(k []byte) keyCode {
	if len(k) > 7 {
		return keyOther
	}
	var w uint64
	for i, c := range k {
		w |= uint64(c) << (8 * i)
	}
	return eventKeyWord(w, len(k))
}

// eventKeyWord is the code of the key of n (at most 7) bytes held in w's low bytes,
// the first in the lowest, the others zero.
func eventKeyWord(w uint64, n int) keyCode {
	switch w | uint64(n)<<56 {
	case 'p' | 'h'<<8 | 2<<56:
		return keyPh
	case 'n' | 'a'<<8 | 'm'<<16 | 'e'<<24 | 4<<56:
		return keyName
	case 'c' | 'a'<<8 | 't'<<16 | 3<<56:
		return keyCat
	case 't' | 's'<<8 | 2<<56:
		return keyTS
	case 'd' | 'u'<<8 | 'r'<<16 | 3<<56:
		return keyDur
	case 'p' | 'i'<<8 | 'd'<<16 | 3<<56:
		return keyPid
	case 't' | 'i'<<8 | 'd'<<16 | 3<<56:
		return keyTid
	case 'i' | 'd'<<8 | 2<<56:
		return keyID
	case 'i' | 'd'<<8 | '2'<<16 | 3<<56:
		return keyID2
	case 's' | 'c'<<8 | 'o'<<16 | 'p'<<24 | 'e'<<32 | 5<<56:
		return keyScope
	case 'a' | 'r'<<8 | 'g'<<16 | 's'<<24 | 4<<56:
		return keyArgs
	}
	return keyOther
}

// argKey is the code of an argument's key.
func argKey(k []byte) keyCode {
	switch string(k) {
	case "File", "file", "filename", "fileName":
		return argKeyFile
	case "Line", "line", "lineNumber":
		return argKeyLine
	case "Input Dims":
		return argKeyShapes
	case "Bytes":
		return argKeyBytes
	case "correlation", "correlation_id":
		return argKeyCorr
	case "device", "device_id":
		return argKeyDevice
	case "stream":
		return argKeyStream
	case "External id":
		return argKeyExternal
	case "name":
		return argKeyName
	}
	return keyOther
}

// event reads the event object at pos and acts on it.
func (d *chromeDecoder) event() error {
	if fastEvents && d.eventFast() {
		return d.deliver()
	}
	d.resetEvent()
	if err := d.members(d.evDepth, d.member); err != nil {
		return err
	}
	return d.deliver()
}

// deliver hands the event just read over to be dispatched.
func (d *chromeDecoder) deliver() error {
	d.ord, d.end = d.idx, d.s.offset()
	if d.stage != nil {
		return d.stage.add(&d.chromeEvent)
	}
	return d.disp.dispatch(&d.chromeEvent)
}

// resetEvent clears the fields an event sets, before it is read.
func (d *chromeDecoder) resetEvent() {
	d.ph, d.name, d.cat, d.scope, d.id = d.ph[:0], d.name[:0], d.cat[:0], d.scope[:0], d.id[:0]
	d.idKind, d.hasTS, d.ts, d.dur, d.pid, d.tid, d.argSet = 0, false, 0, 0, 0, 0, 0
}

// member reads the value, whose first byte is c, of the event member whose key is in
// d.key.
func (d *chromeDecoder) member(c int) (err error) {
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
