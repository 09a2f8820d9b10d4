package zstd

import "math/bits"

// maxTableSize bounds every FSE table: accuracy logs go up to 9.
const maxTableSize = 512

// tabWeights marks the FSE table of Huffman weights, whose entries hold plain symbols.
const tabWeights = 3

// fseEntry is one state of an FSE decoding table.
type fseEntry struct {
	val   uint32 // the code's baseline (sequence tables) or the symbol (Huffman weights)
	base  uint16 // the next state is base plus the next bits bits
	bits  uint8  // state bits
	xbits uint8  // extra bits after the baseline (sequence tables)
}

// fseTable is an FSE decoding table of 1<<log states.
type fseTable struct {
	log uint8
	e   [maxTableSize]fseEntry
}

// Predefined distributions (RFC 8878 section 3.1.1.3.2.2).
var (
	llDefault = [36]int16{4, 3, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2,
		2, 3, 2, 1, 1, 1, 1, 1, -1, -1, -1, -1}
	mlDefault = [53]int16{1, 4, 3, 2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
		1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, -1, -1, -1, -1, -1, -1, -1}
	ofDefault = [29]int16{1, 1, 1, 1, 1, 1, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
		-1, -1, -1, -1, -1}
)

// Literal length codes 16 and up, and match length codes 32 and up: baseline and extra
// bits (RFC 8878 section 3.1.1.3.2.1); lower codes are their own baseline (match
// lengths plus 3) with no extra bits.
var (
	llBase = [20]uint32{16, 18, 20, 22, 24, 28, 32, 40, 48, 64, 128, 256, 512, 1024, 2048,
		4096, 8192, 16384, 32768, 65536}
	llBits = [20]uint8{1, 1, 1, 1, 2, 2, 3, 3, 4, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	mlBase = [21]uint32{35, 37, 39, 41, 43, 47, 51, 59, 67, 83, 99, 131, 259, 515, 1027, 2051,
		4099, 8195, 16387, 32771, 65539}
	mlBits = [21]uint8{1, 1, 1, 1, 2, 2, 3, 3, 4, 4, 5, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
)

// setSymbol stores what symbol sym of a table of the given kind decodes to.
func (e *fseEntry) setSymbol(sym int, kind int) {
	switch {
	case kind == tabLL && sym >= 16:
		e.val, e.xbits = llBase[sym-16], llBits[sym-16]
	case kind == tabML && sym >= 32:
		e.val, e.xbits = mlBase[sym-32], mlBits[sym-32]
	case kind == tabML:
		e.val, e.xbits = uint32(sym)+3, 0
	case kind == tabOF:
		e.val, e.xbits = 1<<sym, uint8(sym)
	default:
		e.val, e.xbits = uint32(sym), 0
	}
}

// rle makes t a one-state table that always decodes sym.
func (t *fseTable) rle(sym byte, kind int) {
	t.log = 0
	t.e[0] = fseEntry{}
	t.e[0].setSymbol(int(sym), kind)
}

// build makes t the decoding table of the normalized distribution norm (counts of -1
// are "less than one") with the given accuracy log. It reports false when the
// distribution does not fill the table exactly.
func (t *fseTable) build(norm []int16, log uint8, kind int) bool {
	size := 1 << log
	if size > maxTableSize || len(norm) > 256 {
		return false
	}
	var next [256]uint16 // the next state number of each symbol
	var syms [maxTableSize]uint8
	high := size - 1
	total := 0
	for s, c := range norm {
		switch {
		case c == -1:
			if high < 0 {
				return false
			}
			syms[high] = uint8(s)
			high--
			next[s] = 1
			total++
		case c >= 0:
			next[s] = uint16(c)
			total += int(c)
		default:
			return false
		}
	}
	if total != size {
		return false
	}
	step := size>>1 + size>>3 + 3
	pos := 0
	for s, c := range norm {
		for range max(c, 0) {
			syms[pos] = uint8(s)
			pos = (pos + step) & (size - 1)
			for pos > high {
				pos = (pos + step) & (size - 1)
			}
		}
	}
	if pos != 0 {
		return false
	}
	t.log = log
	for u := range size {
		s := syms[u]
		n := next[s]
		next[s]++
		nb := int(log) - (bits.Len16(n) - 1)
		e := &t.e[u]
		e.bits = uint8(nb)
		e.base = uint16(int(n)<<nb - size)
		e.setSymbol(int(s), kind)
	}
	return true
}

// readDistribution reads an FSE table description from the start of b into norm: its
// accuracy log, at most maxLog, and the counts of symbols 0 to at most maxSym. It
// returns the bytes it used, the number of symbols and the accuracy log, or a problem.
// Like klauspost's decoder, it wants at least 4 bytes in b, which encoders always leave.
func readDistribution(b []byte, norm *[256]int16, maxSym int, maxLog uint8) (n, syms int, log uint8, problem string) {
	if len(b) < 4 {
		return 0, 0, 0, "truncated FSE table description"
	}
	pos := 0 // bit position in b; bits past its end read as zero
	peek := func() uint32 {
		i := pos >> 3
		var v uint32
		for k := 0; k < 4 && i+k < len(b); k++ {
			v |= uint32(b[i+k]) << (8 * k)
		}
		return v >> (pos & 7)
	}
	log = uint8(peek()&15) + 5
	if log > maxLog {
		return 0, 0, 0, "FSE accuracy log too large"
	}
	pos = 4
	remaining := 1<<log + 1
	threshold := 1 << log
	nbBits := int(log) + 1
	sym := 0
	prevZero := false
	for remaining > 1 && sym <= maxSym {
		if prevZero {
			// Runs of zero counts: 2-bit repeat flags, 3 meaning "3 more and go on".
			n0 := sym
			for {
				r := int(peek() & 3)
				pos += 2
				n0 += r
				if n0 > maxSym {
					return 0, 0, 0, "FSE table description has too many symbols"
				}
				if r != 3 {
					break
				}
			}
			for ; sym < n0; sym++ {
				norm[sym] = 0
			}
		}
		v := int(peek())
		maxLow := 2*threshold - 1 - remaining
		var count int
		if v&(threshold-1) < maxLow {
			count = v & (threshold - 1)
			pos += nbBits - 1
		} else {
			count = v & (2*threshold - 1)
			if count >= threshold {
				count -= maxLow
			}
			pos += nbBits
		}
		count-- // -1 means "less than one"
		if count < 0 {
			remaining--
		} else {
			remaining -= count
		}
		if remaining < 1 {
			return 0, 0, 0, "FSE table description overflows the table"
		}
		norm[sym] = int16(count)
		sym++
		prevZero = count == 0
		for remaining < threshold {
			nbBits--
			threshold >>= 1
		}
	}
	if remaining != 1 {
		return 0, 0, 0, "FSE table description does not fill the table"
	}
	if sym < 2 {
		// Valid, but encoders use RLE mode for one symbol, and klauspost's decoder
		// refuses it: refused so that what this package accepts, it accepts too.
		return 0, 0, 0, "FSE table description with a single symbol"
	}
	n = (pos + 7) >> 3
	if n > len(b) {
		return 0, 0, 0, "truncated FSE table description"
	}
	return n, sym, log, ""
}
