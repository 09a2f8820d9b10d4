package parquet

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
)

// MaxFooterBytes bounds the footer (FileMetaData) a file may declare.
const MaxFooterBytes = 64 << 20

// File is an open Parquet file: its schema and row groups, read from the footer. Its
// readers share its Guard, so they are not for concurrent use.
type File struct {
	r         io.ReaderAt
	size      int64
	ctx       context.Context // nil: no context (Guard)
	maxPages  int64           // bound of decoded, 0: none (Guard)
	decoded   int64           // decompressed bytes of the pages read so far
	Schema    *Node
	Columns   []Column
	RowGroups []RowGroup
	NumRows   int64 // the footer's; the sum of the row groups' (Open checks)
}

// Open reads the footer of the size bytes of r.
func Open(r io.ReaderAt, size int64) (*File, error) {
	if size < 12 {
		return nil, formatErr("file is too short")
	}
	var tail [8]byte
	if err := readFull(r, tail[:], size-8); err != nil {
		return nil, err
	}
	var head [4]byte
	if err := readFull(r, head[:], 0); err != nil {
		return nil, err
	}
	if string(tail[4:]) != "PAR1" || string(head[:]) != "PAR1" {
		return nil, formatErr("no PAR1 magic")
	}
	n := int64(binary.LittleEndian.Uint32(tail[:4]))
	if n > MaxFooterBytes || n > size-12 {
		return nil, formatErr("footer length %d exceeds the file", n)
	}
	buf := make([]byte, n)
	if err := readFull(r, buf, size-8-n); err != nil {
		return nil, err
	}
	m, err := decodeFileMeta(buf)
	if err != nil {
		return nil, footerErr(err)
	}
	root, cols, err := buildSchema(m.schema)
	if err != nil {
		return nil, err
	}
	f := &File{r: r, size: size, Schema: root, Columns: cols, RowGroups: m.rowGroups, NumRows: m.numRows}
	var total int64
	dataEnd := size - 8 - n
	for i := range f.RowGroups {
		g := &f.RowGroups[i]
		if g.NumRows < 0 {
			return nil, formatErr("row group %d has a negative row count", i)
		}
		if total += g.NumRows; total < 0 {
			return nil, formatErr("row counts overflow")
		}
		if len(g.Columns) != len(cols) {
			return nil, formatErr("row group %d has %d column chunks for %d columns", i, len(g.Columns), len(cols))
		}
		for j := range g.Columns {
			if err := checkChunk(&g.Columns[j], dataEnd); err != nil {
				return nil, err
			}
		}
	}
	if m.numRows != total {
		return nil, formatErr("file counts %d rows, its row groups %d", m.numRows, total)
	}
	return f, nil
}

// Guard bounds every read of f from now on: no page header is read once ctx is done (its
// error is returned), and, when maxDecoded is positive, the pages all of f's readers
// read may decompress to at most maxDecoded bytes together (a *LimitError before the
// page that would pass it is allocated). Pages a reader skips without reading them do
// not count against maxDecoded.
func (f *File) Guard(ctx context.Context, maxDecoded int64) {
	f.ctx, f.maxPages = ctx, maxDecoded
}

// live is the Guard's context's error, nil without one.
func (f *File) live() error {
	if f.ctx == nil {
		return nil
	}
	return f.ctx.Err()
}

// admit counts a page of n decompressed bytes against the Guard.
func (f *File) admit(n int64) error {
	if f.maxPages > 0 && n > f.maxPages-f.decoded {
		return &LimitError{Limit: f.maxPages}
	}
	f.decoded += n
	return nil
}

// checkChunk checks that a column chunk's pages lie within the data of the file.
func checkChunk(c *ColumnChunk, dataEnd int64) error {
	if c.external {
		return &UnsupportedError{Feature: "column chunk in another file"}
	}
	if !c.hasMeta {
		return formatErr("column chunk without metadata")
	}
	start := c.start()
	if start < 4 || c.TotalCompressedSize < 0 || c.TotalUncompressedSize < 0 || c.NumValues < 0 ||
		c.TotalCompressedSize > dataEnd-start || c.DataPageOffset < start || c.DataPageOffset > start+c.TotalCompressedSize {
		return formatErr("column chunk lies outside the file")
	}
	return nil
}

// start is the offset of a chunk's first page: its dictionary page's when it has one.
func (c *ColumnChunk) start() int64 {
	if c.DictionaryPageOffset > 0 && c.DictionaryPageOffset < c.DataPageOffset {
		return c.DictionaryPageOffset
	}
	return c.DataPageOffset
}

func footerErr(err error) error {
	var fe *FormatError
	if errors.As(err, &fe) {
		return &FormatError{Msg: "footer: " + fe.Msg}
	}
	return err
}

// readFull reads len(b) bytes at off; running out is a FormatError.
func readFull(r io.ReaderAt, b []byte, off int64) error {
	n, err := r.ReadAt(b, off)
	if n == len(b) {
		return nil
	}
	if err == nil || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return formatErr("file is shorter than its structures say")
	}
	return err
}
