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
		if d.mini >= len(d.widths) { // a new block
			md, err := d.varint()
			if err != nil {
				return 0, err
			}
			if len(d.data)-d.pos < d.minis {
				return 0, errDelta
			}
			d.minDelta = md
			d.widths = d.data[d.pos : d.pos+d.minis]
			d.pos += d.minis
			d.mini = 0
		}
		w := uint(d.widths[d.mini])
		if w > 64 {
			return 0, errDelta
		}
		bytes := d.perMini * int(w) / 8
		// The data of the last miniblock holding values is padded to its full size;
		// data past it may be absent.
		need := (min(d.perMini, d.total+1)*int(w) + 7) / 8
		if len(d.data)-d.pos < need {
			return 0, errDelta
		}
		d.miniBit = uint64(d.pos) * 8
		d.pos += min(bytes, len(d.data)-d.pos)
		d.miniWidth = w
		d.miniLeft = d.perMini
		d.mini++
	}
	delta := bitsAt(d.data, d.miniBit, d.miniWidth)
	d.miniBit += uint64(d.miniWidth)
	d.miniLeft--
	d.last += d.minDelta + int64(delta)
	return d.last, nil
}

// end decodes the rest of the stream (on a copy) and returns the offset just past it.
func (d *deltaDecoder) end() (int, error) {
	c := *d
	for c.total > 0 {
		if _, err := c.next(); err != nil {
			return 0, err
		}
	}
	return c.pos, nil
}
