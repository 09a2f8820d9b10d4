package parquet

import (
	"io"
)

// MaxRecordValues bounds the values (all leaf columns together) of one record a
// RowReader assembles.
const MaxRecordValues = 1 << 18

// MaxRecordBytes bounds the bytes of the values of one record: a dictionary page's value
// may stand for as many values of a record as MaxRecordValues allows, each copied into
// the record (a *LimitError past it).
const MaxRecordBytes = 64 << 20

// recordBytes is MaxRecordBytes, lowered by tests.
var recordBytes = MaxRecordBytes

// RowReader reads a file's records in order, one at a time, each assembled from the
// values of every leaf column (Read), and seeks to a record (SeekToRow). Memory holds
// the footer, a page per column and the record.
type RowReader struct {
	f       *File
	group   int   // row group of the next record; len(RowGroups) at the end
	left    int64 // records of that group not yet read
	row     int64 // index of the next record
	cursors []*cursor
	cols    [][]Value // the current record's values, per leaf column
	arena   []byte    // the current record's bytes
}

// cursor reads one leaf column of the current row group with a value of lookahead.
type cursor struct {
	col  *Column
	r    *ColumnReader
	buf  []Value
	i, n int
}

// Rows returns a reader of f's records from the first.
func (f *File) Rows() *RowReader {
	rr := &RowReader{f: f, group: -1, cols: make([][]Value, len(f.Columns))}
	rr.cursors = make([]*cursor, len(f.Columns))
	for i := range f.Columns {
		rr.cursors[i] = &cursor{col: &f.Columns[i], buf: make([]Value, 64)}
	}
	return rr
}

// Row is the index of the next record Read reads.
func (rr *RowReader) Row() int64 { return rr.row }

// open moves to the next row group holding records.
func (rr *RowReader) open() error {
	for rr.left == 0 {
		rr.group++
		if rr.group >= len(rr.f.RowGroups) {
			return io.EOF
		}
		rr.left = rr.f.RowGroups[rr.group].NumRows
		if rr.left == 0 {
			continue
		}
		for i, c := range rr.cursors {
			var err error
			if c.r == nil {
				c.r, err = rr.f.Column(rr.group, i)
			} else {
				err = c.r.Reset(rr.group) // its buffers serve the next group
			}
			if err != nil {
				return err
			}
			c.i, c.n = 0, 0
		}
	}
	return nil
}

// SeekToRow moves to record row: whole row groups are passed by their row counts, and
// within a row group each column skips its values (whole pages of a column that is
// not repeated, without reading them).
func (rr *RowReader) SeekToRow(row int64) error {
	if row < rr.row {
		rr.group, rr.left, rr.row = -1, 0, 0
	}
	for rr.row < row {
		if rr.left == 0 {
			// Pass whole row groups without opening them.
			for rr.group+1 < len(rr.f.RowGroups) && rr.row+rr.f.RowGroups[rr.group+1].NumRows <= row {
				rr.group++
				rr.row += rr.f.RowGroups[rr.group].NumRows
			}
			if rr.row == row {
				return nil
			}
			if err := rr.open(); err != nil {
				return err
			}
		}
		k := min(row-rr.row, rr.left)
		for _, c := range rr.cursors {
			if err := c.skip(k); err != nil {
				return eofShort(err)
			}
		}
		rr.row += k
		rr.left -= k
	}
	return nil
}

// eofShort turns a column's early end into a FormatError.
func eofShort(err error) error {
	if err == io.EOF {
		return formatErr("column chunk holds fewer records than its row group")
	}
	return err
}

// peek returns the next value without consuming it.
func (c *cursor) peek() (*Value, error) {
	if c.i == c.n {
		n, err := c.r.Read(c.buf)
		if err != nil {
			return nil, err
		}
		c.i, c.n = 0, n
	}
	return &c.buf[c.i], nil
}

// skip passes k records.
func (c *cursor) skip(k int64) error {
	if c.col.MaxRep == 0 {
		buffered := min(int64(c.n-c.i), k)
		c.i += int(buffered)
		return c.r.Skip(k - buffered)
	}
	for ; k > 0; k-- {
		if _, err := c.record(nil, nil, nil); err != nil {
			return err
		}
	}
	return nil
}

// record appends the values of the next record to dst (copying their bytes into
// arena when dst is not nil), up to budget values.
func (c *cursor) record(dst []Value, arena *[]byte, budget *int) ([]Value, error) {
	for first := true; ; first = false {
		v, err := c.peek()
		if err == io.EOF && !first {
			return dst, nil
		}
		if err != nil {
			return dst, err
		}
		if first && v.Rep != 0 {
			return dst, formatErr("record does not start at repetition level 0")
		}
		if !first && v.Rep == 0 {
			return dst, nil
		}
		c.i++
		if budget == nil {
			continue
		}
		if *budget--; *budget < 0 {
			return dst, formatErr("record holds more than %d values", MaxRecordValues)
		}
		w := *v
		if w.Bytes != nil {
			if len(w.Bytes) > recordBytes-len(*arena) {
				return dst, &LimitError{Limit: int64(recordBytes), Record: true}
			}
			start := len(*arena)
			*arena = append(*arena, w.Bytes...)
			w.Bytes = (*arena)[start:len(*arena):len(*arena)]
		}
		dst = append(dst, w)
	}
}

// next reads the values of the next record of every column into rr.cols.
func (rr *RowReader) next() error {
	if err := rr.open(); err != nil {
		return err
	}
	rr.arena = rr.arena[:0]
	budget := MaxRecordValues
	for i, c := range rr.cursors {
		vals, err := c.record(rr.cols[i][:0], &rr.arena, &budget)
		if err != nil {
			return eofShort(err)
		}
		rr.cols[i] = vals
	}
	rr.row++
	rr.left--
	return nil
}

// Read reads the next record, keyed by the schema's top-level fields (Values gives the
// forms); it returns io.EOF after the last.
func (rr *RowReader) Read() (map[string]any, error) {
	if err := rr.next(); err != nil {
		return nil, err
	}
	m := make(map[string]any, len(rr.f.Schema.Children))
	if err := groupInto(m, rr.f.Schema, levels{}, rr.cols); err != nil {
		return nil, err
	}
	return m, nil
}
