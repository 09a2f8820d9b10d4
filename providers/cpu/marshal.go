package cpu

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/flameox/flameox/providers/internal/sampled"
)

// The subset of CPython's marshal format (Python/marshal.c, version 2-4) that
// pstats.Stats.dump_stats writes: dicts, tuples, lists, the string variants, int, long,
// float, refs (FLAG_REF and 'r'), None, True and False.
//
// The unmarshaler has two ways in. value decodes any object into Go values (tuple, dict,
// string, int64, float64, ...). The pstats decoder (pstats.go) reads the shapes cProfile
// writes through scalar and seq instead, without building those values, and falls back
// to value for anything else. Both share one reference table, whose entries are typed:
// a string is an index into the string table, a function key an index into the key
// table, so that a reference costs no allocation.

const flagRef = 0x80

// maxMarshalDepth matches CPython's MAX_MARSHAL_STACK_DEPTH.
const maxMarshalDepth = 2000

// tuple is a marshal tuple or list.
type tuple []any

// dict is a marshal dict in file order; keys may be tuples, so it is a list of pairs.
type dict []pair

type pair struct{ key, value any }

// py2Error reports marshal data written by Python 2.
type py2Error struct{ reason string }

func (e *py2Error) Error() string { return "Python 2 marshal data: " + e.reason }

// mkind is the kind of a decoded scalar or reference entry.
type mkind uint8

const (
	kNil   mkind = iota // None, or a container whose reference is not filled yet
	kInt                // bits is the int64
	kFloat              // bits is the float64's bits
	kStr                // bits indexes unmarshaler.strs
	kKey                // bits indexes unmarshaler.keys
	kAny                // bits indexes unmarshaler.anys
)

// mval is one decoded object or reference entry.
type mval struct {
	kind mkind
	bits uint64
}

// fkey is an interned function key (file, line, function).
type fkey struct {
	file, name uint32 // indices into unmarshaler.strs
	line       int64
}

// unmarshaler decodes marshal data from a stream.
type unmarshaler struct {
	sampled.Input

	refs []mval
	strs []string
	// strIndex interns strings that carry no reference flag; referenced strings are
	// interned through their reference.
	strIndex map[string]uint32
	keys     []fkey
	anys     []any
}

func newUnmarshaler(r io.Reader) *unmarshaler {
	return &unmarshaler{Input: sampled.NewInput(r), strIndex: map[string]uint32{}}
}

func (u *unmarshaler) int32() (int32, error) {
	if b := u.Buffered(); len(b) >= 4 {
		v := int32(binary.LittleEndian.Uint32(b))
		u.Skip(4)
		return v, nil
	}
	b, err := u.Take(4)
	if err != nil {
		return 0, err
	}
	return int32(binary.LittleEndian.Uint32(b)), nil
}

// count reads a non-negative element count.
func (u *unmarshaler) count() (int, error) {
	n, err := u.int32()
	if err != nil {
		return 0, err
	}
	if n < 0 {
		return 0, fmt.Errorf("negative size at byte %d", u.Pos())
	}
	return int(n), nil
}

// reserve adds a reference slot for an object being read.
func (u *unmarshaler) reserve() int {
	u.refs = sampled.Push(u.refs, mval{})
	return len(u.refs) - 1
}

// ref returns the entry of reference n.
func (u *unmarshaler) ref() (mval, error) {
	n, err := u.count()
	if err != nil {
		return mval{}, err
	}
	if n >= len(u.refs) {
		return mval{}, fmt.Errorf("reference %d to an object not yet read at byte %d", n, u.Pos())
	}
	return u.refs[n], nil
}

// str interns b as a string; referenced strings (ref) are always appended, since the
// reference is what finds them again.
func (u *unmarshaler) str(b []byte, ref bool) mval {
	if !ref {
		if i, ok := u.strIndex[string(b)]; ok {
			return mval{kStr, uint64(i)}
		}
	}
	i := uint32(len(u.strs))
	s := string(b)
	u.strs = sampled.Push(u.strs, s)
	if !ref {
		u.strIndex[s] = i
	}
	return mval{kStr, uint64(i)}
}

// internString interns s like a string without the reference flag.
func (u *unmarshaler) internString(s string) mval {
	i, ok := u.strIndex[s]
	if !ok {
		i = uint32(len(u.strs))
		u.strs = sampled.Push(u.strs, s)
		u.strIndex[s] = i
	}
	return mval{kStr, uint64(i)}
}

// boxed stores a Go value as an mval.
func (u *unmarshaler) boxed(v any) mval {
	switch x := v.(type) {
	case nil:
		return mval{}
	case int64:
		return mval{kInt, uint64(x)}
	case float64:
		return mval{kFloat, math.Float64bits(x)}
	case string:
		return u.internString(x)
	}
	u.anys = append(u.anys, v)
	return mval{kAny, uint64(len(u.anys) - 1)}
}

// unboxed is the Go value of an mval, as value returns it.
func (u *unmarshaler) unboxed(m mval) any {
	switch m.kind {
	case kInt:
		return int64(m.bits)
	case kFloat:
		return math.Float64frombits(m.bits)
	case kStr:
		return u.strs[m.bits]
	case kKey:
		k := u.keys[m.bits]
		return tuple{u.strs[k.file], k.line, u.strs[k.name]}
	case kAny:
		return u.anys[m.bits]
	}
	return nil
}

// scalar decodes the next object: ints, binary floats and strings as typed values, a
// plain reference as its entry, anything else through object.
func (u *unmarshaler) scalar(depth int) (mval, error) {
	if depth > maxMarshalDepth {
		return mval{}, fmt.Errorf("nesting deeper than %d", maxMarshalDepth)
	}
	code, err := u.Byte()
	if err != nil {
		return mval{}, err
	}
	flag := code&flagRef != 0
	code &^= flagRef
	var m mval
	switch code {
	case 'i':
		n, err := u.int32()
		if err != nil {
			return mval{}, err
		}
		m = mval{kInt, uint64(int64(n))}
	case 'g':
		b, err := u.Take(8)
		if err != nil {
			return mval{}, err
		}
		m = mval{kFloat, binary.LittleEndian.Uint64(b)}
	case 'z', 'Z', 'a', 'A', 'u', 't':
		b, err := u.strBytes(code)
		if err != nil {
			return mval{}, err
		}
		m = u.str(b, flag)
	default:
		if code == 'r' && !flag {
			return u.ref()
		}
		slot := -1
		if flag {
			slot = u.reserve()
		}
		v, err := u.object(code, depth, slot)
		if err != nil {
			return mval{}, err
		}
		m = u.boxed(v)
		if slot >= 0 {
			u.refs[slot] = m
		}
		return m, nil
	}
	if flag {
		u.refs = sampled.Push(u.refs, m)
	}
	return m, nil
}

// strBytes reads the payload of a string of the given code.
func (u *unmarshaler) strBytes(code byte) ([]byte, error) {
	var n int
	if code == 'z' || code == 'Z' {
		b, err := u.Byte()
		if err != nil {
			return nil, err
		}
		n = int(b)
	} else {
		c, err := u.count()
		if err != nil {
			return nil, err
		}
		n = c
	}
	return u.Take(n)
}

// value decodes the next object as a Go value.
func (u *unmarshaler) value(depth int) (any, error) {
	if depth > maxMarshalDepth {
		return nil, fmt.Errorf("nesting deeper than %d", maxMarshalDepth)
	}
	code, err := u.Byte()
	if err != nil {
		return nil, err
	}
	flag := code&flagRef != 0
	code &^= flagRef
	// Containers reserve their ref slot before their contents are read.
	slot := -1
	if flag {
		slot = u.reserve()
	}
	v, err := u.object(code, depth, slot)
	if err != nil {
		return nil, err
	}
	if slot >= 0 {
		u.refs[slot] = u.boxed(v)
	}
	return v, nil
}

func (u *unmarshaler) object(code byte, depth, slot int) (any, error) {
	switch code {
	case 'N':
		return nil, nil
	case 'T':
		return true, nil
	case 'F':
		return false, nil
	case 'i':
		n, err := u.int32()
		return int64(n), err
	case 'l':
		return u.long()
	case 'g':
		b, err := u.Take(8)
		if err != nil {
			return nil, err
		}
		return math.Float64frombits(binary.LittleEndian.Uint64(b)), nil
	case 'f':
		n, err := u.Byte()
		if err != nil {
			return nil, err
		}
		b, err := u.Take(int(n))
		if err != nil {
			return nil, err
		}
		f, err := strconv.ParseFloat(string(b), 64)
		if err != nil {
			return nil, fmt.Errorf("bad float at byte %d", u.Pos())
		}
		return f, nil
	case 'z', 'Z', 'a', 'A', 'u', 't':
		b, err := u.strBytes(code)
		return string(b), err
	case 's':
		n, err := u.count()
		if err != nil {
			return nil, err
		}
		b, err := u.Take(n)
		return append([]byte(nil), b...), err
	case ')':
		n, err := u.Byte()
		if err != nil {
			return nil, err
		}
		return u.seq(int(n), depth)
	case '(', '[':
		n, err := u.count()
		if err != nil {
			return nil, err
		}
		return u.seq(n, depth)
	case '{':
		var d dict
		if slot >= 0 {
			u.refs[slot] = u.boxed(d)
		}
		for {
			end, err := u.dictEnd()
			if err != nil {
				return nil, err
			}
			if end {
				return d, nil
			}
			k, err := u.value(depth + 1)
			if err != nil {
				return nil, err
			}
			v, err := u.value(depth + 1)
			if err != nil {
				return nil, err
			}
			d = append(d, pair{k, v})
		}
	case 'r':
		m, err := u.ref()
		if err != nil {
			return nil, err
		}
		return u.unboxed(m), nil
	case 'c':
		return u.code(depth)
	case 'R':
		return nil, &py2Error{"string references ('R') exist only in Python 2 marshal"}
	}
	return nil, fmt.Errorf("unsupported marshal type code %q at byte %d", code, u.Pos()-1)
}

// dictEnd consumes the '0' marker that ends a dict, if it comes next.
func (u *unmarshaler) dictEnd() (bool, error) {
	b, err := u.Peek()
	if err != nil {
		return false, err
	}
	if b == '0' {
		u.Skip(1)
		return true, nil
	}
	return false, nil
}

func (u *unmarshaler) seq(n, depth int) (any, error) {
	t := make(tuple, 0, min(n, 1024))
	for i := 0; i < n; i++ {
		v, err := u.value(depth + 1)
		if err != nil {
			return nil, err
		}
		t = append(t, v)
	}
	return t, nil
}

// long decodes a 'l' integer of 15-bit digits; it must fit in int64.
func (u *unmarshaler) long() (any, error) {
	n, err := u.int32()
	if err != nil {
		return nil, err
	}
	neg := n < 0
	if neg {
		n = -n
	}
	if n > 5 {
		return nil, fmt.Errorf("integer wider than 64 bits at byte %d", u.Pos())
	}
	var v uint64
	for i := 0; i < int(n); i++ {
		b, err := u.Take(2)
		if err != nil {
			return nil, err
		}
		d := uint64(binary.LittleEndian.Uint16(b))
		if d >= 1<<15 {
			return nil, fmt.Errorf("bad long digit at byte %d", u.Pos())
		}
		v |= d << (15 * uint(i))
	}
	if v > math.MaxInt64 {
		return nil, fmt.Errorf("integer wider than 64 bits at byte %d", u.Pos())
	}
	if neg {
		return -int64(v), nil
	}
	return int64(v), nil
}

// codeObject stands for a marshalled code object: the profile module keys its own entry
// with one.
type codeObject struct {
	name, file string
	line       int64
}

// String is how the code object's function name is reported.
func (c codeObject) String() string {
	return fmt.Sprintf("<code object %s, file %q, line %d>", c.name, c.file, c.line)
}

// code decodes a code object in the layout of CPython 3.11 and later: five int32
// counts and flags, then code, consts, names, localsplusnames, localspluskinds,
// filename, name, qualname, the first line number and the line and exception tables.
func (u *unmarshaler) code(depth int) (any, error) {
	for i := 0; i < 5; i++ {
		if _, err := u.int32(); err != nil {
			return nil, err
		}
	}
	var objs [8]any
	for i := range objs {
		v, err := u.value(depth + 1)
		if err != nil {
			return nil, err
		}
		objs[i] = v
	}
	line, err := u.int32()
	if err != nil {
		return nil, err
	}
	for i := 0; i < 2; i++ {
		if _, err := u.value(depth + 1); err != nil {
			return nil, err
		}
	}
	file, ok1 := objs[5].(string)
	name, ok2 := objs[6].(string)
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("a code object in a layout other than CPython 3.11+ at byte %d", u.Pos())
	}
	return codeObject{name: name, file: file, line: int64(line)}, nil
}

// intOf is m as an int (marshal ints and longs only).
func intOf(m mval) (int64, bool) { return int64(m.bits), m.kind == kInt }

// floatOf is m as a float (a float, or an int converted).
func floatOf(m mval) (float64, bool) {
	switch m.kind {
	case kFloat:
		return math.Float64frombits(m.bits), true
	case kInt:
		return float64(int64(m.bits)), true
	}
	return 0, false
}
