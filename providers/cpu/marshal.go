package cpu

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"strconv"
)

// The subset of CPython's marshal format (Python/marshal.c, version 2-4) that
// pstats.Stats.dump_stats writes: dicts, tuples, lists, the string variants, int, long,
// float, refs (FLAG_REF and 'r'), None, True and False.

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

// unmarshaler decodes one marshal value from a stream.
type unmarshaler struct {
	r    *bufio.Reader
	refs []any
	pos  int64
}

func (u *unmarshaler) byte() (byte, error) {
	b, err := u.r.ReadByte()
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	u.pos++
	return b, err
}

func (u *unmarshaler) full(n int) ([]byte, error) {
	if n < 0 {
		return nil, fmt.Errorf("negative length at byte %d", u.pos)
	}
	b := make([]byte, 0, min(n, 1<<16))
	for len(b) < n {
		chunk := min(n-len(b), 1<<16)
		buf := make([]byte, chunk)
		if _, err := io.ReadFull(u.r, buf); err != nil {
			return nil, io.ErrUnexpectedEOF
		}
		b = append(b, buf...)
	}
	u.pos += int64(n)
	return b, nil
}

func (u *unmarshaler) int32() (int32, error) {
	b, err := u.full(4)
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
		return 0, fmt.Errorf("negative size at byte %d", u.pos)
	}
	return int(n), nil
}

// value decodes the next object.
func (u *unmarshaler) value(depth int) (any, error) {
	if depth > maxMarshalDepth {
		return nil, fmt.Errorf("nesting deeper than %d", maxMarshalDepth)
	}
	code, err := u.byte()
	if err != nil {
		return nil, err
	}
	flag := code&flagRef != 0
	code &^= flagRef
	// Containers reserve their ref slot before their contents are read.
	slot := -1
	if flag {
		slot = len(u.refs)
		u.refs = append(u.refs, nil)
	}
	v, err := u.object(code, depth, slot)
	if err != nil {
		return nil, err
	}
	if slot >= 0 {
		u.refs[slot] = v
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
		b, err := u.full(8)
		if err != nil {
			return nil, err
		}
		return math.Float64frombits(binary.LittleEndian.Uint64(b)), nil
	case 'f':
		n, err := u.byte()
		if err != nil {
			return nil, err
		}
		b, err := u.full(int(n))
		if err != nil {
			return nil, err
		}
		f, err := strconv.ParseFloat(string(b), 64)
		if err != nil {
			return nil, fmt.Errorf("bad float at byte %d", u.pos)
		}
		return f, nil
	case 'z', 'Z':
		n, err := u.byte()
		if err != nil {
			return nil, err
		}
		b, err := u.full(int(n))
		return string(b), err
	case 'a', 'A', 'u', 't':
		n, err := u.count()
		if err != nil {
			return nil, err
		}
		b, err := u.full(n)
		return string(b), err
	case 's':
		n, err := u.count()
		if err != nil {
			return nil, err
		}
		b, err := u.full(n)
		return b, err
	case ')':
		n, err := u.byte()
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
			u.refs[slot] = d
		}
		for {
			k, err := u.valueOrNull(depth + 1)
			if err != nil {
				return nil, err
			}
			if k == nullObject {
				return d, nil
			}
			v, err := u.value(depth + 1)
			if err != nil {
				return nil, err
			}
			d = append(d, pair{k, v})
		}
	case 'r':
		n, err := u.count()
		if err != nil {
			return nil, err
		}
		if n >= len(u.refs) {
			return nil, fmt.Errorf("reference %d to an object not yet read at byte %d", n, u.pos)
		}
		return u.refs[n], nil
	case 'c':
		return u.code(depth)
	case 'R':
		return nil, &py2Error{"string references ('R') exist only in Python 2 marshal"}
	}
	return nil, fmt.Errorf("unsupported marshal type code %q at byte %d", code, u.pos-1)
}

// nullObject is the '0' marker that ends a dict.
var nullObject = &struct{}{}

func (u *unmarshaler) valueOrNull(depth int) (any, error) {
	b, err := u.r.Peek(1)
	if err != nil {
		return nil, io.ErrUnexpectedEOF
	}
	if b[0] == '0' {
		u.r.ReadByte()
		u.pos++
		return nullObject, nil
	}
	return u.value(depth)
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
		return nil, fmt.Errorf("integer wider than 64 bits at byte %d", u.pos)
	}
	var v uint64
	for i := 0; i < int(n); i++ {
		b, err := u.full(2)
		if err != nil {
			return nil, err
		}
		d := uint64(binary.LittleEndian.Uint16(b))
		if d >= 1<<15 {
			return nil, fmt.Errorf("bad long digit at byte %d", u.pos)
		}
		v |= d << (15 * uint(i))
	}
	if v > math.MaxInt64 {
		return nil, fmt.Errorf("integer wider than 64 bits at byte %d", u.pos)
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
		return nil, fmt.Errorf("a code object in a layout other than CPython 3.11+ at byte %d", u.pos)
	}
	return codeObject{name: name, file: file, line: int64(line)}, nil
}
