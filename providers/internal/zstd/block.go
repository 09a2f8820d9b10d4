package zstd

// Sequence table indexes, in the order their modes and descriptions appear.
const (
	tabLL = iota // literal lengths
	tabOF        // offsets
	tabML        // match lengths
)

// maxSymbol is the largest code of each sequence table; maxLog its largest accuracy log.
var (
	maxSymbol = [3]int{tabLL: 35, tabOF: 31, tabML: 52}
	maxLog    = [3]uint8{tabLL: 9, tabOF: 8, tabML: 9}
)

// compressedBlock decodes one compressed block, whose content is b, onto the output.
func (d *decoder) compressedBlock(b []byte) error {
	lits, b, err := d.literals(b)
	if err != nil {
		return err
	}
	if len(b) < 1 {
		return d.errorf("truncated sequences section header")
	}
	nbSeq := int(b[0])
	switch {
	case nbSeq < 128:
		b = b[1:]
	case nbSeq < 255:
		if len(b) < 2 {
			return d.errorf("truncated sequences section header")
		}
		nbSeq = (nbSeq-128)<<8 | int(b[1])
		b = b[2:]
	default:
		if len(b) < 3 {
			return d.errorf("truncated sequences section header")
		}
		nbSeq = 0x7F00 + int(b[1]) + int(b[2])<<8
		b = b[3:]
	}
	if nbSeq == 0 {
		if len(b) != 0 {
			return d.errorf("bytes after an empty sequences section")
		}
		if err := d.reserve(len(lits)); err != nil {
			return err
		}
		d.out = append(d.out, lits...)
		return nil
	}
	if len(b) < 1 {
		return d.errorf("truncated sequences section header")
	}
	modes := b[0]
	b = b[1:]
	if modes&3 != 0 {
		return d.errorf("reserved bits set in the symbol compression modes")
	}
	for i := range d.seqTabs {
		n, err := d.seqTable(i, modes>>(6-2*i)&3, b)
		if err != nil {
			return err
		}
		b = b[n:]
	}
	return d.sequences(lits, b, nbSeq)
}

// literals decodes the literals section at the start of b and returns the literals and
// what follows the section.
func (d *decoder) literals(b []byte) (lits, rest []byte, err error) {
	if len(b) < 1 {
		return nil, nil, d.errorf("truncated literals section header")
	}
	kind := b[0] & 3
	format := b[0] >> 2 & 3
	if kind < 2 { // raw or RLE: only Regenerated_Size
		var size, hl int
		switch format {
		case 0, 2:
			size, hl = int(b[0]>>3), 1
		case 1:
			hl = 2
		case 3:
			hl = 3
		}
		if len(b) < hl {
			return nil, nil, d.errorf("truncated literals section header")
		}
		if hl > 1 {
			size = int(le(b[:hl]) >> 4)
		}
		if size > d.blockMax {
			return nil, nil, d.errorf("literals larger than the maximum block size")
		}
		b = b[hl:]
		if kind == 0 {
			if len(b) < size {
				return nil, nil, d.errorf("truncated raw literals")
			}
			return b[:size], b[size:], nil
		}
		if len(b) < 1 {
			return nil, nil, d.errorf("truncated RLE literals")
		}
		lits = d.literalBuffer(size)
		fill(lits, b[0])
		return lits, b[1:], nil
	}

	// Huffman-coded, with a new tree or the previous one (treeless).
	hl, sizeBits := [4]int{3, 3, 4, 5}[format], [4]uint{10, 10, 14, 18}[format]
	if len(b) < hl {
		return nil, nil, d.errorf("truncated literals section header")
	}
	v := le(b[:hl]) >> 4
	mask := uint64(1)<<sizeBits - 1
	size, csize := int(v&mask), int(v>>sizeBits&mask)
	if size > d.blockMax {
		return nil, nil, d.errorf("literals larger than the maximum block size")
	}
	b = b[hl:]
	if len(b) < csize {
		return nil, nil, d.errorf("truncated compressed literals")
	}
	data, rest := b[:csize], b[csize:]
	if kind == 2 {
		n, problem := d.huff.read(data)
		if problem != "" {
			return nil, nil, d.errorf(problem)
		}
		d.huffOK = true
		data = data[n:]
	} else if !d.huffOK {
		return nil, nil, d.errorf("treeless literals without a previous Huffman table")
	}
	lits = d.literalBuffer(size)
	var problem string
	if format == 0 {
		problem = d.huff.decode1(lits, data)
	} else {
		problem = d.huff.decode4(lits, data)
	}
	if problem != "" {
		return nil, nil, d.errorf(problem)
	}
	return lits, rest, nil
}

// literalBuffer returns the decoder's literal buffer resized to n bytes.
func (d *decoder) literalBuffer(n int) []byte {
	if cap(d.litBuf) < n {
		d.litBuf = make([]byte, n, max(n, min(2*cap(d.litBuf), maxBlockSize)))
	}
	return d.litBuf[:n]
}

// le reads up to 8 bytes as a little-endian number.
func le(b []byte) uint64 {
	var v uint64
	for i, c := range b {
		v |= uint64(c) << (8 * i)
	}
	return v
}

// seqTable sets up sequence table i for a block from its compression mode, reading any
// RLE symbol or table description from the start of b, and returns the bytes it read.
func (d *decoder) seqTable(i int, mode byte, b []byte) (int, error) {
	t := &d.seqTabs[i]
	switch mode {
	case 0: // predefined
		norm := [3][]int16{tabLL: llDefault[:], tabOF: ofDefault[:], tabML: mlDefault[:]}[i]
		log := [3]uint8{tabLL: 6, tabOF: 5, tabML: 6}[i]
		if !t.build(norm, log, i) {
			return 0, d.errorf("invalid predefined table")
		}
		d.seqTabOK[i] = true
		return 0, nil
	case 1: // RLE
		if len(b) < 1 {
			return 0, d.errorf("truncated RLE sequence code")
		}
		if int(b[0]) > maxSymbol[i] {
			return 0, d.errorf("RLE sequence code out of range")
		}
		t.rle(b[0], i)
		d.seqTabOK[i] = true
		return 1, nil
	case 2: // FSE table description
		var norm [256]int16
		n, syms, log, problem := readDistribution(b, &norm, maxSymbol[i], maxLog[i])
		if problem != "" {
			return 0, d.errorf(problem)
		}
		if !t.build(norm[:syms], log, i) {
			return 0, d.errorf("invalid FSE table description")
		}
		d.seqTabOK[i] = true
		return n, nil
	default: // repeat
		if !d.seqTabOK[i] {
			return 0, d.errorf("repeated sequence table without a previous table")
		}
		return 0, nil
	}
}

// sequences decodes nbSeq sequences from the bitstream b and executes them with the
// block's literals onto the output.
func (d *decoder) sequences(lits, b []byte, nbSeq int) error {
	var br bitReader
	if !br.init(b) {
		return d.errorf("invalid sequences bitstream")
	}
	ll, of, ml := &d.seqTabs[tabLL], &d.seqTabs[tabOF], &d.seqTabs[tabML]
	llState := uint16(br.get(ll.log))
	ofState := uint16(br.get(of.log))
	mlState := uint16(br.get(ml.log))

	// The block's output, at most blockMax bytes, goes to out[op:end].
	end := len(d.out) + min(d.blockMax, d.frameEnd-len(d.out))
	d.grow(end - len(d.out))
	out := d.out[:end]
	op := len(d.out)
	frameStart := d.frameStart
	window := int(min(d.window, uint64(d.limit))) // no offset reaches further back
	reps := d.reps
	lp := 0 // literals used

	// The bit reader lives in variables here, where the compiler keeps them in registers.
	bdata, boff, bval, bused := br.data, br.off, br.value, br.used
	get := func(n uint8) uint64 { return bval << bused >> (64 - n) } // read, then bused += n
	for i := range nbSeq {
		boff, bval, bused = refill(bdata, boff, bval, bused)
		le := &ll.e[llState&(maxTableSize-1)]
		oe := &of.e[ofState&(maxTableSize-1)]
		me := &ml.e[mlState&(maxTableSize-1)]
		offset := int(oe.val) + int(get(oe.xbits))
		bused += uint(oe.xbits)
		mlen := int(me.val) + int(get(me.xbits))
		bused += uint(me.xbits)
		boff, bval, bused = refill(bdata, boff, bval, bused)
		llen := int(le.val) + int(get(le.xbits))
		bused += uint(le.xbits)

		if offset > 3 {
			offset -= 3
			reps[2], reps[1], reps[0] = reps[1], reps[0], offset
		} else {
			idx := offset - 1
			if llen == 0 {
				idx++
			}
			switch idx {
			case 0:
				offset = reps[0]
			case 1:
				offset = reps[1]
				reps[1], reps[0] = reps[0], offset
			case 2:
				offset = reps[2]
				reps[2], reps[1], reps[0] = reps[1], reps[0], offset
			default:
				offset = reps[0] - 1
				reps[2], reps[1], reps[0] = reps[1], reps[0], offset
			}
		}

		if i != nbSeq-1 {
			llState = le.base + uint16(get(le.bits))
			bused += uint(le.bits)
			mlState = me.base + uint16(get(me.bits))
			bused += uint(me.bits)
			ofState = oe.base + uint16(get(oe.bits))
			bused += uint(oe.bits)
		}

		if llen > len(lits)-lp {
			return d.errorf("sequence uses more literals than the block has")
		}
		if llen+mlen > end-op {
			return d.overflow(op, llen+mlen)
		}
		// Short copies move 16 bytes at once where both sides have room; the bytes past
		// the copy's end are overwritten later.
		if llen <= 16 && len(lits)-lp >= 16 && end-op >= 16 {
			*(*[16]byte)(out[op:]) = *(*[16]byte)(lits[lp:])
		} else {
			copy(out[op:], lits[lp:lp+llen])
		}
		op += llen
		lp += llen
		if offset <= 0 || offset > op-frameStart || offset > window {
			return d.errorf("match offset out of range")
		}
		src := op - offset
		switch {
		case offset >= 16 && mlen <= 16 && end-op >= 16:
			*(*[16]byte)(out[op:]) = *(*[16]byte)(out[src:])
			op += mlen
		case offset >= mlen:
			op += copy(out[op:op+mlen], out[src:])
		default:
			// The match overlaps its own output: the bytes from src repeat with period
			// offset, so each copy may take everything from src, doubling the run.
			for stop := op + mlen; op < stop; {
				op += copy(out[op:stop], out[src:op])
			}
		}
	}
	br.off, br.used = boff, bused
	if !br.finished() {
		return d.errorf("sequences bitstream not consumed exactly")
	}
	if rest := len(lits) - lp; rest > end-op {
		return d.overflow(op, rest)
	}
	op += copy(out[op:], lits[lp:])
	d.out = out[:op]
	d.reps = reps
	return nil
}

// overflow explains why n more bytes at output position op do not fit in the block.
func (d *decoder) overflow(op, n int) error {
	switch {
	case n > d.limit-op:
		return ErrTooLarge
	case n > d.frameEnd-op:
		return d.errorf("frame output exceeds the declared content size")
	default:
		return d.errorf("block output larger than the maximum block size")
	}
}
