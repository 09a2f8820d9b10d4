package providers

import (
	"bytes"
	"context"
	"encoding/json"
)

// MaxProjectionRows bounds the rows one projection computes; a larger population ends
// with truncation reason provider_limit and no continuation past it.
const MaxProjectionRows = 100_000

// Rows is the lazy, ordered row population of an analysis.
type Rows interface {
	// Page encodes at most limit rows from offset, and stops before the first row that
	// fits rejects (the result's byte budget): that row and the rest are More. An offset
	// at or beyond a non-empty population is an *OffsetError.
	Page(ctx context.Context, offset, limit int64, fits func(row json.RawMessage) bool) (*Page, error)
}

// Page is one page of rows and what the reader learnt while reading it.
type Page struct {
	Rows []json.RawMessage
	// Observed counts the rows seen from the first row through this page and its
	// look-ahead.
	Observed int64
	// More is set when a row follows this page (a continuation reaches it).
	More bool
	// Limited is set when the population was cut at a provider bound: rows exist past
	// the page that no continuation reaches.
	Limited bool
	// Metrics are figures that depend on the page, merged into the analysis metrics.
	Metrics map[string]any
	// Limitations depend on the page and follow the analysis limitations.
	Limitations []string
}

// Project is the projection of n rows (bounded by MaxProjectionRows) where row(i)
// builds row i; only the rows of the requested page are built and encoded.
func Project[R any](n int, row func(i int) R) Rows {
	return projection[R]{n: n, row: row}
}

// ProjectSlice projects items through row.
func ProjectSlice[T, R any](items []T, row func(T) R) Rows {
	return Project(len(items), func(i int) R { return row(items[i]) })
}

type projection[R any] struct {
	n   int
	row func(i int) R
}

func (p projection[R]) Page(ctx context.Context, offset, limit int64, fits func(json.RawMessage) bool) (*Page, error) {
	total := int64(min(p.n, MaxProjectionRows))
	if offset > 0 && offset >= total {
		return nil, &OffsetError{Offset: offset, Available: total}
	}
	end := min(offset+limit, total)
	page := &Page{Rows: make([]json.RawMessage, 0, max(end-offset, 0))}
	for i := offset; i < end; i++ {
		b, err := EncodeRow(p.row(int(i)))
		if err != nil {
			return nil, err
		}
		if fits != nil && !fits(b) {
			end = i
			break
		}
		page.Rows = append(page.Rows, b)
	}
	page.Observed = end
	page.More = end < total
	if page.More {
		page.Observed++
	}
	page.Limited = !page.More && int64(p.n) > MaxProjectionRows
	return page, nil
}

// EncodeRow encodes one row as compact JSON without HTML escaping, so that "<module>"
// reads as written.
func EncodeRow(v any) (json.RawMessage, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
