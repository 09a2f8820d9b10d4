package zstd

import (
	"encoding/binary"
	"math/bits"
)

// bitReader reads a backward bitstream (Huffman and FSE streams): the stream is read
// from its last byte to its first, most significant bit first, after the padding that
// ends at the highest set bit of the last byte. Bits wanted beyond the start of the
// stream read as zero; finished and overflowed tell whether that happened.
type bitReader struct {
	data  []byte // the stream, when it is at least 8 bytes long
	off   int    // value holds data[off:off+8]; nothing before off has been loaded
	value uint64
	used  uint // bits of value consumed, from the top; above 64 the reads went past the start
}

// init starts reading stream b. It reports false when b is empty or its last byte, which
// must hold the end mark, is zero.
func (br *bitReader) init(b []byte) bool {
	if len(b) == 0 || b[len(b)-1] == 0 {
		return false
	}
	skip := uint(bits.LeadingZeros8(b[len(b)-1])) + 1
	if len(b) >= 8 {
		br.data = b
		br.off = len(b) - 8
		br.value = binary.LittleEndian.Uint64(b[br.off:])
		br.used = skip
		return true
	}
	// A short stream sits in the low bytes of value, above zeros.
	br.data, br.off = nil, 0
	br.value = le(b)
	br.used = 64 - 8*uint(len(b)) + skip
	return true
}

// fill reloads value so that at least 57 bits are unread, or all the stream if less.
func (br *bitReader) fill() {
	br.off, br.value, br.used = refill(br.data, br.off, br.value, br.used)
}

// refill is fill on the fields of a bitReader held in variables, as hot loops keep them.
// A short stream (no data) has consumed at least 9 bits from the start, so it never
// reaches the reload.
func refill(data []byte, off int, value uint64, used uint) (int, uint64, uint) {
	n := int(used >> 3)
	switch {
	case off >= n:
		off -= n
		used &= 7
	case off > 0:
		used -= 8 * uint(off)
		off = 0
	default:
		return off, value, used
	}
	return off, binary.LittleEndian.Uint64(data[off:]), used
}

// get reads n bits (n at most 57 since the last fill, 0 allowed).
func (br *bitReader) get(n uint8) uint64 {
	v := br.value << br.used >> (64 - n) // shifts of 64 or more give zero
	br.used += uint(n)
	return v
}

// peek returns the next n bits (1 to 57) without consuming them.
func (br *bitReader) peek(n uint8) uint64 {
	return br.value << br.used >> (64 - n)
}

// finished reports whether exactly the whole stream has been read.
func (br *bitReader) finished() bool {
	return br.off == 0 && br.used == 64
}

// overflowed reports whether reads went past the start of the stream.
func (br *bitReader) overflowed() bool {
	return br.off == 0 && br.used > 64
}
