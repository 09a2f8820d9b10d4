package zstd

import (
	"encoding/binary"
	"math/bits"
)

// maxHuffBits is Max_Number_of_Bits of a Huffman code.
const maxHuffBits = 11

// huffTable decodes a Huffman code: the next bits of the stream index e, whose entries
// hold the symbol in the low byte and the code length above it.
type huffTable struct {
	bits uint8 // the longest code length
	e    [1 << maxHuffBits]uint16
}

// read reads a Huffman tree description from the start of b into h and returns the bytes
// it used, or a problem.
func (h *huffTable) read(b []byte) (int, string) {
	if len(b) < 1 {
		return 0, "truncated Huffman tree description"
	}
	var w [256]uint8
	var n int
	used := 1 + int(b[0])
	if b[0] >= 128 { // weights as 4-bit numbers
		n = int(b[0]) - 127
		used = 1 + (n+1)/2
		if len(b) < used {
			return 0, "truncated Huffman tree description"
		}
		for i := range n {
			c := b[1+i/2]
			if i&1 == 0 {
				c >>= 4
			}
			w[i] = c & 15
		}
	} else {
		if len(b) < used {
			return 0, "truncated Huffman tree description"
		}
		var problem string
		if n, problem = decodeWeights(b[1:used], &w); problem != "" {
			return 0, problem
		}
	}
	return used, h.build(w[:n])
}

// decodeWeights decodes FSE-compressed Huffman weights from b into w and returns how many.
func decodeWeights(b []byte, w *[256]uint8) (int, string) {
	var norm [256]int16
	n, syms, log, problem := readDistribution(b, &norm, 255, 6)
	if problem != "" {
		return 0, problem
	}
	var t fseTable
	if !t.build(norm[:syms], log, tabWeights) {
		return 0, "invalid Huffman weights table"
	}
	var br bitReader
	if !br.init(b[n:]) {
		return 0, "invalid Huffman weights bitstream"
	}
	// Two interleaved states. Once the stream is used up, the first update that would
	// read past its start ends it, and the other state holds the last symbol. The format
	// also lets an update run partly past the start; encoders never write that and
	// decoders differ on it, so it is refused.
	states := [2]uint16{uint16(br.get(log)), uint16(br.get(log))}
	if br.overflowed() {
		return 0, "Huffman weights bitstream too short"
	}
	count := 0
	for i := 0; ; i ^= 1 {
		if count >= len(w)-2 { // room for this symbol and a final one, 255 in all
			return 0, "too many Huffman weights"
		}
		e := &t.e[states[i]&(maxTableSize-1)]
		w[count] = uint8(e.val)
		count++
		br.fill()
		if br.finished() && e.bits > 0 {
			w[count] = uint8(t.e[states[i^1]&(maxTableSize-1)].val)
			return count + 1, ""
		}
		states[i] = e.base + uint16(br.get(e.bits))
		if br.overflowed() {
			return 0, "Huffman weights bitstream overruns"
		}
	}
}

// build makes h the table of the given weights, the last symbol's weight implied.
func (h *huffTable) build(w []uint8) string {
	var sum uint32
	var count [maxHuffBits + 1]int
	for _, x := range w {
		if x > maxHuffBits {
			return "Huffman weight too large"
		}
		if x > 0 {
			sum += 1 << (x - 1)
			count[x]++
		}
	}
	if sum == 0 {
		return "Huffman weights all zero"
	}
	maxBits := bits.Len32(sum)
	if maxBits > maxHuffBits {
		return "Huffman code too long"
	}
	rest := uint32(1)<<maxBits - sum
	if rest&(rest-1) != 0 {
		return "Huffman weights do not complete a code"
	}
	last := uint8(bits.Len32(rest))
	count[last]++
	if count[1] < 2 || count[1]&1 != 0 {
		// The longest codes come in pairs: a code whose longest codes are shorter than
		// its table is refused, as the reference decoder does.
		return "Huffman weights do not complete a code"
	}
	// Entries go in order of weight, then of symbol: the longest codes come first.
	var start [maxHuffBits + 1]int
	pos := 0
	for x := 1; x <= maxBits; x++ {
		start[x] = pos
		pos += count[x] << (x - 1)
	}
	h.bits = uint8(maxBits)
	for s := 0; s <= len(w); s++ {
		x := last
		if s < len(w) {
			x = w[s]
		}
		if x == 0 {
			continue
		}
		e := uint16(s) | uint16(maxBits+1-int(x))<<8
		n := 1 << (x - 1)
		for k := start[x]; k < start[x]+n; k++ {
			h.e[k] = e
		}
		start[x] += n
	}
	return ""
}

// decode1 decodes the single Huffman stream src into out, which it fills exactly.
func (h *huffTable) decode1(out, src []byte) string {
	var br bitReader
	if !br.init(src) {
		return "invalid Huffman stream"
	}
	h.decodeStream(out, &br)
	if !br.finished() {
		return "Huffman stream not consumed exactly"
	}
	return ""
}

// decodeStream decodes len(out) symbols from br.
func (h *huffTable) decodeStream(out []byte, br *bitReader) {
	n := h.bits
	i := 0
	for ; i+4 <= len(out); i += 4 {
		br.fill()
		for k := range 4 {
			e := h.e[br.peek(n)&(1<<maxHuffBits-1)]
			out[i+k] = byte(e)
			br.used += uint(e >> 8)
		}
	}
	for ; i < len(out); i++ {
		br.fill()
		e := h.e[br.peek(n)&(1<<maxHuffBits-1)]
		out[i] = byte(e)
		br.used += uint(e >> 8)
	}
}

// decode4 decodes the four Huffman streams of src, after their jump table, into out,
// which it fills exactly.
func (h *huffTable) decode4(out, src []byte) string {
	if len(src) < 10 || len(out) < 6 {
		return "four-stream Huffman literals too short"
	}
	s1 := int(binary.LittleEndian.Uint16(src))
	s2 := int(binary.LittleEndian.Uint16(src[2:]))
	s3 := int(binary.LittleEndian.Uint16(src[4:]))
	src = src[6:]
	if s1+s2+s3 > len(src) {
		return "Huffman jump table beyond the literals"
	}
	seg := (len(out) + 3) / 4
	streams := [4][]byte{src[:s1], src[s1 : s1+s2], src[s1+s2 : s1+s2+s3], src[s1+s2+s3:]}
	var br [4]bitReader
	for i := range br {
		if !br[i].init(streams[i]) {
			return "invalid Huffman stream"
		}
	}
	// All four streams at once while each has four symbols to go, then each alone.
	n := h.bits
	last := len(out) - 3*seg
	k := 0
	for ; k+4 <= last; k += 4 {
		for s := range br {
			br[s].fill()
		}
		for j := range 4 {
			for s := range br {
				e := h.e[br[s].peek(n)&(1<<maxHuffBits-1)]
				out[s*seg+k+j] = byte(e)
				br[s].used += uint(e >> 8)
			}
		}
	}
	for s := range br {
		end := seg * (s + 1)
		if s == 3 {
			end = len(out)
		}
		h.decodeStream(out[s*seg+k:end], &br[s])
		if !br[s].finished() {
			return "Huffman stream not consumed exactly"
		}
	}
	return ""
}
