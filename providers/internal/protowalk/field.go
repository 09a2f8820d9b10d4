package protowalk

import (
	"math"

	"github.com/flameox/flameox/providers/internal/protowire"
)

// Field is one field of a message.
type Field struct {
	// Num is the field number as the tag writes it (the tag's value shifted right by
	// three): 0 and numbers past protobuf's range included, for a reader that skips what
	// it does not know, as google/pprof's decoder does. ValidNumber tells them apart.
	Num uint64
	// Type is the wire type: varint, fixed32, fixed64 or bytes (never a group).
	Type protowire.Type
	// Value is the value of a varint, fixed32 or fixed64 field.
	Value uint64
	// Bytes is the value of a length-delimited field; it points into the message.
	Bytes []byte
}

// ValidNumber reports whether num is a field number protobuf's parsers take (1 to
// 2^31-1, as protowire.ConsumeTag reads a tag).
func ValidNumber(num uint64) bool { return num >= 1 && num <= math.MaxInt32 }

// Next decodes the field at the start of b and returns it with the rest of b. ok is
// false when b is malformed there: a tag or value cut short or overlong, a group, or a
// wire type protobuf does not define. The field number is not checked (ValidNumber).
func Next(b []byte) (f Field, rest []byte, ok bool) {
	tag, n := protowire.ConsumeVarint(b)
	if n < 0 {
		return f, nil, false
	}
	f.Num, f.Type = tag>>3, protowire.Type(tag&7)
	b = b[n:]
	switch f.Type {
	case protowire.VarintType:
		f.Value, n = protowire.ConsumeVarint(b)
	case protowire.Fixed64Type:
		f.Value, n = protowire.ConsumeFixed64(b)
	case protowire.Fixed32Type:
		var v uint32
		v, n = protowire.ConsumeFixed32(b)
		f.Value = uint64(v)
	case protowire.BytesType:
		f.Bytes, n = protowire.ConsumeBytes(b)
	default:
		return f, nil, false
	}
	if n < 0 {
		return f, nil, false
	}
	return f, b[n:], true
}

// Each calls fn with every field of the message b in order, until fn returns false. It
// returns false when b is malformed (Next) or fn refused a field.
func Each(b []byte, fn func(Field) bool) bool {
	for len(b) > 0 {
		f, rest, ok := Next(b)
		if !ok || !fn(f) {
			return false
		}
		b = rest
	}
	return true
}

// Varints calls fn with each value of f, a repeated integer field packed or not: a
// varint's value, or each varint of a packed run (a length-delimited value), until fn
// returns false. It returns false when f has another wire type, its run is malformed, or
// fn refused a value.
func (f Field) Varints(fn func(uint64) bool) bool {
	switch f.Type {
	case protowire.VarintType:
		return fn(f.Value)
	case protowire.BytesType:
		for b := f.Bytes; len(b) > 0; {
			v, n := protowire.ConsumeVarint(b)
			if n < 0 || !fn(v) {
				return false
			}
			b = b[n:]
		}
		return true
	}
	return false
}

// Fixed64s counts the values of f, a repeated fixed64 field packed or not: a packed run
// holds len/8 (ok is false when 8 does not divide its length); a field of any other
// wire type is one value.
func (f Field) Fixed64s() (n int64, ok bool) {
	if f.Type == protowire.BytesType {
		if len(f.Bytes)%8 != 0 {
			return 0, false
		}
		return int64(len(f.Bytes) / 8), true
	}
	return 1, true
}
