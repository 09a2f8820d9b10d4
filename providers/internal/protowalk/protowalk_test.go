package protowalk

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math/rand"
	"testing"
	"testing/iotest"

	gpw "google.golang.org/protobuf/encoding/protowire"

	"github.com/flameox/flameox/providers/internal/protowire"
)

// TestEachMatchesProtowire walks messages written with protowire and checks every field
// against protowire's own reading, and that what gpw.ConsumeField refuses (bar
// groups, which Each refuses too, and field numbers, which it leaves to ValidNumber) is
// malformed here.
func TestEachMatchesProtowire(t *testing.T) {
	var b []byte
	b = gpw.AppendTag(b, 1, gpw.VarintType)
	b = gpw.AppendVarint(b, 1<<63)
	b = gpw.AppendTag(b, 2, gpw.Fixed64Type)
	b = gpw.AppendFixed64(b, 0x0102030405060708)
	b = gpw.AppendTag(b, 3, gpw.Fixed32Type)
	b = gpw.AppendFixed32(b, 0xdeadbeef)
	b = gpw.AppendTag(b, 536870911, gpw.BytesType)
	b = gpw.AppendBytes(b, []byte("payload"))
	want := []Field{
		{Num: 1, Type: protowire.VarintType, Value: 1 << 63},
		{Num: 2, Type: protowire.Fixed64Type, Value: 0x0102030405060708},
		{Num: 3, Type: protowire.Fixed32Type, Value: 0xdeadbeef},
		{Num: 536870911, Type: protowire.BytesType, Bytes: []byte("payload")},
	}
	var got []Field
	if !Each(b, func(f Field) bool { got = append(got, f); return true }) {
		t.Fatal("a well-formed message is malformed")
	}
	if len(got) != len(want) {
		t.Fatalf("%d fields, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Num != w.Num || g.Type != w.Type || g.Value != w.Value || !bytes.Equal(g.Bytes, w.Bytes) {
			t.Errorf("field %d = %+v, want %+v", i, g, w)
		}
	}
	// Every prefix cut inside a field is malformed; a prefix at a field boundary is not.
	ends := map[int]bool{0: true}
	for rest := b; len(rest) > 0; {
		_, _, n := gpw.ConsumeField(rest)
		rest = rest[n:]
		ends[len(b)-len(rest)] = true
	}
	for i := range b {
		if ok := Each(b[:i], func(Field) bool { return true }); ok != ends[i] {
			t.Errorf("prefix of %d bytes: ok %v, want %v", i, ok, ends[i])
		}
	}
	// Groups and undefined wire types.
	for _, typ := range []protowire.Type{protowire.StartGroupType, protowire.EndGroupType, 6, 7} {
		m := gpw.AppendTag(nil, 1, gpw.Type(typ))
		m = append(m, 0, 0, 0, 0, 0, 0, 0, 0)
		if Each(m, func(Field) bool { return true }) {
			t.Errorf("wire type %d is not malformed", typ)
		}
	}
	// Field 0 and numbers past 2^31-1 are walked, and ValidNumber refuses them as
	// gpw.ConsumeTag does.
	for _, num := range []uint64{0, 1, 1 << 29, 1<<31 - 1, 1 << 31, 1 << 40} {
		m := gpw.AppendVarint(nil, num<<3|uint64(protowire.VarintType))
		m = gpw.AppendVarint(m, 7)
		f, rest, ok := Next(m)
		if !ok || len(rest) != 0 || f.Num != num || f.Value != 7 {
			t.Errorf("field number %d: %+v, ok %v", num, f, ok)
		}
		_, _, n := gpw.ConsumeTag(m)
		if ValidNumber(num) != (n > 0) {
			t.Errorf("ValidNumber(%d) = %v, ConsumeTag %d", num, ValidNumber(num), n)
		}
	}
	if Each(b, func(f Field) bool { return f.Num != 2 }) {
		t.Error("a refused field does not stop the walk")
	}
}

func TestVarintsAndFixed64s(t *testing.T) {
	packed := gpw.AppendVarint(gpw.AppendVarint(gpw.AppendVarint(nil, 1), 300), 1<<40)
	var got []uint64
	collect := func(v uint64) bool { got = append(got, v); return true }
	if !(Field{Type: protowire.BytesType, Bytes: packed}).Varints(collect) || len(got) != 3 || got[1] != 300 || got[2] != 1<<40 {
		t.Errorf("packed run: %v", got)
	}
	got = got[:0]
	if !(Field{Type: protowire.VarintType, Value: 9}).Varints(collect) || len(got) != 1 || got[0] != 9 {
		t.Errorf("one varint: %v", got)
	}
	if (Field{Type: protowire.Fixed64Type, Value: 9}).Varints(collect) {
		t.Error("a fixed64 is read as a varint")
	}
	if (Field{Type: protowire.BytesType, Bytes: packed[:len(packed)-1]}).Varints(collect) {
		t.Error("a cut packed run is read")
	}
	if (Field{Type: protowire.BytesType, Bytes: packed}).Varints(func(uint64) bool { return false }) {
		t.Error("a refused value does not stop the run")
	}
	for _, c := range []struct {
		f  Field
		n  int64
		ok bool
	}{
		{Field{Type: protowire.BytesType, Bytes: make([]byte, 24)}, 3, true},
		{Field{Type: protowire.BytesType, Bytes: make([]byte, 23)}, 0, false},
		{Field{Type: protowire.Fixed64Type}, 1, true},
		{Field{Type: protowire.VarintType}, 1, true},
	} {
		if n, ok := c.f.Fixed64s(); n != c.n || ok != c.ok {
			t.Errorf("Fixed64s(%+v) = %d, %v; want %d, %v", c.f.Type, n, ok, c.n, c.ok)
		}
	}
}

// TestReaderVarintMatchesBinary reads random varints, valid and not, at the end of a
// stream and inside it, one byte a read and whole, and checks values, errors and offsets
// against binary.ReadUvarint.
func TestReaderVarintMatchesBinary(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 20000; i++ {
		n := 1 + rng.Intn(12)
		b := make([]byte, n)
		for j := range b {
			b[j] = byte(rng.Intn(256))
			if rng.Intn(3) == 0 {
				b[j] |= 0x80
			}
		}
		if rng.Intn(2) == 0 {
			b = append(b, make([]byte, 16)...) // the fast path: ten bytes buffered
		}
		want, werr := binary.ReadUvarint(bytes.NewReader(b))
		for _, one := range []bool{false, true} {
			var src io.Reader = bytes.NewReader(b)
			if one {
				src = iotest.OneByteReader(src)
			}
			r := NewReader(src, 64)
			got, err := r.Varint()
			if werr != nil {
				if err == nil || (werr == io.EOF) != (err == io.EOF) || (werr == io.ErrUnexpectedEOF) != (err == io.ErrUnexpectedEOF) {
					t.Fatalf("% x: error %v, binary.ReadUvarint %v", b, err, werr)
				}
				if werr != io.EOF && werr != io.ErrUnexpectedEOF && err != ErrOverflow {
					t.Fatalf("% x: error %v, want ErrOverflow", b, err)
				}
				continue
			}
			if err != nil || got != want || r.Offset() != int64(varintLen(b)) {
				t.Fatalf("% x: %d, %v at %d; binary.ReadUvarint %d", b, got, err, r.Offset(), want)
			}
		}
	}
}

// varintLen is the length of the varint b starts with.
func varintLen(b []byte) int {
	for i, c := range b {
		if c < 0x80 {
			return i + 1
		}
	}
	return len(b)
}

// TestReaderErrors checks that the stream's own error is told from the end of the data.
func TestReaderErrors(t *testing.T) {
	boom := errors.New("boom")
	r := NewReader(io.MultiReader(bytes.NewReader([]byte{0x96}), iotest.ErrReader(boom)), 16)
	if _, err := r.Varint(); err != boom || r.Err() != boom {
		t.Errorf("a failing stream: %v, Err %v", err, r.Err())
	}
	r = NewReader(bytes.NewReader(nil), 16)
	if !r.AtEnd() || r.Err() != nil {
		t.Error("an empty stream is not at its end")
	}
	if _, err := r.Varint(); err != io.EOF {
		t.Errorf("a varint at the end: %v", err)
	}
	r = NewReader(iotest.ErrReader(boom), 16)
	if r.AtEnd() {
		t.Error("a failing stream is at its end")
	}
}

// TestReaderBytes reads values below and beyond the step, whole and cut, and skips.
func TestReaderBytes(t *testing.T) {
	data := make([]byte, 3*bytesStep+5)
	for i := range data {
		data[i] = byte(i * 7)
	}
	for _, n := range []int{0, 1, 100, bytesStep, bytesStep + 1, 3*bytesStep + 5} {
		r := NewReader(iotest.HalfReader(bytes.NewReader(data)), 4096)
		b, err := r.Bytes(uint64(n))
		if err != nil || !bytes.Equal(b, data[:n]) || r.Offset() != int64(n) {
			t.Errorf("Bytes(%d): %d bytes, %v, offset %d", n, len(b), err, r.Offset())
		}
		// A length the stream does not hold: what it holds is read, and said.
		r = NewReader(bytes.NewReader(data[:n]), 4096)
		_, err = r.Bytes(uint64(n) + 10)
		want := io.ErrUnexpectedEOF
		if n == 0 {
			want = io.EOF
		}
		if err != want || r.Offset() != int64(n) {
			t.Errorf("Bytes(%d) of %d: %v at %d", n+10, n, err, r.Offset())
		}
	}
	r := NewReader(bytes.NewReader(data), 4096)
	if m, err := r.Discard(10); m != 10 || err != nil {
		t.Errorf("Discard(10) = %d, %v", m, err)
	}
	if b, _ := r.Bytes(2); !bytes.Equal(b, data[10:12]) {
		t.Errorf("after a skip: % x", b)
	}
	if m, err := r.Discard(1 << 63); m != int64(len(data)-12) || err != io.EOF || r.Offset() != int64(len(data)) {
		t.Errorf("Discard past the end = %d, %v at %d", m, err, r.Offset())
	}
}

// TestReaderValueSize skips a field of each wire type.
func TestReaderValueSize(t *testing.T) {
	for _, c := range []struct {
		typ  protowire.Type
		data []byte
		size uint64
		off  int64
		err  error
	}{
		{protowire.VarintType, []byte{0x96, 0x01, 9}, 0, 2, nil},
		{protowire.Fixed32Type, []byte{1, 2, 3, 4}, 4, 0, nil},
		{protowire.Fixed64Type, nil, 8, 0, nil},
		{protowire.BytesType, []byte{0x80, 0x01}, 128, 2, nil},
		{protowire.BytesType, []byte{0x80}, 0, 1, io.ErrUnexpectedEOF},
		{protowire.StartGroupType, []byte{1}, 0, 0, ErrWireType},
		{protowire.EndGroupType, nil, 0, 0, ErrWireType},
		{7, nil, 0, 0, ErrWireType},
	} {
		r := NewReader(bytes.NewReader(c.data), 16)
		size, err := r.ValueSize(c.typ)
		if size != c.size && c.err == nil || err != c.err || r.Offset() != c.off {
			t.Errorf("ValueSize(%d) of % x = %d, %v at %d", c.typ, c.data, size, err, r.Offset())
		}
	}
}
