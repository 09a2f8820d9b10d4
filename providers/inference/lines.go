package inference

import (
	"context"
	stdjson "encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/go-json-experiment/json"

	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/internal/jsonlines"
)

// lineReader is a bounded JSON Lines reader (jsonlines.Reader) with the errors of the
// inference families' records.
type lineReader struct {
	*jsonlines.Reader
	source int
}

func newLineReader(r io.Reader, source, max int, what string) *lineReader {
	return &lineReader{Reader: jsonlines.New(r, source, max, what), source: source}
}

// lineError is the DecodeError of a record that is not what its format requires; a last
// line without its newline is named as a likely truncation.
func (l *lineReader) lineError(index int, err error, format string, args ...any) error {
	msg := fmt.Sprintf("line %d: ", index) + fmt.Sprintf(format, args...)
	if !l.Terminated() {
		msg += " (the last line has no newline: the file may be truncated)"
	}
	details := map[string]any{"line": index}
	var se *json.SemanticError
	if errors.As(err, &se) && se.JSONPointer != "" {
		details["field"] = string(se.JSONPointer)
	}
	return &providers.DecodeError{Source: l.source, Message: msg, Details: details, Err: err}
}

// errStop ends eachLine early without an error.
var errStop = errors.New("stop")

// eachLine calls fn with every record of a JSON Lines input in order, until the input
// ends, fn returns errStop, or an error.
func eachLine(ctx context.Context, in providers.Input, max int, what string, fn func(line []byte, index int, lr *lineReader) error) error {
	f, err := providers.OpenInput(in)
	if err != nil {
		return err
	}
	defer f.Close()
	lr := newLineReader(f, in.Index, max, what)
	for n := 0; ; n++ {
		if n%4096 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		line, index, err := lr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := fn(line, index, lr); errors.Is(err, errStop) {
			return nil
		} else if err != nil {
			return err
		}
	}
}

// lineRows pages the records of a JSON Lines input by reading it again from the start:
// records before the page are skipped without decoding, so a deep page costs a scan and
// memory stays bounded whatever the file's size.
type lineRows struct {
	in      providers.Input
	records int64
	max     int
	what    string
	// row decodes the record at a line into its row.
	row func(line []byte, index int, lr *lineReader) (any, error)
}

func (r lineRows) Page(ctx context.Context, offset, limit int64, fits func(stdjson.RawMessage) bool) (*providers.Page, error) {
	if offset > 0 && offset >= r.records {
		return nil, &providers.OffsetError{Offset: offset, Available: r.records}
	}
	end := min(offset+limit, r.records)
	page := &providers.Page{}
	n := int64(0)
	err := eachLine(ctx, r.in, r.max, r.what, func(line []byte, index int, lr *lineReader) error {
		defer func() { n++ }()
		if n < offset {
			return nil
		}
		if n >= end {
			return errStop
		}
		v, err := r.row(line, index, lr)
		if err != nil {
			return err
		}
		b, err := providers.EncodeRow(v)
		if err != nil {
			return err
		}
		if fits != nil && !fits(b) {
			// The row would pass the page's byte budget: it starts the next page.
			end = n
			return errStop
		}
		page.Rows = append(page.Rows, b)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if n < end {
		return nil, &providers.DecodeError{Source: r.in.Index, Message: "the input ended before the records counted when it was analysed"}
	}
	page.Observed = end
	page.More = end < r.records
	if page.More {
		page.Observed++
	}
	return page, nil
}
