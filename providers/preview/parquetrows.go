package preview

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/flameox/flameox/providers/internal/jsonvalue"
	"github.com/parquet-go/parquet-go"
)

// parquetReader yields one row per Parquet record, keyed by the schema's top-level
// columns in schema order. It seeks directly to the offset and reads one row at a time,
// so memory holds the footer and the open pages only.
type parquetReader struct {
	f      *os.File
	pf     *parquet.File
	r      *parquet.Reader
	cols   []string
	index  int
	digest string
	row    int64
	total  int64
}

func openParquet(src Source, index int) (rr *parquetReader, err error) {
	f, err := os.Open(src.Path)
	if err != nil {
		return nil, err
	}
	defer func() {
		if p := recover(); p != nil {
			f.Close()
			rr, err = nil, decodeError(index, 0, nil, fmt.Sprintf("source %d is not a readable Parquet file", index))
		}
	}()
	pf, err := parquet.OpenFile(f, src.Size)
	if err != nil {
		f.Close()
		return nil, decodeError(index, 0, err, fmt.Sprintf("source %d is not a readable Parquet file", index))
	}
	p := &parquetReader{f: f, pf: pf, r: parquet.NewReader(pf), index: index, digest: src.SHA256, total: pf.NumRows()}
	for _, fld := range pf.Schema().Fields() {
		p.cols = append(p.cols, fld.Name())
	}
	return p, nil
}

func (p *parquetReader) Close() error {
	p.r.Close()
	return p.f.Close()
}

func (p *parquetReader) skip(n int64) (int64, error) {
	k := min(n, p.total-p.row)
	if k <= 0 {
		return 0, io.EOF
	}
	if err := p.r.SeekToRow(p.row + k); err != nil {
		return 0, decodeError(p.index, 0, err, fmt.Sprintf("source %d: Parquet row %d could not be reached", p.index, p.row+k))
	}
	p.row += k
	return k, nil
}

func (p *parquetReader) next() (row json.RawMessage, err error) {
	if p.row >= p.total {
		return nil, io.EOF
	}
	defer func() {
		if r := recover(); r != nil {
			row, err = nil, decodeError(p.index, p.row+1, nil, fmt.Sprintf("Parquet record %d of source %d could not be decoded", p.row+1, p.index))
		}
	}()
	m := map[string]any{}
	if err := p.r.Read(&m); err != nil && err != io.EOF {
		return nil, decodeError(p.index, p.row+1, err, fmt.Sprintf("Parquet record %d of source %d could not be decoded", p.row+1, p.index))
	}
	p.row++
	nested := false
	for _, c := range p.cols {
		nested = nested || c == "input_sha256" || c == "record_index"
	}
	fields := newObject()
	if !nested {
		fields.int("record_index", p.row-1)
	}
	for _, c := range p.cols {
		fields.key(c)
		fields.b = jsonvalue.Append(fields.b, m[c])
	}
	if !nested {
		fields.str("input_sha256", p.digest)
		return fields.done(), nil
	}
	o := newObject()
	o.int("record_index", p.row-1)
	o.raw("value", fields.done())
	o.str("input_sha256", p.digest)
	return o.done(), nil
}
