package zstd

import (
	"encoding/binary"
	"errors"
	"math"
	"strconv"
)

// ErrTooLarge is returned when the decompressed output would exceed the caller's bound.
var ErrTooLarge = errors.New("zstd: decompressed output exceeds the size limit")

// ErrDictionary is returned for a frame that names a dictionary (Dictionary_ID != 0):
// dictionaries are not supported.
var ErrDictionary = errors.New("zstd: frame needs a dictionary, which is not supported")

// FormatError reports malformed Zstandard input.
type FormatError struct {
	// Offset is where, in the input given to Decode, the frame holding the problem starts.
	Offset int
	// Msg says what is wrong, in a few English words.
	Msg string
}

// Error implements error.
func (e *FormatError) Error() string {
	return "zstd: " + e.Msg + " (frame at offset " + strconv.Itoa(e.Offset) + ")"
}

const (
	frameMagic     = 0xFD2FB528
	skippableMagic = 0x184D2A50 // the low four bits are free
	skippableMask  = 0xFFFFFFF0
	maxBlockSize   = 128 << 10 // Block_Maximum_Size never exceeds this
	minWindowLog   = 10
	maxEagerAlloc  = 16 << 20
)

// Decode decompresses every frame in src (concatenated Zstandard frames; skippable frames
// are skipped), appends the output to dst and returns the extended slice; dst and src
// must not overlap. At most
// maxSize bytes are appended (a maxSize below zero counts as zero): when the output
// would grow past that, Decode stops with ErrTooLarge before producing the bytes, and
// it allocates at most maxSize bytes for output whatever a frame declares. Malformed
// input is a *FormatError, a frame that needs a dictionary ErrDictionary. On error the
// returned slice is dst with its original length; bytes in its spare capacity may have
// been overwritten. An empty src decodes to no output.
func Decode(dst, src []byte, maxSize int) ([]byte, error) {
	d := decoder{out: dst, limit: len(dst)}
	if maxSize > 0 {
		d.limit += min(maxSize, math.MaxInt-len(dst))
	}
	for pos := 0; pos < len(src); {
		d.frameOffset = pos
		rest := src[pos:]
		if len(rest) < 4 {
			return dst, d.errorf("truncated magic number")
		}
		magic := binary.LittleEndian.Uint32(rest)
		switch {
		case magic == frameMagic:
			n, err := d.frame(rest[4:])
			if err != nil {
				return dst, err
			}
			pos += 4 + n
		case magic&skippableMask == skippableMagic:
			if len(rest) < 8 {
				return dst, d.errorf("truncated skippable frame header")
			}
			size := binary.LittleEndian.Uint32(rest[4:])
			if uint64(size) > uint64(len(rest)-8) {
				return dst, d.errorf("truncated skippable frame")
			}
			pos += 8 + int(size)
		default:
			return dst, d.errorf("unknown magic number")
		}
	}
	return d.out, nil
}

// decoder holds the state of one Decode call; the frame state is reset per frame.
type decoder struct {
	out         []byte // the output so far, dst included
	limit       int    // len(out) must never exceed it
	frameOffset int    // where the current frame starts in src, for errors

	frameStart int    // len(out) when the current frame started
	frameEnd   int    // len(out) the frame must reach: its declared content size, else limit
	hasSize    bool   // the frame declares its content size
	window     uint64 // Window_Size: no match reaches further back
	blockMax   int    // Block_Maximum_Size

	reps     [3]int // repeat offsets
	huff     huffTable
	huffOK   bool // huff holds a table a treeless literals section may reuse
	seqTabs  [3]fseTable
	seqTabOK [3]bool // seqTabs[i] may be repeated
	litBuf   []byte
}

func (d *decoder) errorf(msg string) error {
	return &FormatError{Offset: d.frameOffset, Msg: msg}
}

// frame decodes one frame whose magic number has been read; src starts with its header.
// It returns the number of bytes of src the frame used.
func (d *decoder) frame(src []byte) (int, error) {
	if len(src) < 1 {
		return 0, d.errorf("truncated frame header")
	}
	fhd := src[0]
	if fhd&0x08 != 0 {
		return 0, d.errorf("reserved frame header bit set")
	}
	single := fhd&0x20 != 0
	dictLen := [4]int{0, 1, 2, 4}[fhd&3]
	sizeLen := [4]int{0, 2, 4, 8}[fhd>>6]
	if sizeLen == 0 && single {
		sizeLen = 1
	}
	headerLen := 1 + dictLen + sizeLen
	if !single {
		headerLen++
	}
	if len(src) < headerLen {
		return 0, d.errorf("truncated frame header")
	}
	p := 1
	if !single {
		wd := src[p]
		p++
		log := minWindowLog + uint(wd>>3)
		base := uint64(1) << log
		d.window = base + base/8*uint64(wd&7)
	}
	var dictID uint64
	for i := range dictLen {
		dictID |= uint64(src[p+i]) << (8 * i)
	}
	p += dictLen
	var size uint64
	for i := range sizeLen {
		size |= uint64(src[p+i]) << (8 * i)
	}
	p += sizeLen
	if sizeLen == 2 {
		size += 256
	}
	if dictID != 0 {
		return 0, ErrDictionary
	}
	if single {
		d.window = size
	}
	d.frameStart = len(d.out)
	d.hasSize = sizeLen > 0
	d.frameEnd = d.limit
	if d.hasSize {
		if size > uint64(d.limit-len(d.out)) {
			return 0, ErrTooLarge
		}
		d.frameEnd = len(d.out) + int(size)
		// Trust the declared size for the first 16 MiB only: beyond that, the output
		// must arrive before the memory for it is taken.
		d.grow(min(int(size), maxEagerAlloc))
	}
	d.blockMax = maxBlockSize
	if d.window < maxBlockSize {
		d.blockMax = int(d.window)
	}
	d.reps = [3]int{1, 4, 8}
	d.huffOK = false
	d.seqTabOK = [3]bool{}

	for last := false; !last; {
		if len(src)-p < 3 {
			return 0, d.errorf("truncated block header")
		}
		bh := uint32(src[p]) | uint32(src[p+1])<<8 | uint32(src[p+2])<<16
		p += 3
		last = bh&1 != 0
		size := int(bh >> 3)
		if size > d.blockMax {
			return 0, d.errorf("block larger than the maximum block size")
		}
		switch (bh >> 1) & 3 {
		case 0: // raw
			if len(src)-p < size {
				return 0, d.errorf("truncated raw block")
			}
			if err := d.reserve(size); err != nil {
				return 0, err
			}
			d.out = append(d.out, src[p:p+size]...)
			p += size
		case 1: // RLE: one byte repeated size times
			if len(src)-p < 1 {
				return 0, d.errorf("truncated RLE block")
			}
			if err := d.reserve(size); err != nil {
				return 0, err
			}
			n := len(d.out)
			d.out = d.out[:n+size]
			fill(d.out[n:], src[p])
			p++
		case 2:
			if len(src)-p < size {
				return 0, d.errorf("truncated compressed block")
			}
			if err := d.compressedBlock(src[p : p+size]); err != nil {
				return 0, err
			}
			p += size
		default:
			return 0, d.errorf("reserved block type")
		}
	}
	if d.hasSize && len(d.out) != d.frameEnd {
		return 0, d.errorf("frame content size does not match the decoded size")
	}
	if fhd&0x04 != 0 {
		if len(src)-p < 4 {
			return 0, d.errorf("truncated content checksum")
		}
		want := binary.LittleEndian.Uint32(src[p:])
		p += 4
		if uint32(xxh64(d.out[d.frameStart:])) != want {
			return 0, d.errorf("content checksum mismatch")
		}
	}
	return p, nil
}

// reserve makes room for n more output bytes, or says why they may not be written: past
// the caller's limit (ErrTooLarge) or past the frame's declared content size.
func (d *decoder) reserve(n int) error {
	if n > d.frameEnd-len(d.out) {
		if n > d.limit-len(d.out) {
			return ErrTooLarge
		}
		return d.errorf("frame output exceeds the declared content size")
	}
	d.grow(n)
	return nil
}

// grow makes the capacity of out hold n more bytes (n must fit under frameEnd), doubling
// so that repeated growth is amortized but never reaching past frameEnd, which is the
// declared end of the frame or else the limit.
func (d *decoder) grow(n int) {
	if cap(d.out)-len(d.out) >= n {
		return
	}
	c := max(2*cap(d.out), len(d.out)+n, 4096)
	c = min(c, d.frameEnd)
	out := make([]byte, len(d.out), c)
	copy(out, d.out)
	d.out = out
}

// fill sets every byte of b to v.
func fill(b []byte, v byte) {
	if len(b) == 0 {
		return
	}
	b[0] = v
	for n := 1; n < len(b); n *= 2 {
		copy(b[n:], b[:n])
	}
}
