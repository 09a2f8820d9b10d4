package chrome

import (
	"encoding/binary"
	"math/bits"

	"github.com/flameox/flameox/providers/trace/tracemodel"
)

// fastEvents enables decoder.eventFast; tests turn it off to compare the paths.
var fastEvents = true

// eventFast reads the event object at pos (buf[pos] == '{') in one pass over the
// buffer, with the position in a local variable: the common case of event. It applies
// when the event lies whole in the buffer and holds only what this path reads: keys
// and string values without escapes, ts and dur of at most 19 digits and three
// decimals without exponent, integer pid, tid and argument values, "Input Dims" of
// integer arrays, id2 objects with plain keys, and skipped values of valid JSON whose
// numbers are within maxNumberBytes. It then sets the event's fields as event does,
// consumes the event and returns true. Otherwise it returns false having consumed
// nothing, and event reads the event from its start (it resets every field this path
// sets), reporting its errors.
func (d *decoder) eventFast() bool {
	s := d.s
	b := s.buf[:s.end]
	lim := d.lim.MaxStringBytes
	maxDepth := d.lim.MaxDepth
	if d.evDepth > maxDepth {
		return false
	}
	d.resetEvent()
	i := skipSpace(b, s.pos+1)
	if i < len(b) && b[i] == '}' {
		s.pos = i + 1
		return true
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return false
		}
		ke, k := fastKey(b, i, lim, false)
		if ke < 0 {
			return false
		}
		var ok bool
		if i = sepSpace(b, ke+1, ':'); i < 0 {
			if i, ok = valueAfterKey(b, ke+1); !ok {
				return false
			}
		}
		switch k {
		case keyPh:
			d.ph, i, ok = fastStr(b, i, d.ph, lim, d.evDepth+1, maxDepth)
		case keyName:
			d.name, i, ok = fastStr(b, i, d.name, lim, d.evDepth+1, maxDepth)
		case keyCat:
			d.cat, i, ok = fastStr(b, i, d.cat, lim, d.evDepth+1, maxDepth)
		case keyScope:
			d.scope, i, ok = fastStr(b, i, d.scope, lim, d.evDepth+1, maxDepth)
		case keyTS:
			d.ts, i, ok = scaled(b, i, 3)
			d.hasTS = true
		case keyDur:
			d.dur, i, ok = scaled(b, i, 3)
		case keyPid:
			d.pid, i, ok = d.fastIdent(b, i, lim)
		case keyTid:
			d.tid, i, ok = d.fastIdent(b, i, lim)
		case keyID:
			i, ok = d.fastID(b, i, lim, 'i')
		case keyID2:
			i, ok = d.fastID2(b, i, lim)
		case keyArgs:
			i, ok = d.fastArgs(b, i, lim, d.evDepth+1, maxDepth)
		default:
			i, ok = skipJSON(b, i, d.evDepth+1, maxDepth)
		}
		var more bool
		if !ok {
			return false
		}
		if j := sepSpace(b, i, ','); j >= 0 {
			i = j
			continue
		}
		if i, more, ok = afterValue(b, i, '}'); !ok {
			return false
		}
		if !more {
			s.pos = i
			return true
		}
	}
}

// fastStr reads a string value at i into dst[:0] as readStr does: a value of another
// kind is skipped and leaves dst empty.
func fastStr(b []byte, i int, dst []byte, lim, depth, maxDepth int) ([]byte, int, bool) {
	if b[i] != '"' {
		j, ok := skipJSON(b, i, depth, maxDepth)
		return dst[:0], j, ok
	}
	e := keptString(b, i, lim)
	if e < 0 {
		return dst, 0, false
	}
	return append(dst[:0], b[i+1:e]...), e + 1, true
}

// fastIdent reads a pid or tid as ident does, for integers, null and plain strings.
func (d *decoder) fastIdent(b []byte, i, lim int) (int64, int, bool) {
	switch c := b[i]; {
	case c == '"':
		e := keptString(b, i, lim)
		if e < 0 {
			return 0, 0, false
		}
		return d.identText(b[i+1 : e]), e + 1, true
	case c == 'n':
		if i+4 < len(b) && string(b[i:i+4]) == "null" {
			return 0, i + 4, true
		}
		return 0, 0, false
	}
	return scaled(b, i, 0)
}

// fastID2 reads an "id2" value ({"local": id} or {"global": id}) as id2 does.
func (d *decoder) fastID2(b []byte, i, lim int) (int, bool) {
	return d.fastMembers(b, i, lim, d.evDepth+1, d.lim.MaxDepth, true)
}

// fastID2Member reads the value at i (at nesting depth depth) of the member key of an
// "id2" object as id2 does.
func (d *decoder) fastID2Member(b []byte, key []byte, i, lim, depth, maxDepth int) (int, bool) {
	switch string(key) {
	case "local":
		return d.fastID(b, i, lim, 'l')
	case "global":
		return d.fastID(b, i, lim, 'g')
	}
	return skipJSON(b, i, depth, maxDepth)
}

// fastID reads an async id of this kind ('i' for "id", 'l' and 'g' in "id2") as idText
// does, for numbers and plain strings.
func (d *decoder) fastID(b []byte, i, lim int, kind byte) (int, bool) {
	d.idKind = kind
	d.id = d.id[:0]
	switch c := b[i]; {
	case c == '"':
		e := keptString(b, i, lim)
		if e < 0 {
			return 0, false
		}
		d.id = append(append(d.id, 's'), b[i+1:e]...)
		return e + 1, true
	case c == '-' || c-'0' <= 9:
		e := numberEnd(b, i)
		if e < 0 {
			return 0, false
		}
		d.id = append(append(d.id, 'n'), b[i:e]...)
		return e, true
	}
	return skipJSON(b, i, d.evDepth+1, d.lim.MaxDepth)
}

// fastArgs reads the event's "args" at i (at nesting depth depth) as args does.
func (d *decoder) fastArgs(b []byte, i, lim, depth, maxDepth int) (int, bool) {
	return d.fastMembers(b, i, lim, depth, maxDepth, false)
}

// fastMembers reads the value at i, at nesting depth depth, as an object whose keys
// are plain strings of at most lim bytes, and each member's value as fastArg reads an
// argument's (fastID2Member an id2 member's when id2 is set); a value that is not an
// object is skipped. ok is false for anything else, as soon as it is met.
func (d *decoder) fastMembers(b []byte, i, lim, depth, maxDepth int, id2 bool) (int, bool) {
	if b[i] != '{' {
		return skipJSON(b, i, depth, maxDepth)
	}
	if depth > maxDepth {
		return 0, false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, true
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return 0, false
		}
		ke, k := fastKey(b, i, lim, true)
		if ke < 0 {
			return 0, false
		}
		key := i + 1
		var ok, more bool
		if i = sepSpace(b, ke+1, ':'); i < 0 {
			if i, ok = valueAfterKey(b, ke+1); !ok {
				return 0, false
			}
		}
		if id2 {
			i, ok = d.fastID2Member(b, b[key:ke], i, lim, depth+1, maxDepth)
		} else {
			i, ok = d.fastArg(b, i, k, lim, depth+1, maxDepth)
		}
		if !ok {
			return 0, false
		}
		if j := sepSpace(b, i, ','); j >= 0 {
			i = j
			continue
		}
		if i, more, ok = afterValue(b, i, '}'); !ok || !more {
			return i, ok
		}
	}
}

// fastArg reads the value at i (at nesting depth depth) of the argument k as arg does.
func (d *decoder) fastArg(b []byte, i int, k keyCode, lim, depth, maxDepth int) (int, bool) {
	switch k {
	case argKeyFile:
		return d.fastStrArg(b, i, &d.argFile, tracemodel.ArgFile, lim, depth, maxDepth)
	case argKeyName:
		return d.fastStrArg(b, i, &d.argName, argName, lim, depth, maxDepth)
	case argKeyShapes:
		if b[i] != '[' {
			return 0, false
		}
		var ok bool
		d.argShapes, i, ok = intArrays(b, i, d.argShapes[:0], depth, maxDepth)
		if len(d.argShapes) > lim {
			return 0, false
		}
		d.argSet |= tracemodel.ArgShapes
		return i, ok
	case argKeyLine, argKeyBytes, argKeyCorr, argKeyDevice, argKeyStream, argKeyExternal:
		if c := b[i]; c != '-' && c-'0' > 9 {
			return skipJSON(b, i, depth, maxDepth)
		}
		v, i, ok := scaled(b, i, 0)
		if ok {
			slot := argSlot[k]
			d.argVals[slot] = v
			d.argSet |= tracemodel.ValBits[slot]
		}
		return i, ok
	}
	return skipJSON(b, i, depth, maxDepth)
}

// fastKey reads the object key whose opening quote is at i: the index of its closing
// quote and its code, of an argument's key when arg is set, else of an event member's.
// ke is -1 when the key has an escape, runs past the buffer or is longer than lim
// bytes. Most keys are found, and matched as a word, in the eight bytes after the quote.
func fastKey(b []byte, i, lim int, arg bool) (ke int, k keyCode) {
	from := i + 1
	if i+9 <= len(b) {
		w := binary.LittleEndian.Uint64(b[i+1:])
		if m := byteMask(w, '"') | byteMask(w, '\\'); m != 0 {
			n := bits.TrailingZeros64(m) >> 3
			if b[i+1+n] != '"' || n > lim {
				return -1, keyOther
			}
			w &= 1<<(8*n) - 1
			if arg {
				return i + 1 + n, argKeyWord(w, n)
			}
			return i + 1 + n, eventKeyWord(w, n)
		}
		from = i + 9 // the key's first eight bytes hold no quote or backslash
	}
	if ke = plainString(b, from); ke < 0 || ke-(i+1) > lim {
		return -1, keyOther
	}
	if arg {
		return ke, argKey(b[i+1 : ke])
	}
	return ke, eventKey(b[i+1 : ke])
}

// fastStrArg reads a string argument into *dst and sets bit in argSet, as strArg does;
// a value of another kind is skipped and sets nothing.
func (d *decoder) fastStrArg(b []byte, i int, dst *[]byte, bit uint16, lim, depth, maxDepth int) (int, bool) {
	if b[i] != '"' {
		return skipJSON(b, i, depth, maxDepth)
	}
	var ok bool
	*dst, i, ok = fastStr(b, i, *dst, lim, depth, maxDepth)
	d.argSet |= bit
	return i, ok
}

// byteMask sets the top bit of the bytes of w that equal c. Borrows only cross from a
// byte that equals c, so the lowest bit set is exact (bytes above it may be flagged
// wrongly).
func byteMask(w uint64, c byte) uint64 {
	x := w ^ (0x0101010101010101 * uint64(c))
	return (x - 0x0101010101010101) &^ x & 0x8080808080808080
}

// keptString returns the index of the quote that closes the string whose opening quote
// is at i, or -1 when its text has an escape, runs past the buffer or is longer than lim
// bytes.
func keptString(b []byte, i, lim int) int {
	e := plainString(b, i+1)
	if e < 0 || e-(i+1) > lim {
		return -1
	}
	return e
}

// valueAfterKey returns the index of the first byte of a member's value, given the index
// after its key: whitespace, a ':', whitespace. ok is false for anything else, or at
// the end of the buffer.
func valueAfterKey(b []byte, i int) (int, bool) {
	i = skipSpace(b, i)
	if i >= len(b) || b[i] != ':' {
		return 0, false
	}
	i = skipSpace(b, i+1)
	return i, i < len(b)
}

// afterValue reads what follows a value in an object or array closed by closer: a ','
// (more is set, and next is the index of what follows it) or closer (next is the index
// after it). ok is false for anything else, or at the end of the buffer.
func afterValue(b []byte, i int, closer byte) (next int, more, ok bool) {
	i = skipSpace(b, i)
	if i < len(b) {
		switch b[i] {
		case ',':
			return skipSpace(b, i+1), true, true
		case closer:
			return i + 1, false, true
		}
	}
	return 0, false, false
}

// sepSpace returns the index of what follows the separator sep (':' after a key, ','
// after a value) at i when the separator is followed by nothing or one space and then
// by something other than whitespace (as separators mostly are), else -1: valueAfterKey
// or afterValue then read what follows. It is inlined where those are not.
func sepSpace(b []byte, i int, sep byte) int {
	if i+2 < len(b) && b[i] == sep {
		if b[i+1] > ' ' {
			return i + 1
		}
		if b[i+1] == ' ' && b[i+2] > ' ' {
			return i + 2
		}
	}
	return -1
}

// skipSpace returns the index of the first byte at or after i that is not JSON
// whitespace.
func skipSpace(b []byte, i int) int {
	if i < len(b) && b[i] > ' ' {
		return i
	}
	for i < len(b) {
		switch b[i] {
		case ' ', '\n', '\r', '\t':
			i++
			continue
		}
		return i
	}
	return i
}

// plainString returns the index of the quote that closes the string whose text starts
// at i, or -1 when a backslash comes first or the buffer ends before it. It reads
// eight bytes at a time while eight are left.
func plainString(b []byte, i int) int {
	for i+8 <= len(b) {
		w := binary.LittleEndian.Uint64(b[i:])
		q, bs := byteMask(w, '"'), byteMask(w, '\\')
		if q|bs != 0 {
			at := bits.TrailingZeros64(q | bs)
			if q>>at&1 == 0 {
				return -1
			}
			return i + at>>3
		}
		i += 8
	}
	for ; i < len(b); i++ {
		switch b[i] {
		case '"':
			return i
		case '\\':
			return -1
		}
	}
	return -1
}

// numberEnd returns the index after the JSON number at i, or -1 when it is not one, is
// longer than maxNumberBytes (readNumber's bound, which the general path reports), or
// the buffer ends before the byte after it. Like readNumber it takes the whole run of
// number bytes (digits, '.', '-', '+', 'e', 'E'), in one pass: the grammar read
// greedily, then no number byte after it.
func numberEnd(b []byte, i int) int {
	j := i
	if j < len(b) && b[j] == '-' {
		j++
	}
	if j >= len(b) {
		return -1
	}
	switch c := b[j]; {
	case c == '0':
		j++
	case c-'1' <= 8:
		j = digitsEnd(b, j+1)
	default:
		return -1
	}
	if j < len(b) && b[j] == '.' {
		k := digitsEnd(b, j+1)
		if k == j+1 {
			return -1
		}
		j = k
	}
	if j < len(b) && b[j]|0x20 == 'e' {
		j++
		if j < len(b) && (b[j] == '+' || b[j] == '-') {
			j++
		}
		k := digitsEnd(b, j)
		if k == j {
			return -1
		}
		j = k
	}
	if j >= len(b) || j-i > maxNumberBytes {
		return -1
	}
	if c := b[j]; c-'0' <= 9 || c == '.' || c == '-' || c == '+' || c|0x20 == 'e' {
		return -1 // more number bytes: the run is not a number
	}
	return j
}

// digitsEnd returns the index of the first byte at or after i that is not an ASCII
// digit, reading eight bytes at a time past the first two.
func digitsEnd(b []byte, i int) int {
	for k := 0; k < 2; k++ {
		if i >= len(b) || b[i]-'0' > 9 {
			return i
		}
		i++
	}
	for i+8 <= len(b) {
		w := binary.LittleEndian.Uint64(b[i:])
		nd := ((w + 0x4646464646464646) | (w - 0x3030303030303030)) & 0x8080808080808080
		if nd != 0 {
			return i + bits.TrailingZeros64(nd)>>3
		}
		i += 8
	}
	for i < len(b) && b[i]-'0' <= 9 {
		i++
	}
	return i
}

// stringEnd returns the index after the string whose opening quote is at i, as
// skipString reads it (a backslash escapes the byte after it, whatever it is), or -1
// when the buffer ends first. It reads eight bytes at a time while eight are left.
func stringEnd(b []byte, i int) int {
	i++
	for {
		for i+8 <= len(b) {
			w := binary.LittleEndian.Uint64(b[i:])
			if m := byteMask(w, '"') | byteMask(w, '\\'); m != 0 {
				i += bits.TrailingZeros64(m) >> 3
				break
			}
			i += 8
		}
		for i < len(b) && b[i] != '"' && b[i] != '\\' {
			i++
		}
		if i >= len(b) {
			return -1
		}
		if b[i] == '"' {
			return i + 1
		}
		i += 2 // a backslash and the byte it escapes
	}
}

// skipJSON returns the index after the JSON value at i, which sits at nesting depth
// depth, as skipValue reads it; ok is false for a value that is not valid JSON, is
// nested deeper than maxDepth, or runs past the buffer (skipValue then reads it). It
// reads containers without recursion, their kinds on a stack of bits (ok is false
// past 64 levels within the value).
func skipJSON(b []byte, i, depth, maxDepth int) (int, bool) {
	// objs has bit k set when the container open at level k is an object; level is the
	// number of containers open.
	var objs uint64
	level := 0
	for {
		// A value at i (after a key's colon, in an object).
		if i >= len(b) {
			return 0, false
		}
		switch c := b[i]; {
		case c == '"':
			if i = stringEnd(b, i); i < 0 {
				return 0, false
			}
		case c == '-' || c-'0' <= 9:
			if i = numberEnd(b, i); i < 0 {
				return 0, false
			}
		case c == 't':
			if i+4 >= len(b) || string(b[i:i+4]) != "true" {
				return 0, false
			}
			i += 4
		case c == 'f':
			if i+5 >= len(b) || string(b[i:i+5]) != "false" {
				return 0, false
			}
			i += 5
		case c == 'n':
			if i+4 >= len(b) || string(b[i:i+4]) != "null" {
				return 0, false
			}
			i += 4
		case c == '[' || c == '{':
			if depth+level > maxDepth || level == 64 {
				return 0, false
			}
			if c == '{' {
				objs |= 1 << level
			} else {
				objs &^= 1 << level
			}
			level++
			i = skipSpace(b, i+1)
			if i < len(b) && b[i] == c+2 { // ']' or '}', empty
				i++
				level--
				break
			}
			if c == '{' {
				if i = memberValue(b, i); i < 0 {
					return 0, false
				}
			}
			continue
		default:
			return 0, false
		}
		// After a value: the end of the containers it closes, then a ',' and the next
		// value (after its key in an object).
		for {
			if level == 0 {
				return i, true
			}
			i = skipSpace(b, i)
			if i >= len(b) {
				return 0, false
			}
			obj := objs>>(level-1)&1 != 0
			if c := b[i]; c == ',' {
				i = skipSpace(b, i+1)
				if obj {
					if i = memberValue(b, i); i < 0 {
						return 0, false
					}
				}
				break
			} else if (c == '}' && obj) || (c == ']' && !obj) {
				i++
				level--
				continue
			}
			return 0, false
		}
	}
}

// memberValue returns the index of the value of the object member whose key's opening
// quote is at i, or -1 when there is no key and colon.
func memberValue(b []byte, i int) int {
	if i >= len(b) || b[i] != '"' {
		return -1
	}
	if i = stringEnd(b, i); i < 0 {
		return -1
	}
	if j := sepSpace(b, i, ':'); j >= 0 {
		return j
	}
	i, ok := valueAfterKey(b, i)
	if !ok {
		return -1
	}
	return i
}
