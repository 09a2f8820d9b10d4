package parquet

import "math"

// Thrift compact protocol (the encoding of Parquet's footer and page headers): field
// headers carry the type in the low nibble and the field id's delta in the high one;
// integers are zigzag varints; binaries and lists carry their length first.
const (
	tStop   = 0
	tTrue   = 1
	tFalse  = 2
	tByte   = 3
	tI16    = 4
	tI32    = 5
	tI64    = 6
	tDouble = 7
	tBinary = 8
	tList   = 9
	tSet    = 10
	tMap    = 11
	tStruct = 12
)

// maxThriftDepth bounds the nesting of structs, lists and maps a decoder follows.
const maxThriftDepth = 32

// errShort is a Thrift structure that runs past the bytes given; a page header read
// from a window of the file is retried with a larger one.
var errShort = &FormatError{Msg: "thrift structure runs past its bytes"}

// thrift decodes the compact protocol from b.
type thrift struct {
	b     []byte
	pos   int
	depth int
}

func (t *thrift) byte1() (byte, error) {
	if t.pos >= len(t.b) {
		return 0, errShort
	}
	c := t.b[t.pos]
	t.pos++
	return c, nil
}

func (t *thrift) uvarint() (uint64, error) {
	var x uint64
	for shift := 0; shift < 64; shift += 7 {
		c, err := t.byte1()
		if err != nil {
			return 0, err
		}
		x |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return x, nil
		}
	}
	return 0, formatErr("thrift varint too long")
}

func (t *thrift) i64() (int64, error) {
	u, err := t.uvarint()
	return int64(u>>1) ^ -int64(u&1), err
}

func (t *thrift) i32() (int32, error) {
	n, err := t.i64()
	if err == nil && (n < math.MinInt32 || n > math.MaxInt32) {
		return 0, formatErr("thrift i32 out of range")
	}
	return int32(n), err
}

// binary returns a slice of b (not a copy) of the next binary's bytes.
func (t *thrift) binary() ([]byte, error) {
	n, err := t.uvarint()
	if err != nil {
		return nil, err
	}
	if n > uint64(len(t.b)-t.pos) {
		return nil, errShort
	}
	s := t.b[t.pos : t.pos+int(n)]
	t.pos += int(n)
	return s, nil
}

// listHeader returns a list's (or set's) element type and count; the count is bounded
// by the bytes left, since every element takes at least one.
func (t *thrift) listHeader() (elem byte, n int, err error) {
	c, err := t.byte1()
	if err != nil {
		return 0, 0, err
	}
	elem, size := c&0x0f, uint64(c>>4)
	if size == 15 {
		if size, err = t.uvarint(); err != nil {
			return 0, 0, err
		}
	}
	if size > uint64(len(t.b)-t.pos) {
		return 0, 0, errShort
	}
	return elem, int(size), nil
}

// fields calls f with each field of a struct until its stop; f reads the field's value
// or skips it. Booleans are carried by the header: f reads them with t.boolOf(typ).
func (t *thrift) fields(f func(id int16, typ byte) error) error {
	t.depth++
	if t.depth > maxThriftDepth {
		return formatErr("thrift structures nested too deeply")
	}
	defer func() { t.depth-- }()
	var id int16
	for {
		c, err := t.byte1()
		if err != nil {
			return err
		}
		typ := c & 0x0f
		if typ == tStop {
			return nil
		}
		if d := int16(c >> 4); d != 0 {
			id += d
		} else {
			n, err := t.i64()
			if err != nil {
				return err
			}
			if n < math.MinInt16 || n > math.MaxInt16 {
				return formatErr("thrift field id out of range")
			}
			id = int16(n)
		}
		if err := f(id, typ); err != nil {
			return err
		}
	}
}

// skip skips a value of type typ.
func (t *thrift) skip(typ byte) error {
	switch typ {
	case tTrue, tFalse:
		return nil
	case tByte:
		_, err := t.byte1()
		return err
	case tI16, tI32, tI64:
		_, err := t.uvarint()
		return err
	case tDouble:
		if len(t.b)-t.pos < 8 {
			return errShort
		}
		t.pos += 8
		return nil
	case tBinary:
		_, err := t.binary()
		return err
	case tList, tSet:
		elem, n, err := t.listHeader()
		if err != nil {
			return err
		}
		return t.nested(func() error {
			for range n {
				if elem == tTrue || elem == tFalse {
					if _, err := t.byte1(); err != nil { // a bool element takes a byte
						return err
					}
				} else if err := t.skip(elem); err != nil {
					return err
				}
			}
			return nil
		})
	case tMap:
		n, err := t.uvarint()
		if err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		if n > uint64(len(t.b)-t.pos) {
			return errShort
		}
		kv, err := t.byte1()
		if err != nil {
			return err
		}
		return t.nested(func() error {
			for range n {
				for _, e := range [2]byte{kv >> 4, kv & 0x0f} {
					if e == tTrue || e == tFalse {
						if _, err := t.byte1(); err != nil {
							return err
						}
					} else if err := t.skip(e); err != nil {
						return err
					}
				}
			}
			return nil
		})
	case tStruct:
		return t.fields(func(_ int16, typ byte) error { return t.skip(typ) })
	}
	return formatErr("thrift type %d unknown", typ)
}

func (t *thrift) nested(f func() error) error {
	t.depth++
	defer func() { t.depth-- }()
	if t.depth > maxThriftDepth {
		return formatErr("thrift structures nested too deeply")
	}
	return f()
}

// Typed field readers: each checks the wire type and skips a field of another type, as
// Thrift readers do.

func (t *thrift) readI32(typ byte, dst *int32) error {
	if typ != tI32 && typ != tI16 && typ != tByte {
		return t.skip(typ)
	}
	if typ == tByte {
		c, err := t.byte1()
		*dst = int32(int8(c))
		return err
	}
	v, err := t.i32()
	*dst = v
	return err
}

func (t *thrift) readI64(typ byte, dst *int64) error {
	if typ != tI64 && typ != tI32 && typ != tI16 {
		return t.skip(typ)
	}
	v, err := t.i64()
	*dst = v
	return err
}

func (t *thrift) readBool(typ byte, dst *bool) error {
	switch typ {
	case tTrue:
		*dst = true
		return nil
	case tFalse:
		*dst = false
		return nil
	}
	return t.skip(typ)
}

func (t *thrift) readString(typ byte, dst *string) error {
	if typ != tBinary {
		return t.skip(typ)
	}
	b, err := t.binary()
	*dst = string(b)
	return err
}

// readList reads a list field, calling elem for each element.
func (t *thrift) readList(typ byte, elem func(typ byte) error) error {
	if typ != tList && typ != tSet {
		return t.skip(typ)
	}
	et, n, err := t.listHeader()
	if err != nil {
		return err
	}
	return t.nested(func() error {
		for range n {
			if err := elem(et); err != nil {
				return err
			}
		}
		return nil
	})
}

// readStruct reads a struct field with f, or skips a field of another type.
func (t *thrift) readStruct(typ byte, f func(id int16, typ byte) error) error {
	if typ != tStruct {
		return t.skip(typ)
	}
	return t.fields(f)
}
