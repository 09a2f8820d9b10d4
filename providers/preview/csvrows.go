package preview

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// csvReader yields one row per data record, keyed by the header in column order. Duplicate
// header names and records whose field count differs from the header are decode failures:
// values are never dropped or invented.
type csvReader struct {
	f      io.ReadCloser
	budget *budgetReader
	r      *csv.Reader
	header []string
	index  int
	digest string
	row    int64
	// nested is true when a header collides with input_sha256 or record_index: values
	// move under value.
	nested bool
}

// budgetReader fails once one record has consumed more than its byte budget, so a
// runaway quoted field cannot grow without bound.
type budgetReader struct {
	r    io.Reader
	used int64
}

var errRecordTooLarge = errors.New("record too large")

func (b *budgetReader) Read(p []byte) (int, error) {
	if b.used > MaxRecordBytes {
		return 0, errRecordTooLarge
	}
	n, err := b.r.Read(p)
	b.used += int64(n)
	return n, err
}

func openCSV(src Source, index int) (*csvReader, error) {
	f, err := openStream(src, index)
	if err != nil {
		return nil, err
	}
	budget := &budgetReader{r: bufio.NewReaderSize(f, readBufferBytes)}
	r := csv.NewReader(budget)
	r.ReuseRecord = false
	c := &csvReader{f: f, budget: budget, r: r, index: index, digest: src.SHA256}
	header, err := r.Read()
	if err == io.EOF {
		return c, nil
	}
	if err != nil {
		f.Close()
		return nil, c.fail(err)
	}
	if len(header) > 0 {
		header[0] = strings.TrimPrefix(header[0], "\ufeff")
	}
	seen := map[string]bool{}
	for _, h := range header {
		if seen[h] {
			f.Close()
			return nil, decodeError(index, 0, nil, fmt.Sprintf("the CSV header of source %d repeats the column %q", index, h))
		}
		seen[h] = true
		if h == "input_sha256" || h == "record_index" {
			c.nested = true
		}
	}
	c.header = header
	r.FieldsPerRecord = len(header)
	return c, nil
}

func (c *csvReader) Close() error { return c.f.Close() }

func (c *csvReader) fail(err error) error {
	if errors.Is(err, errRecordTooLarge) {
		return limitError(c.index, c.row+1, MaxRecordBytes, fmt.Sprintf("CSV record %d of source %d is larger than %d bytes", c.row+1, c.index, MaxRecordBytes))
	}
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		if errors.Is(pe.Err, csv.ErrFieldCount) {
			return decodeError(c.index, c.row+1, err, fmt.Sprintf("CSV record %d (line %d) of source %d has a different number of fields than its %d-column header; declare the format text to read its raw lines", c.row+1, pe.StartLine, c.index, len(c.header)))
		}
		return decodeError(c.index, c.row+1, err, fmt.Sprintf("CSV record %d (line %d) of source %d has a malformed quoted field", c.row+1, pe.StartLine, c.index))
	}
	return decodeError(c.index, c.row+1, err, fmt.Sprintf("source %d could not be read as CSV", c.index))
}

func (c *csvReader) read() ([]string, error) {
	if c.header == nil {
		return nil, io.EOF
	}
	c.budget.used = 0
	rec, err := c.r.Read()
	if err == io.EOF {
		return nil, io.EOF
	}
	if err != nil {
		return nil, c.fail(err)
	}
	c.row++
	return rec, nil
}

func (c *csvReader) skip(n int64) (int64, error) {
	return skipRows(n, func() error { _, err := c.read(); return err })
}

func (c *csvReader) next() (json.RawMessage, error) {
	rec, err := c.read()
	if err != nil {
		return nil, err
	}
	index := c.row - 1
	fields := newObject()
	if !c.nested {
		fields.int("record_index", index)
	}
	for i, h := range c.header {
		fields.str(h, rec[i])
	}
	if !c.nested {
		fields.str("input_sha256", c.digest)
		return fields.done(), nil
	}
	o := newObject()
	o.int("record_index", index)
	o.raw("value", fields.done())
	o.str("input_sha256", c.digest)
	return o.done(), nil
}
