// Package protowire reads the protobuf wire format: tags, varints, fixed-width values and
// length-delimited values held in memory, and skips a whole field value, groups
// included. It is the subset of google.golang.org/protobuf/encoding/protowire that the
// hand-written readers use (Perfetto, OTLP, pprof, through protowalk or directly), with
// the same names and the same results: every Consume function returns the value and the
// number of bytes it took, or a negative length when b is malformed there (cut short, an
// overlong varint, a field number below 1, a reserved wire type, an unmatched end of
// group). Keeping it here keeps the protobuf runtime, and its work at start-up, out of
// the binary: the package's tests check it against the original on every input.
package protowire

import "math"

// Number is a field number.
type Number int32

// The range of field numbers protobuf defines, and the nesting DefaultRecursionLimit
// bounds a group in ConsumeFieldValue to.
const (
	MinValidNumber        Number = 1
	MaxValidNumber        Number = 1<<29 - 1
	DefaultRecursionLimit        = 10000
)

// Type is a wire type.
type Type int8

// The wire types.
const (
	VarintType     Type = 0
	Fixed32Type    Type = 5
	Fixed64Type    Type = 1
	BytesType      Type = 2
	StartGroupType Type = 3
	EndGroupType   Type = 4
)

// The negative lengths of malformed data, as the original package numbers them.
const (
	_ = -iota
	errCodeTruncated
	errCodeFieldNumber
	errCodeOverflow
	errCodeReserved
	errCodeEndGroup
	errCodeRecursionDepth
)

// DecodeTag splits a tag into its field number and wire type. The number is -1 when it
// does not fit an int32; otherwise it is not checked.
func DecodeTag(x uint64) (Number, Type) {
	if x>>3 > uint64(math.MaxInt32) {
		return -1, 0
	}
	return Number(x >> 3), Type(x & 7)
}

// ConsumeTag reads the tag at the start of b: its field number, wire type and length. The
// length is negative when the varint is malformed or the number is below MinValidNumber.
func ConsumeTag(b []byte) (Number, Type, int) {
	v, n := ConsumeVarint(b)
	if n < 0 {
		return 0, 0, n
	}
	num, typ := DecodeTag(v)
	if num < MinValidNumber {
		return 0, 0, errCodeFieldNumber
	}
	return num, typ, n
}

// ConsumeVarint reads the varint at the start of b and its length, at most 10 bytes; the
// tenth may hold only the top bit (0 or 1). The length is negative when b ends inside it
// or it overflows 64 bits.
func ConsumeVarint(b []byte) (v uint64, n int) {
	if len(b) > 0 && b[0] < 0x80 {
		return uint64(b[0]), 1
	}
	for i := 0; i < 9; i++ {
		if i >= len(b) {
			return 0, errCodeTruncated
		}
		y := uint64(b[i])
		v |= (y & 0x7f) << (7 * i)
		if y < 0x80 {
			return v, i + 1
		}
	}
	if len(b) < 10 {
		return 0, errCodeTruncated
	}
	if b[9] > 1 {
		return 0, errCodeOverflow
	}
	return v | uint64(b[9])<<63, 10
}

// AppendVarint appends v to b as a varint.
func AppendVarint(b []byte, v uint64) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

// ConsumeFixed32 reads the little-endian uint32 at the start of b (length 4), or returns
// a negative length when b is shorter.
func ConsumeFixed32(b []byte) (v uint32, n int) {
	if len(b) < 4 {
		return 0, errCodeTruncated
	}
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24, 4
}

// ConsumeFixed64 reads the little-endian uint64 at the start of b (length 8), or returns
// a negative length when b is shorter.
func ConsumeFixed64(b []byte) (v uint64, n int) {
	if len(b) < 8 {
		return 0, errCodeTruncated
	}
	lo, _ := ConsumeFixed32(b)
	hi, _ := ConsumeFixed32(b[4:])
	return uint64(lo) | uint64(hi)<<32, 8
}

// ConsumeBytes reads the length-delimited value at the start of b: the value (a slice of
// b) and the length of the whole, or a negative length when b is malformed or shorter.
func ConsumeBytes(b []byte) (v []byte, n int) {
	m, n := ConsumeVarint(b)
	if n < 0 {
		return nil, n
	}
	if m > uint64(len(b[n:])) {
		return nil, errCodeTruncated
	}
	return b[n:][:m], n + int(m)
}

// ConsumeFieldValue returns the length of the value of a field numbered num of wire type
// typ at the start of b (the tag already read). A group's value runs through its end
// marker, which must carry num, its fields nested at most DefaultRecursionLimit deep. The
// length is negative when the value is malformed, when typ is an end of group (there is
// no group to end) or a type protobuf reserves.
func ConsumeFieldValue(num Number, typ Type, b []byte) (n int) {
	return consumeFieldValue(num, typ, b, DefaultRecursionLimit)
}

func consumeFieldValue(num Number, typ Type, b []byte, depth int) (n int) {
	switch typ {
	case VarintType:
		_, n = ConsumeVarint(b)
	case Fixed32Type:
		_, n = ConsumeFixed32(b)
	case Fixed64Type:
		_, n = ConsumeFixed64(b)
	case BytesType:
		_, n = ConsumeBytes(b)
	case StartGroupType:
		if depth < 0 {
			return errCodeRecursionDepth
		}
		n0 := len(b)
		for {
			num2, typ2, k := ConsumeTag(b)
			if k < 0 {
				return k
			}
			b = b[k:]
			if typ2 == EndGroupType {
				if num2 != num {
					return errCodeEndGroup
				}
				return n0 - len(b)
			}
			k = consumeFieldValue(num2, typ2, b, depth-1)
			if k < 0 {
				return k
			}
			b = b[k:]
		}
	case EndGroupType:
		return errCodeEndGroup
	default:
		return errCodeReserved
	}
	return n
}
