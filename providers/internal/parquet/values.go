package parquet

import (
	"encoding/binary"
	"math"
)

// Value is one value of a leaf column with its levels. A null (Null, when Def is below
// the column's maximum) carries nothing else. Bytes (BYTE_ARRAY, FIXED_LEN_BYTE_ARRAY,
// INT96's 12 bytes) is valid until the next read of its reader.
type Value struct {
	Def, Rep int32
	Null     bool
	bits     uint64 // BOOLEAN 0/1, INT32 sign-extended, INT64, FLOAT and DOUBLE bits
	Bytes    []byte
}

// Bool is a BOOLEAN value.
func (v *Value) Bool() bool { return v.bits != 0 }

// Int32 is an INT32 value.
func (v *Value) Int32() int32 { return int32(v.bits) }

// Uint32 is an INT32 value read as unsigned.
func (v *Value) Uint32() uint32 { return uint32(v.bits) }

// Int64 is an INT64 value (or an INT32 one, widened).
func (v *Value) Int64() int64 { return int64(v.bits) }

// Uint64 is an INT64 value read as unsigned.
func (v *Value) Uint64() uint64 { return v.bits }

// Float32 is a FLOAT value.
func (v *Value) Float32() float32 { return math.Float32frombits(uint32(v.bits)) }

// Float64 is a DOUBLE value.
func (v *Value) Float64() float64 { return math.Float64frombits(v.bits) }

// valueDecoder decodes the non-null values of a page into dst, in order.
type valueDecoder interface {
	decode(dst []Value) error
}

var errValues = &FormatError{Msg: "page ends before its values"}

// plainDecoder decodes PLAIN values of a physical type.
type plainDecoder struct {
	data []byte
	pos  int
	bit  uint64 // BOOLEAN's bit position
	typ  Type
	size int // fixed size of a value, 0 for BYTE_ARRAY and BOOLEAN
}

func newPlain(data []byte, typ Type, length int32) *plainDecoder {
	d := &plainDecoder{data: data, typ: typ}
	switch typ {
	case Int32, Float:
		d.size = 4
	case Int64, Double:
		d.size = 8
	case Int96:
		d.size = 12
	case FixedLenByteArray:
		d.size = int(length)
	}
	return d
}

func (d *plainDecoder) decode(dst []Value) error {
	switch d.typ {
	case Boolean:
		if uint64(len(d.data))*8-d.bit < uint64(len(dst)) {
			return errValues
		}
		for i := range dst {
			dst[i].bits = uint64(d.data[d.bit>>3] >> (d.bit & 7) & 1)
			d.bit++
		}
		return nil
	case ByteArray:
		for i := range dst {
			if len(d.data)-d.pos < 4 {
				return errValues
			}
			n := binary.LittleEndian.Uint32(d.data[d.pos:])
			d.pos += 4
			if uint64(n) > uint64(len(d.data)-d.pos) {
				return errValues
			}
			dst[i].Bytes = d.data[d.pos : d.pos+int(n) : d.pos+int(n)]
			d.pos += int(n)
		}
		return nil
	}
	if (len(d.data)-d.pos)/d.size < len(dst) {
		return errValues
	}
	for i := range dst {
		setFixed(&dst[i], d.typ, d.data[d.pos:d.pos+d.size:d.pos+d.size])
		d.pos += d.size
	}
	return nil
}

// setFixed sets v from the little-endian bytes b of a fixed-size value of type typ
// (FIXED_LEN_BYTE_ARRAY and INT96 keep b).
func setFixed(v *Value, typ Type, b []byte) {
	switch typ {
	case Int32:
		v.bits = uint64(int64(int32(binary.LittleEndian.Uint32(b))))
	case Float:
		v.bits = uint64(binary.LittleEndian.Uint32(b))
	case Int64, Double:
		v.bits = binary.LittleEndian.Uint64(b)
	default:
		v.Bytes = b
	}
}

// fits reports whether n values can fit the decoder's bytes (a dictionary page's count
// is checked before its values are allocated).
func (d *plainDecoder) fits(n int) bool {
	switch d.typ {
	case Boolean:
		return uint64(n) <= uint64(len(d.data))*8
	case ByteArray:
		return uint64(n)*4 <= uint64(len(d.data))
	}
	return uint64(n)*uint64(d.size) <= uint64(len(d.data))
}

// dictDecoder decodes dictionary indexes (a bit width, then RLE/bit-packed runs).
type dictDecoder struct {
	dict []Value
	rle  *rleDecoder
	idx  []int32
}

func newDictDecoder(data []byte, dict []Value) (*dictDecoder, error) {
	if len(data) == 0 {
		return &dictDecoder{dict: dict, rle: newRLE(nil, 0)}, nil
	}
	if data[0] > 32 {
		return nil, formatErr("dictionary index width %d", data[0])
	}
	return &dictDecoder{dict: dict, rle: newRLE(data[1:], uint(data[0]))}, nil
}

func (d *dictDecoder) decode(dst []Value) error {
	if cap(d.idx) < len(dst) {
		d.idx = make([]int32, len(dst))
	}
	idx := d.idx[:len(dst)]
	if err := d.rle.read(idx); err != nil {
		return err
	}
	for i, k := range idx {
		if k < 0 || int(k) >= len(d.dict) {
			return formatErr("dictionary index %d out of range", k)
		}
		dst[i].bits, dst[i].Bytes = d.dict[k].bits, d.dict[k].Bytes
	}
	return nil
}

// rleBoolDecoder decodes RLE booleans (a 4-byte length, then runs of bit width 1).
type rleBoolDecoder struct {
	rle *rleDecoder
	buf []int32
}

func (d *rleBoolDecoder) decode(dst []Value) error {
	if cap(d.buf) < len(dst) {
		d.buf = make([]int32, len(dst))
	}
	b := d.buf[:len(dst)]
	if err := d.rle.read(b); err != nil {
		return err
	}
	for i, v := range b {
		dst[i].bits = uint64(v & 1)
	}
	return nil
}

// deltaIntDecoder decodes DELTA_BINARY_PACKED INT32 and INT64 values.
type deltaIntDecoder struct {
	d     deltaDecoder
	int32 bool
}

func (d *deltaIntDecoder) decode(dst []Value) error {
	for i := range dst {
		v, err := d.d.next()
		if err != nil {
			return err
		}
		if d.int32 {
			v = int64(int32(v))
		}
		dst[i].bits = uint64(v)
	}
	return nil
}

// deltaLengthDecoder decodes DELTA_LENGTH_BYTE_ARRAY: the lengths, delta-encoded, then
// the bytes laid end to end.
type deltaLengthDecoder struct {
	lengths deltaDecoder
	data    []byte
	pos     int
}

func newDeltaLength(data []byte, maxValues int) (*deltaLengthDecoder, int, error) {
	d := &deltaLengthDecoder{}
	if err := d.lengths.init(data, maxValues); err != nil {
		return nil, 0, err
	}
	end, err := d.lengths.end()
	if err != nil {
		return nil, 0, err
	}
	d.data, d.pos = data, end
	return d, d.lengths.total, nil
}

func (d *deltaLengthDecoder) next() ([]byte, error) {
	n, err := d.lengths.next()
	if err != nil {
		return nil, err
	}
	if n < 0 || n > int64(len(d.data)-d.pos) {
		return nil, errValues
	}
	b := d.data[d.pos : d.pos+int(n) : d.pos+int(n)]
	d.pos += int(n)
	return b, nil
}

func (d *deltaLengthDecoder) decode(dst []Value) error {
	for i := range dst {
		b, err := d.next()
		if err != nil {
			return err
		}
		dst[i].Bytes = b
	}
	return nil
}

// deltaByteArrayDecoder decodes DELTA_BYTE_ARRAY: prefix lengths (delta-encoded), then
// the suffixes as DELTA_LENGTH_BYTE_ARRAY; a value is the previous value's prefix and
// its suffix. Values are built in arena, which the reader resets at each read.
type deltaByteArrayDecoder struct {
	prefixes deltaDecoder
	suffixes *deltaLengthDecoder
	prev     []byte
	arena    *[]byte
	fixed    int // FIXED_LEN_BYTE_ARRAY's length, 0 for BYTE_ARRAY
}

func newDeltaByteArray(data []byte, maxValues int, arena *[]byte, fixed int) (*deltaByteArrayDecoder, error) {
	d := &deltaByteArrayDecoder{arena: arena, fixed: fixed}
	if err := d.prefixes.init(data, maxValues); err != nil {
		return nil, err
	}
	end, err := d.prefixes.end()
	if err != nil {
		return nil, err
	}
	s, n, err := newDeltaLength(data[end:], maxValues)
	if err != nil {
		return nil, err
	}
	if n != d.prefixes.total {
		return nil, formatErr("DELTA_BYTE_ARRAY prefixes and suffixes differ in count")
	}
	d.suffixes = s
	return d, nil
}

func (d *deltaByteArrayDecoder) decode(dst []Value) error {
	for i := range dst {
		p, err := d.prefixes.next()
		if err != nil {
			return err
		}
		s, err := d.suffixes.next()
		if err != nil {
			return err
		}
		if p < 0 || p > int64(len(d.prev)) {
			return formatErr("DELTA_BYTE_ARRAY prefix longer than the previous value")
		}
		if d.fixed > 0 && int(p)+len(s) != d.fixed {
			return formatErr("DELTA_BYTE_ARRAY value of another length than its column's")
		}
		a := *d.arena
		start := len(a)
		a = append(append(a, d.prev[:p]...), s...)
		*d.arena = a
		dst[i].Bytes = a[start:len(a):len(a)]
		d.prev = append(d.prev[:0], dst[i].Bytes...)
	}
	return nil
}

// splitDecoder decodes BYTE_STREAM_SPLIT: the k bytes of each of n values are laid out
// as k streams of n bytes.
type splitDecoder struct {
	data  []byte
	n, k  int
	i     int
	typ   Type
	arena *[]byte
}

func newSplit(data []byte, typ Type, length int32, arena *[]byte) (*splitDecoder, error) {
	k := 0
	switch typ {
	case Int32, Float:
		k = 4
	case Int64, Double:
		k = 8
	case FixedLenByteArray:
		k = int(length)
	default:
		return nil, formatErr("BYTE_STREAM_SPLIT on %s", typ)
	}
	if len(data)%k != 0 {
		return nil, formatErr("BYTE_STREAM_SPLIT data is not a whole number of values")
	}
	return &splitDecoder{data: data, n: len(data) / k, k: k, typ: typ, arena: arena}, nil
}

func (d *splitDecoder) decode(dst []Value) error {
	if d.n-d.i < len(dst) {
		return errValues
	}
	var one [8]byte
	for j := range dst {
		b := one[:0]
		if d.typ == FixedLenByteArray {
			b = *d.arena
		}
		start := len(b)
		for s := range d.k {
			b = append(b, d.data[s*d.n+d.i])
		}
		if d.typ == FixedLenByteArray {
			*d.arena = b
		}
		b = b[start:len(b):len(b)]
		d.i++
		setFixed(&dst[j], d.typ, b)
	}
	return nil
}
