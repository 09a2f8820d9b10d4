package chrome

import (
	"bytes"

	"github.com/flameox/flameox/providers/trace/tracemodel"
)

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
	// The lengths of the keys of the cases below: a case of another length must add it.
	switch len(k) {
	case 4, 5, 6, 8, 9, 10, 11, 14:
	default:
		return keyOther // most keys, which no case below has the length of
	}
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

// argKeyWord is argKey of the key of n (at most 7) bytes held in w's low bytes, the
// first in the lowest, the others zero.
func argKeyWord(w uint64, n int) keyCode {
	switch w | uint64(n)<<56 {
	case 'F' | 'i'<<8 | 'l'<<16 | 'e'<<24 | 4<<56, 'f' | 'i'<<8 | 'l'<<16 | 'e'<<24 | 4<<56:
		return argKeyFile
	case 'L' | 'i'<<8 | 'n'<<16 | 'e'<<24 | 4<<56, 'l' | 'i'<<8 | 'n'<<16 | 'e'<<24 | 4<<56:
		return argKeyLine
	case 'B' | 'y'<<8 | 't'<<16 | 'e'<<24 | 's'<<32 | 5<<56:
		return argKeyBytes
	case 'd' | 'e'<<8 | 'v'<<16 | 'i'<<24 | 'c'<<32 | 'e'<<40 | 6<<56:
		return argKeyDevice
	case 's' | 't'<<8 | 'r'<<16 | 'e'<<24 | 'a'<<32 | 'm'<<40 | 6<<56:
		return argKeyStream
	case 'n' | 'a'<<8 | 'm'<<16 | 'e'<<24 | 4<<56:
		return argKeyName
	}
	return keyOther
}

// argName is the bit of parsedEvent.argSet for args.name of an M event: the first bit
// tracemodel.PackedArgs.Set leaves free, never in Args.
const argName = tracemodel.ArgExternal << 1

// argSlot maps an integer argument's key code to its index in tracemodel.PackedArgs.Vals.
var argSlot = [...]int{argKeyLine: tracemodel.ValLine, argKeyBytes: tracemodel.ValBytes, argKeyCorr: tracemodel.ValCorrelation,
	argKeyDevice: tracemodel.ValDevice, argKeyStream: tracemodel.ValStream, argKeyExternal: tracemodel.ValExternal}

// members reads the object at pos, at nesting depth depth, calling value for each
// member with its key in d.key and the first byte of its value.
func (d *decoder) members(depth int, value func(c int) error) error {
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

// readStr reads a string value into *dst, leaving *dst empty for a value of another kind.
func (d *decoder) readStr(dst *[]byte, c int) error {
	if c != '"' {
		*dst = (*dst)[:0]
		return d.s.skipValue(d.evDepth+1, d.lim.MaxDepth, nil)
	}
	var err error
	*dst, err = d.s.readString((*dst)[:0], d.lim.MaxStringBytes)
	return err
}

// micros reads a µs number as ns.
func (d *decoder) micros(c int, field string) (int64, error) {
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
func (d *decoder) ident(c int) (int64, error) {
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
func (d *decoder) identText(t []byte) int64 {
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
func (d *decoder) idText(c int, kind byte) error {
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
func (d *decoder) id2(c int) error {
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

// args reads the event's "args".
func (d *decoder) args(c int) error {
	depth := d.evDepth + 1
	if c != '{' {
		return d.s.skipValue(depth, d.lim.MaxDepth, nil)
	}
	return d.members(depth, func(c int) error { return d.arg(argKey(d.key), c, depth+1) })
}

// arg reads the value of the argument k, whose first byte is c, at nesting depth depth.
func (d *decoder) arg(k keyCode, c, depth int) error {
	s := d.s
	var err error
	switch k {
	case argKeyFile:
		err = d.strArg(c, &d.argFile, tracemodel.ArgFile, depth)
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
		d.argSet |= tracemodel.ArgShapes
	case argKeyName:
		err = d.strArg(c, &d.argName, argName, depth)
	default:
		err = s.skipValue(depth, d.lim.MaxDepth, nil)
	}
	return err
}

// intArg reads an integer argument; values of other kinds (and non-integers) are
// skipped.
func (d *decoder) intArg(c int, i int, depth int) error {
	s := d.s
	if c != '-' && (c < '0' || c > '9') {
		return s.skipValue(depth, d.lim.MaxDepth, nil)
	}
	if v, ok := s.scaledNumber(0); ok {
		d.argVals[i] = v
		d.argSet |= tracemodel.ValBits[i]
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
		d.argSet |= tracemodel.ValBits[i]
	}
	return nil
}

// strArg reads a string argument into *dst and sets bit in argSet; a value of another
// kind is skipped and sets nothing.
func (d *decoder) strArg(c int, dst *[]byte, bit uint16, depth int) error {
	if c != '"' {
		return d.s.skipValue(depth, d.lim.MaxDepth, nil)
	}
	var err error
	*dst, err = d.s.readString((*dst)[:0], d.lim.MaxStringBytes)
	d.argSet |= bit
	return err
}
