package parquet

import "encoding/binary"

// deltaDecoder streams DELTA_BINARY_PACKED: a header (block size, miniblocks per block,
// value count, first value), then blocks of a minimum delta, the miniblocks' bit widths
// and the bit-packed deltas. Arithmetic wraps, as the encoding intends.
type deltaDecoder struct {
	data      []byte
	pos       int
	perMini   int // values per miniblock
	minis     int // miniblocks per block
	total     int // values left, the first included
	first     bool
	last      int64
	minDelta  int64
	widths    []byte // of the current block
	mini      int    // index of the current miniblock in its block
	miniLeft  int    // values left in the current miniblock
	miniBit   uint64 // bit position of its next value
	miniWidth uint
}

var errDelta = &FormatError{Msg: "corrupt DELTA_BINARY_PACKED data"}

func (d *deltaDecoder) uvarint() (uint64, error) {
	v, k := binary.Uvarint(d.data[d.pos:])
	if k <= 0 {
		return 0, errDelta
	}
	d.pos += k
	return v, nil
}

func (d *deltaDecoder) varint() (int64, error) {
	v, k := binary.Varint(d.data[d.pos:])
	if k <= 0 {
		return 0, errDelta
	}
	d.pos += k
	return v, nil
}

// init reads the header of the stream that starts data; maxValues bounds its count.
func (d *deltaDecoder) init(data []byte, maxValues int) error {
	*d = deltaDecoder{data: data, first: true}
	block, err := d.uvarint()
	if err != nil {
		return err
	}
	minis, err := d.uvarint()
	if err != nil {
		return err
	}
	total, err := d.uvarint()
	if err != nil {
		return err
	}
	if d.last, err = d.varint(); err != nil {
		return err
	}
	if block == 0 || block > 1<<20 || minis == 0 || minis > block || block%minis != 0 || (block/minis)%8 != 0 {
		return errDelta
	}
	if total > uint64(maxValues) {
		return formatErr("DELTA_BINARY_PACKED data counts more values than its page")
	}
	d.perMini, d.minis, d.total = int(block/minis), int(minis), int(total)
	return nil
}

// next returns the next value.
func (d *deltaDecoder) next() (int64, error) {
	if d.total <= 0 {
		return 0, errDelta
	}
	d.total--
	if d.first {
		d.first = false
		return d.last, nil
	}
	for d.miniLeft == 0 {
		if err := d.nextMini(d.total + 1); err != nil {
			return 0, err
		}
	}
	delta := bitsAt(d.data, d.miniBit, d.miniWidth)
	d.miniBit += uint64(d.miniWidth)
	d.miniLeft--
	d.last += d.minDelta + int64(delta)
	return d.last, nil
}

// nextMini moves to the next miniblock (reading a block's header first where one
// begins), with left values of the stream still to read, this miniblock's first among
// them. Its data is passed over: its values are read at miniBit.
func (d *deltaDecoder) nextMini(left int) error {
	if d.mini >= len(d.widths) { // a new block
		md, err := d.varint()
		if err != nil {
			return err
		}
		if len(d.data)-d.pos < d.minis {
			return errDelta
		}
		d.minDelta = md
		d.widths = d.data[d.pos : d.pos+d.minis]
		d.pos += d.minis
		d.mini = 0
	}
	w := uint(d.widths[d.mini])
	if w > 64 {
		return errDelta
	}
	bytes := d.perMini * int(w) / 8
	// The data of the last miniblock holding values is padded to its full size; data
	// past it may be absent.
	need := (min(d.perMini, left)*int(w) + 7) / 8
	if len(d.data)-d.pos < need {
		return errDelta
	}
	d.miniBit = uint64(d.pos) * 8
	d.pos += min(bytes, len(d.data)-d.pos)
	d.miniWidth = w
	d.miniLeft = d.perMini
	d.mini++
	return nil
}

// end walks the rest of the stream (on a copy) a miniblock at a time, decoding no value,
// and returns the offset just past it: a stream of few bytes may count 2^31 values of
// bit width 0, which a walk by values would decode one by one.
func (d *deltaDecoder) end() (int, error) {
	c := *d
	if c.total > 0 && c.first {
		c.total--
		c.first = false
	}
	for c.total > 0 {
		if c.miniLeft == 0 {
			if err := c.nextMini(c.total); err != nil {
				return 0, err
			}
		}
		n := min(c.miniLeft, c.total)
		c.total -= n
		c.miniLeft -= n
	}
	return c.pos, nil
}
