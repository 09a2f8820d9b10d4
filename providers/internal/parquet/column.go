package parquet

import (
	"encoding/binary"
	"errors"
	"io"
)

// maxPageHeaderBytes bounds a page header (with its statistics).
const maxPageHeaderBytes = 16 << 20

// ColumnReader streams the values of one leaf column of one row group, page by page.
type ColumnReader struct {
	f      *File
	col    *Column
	chunk  *ColumnChunk
	pos    int64 // file offset of the next page header
	end    int64 // end of the chunk
	budget int64 // decompressed bytes the chunk's remaining pages may declare
	left   int64 // values of the chunk not yet read

	dict    []Value
	hasDict bool

	// the open data page
	pageLeft int // values of the page not yet read
	defs     levelReader
	reps     levelReader
	values   valueDecoder
	nulls    int // v2: values the page declares null (a bound on the non-null count)

	raw, out []byte // page buffers, reused
	dictRaw  []byte // the dictionary page's bytes, which dict refers to
	arena    []byte
	defBuf   []int32
	repBuf   []int32
}

// Column returns a reader of leaf column leaf of row group group.
func (f *File) Column(group, leaf int) (*ColumnReader, error) {
	if leaf < 0 || leaf >= len(f.Columns) {
		return nil, formatErr("no column %d in row group %d", leaf, group)
	}
	r := &ColumnReader{f: f, col: &f.Columns[leaf]}
	if err := r.Reset(group); err != nil {
		return nil, err
	}
	return r, nil
}

// Reset moves the reader to its column's chunk in row group group, from its first value,
// keeping the buffers it has grown (the values it returned before are no longer valid).
func (r *ColumnReader) Reset(group int) error {
	f, leaf := r.f, r.col.Node.Leaf
	if group < 0 || group >= len(f.RowGroups) {
		return formatErr("no column %d in row group %d", leaf, group)
	}
	c := &f.RowGroups[group].Columns[leaf]
	if err := supportedCodec(c.Codec); err != nil {
		return err
	}
	start := c.start()
	*r = ColumnReader{f: f, col: r.col, chunk: c, pos: start, end: start + c.TotalCompressedSize,
		budget: c.TotalUncompressedSize, left: c.NumValues,
		raw: r.raw[:0], out: r.out[:0], arena: r.arena[:0], defBuf: r.defBuf[:0], repBuf: r.repBuf[:0],
		dict: r.dict[:0], dictRaw: r.dictRaw[:0]}
	return nil
}

// Column is the column the reader reads.
func (r *ColumnReader) Column() *Column { return r.col }

// header reads the page header at r.pos, reading a larger window of the chunk when the
// header does not fit the first.
func (r *ColumnReader) header() (pageHeader, error) {
	if err := r.f.live(); err != nil {
		return pageHeader{}, err
	}
	avail := r.end - r.pos
	for size := int64(1024); ; size *= 4 {
		n := min(size, avail, maxPageHeaderBytes)
		if cap(r.raw) < int(n) {
			r.raw = make([]byte, n)
		}
		b := r.raw[:n]
		if err := readFull(r.f.r, b, r.pos); err != nil {
			return pageHeader{}, err
		}
		h, k, err := decodePageHeader(b)
		if err == errShort && n < min(avail, maxPageHeaderBytes) {
			continue
		}
		if err != nil {
			return pageHeader{}, pageErr(err)
		}
		r.pos += int64(k)
		if h.compressedSize < 0 || h.uncompressedSize < 0 || int64(h.compressedSize) > r.end-r.pos {
			return pageHeader{}, formatErr("page runs past its column chunk")
		}
		if int64(h.uncompressedSize) > r.budget {
			return pageHeader{}, formatErr("pages declare more bytes than their column chunk")
		}
		return h, nil
	}
}

func pageErr(err error) error {
	var fe *FormatError
	if errors.As(err, &fe) {
		return &FormatError{Msg: "page header: " + fe.Msg}
	}
	return err
}

// body reads a page's compressed bytes and decompresses them (the bytes past skip,
// which v2's levels leave uncompressed).
func (r *ColumnReader) body(h pageHeader, skip int, compressed bool) ([]byte, error) {
	if err := r.f.admit(int64(h.uncompressedSize)); err != nil {
		return nil, err
	}
	n := int(h.compressedSize)
	if cap(r.raw) < n {
		r.raw = make([]byte, n)
	}
	raw := r.raw[:n]
	if err := readFull(r.f.r, raw, r.pos); err != nil {
		return nil, err
	}
	r.pos += int64(n)
	r.budget -= int64(h.uncompressedSize)
	want := int(h.uncompressedSize)
	if !compressed || r.chunk.Codec == Uncompressed {
		if n != want {
			return nil, formatErr("page of %d bytes declares %d", n, want)
		}
		return raw, nil
	}
	if skip > n || skip > want {
		return nil, formatErr("page levels run past the page")
	}
	if cap(r.out) < want {
		r.out = make([]byte, want)
	}
	out := r.out[:want]
	copy(out, raw[:skip])
	body, err := decompress(r.chunk.Codec, out[skip:skip], raw[skip:], want-skip)
	if err != nil {
		return nil, err
	}
	if len(body) > 0 && &body[0] != &out[skip] {
		copy(out[skip:], body)
	}
	return out, nil
}

// nextPage opens the next data page, reading any dictionary page before it and
// skipping index pages and pages of unknown types. It returns io.EOF past the chunk.
func (r *ColumnReader) nextPage() error {
	for {
		if r.left <= 0 || r.pos >= r.end {
			return io.EOF
		}
		h, err := r.header()
		if err != nil {
			return err
		}
		switch h.typ {
		case dictionaryPage:
			if err := r.readDict(h); err != nil {
				return err
			}
		case dataPage, dataPageV2:
			return r.openData(h)
		default:
			r.pos += int64(h.compressedSize)
		}
	}
}

func (r *ColumnReader) readDict(h pageHeader) error {
	if r.hasDict {
		return formatErr("column chunk has two dictionary pages")
	}
	b, err := r.body(h, 0, true)
	if err != nil {
		return err
	}
	if h.encoding != Plain && h.encoding != PlainDictionary {
		return &UnsupportedError{Feature: "dictionary page encoding"}
	}
	// The dictionary refers to its page's bytes: keep a copy the page buffers cannot
	// overwrite.
	r.dictRaw = append(r.dictRaw[:0], b...)
	p := newPlain(r.dictRaw, r.col.Node.Type, r.col.Node.TypeLength)
	if h.numValues < 0 || !p.fits(int(h.numValues)) {
		return formatErr("dictionary page counts more values than its bytes hold")
	}
	if cap(r.dict) < int(h.numValues) {
		r.dict = make([]Value, h.numValues)
	}
	r.dict = r.dict[:h.numValues]
	clear(r.dict)
	if err := p.decode(r.dict); err != nil {
		return err
	}
	r.hasDict = true
	return nil
}

func (r *ColumnReader) openData(h pageHeader) error {
	if h.numValues < 0 {
		return formatErr("page has a negative value count")
	}
	col := r.col
	var data []byte
	var err error
	if h.typ == dataPageV2 {
		if h.defBytes < 0 || h.repBytes < 0 || h.numNulls < 0 || h.numNulls > h.numValues {
			return formatErr("page v2 has negative level lengths")
		}
		skip := int(h.repBytes) + int(h.defBytes)
		if data, err = r.body(h, skip, h.compressed); err != nil {
			return err
		}
		if skip > len(data) {
			return formatErr("page levels run past the page")
		}
		reps, defs := data[:h.repBytes], data[h.repBytes:skip]
		r.reps, r.defs = levelsOf(reps, col.MaxRep), levelsOf(defs, col.MaxDef)
		data = data[skip:]
		r.nulls = int(h.numNulls)
	} else {
		if data, err = r.body(h, 0, true); err != nil {
			return err
		}
		if r.reps, data, err = levelsV1(data, h.repEncoding, col.MaxRep, int(h.numValues)); err != nil {
			return err
		}
		if r.defs, data, err = levelsV1(data, h.defEncoding, col.MaxDef, int(h.numValues)); err != nil {
			return err
		}
		r.nulls = -1
	}
	if r.values, err = r.decoderOf(h.encoding, data, int(h.numValues)); err != nil {
		return err
	}
	r.pageLeft = int(h.numValues)
	return nil
}

// levelsOf reads RLE/bit-packed levels without a length (v2), or zeros when max is 0.
func levelsOf(b []byte, max int) levelReader {
	if max == 0 {
		return zeroLevels{}
	}
	return newRLE(b, widthOf(max))
}

// levelsV1 reads the levels at the start of a v1 page: RLE with a 4-byte length, or the
// deprecated BIT_PACKED; it returns the rest of the page.
func levelsV1(b []byte, enc Encoding, max, n int) (levelReader, []byte, error) {
	if max == 0 {
		return zeroLevels{}, b, nil
	}
	w := widthOf(max)
	switch enc {
	case RLE:
		if len(b) < 4 {
			return nil, nil, errRLE
		}
		k := binary.LittleEndian.Uint32(b)
		if uint64(k) > uint64(len(b)-4) {
			return nil, nil, errRLE
		}
		return newRLE(b[4:4+k], w), b[4+k:], nil
	case BitPacked:
		k := (uint64(n)*uint64(w) + 7) / 8
		if k > uint64(len(b)) {
			return nil, nil, errRLE
		}
		return &bitPackedLevels{data: b[:k], width: w}, b[k:], nil
	}
	return nil, nil, &UnsupportedError{Feature: "level encoding"}
}

func (r *ColumnReader) decoderOf(enc Encoding, data []byte, n int) (valueDecoder, error) {
	node := r.col.Node
	switch enc {
	case Plain:
		return newPlain(data, node.Type, node.TypeLength), nil
	case PlainDictionary, RLEDictionary:
		if !r.hasDict {
			return nil, formatErr("dictionary-encoded page without a dictionary")
		}
		return newDictDecoder(data, r.dict)
	case RLE:
		if node.Type != Boolean {
			return nil, formatErr("RLE values of type %s", node.Type)
		}
		if len(data) < 4 {
			return nil, errRLE
		}
		k := binary.LittleEndian.Uint32(data)
		if uint64(k) > uint64(len(data)-4) {
			return nil, errRLE
		}
		return &rleBoolDecoder{rle: newRLE(data[4:4+k], 1)}, nil
	case DeltaBinaryPacked:
		if node.Type != Int32 && node.Type != Int64 {
			return nil, formatErr("DELTA_BINARY_PACKED values of type %s", node.Type)
		}
		d := &deltaIntDecoder{int32: node.Type == Int32}
		if err := d.d.init(data, n); err != nil {
			return nil, err
		}
		return d, nil
	case DeltaLengthByteArray:
		if node.Type != ByteArray {
			return nil, formatErr("DELTA_LENGTH_BYTE_ARRAY values of type %s", node.Type)
		}
		d, _, err := newDeltaLength(data, n)
		return d, err
	case DeltaByteArray:
		fixed := 0
		switch node.Type {
		case ByteArray:
		case FixedLenByteArray:
			fixed = int(node.TypeLength)
		default:
			return nil, formatErr("DELTA_BYTE_ARRAY values of type %s", node.Type)
		}
		return newDeltaByteArray(data, n, &r.arena, fixed)
	case ByteStreamSplit:
		return newSplit(data, node.Type, node.TypeLength, &r.arena)
	}
	return nil, &UnsupportedError{Feature: "value encoding"}
}

// Read reads the next values of the chunk into vals, with their levels, up to the end of
// the current page (so it may return fewer than len(vals)); it returns io.EOF (and no
// values) once the chunk's values are read. Byte values are valid until the next call.
func (r *ColumnReader) Read(vals []Value) (int, error) {
	r.arena = r.arena[:0]
	got := 0
	for got < len(vals) {
		if r.pageLeft == 0 {
			if err := r.nextPage(); err != nil {
				if err == io.EOF && got > 0 {
					break
				}
				if err == io.EOF && r.left > 0 {
					return 0, formatErr("column chunk holds fewer values than it counts")
				}
				return 0, err
			}
			continue
		}
		k := min(len(vals)-got, r.pageLeft, int(min(r.left, int64(len(vals)))))
		if err := r.decode(vals[got : got+k]); err != nil {
			return got, err
		}
		got += k
		r.pageLeft -= k
		r.left -= int64(k)
		if r.left == 0 {
			r.pageLeft = 0
		}
		if r.pageLeft == 0 {
			break // the next page reuses this one's buffers
		}
	}
	if got == 0 {
		return 0, io.EOF
	}
	return got, nil
}

// decode decodes the next len(vals) values of the open page.
func (r *ColumnReader) decode(vals []Value) error {
	k := len(vals)
	if cap(r.defBuf) < k {
		r.defBuf, r.repBuf = make([]int32, k), make([]int32, k)
	}
	defs, reps := r.defBuf[:k], r.repBuf[:k]
	if err := r.defs.read(defs); err != nil {
		return err
	}
	if err := r.reps.read(reps); err != nil {
		return err
	}
	max := int32(r.col.MaxDef)
	nn := 0
	for i, d := range defs {
		if d > max || d < 0 || reps[i] > int32(r.col.MaxRep) || reps[i] < 0 {
			return formatErr("level out of range")
		}
		if d == max {
			nn++
		}
	}
	if r.nulls >= 0 {
		if k-nn > r.nulls {
			return formatErr("page has more nulls than it counts")
		}
		r.nulls -= k - nn
	}
	if err := r.values.decode(vals[:nn]); err != nil {
		return err
	}
	// Spread the non-null values to their places, from the end.
	j := nn - 1
	for i := k - 1; i >= 0; i-- {
		v := &vals[i]
		if defs[i] == max {
			if i != j {
				v.bits, v.Bytes = vals[j].bits, vals[j].Bytes
			}
			j--
			v.Null = false
		} else {
			v.bits, v.Bytes, v.Null = 0, nil, true
		}
		v.Def, v.Rep = defs[i], reps[i]
	}
	return nil
}

// Skip skips n values (each a row when the column is not repeated), passing over whole
// pages of a column that is not repeated without decompressing them. It returns
// io.EOF when the chunk ends first.
func (r *ColumnReader) Skip(n int64) error {
	var buf [64]Value
	for n > 0 {
		if r.pageLeft == 0 {
			if r.left <= 0 || r.pos >= r.end {
				return io.EOF
			}
			if r.col.MaxRep == 0 {
				k, ok, err := r.skipPage(n)
				if err != nil {
					return err
				}
				if ok {
					n -= k
					continue
				}
			}
		}
		k, err := r.Read(buf[:min(n, int64(len(buf)))])
		if err != nil {
			return err
		}
		n -= int64(k)
	}
	return nil
}

// skipPage passes over the next data page when it holds at most n values; it reads a
// dictionary page that comes first.
// It returns the values passed and whether it handled the page.
func (r *ColumnReader) skipPage(n int64) (int64, bool, error) {
	at := r.pos
	h, err := r.header()
	if err != nil {
		return 0, false, err
	}
	switch {
	case h.typ == dictionaryPage:
		return 0, true, r.readDict(h)
	case h.typ != dataPage && h.typ != dataPageV2:
		r.pos += int64(h.compressedSize)
		return 0, true, nil
	case h.numValues >= 0 && int64(h.numValues) <= n && int64(h.numValues) <= r.left:
		r.pos += int64(h.compressedSize)
		r.budget -= int64(h.uncompressedSize)
		r.left -= int64(h.numValues)
		return int64(h.numValues), true, nil
	}
	r.pos = at
	return 0, false, nil
}
