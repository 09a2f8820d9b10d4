package protowire_test

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
	gpw "google.golang.org/protobuf/encoding/protowire"

	"github.com/flameox/flameox/providers/internal/protowire"
)

// result is what every function of the package gives for one input, and what the
// original gives, side by side in one comparable value.
type result struct {
	Varint      uint64
	VarintN     int
	TagNum      int32
	TagType     int8
	TagN        int
	Fixed32     uint32
	Fixed32N    int
	Fixed64     uint64
	Fixed64N    int
	Bytes       []byte
	BytesN      int
	FieldValueN [8]int // ConsumeFieldValue of b past its tag, by wire type 0-7
	DecodeNum   int32
	DecodeType  int8
	Append      []byte
}

func ours(b []byte) result {
	var r result
	r.Varint, r.VarintN = protowire.ConsumeVarint(b)
	num, typ, n := protowire.ConsumeTag(b)
	r.TagNum, r.TagType, r.TagN = int32(num), int8(typ), n
	r.Fixed32, r.Fixed32N = protowire.ConsumeFixed32(b)
	r.Fixed64, r.Fixed64N = protowire.ConsumeFixed64(b)
	r.Bytes, r.BytesN = protowire.ConsumeBytes(b)
	rest := b[max(n, 0):]
	for t := range r.FieldValueN {
		r.FieldValueN[t] = protowire.ConsumeFieldValue(num, protowire.Type(t), rest)
	}
	dn, dt := protowire.DecodeTag(r.Varint)
	r.DecodeNum, r.DecodeType = int32(dn), int8(dt)
	r.Append = protowire.AppendVarint([]byte{0xff}, r.Varint)
	return r
}

func theirs(b []byte) result {
	var r result
	r.Varint, r.VarintN = gpw.ConsumeVarint(b)
	num, typ, n := gpw.ConsumeTag(b)
	r.TagNum, r.TagType, r.TagN = int32(num), int8(typ), n
	r.Fixed32, r.Fixed32N = gpw.ConsumeFixed32(b)
	r.Fixed64, r.Fixed64N = gpw.ConsumeFixed64(b)
	r.Bytes, r.BytesN = gpw.ConsumeBytes(b)
	rest := b[max(n, 0):]
	for t := range r.FieldValueN {
		r.FieldValueN[t] = gpw.ConsumeFieldValue(num, gpw.Type(t), rest)
	}
	dn, dt := gpw.DecodeTag(r.Varint)
	r.DecodeNum, r.DecodeType = int32(dn), int8(dt)
	r.Append = gpw.AppendVarint([]byte{0xff}, r.Varint)
	return r
}

// check compares the package with the original on b and, when it is short, on every
// suffix of b.
func check(t *testing.T, b []byte) {
	t.Helper()
	last := len(b)
	if last > 512 {
		last = 0
	}
	for i := 0; i <= last; i++ {
		if d := cmp.Diff(theirs(b[i:]), ours(b[i:])); d != "" {
			t.Fatalf("input % x (-original +ours):\n%s", b[i:], d)
		}
	}
}

// group is a group numbered num holding body, its end marker numbered end.
func group(num, end gpw.Number, body []byte) []byte {
	b := gpw.AppendTag(nil, num, gpw.StartGroupType)
	b = append(b, body...)
	return gpw.AppendTag(b, end, gpw.EndGroupType)
}

// nested is depth groups numbered 1, one inside the other.
func nested(depth int) []byte {
	var b []byte
	for range depth {
		b = gpw.AppendTag(b, 1, gpw.StartGroupType)
	}
	for range depth {
		b = gpw.AppendTag(b, 1, gpw.EndGroupType)
	}
	return b
}

func TestMatchesProtowire(t *testing.T) {
	ff := bytes.Repeat([]byte{0xff}, 9)
	cases := []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"zero", []byte{0}},
		{"one byte max", []byte{0x7f}},
		{"two bytes", []byte{0x80, 0x01}},
		{"cut after continuation", []byte{0x80}},
		{"max uint64", gpw.AppendVarint(nil, math.MaxUint64)},
		{"tenth byte 0", append(append([]byte{}, ff...), 0x00)},
		{"tenth byte 1", append(append([]byte{}, ff...), 0x01)},
		{"tenth byte 2", append(append([]byte{}, ff...), 0x02)},
		{"tenth byte 0x7f", append(append([]byte{}, ff...), 0x7f)},
		{"tenth byte continues", append(append([]byte{}, ff...), 0x80, 0x00)},
		{"eleven bytes", append(bytes.Repeat([]byte{0x80}, 10), 0x00)},
		{"overlong zero", append(bytes.Repeat([]byte{0x80}, 9), 0x00)},
		{"field number 0", []byte{0x00, 0x01}},
		{"field number 0 wire type 2", []byte{0x02, 0x00}},
		{"largest field number", gpw.AppendTag(nil, gpw.MaxValidNumber, gpw.VarintType)},
		{"field number past protobuf's range", gpw.AppendVarint(nil, uint64(gpw.MaxValidNumber+1)<<3)},
		{"field number past int32", gpw.AppendVarint(nil, uint64(math.MaxInt32+1)<<3|2)},
		{"field number int32 max", gpw.AppendVarint(nil, uint64(math.MaxInt32)<<3|5)},
		{"tag of 64 bits", gpw.AppendVarint(nil, math.MaxUint64)},
		{"fixed32", []byte{0x0d, 1, 2, 3, 4}},
		{"fixed32 cut", []byte{0x0d, 1, 2, 3}},
		{"fixed64", []byte{0x09, 1, 2, 3, 4, 5, 6, 7, 8}},
		{"fixed64 cut", []byte{0x09, 1, 2, 3, 4, 5, 6, 7}},
		{"bytes", []byte{0x0a, 3, 'a', 'b', 'c'}},
		{"bytes cut", []byte{0x0a, 4, 'a', 'b', 'c'}},
		{"bytes length overflows", append([]byte{0x0a}, append(ff, 0x01)...)},
		{"bytes length huge", append([]byte{0x0a}, gpw.AppendVarint(nil, 1<<62)...)},
		{"reserved 6", []byte{0x0e, 0}},
		{"reserved 7", []byte{0x0f, 0}},
		{"end group alone", []byte{0x0c}},
		{"empty group", group(1, 1, nil)},
		{"group of fields", group(3, 3, []byte{0x08, 0x01, 0x12, 0x01, 'x', 0x1d, 1, 2, 3, 4})},
		{"group end mismatched", group(3, 4, []byte{0x08, 0x01})},
		{"group unterminated", gpw.AppendTag(nil, 3, gpw.StartGroupType)},
		{"group with reserved field", group(2, 2, []byte{0x0e})},
		{"group in group", group(2, 2, group(5, 5, []byte{0x08, 0x7f}))},
		{"group with bad inner end", group(2, 2, group(5, 2, nil))},
		{"group with field number 0", group(2, 2, []byte{0x00, 0x00})},
		{"groups at the depth limit", nested(gpw.DefaultRecursionLimit + 1)},
		{"groups past the depth limit", nested(gpw.DefaultRecursionLimit + 2)},
		{"groups far past the depth limit", nested(gpw.DefaultRecursionLimit + 50)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { check(t, c.b) })
	}
}

// randomMessage writes a message of well-formed fields of every wire type, groups
// included, with now and then a byte changed, cut or added.
func randomMessage(r *rand.Rand, depth int) []byte {
	var b []byte
	for range r.IntN(6) {
		num := gpw.Number(1 + r.IntN(40))
		if r.IntN(20) == 0 {
			num = gpw.Number(r.Int32N(math.MaxInt32))
		}
		switch r.IntN(5) {
		case 0:
			b = gpw.AppendTag(b, num, gpw.VarintType)
			b = gpw.AppendVarint(b, r.Uint64()>>r.IntN(64))
		case 1:
			b = gpw.AppendTag(b, num, gpw.Fixed32Type)
			b = gpw.AppendFixed32(b, r.Uint32())
		case 2:
			b = gpw.AppendTag(b, num, gpw.Fixed64Type)
			b = gpw.AppendFixed64(b, r.Uint64())
		case 3:
			body := make([]byte, r.IntN(8))
			for i := range body {
				body[i] = byte(r.UintN(256))
			}
			if depth > 0 && r.IntN(2) == 0 {
				body = randomMessage(r, depth-1)
			}
			b = gpw.AppendTag(b, num, gpw.BytesType)
			b = gpw.AppendBytes(b, body)
		case 4:
			if depth > 0 {
				b = append(b, group(num, num, randomMessage(r, depth-1))...)
			}
		}
	}
	if len(b) > 0 && r.IntN(4) == 0 {
		switch r.IntN(3) {
		case 0:
			b[r.IntN(len(b))] = byte(r.UintN(256))
		case 1:
			b = b[:r.IntN(len(b))]
		case 2:
			i := r.IntN(len(b))
			b = append(b[:i], append([]byte{byte(r.UintN(256))}, b[i:]...)...)
		}
	}
	return b
}

// TestMatchesProtowireRandom compares the package with the original on generated
// messages and every suffix of each.
func TestMatchesProtowireRandom(t *testing.T) {
	n := 5000
	if testing.Short() {
		n = 2000
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range n {
		check(t, randomMessage(r, 3))
	}
	for range n {
		b := make([]byte, r.IntN(12))
		for i := range b {
			b[i] = byte(r.UintN(256))
			if r.IntN(2) == 0 {
				b[i] |= 0x80
			}
		}
		check(t, b)
	}
}

// TestAppendVarint round-trips every length of varint.
func TestAppendVarint(t *testing.T) {
	for shift := range 64 {
		for _, v := range []uint64{1 << shift, 1<<shift - 1, 1<<shift + 1} {
			if got, want := protowire.AppendVarint(nil, v), gpw.AppendVarint(nil, v); !bytes.Equal(got, want) {
				t.Errorf("AppendVarint(%d) = % x, want % x", v, got, want)
			}
		}
	}
}

// FuzzWire: go test ./providers/internal/protowire -run '^$' -fuzz FuzzWire -fuzztime 45s
func FuzzWire(f *testing.F) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 50 {
		f.Add(randomMessage(r, 3))
	}
	f.Add(nested(40))
	f.Add(append(bytes.Repeat([]byte{0xff}, 9), 0x01))
	f.Fuzz(func(t *testing.T, b []byte) { check(t, b) })
}
