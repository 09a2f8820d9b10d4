package parquet

import (
	"encoding/binary"
	"testing"
)

// deltaStream encodes a DELTA_BINARY_PACKED header and blocks by hand: block values per
// block in minis miniblocks, count values, the first value first, and each block's
// minimum delta, miniblock bit widths and packed data (zeros: the deltas are the minimum).
func deltaStream(block, minis, count int, first int64, widths []byte) []byte {
	b := binary.AppendUvarint(nil, uint64(block))
	b = binary.AppendUvarint(b, uint64(minis))
	b = binary.AppendUvarint(b, uint64(count))
	b = binary.AppendVarint(b, first)
	perMini := block / minis
	for left := count - 1; left > 0; left -= block {
		b = binary.AppendVarint(b, 3)
		b = append(b, widths[:minis]...)
		for m := 0; m < minis; m++ {
			b = append(b, make([]byte, perMini*int(widths[m])/8)...)
		}
	}
	return b
}

// TestDeltaEnd: the end a walk by miniblocks finds is where decoding every value ends
// (past the last miniblock that holds values), at every point of the stream; and a few bytes that count 2^28 values of bit width 0
// end where their blocks do, without a value decoded.
func TestDeltaEnd(t *testing.T) {
	for _, c := range []struct {
		block, minis, count int
		widths              []byte
	}{
		{128, 4, 1, []byte{1, 2, 3, 4}},
		{128, 4, 2, []byte{1, 2, 3, 4}},
		{128, 4, 300, []byte{0, 7, 64, 5}},
		{32, 1, 100, []byte{8}},
		{256, 8, 1000, []byte{3, 0, 1, 2, 9, 17, 33, 0}},
	} {
		data := append(deltaStream(c.block, c.minis, c.count, -9, c.widths), 0xaa, 0xbb)
		var d deltaDecoder
		if err := d.init(data, c.count); err != nil {
			t.Fatal(err)
		}
		for read := 0; read <= c.count; read++ {
			got, err := d.end()
			if err != nil {
				t.Fatalf("%+v after %d values: %v", c, read, err)
			}
			all := d
			for all.total > 0 {
				if _, err := all.next(); err != nil {
					t.Fatal(err)
				}
			}
			if got != all.pos {
				t.Fatalf("%+v after %d values: end %d, decoding every value ends at %d", c, read, got, all.pos)
			}
			if read < c.count {
				if _, err := d.next(); err != nil {
					t.Fatal(err)
				}
			}
		}
	}

	const huge = 1 << 28
	data := deltaStream(1<<20, 1, huge, 5, []byte{0})
	var d deltaDecoder
	if err := d.init(data, huge); err != nil {
		t.Fatal(err)
	}
	if got, err := d.end(); err != nil || got != len(data) {
		t.Fatalf("end of %d values of width 0 in %d bytes = %d, %v", huge, len(data), got, err)
	}
	// Truncated: the walk still finds the blocks missing.
	if err := d.init(data[:len(data)-3], huge); err == nil {
		if _, err := d.end(); err == nil {
			t.Error("a stream missing its last blocks has an end")
		}
	}
}
