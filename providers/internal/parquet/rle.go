package parquet

import (
	"encoding/binary"
	"math/bits"
)

// bitsAt returns width (at most 64) bits of b starting at bit pos, least significant
// bit first; bits past the end of b read as zero.
func bitsAt(b []byte, pos uint64, width uint) uint64 {
	if width == 0 {
		return 0
	}
	i := pos >> 3
	shift := uint(pos & 7)
	var x uint64
	if i+8 <= uint64(len(b)) {
		x = binary.LittleEndian.Uint64(b[i:])
	} else {
		for k := uint64(0); k < 8 && i+k < uint64(len(b)); k++ {
			x |= uint64(b[i+k]) << (8 * k)
		}
	}
	v := x >> shift
	if width+shift > 64 {
		var hi uint64
		if i+8 < uint64(len(b)) {
			hi = uint64(b[i+8])
		}
		v |= hi << (64 - shift)
	}
	if width < 64 {
		v &= 1<<width - 1
	}
	return v
}

// rleDecoder streams the RLE/bit-packed hybrid encoding (levels, dictionary indexes,
// booleans): runs of one repeated value and runs of bit-packed groups of eight values.
type rleDecoder struct {
	data   []byte
	pos    int
	width  uint
	rleN   int    // values left in the current repeated run
	rleVal uint64 //
	bpN    int    // values left in the current bit-packed run
	bpBit  uint64 // bit position of its next value in data
}

func newRLE(data []byte, width uint) *rleDecoder {
	return &rleDecoder{data: data, width: width}
}

// widthOf is the bit width of levels up to max.
func widthOf(max int) uint { return uint(bits.Len(uint(max))) }

var errRLE = &FormatError{Msg: "RLE/bit-packed data ends before its values"}

// next starts the next run.
func (d *rleDecoder) nextRun() error {
	h, k := binary.Uvarint(d.data[d.pos:])
	if k <= 0 {
		return errRLE
	}
	d.pos += k
	if h&1 == 1 {
		groups := h >> 1
		avail := uint64(len(d.data)-d.pos) * 8
		if d.width > 0 {
			avail /= uint64(d.width)
		} else {
			avail = groups * 8
		}
		n := min(groups*8, avail) // the last run may be cut short of its padding
		if n == 0 || groups > 1<<31 {
			return errRLE
		}
		d.bpN = int(n)
		d.bpBit = uint64(d.pos) * 8
		bytes := min(groups*uint64(d.width), uint64(len(d.data)-d.pos))
		d.pos += int(bytes)
		return nil
	}
	n := h >> 1
	w := int(d.width+7) / 8
	if len(d.data)-d.pos < w || n > 1<<31 {
		return errRLE
	}
	var v uint64
	for i := w - 1; i >= 0; i-- {
		v = v<<8 | uint64(d.data[d.pos+i])
	}
	d.pos += w
	d.rleN, d.rleVal = int(n), v
	return nil
}

// read fills dst with the next values.
func (d *rleDecoder) read(dst []int32) error {
	for i := 0; i < len(dst); {
		switch {
		case d.rleN > 0:
			k := min(d.rleN, len(dst)-i)
			v := int32(d.rleVal)
			for j := range k {
				dst[i+j] = v
			}
			d.rleN -= k
			i += k
		case d.bpN > 0:
			k := min(d.bpN, len(dst)-i)
			for j := range k {
				dst[i+j] = int32(bitsAt(d.data, d.bpBit, d.width))
				d.bpBit += uint64(d.width)
			}
			d.bpN -= k
			i += k
		default:
			if d.pos >= len(d.data) {
				return errRLE
			}
			if err := d.nextRun(); err != nil {
				return err
			}
		}
	}
	return nil
}

// bitPackedLevels streams the deprecated BIT_PACKED level encoding: values packed from
// the most significant bit, no header.
type bitPackedLevels struct {
	data  []byte
	bit   uint64
	width uint
}

func (d *bitPackedLevels) read(dst []int32) error {
	for i := range dst {
		if (d.bit+uint64(d.width)+7)/8 > uint64(len(d.data)) {
			return errRLE
		}
		var v int32
		for range d.width {
			b := d.data[d.bit>>3] >> (7 - d.bit&7) & 1
			v = v<<1 | int32(b)
			d.bit++
		}
		dst[i] = v
	}
	return nil
}

// levelReader is a stream of levels.
type levelReader interface {
	read(dst []int32) error
}

// zeroLevels is the levels of a column whose maximum level is 0.
type zeroLevels struct{}

func (zeroLevels) read(dst []int32) error {
	clear(dst)
	return nil
}
