package preview

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/internal/jsonvalue"
	"github.com/flameox/flameox/providers/internal/parquet"
)

// parquetReader yields one row per Parquet record, keyed by the schema's top-level
// columns in schema order, in the forms of parquet.RowReader. It seeks directly to the
// offset and reads one row at a time, so memory holds the footer, the open pages and
// the record only.
type parquetReader struct {
	f    *os.File
	r    *parquet.RowReader
	cols []string
	// nested: a column named as a field preview adds, so the record goes under value.
	nested bool
	index  int
	digest string
	row    int64
	total  int64
}

func openParquet(src Source, index int) (*parquetReader, error) {
	f, err := os.Open(src.Path)
	if err != nil {
		return nil, &providers.InputError{Source: index, Message: fmt.Sprintf("source %d could not be read", index), Err: err}
	}
	pf, err := parquet.Open(f, src.Size)
	if err != nil {
		f.Close()
		return nil, decodeError(index, 0, err, fmt.Sprintf("source %d is not a readable Parquet file", index))
	}
	// The page's guard, as every other source's stream observes it (openStream): the
	// request's context, and the bytes the source's pages decompress to.
	if g := src.guard; g != nil {
		pf.Guard(g.ctx, g.maxBytes)
	}
	p := &parquetReader{f: f, r: pf.Rows(), index: index, digest: src.SHA256, total: pf.NumRows}
	for _, fld := range pf.Schema.Children {
		p.cols = append(p.cols, fld.Name)
		p.nested = p.nested || fld.Name == "input_sha256" || fld.Name == "record_index"
	}
	return p, nil
}

func (p *parquetReader) Close() error { return p.f.Close() }

func (p *parquetReader) skip(n int64) (int64, error) {
	k := min(n, p.total-p.row)
	if k <= 0 {
		return 0, io.EOF
	}
	if err := p.r.SeekToRow(p.row + k); err != nil {
		return 0, p.failure(err, 0, fmt.Sprintf("source %d: Parquet row %d could not be reached", p.index, p.row+k))
	}
	p.row += k
	return k, nil
}

func (p *parquetReader) next() (json.RawMessage, error) {
	if p.row >= p.total {
		return nil, io.EOF
	}
	m, err := p.r.Read()
	if err != nil {
		return nil, p.failure(err, p.row+1, fmt.Sprintf("Parquet record %d of source %d could not be decoded", p.row+1, p.index))
	}
	p.row++
	fields := newObject()
	if !p.nested {
		fields.int("record_index", p.row-1)
	}
	for _, c := range p.cols {
		fields.key(c)
		fields.b = jsonvalue.Append(fields.b, m[c])
	}
	if !p.nested {
		fields.str("input_sha256", p.digest)
		return fields.done(), nil
	}
	o := newObject()
	o.int("record_index", p.row-1)
	o.raw("value", fields.done())
	o.str("input_sha256", p.digest)
	return o.done(), nil
}

// failure is the error of a read that failed at row (0 for a seek): the request's
// cancellation or deadline as it is, a bound of the guard or of a record as a limit, any
// other a decode failure worded by msg.
func (p *parquetReader) failure(err error, row int64, msg string) error {
	var lim *parquet.LimitError
	switch {
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return err
	case errors.As(err, &lim) && lim.Record:
		return limitError(p.index, row, lim.Limit, fmt.Sprintf("Parquet record %d of source %d holds more than %d bytes", row, p.index, lim.Limit))
	case errors.As(err, &lim):
		return limitError(p.index, row, lim.Limit, fmt.Sprintf("source %d yields more than %d bytes after decompression", p.index, lim.Limit))
	}
	return decodeError(p.index, row, err, msg)
}
