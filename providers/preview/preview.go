// Package preview reads the logical rows of text, JSON, JSONL, CSV and Parquet artifacts,
// the file list of directory sources and the header view of binary profiles, traces,
// reports and databases, for preview_artifact. Every reader streams: it skips to an offset without materializing
// the skipped rows, returns at most one page plus one look-ahead row, and bounds the bytes
// one row may occupy.
package preview

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/sourcefile"
	"github.com/flameox/flameox/providers"
)

// Limits on a single logical row. A larger row is a typed limit error, never a silent cut.
const (
	// MaxTextLineBytes bounds one text line in line mode; longer lines need text_fragment_chars.
	MaxTextLineBytes = 1 << 20
	// MaxRecordBytes bounds one JSONL record, CSV record or JSON entry.
	MaxRecordBytes = 16 << 20
)

// Source is one resolved input.
type Source struct {
	Path   string
	Format contracts.Format
	SHA256 string
	Size   int64
	// Members are a directory source's files, sorted by relative path; nil for a file.
	Members []sourcefile.Member
	// guard is set by Read for the page being read.
	guard *guard
}

// Options select the page.
type Options struct {
	// Offset is the zero-based logical row offset across all sources.
	Offset int64
	// MaxRows is the page size.
	MaxRows int
	// FragmentChars, when positive, splits text lines into fragments of that many characters.
	FragmentChars int
	// Fits, when set, bounds the page in bytes: the page ends before the first row it
	// rejects, which then counts as the look-ahead.
	Fits func(row json.RawMessage) bool
	// MaxSourceBytes, when positive, bounds the bytes one source yields after
	// transparent decompression (limits.max_input_bytes).
	MaxSourceBytes int64
}

// Page is one page of rows.
type Page struct {
	Rows []json.RawMessage
	// Observed counts rows from the first row through this page and its look-ahead.
	Observed int64
	// Complete is true when no row follows this page.
	Complete bool
	// Population is the total row count; known only when Complete.
	Population int64
}

// decodeError is malformed native input at a row (1-based; 0 when none). Its message
// is path-free.
func decodeError(source int, row int64, err error, msg string) *providers.DecodeError {
	return &providers.DecodeError{Source: source, Message: msg, Err: err, Details: map[string]any{"row": row}}
}

// limitError is a row larger than the reader's bound.
func limitError(source int, row, limit int64, msg string) *providers.LimitError {
	return &providers.LimitError{Source: source, Message: msg, Limit: limit, Unit: "bytes", Details: map[string]any{"row": row}}
}

// rowReader streams the rows of one source.
type rowReader interface {
	// skip discards up to n rows and returns how many it discarded (fewer only at the end).
	skip(n int64) (int64, error)
	// next returns the next row, or io.EOF.
	next() (json.RawMessage, error)
	Close() error
}

// skipRows calls step until it has discarded n rows or step fails (io.EOF at the end).
func skipRows(n int64, step func() error) (int64, error) {
	var done int64
	for done < n {
		if err := step(); err != nil {
			return done, err
		}
		done++
	}
	return done, nil
}

func open(src Source, index int, opt Options) (r rowReader, err error) {
	defer func() {
		var de *providers.DecodeError
		if errors.As(err, &de) {
			de.Source = index
		}
	}()
	switch src.Format {
	case contracts.FormatText:
		if opt.FragmentChars > 0 {
			return openFragments(src, index, opt.FragmentChars)
		}
		return openText(src, index)
	case contracts.FormatJSON:
		return openJSON(src, index)
	case contracts.FormatJsonl:
		return openJSONL(src, index)
	case contracts.FormatCSV:
		return openCSV(src, index)
	case contracts.FormatParquet:
		return openParquet(src, index)
	case contracts.FormatDirectory:
		return openDirectory(src)
	}
	if _, ok := headerViews[src.Format]; ok {
		return openHeader(src, index)
	}
	return nil, fmt.Errorf("preview: format %q has no reader", src.Format)
}

// Population returns the total row count of sources when it is known without reading
// them: every source is Parquet, whose footer records its row count, or a directory,
// one row per member.
func Population(sources []Source) (int64, bool) {
	var n int64
	for i, src := range sources {
		if src.Format == contracts.FormatDirectory {
			n += int64(len(src.Members))
			continue
		}
		if src.Format != contracts.FormatParquet {
			return 0, false
		}
		r, err := openParquet(src, i)
		if err != nil {
			return 0, false
		}
		n += r.total
		r.Close()
	}
	return n, len(sources) > 0
}

// Read returns the page selected by opt across sources in order.
func Read(ctx context.Context, sources []Source, opt Options) (*Page, error) {
	if opt.MaxRows < 1 {
		return nil, errors.New("preview: MaxRows must be positive")
	}
	page := &Page{Rows: make([]json.RawMessage, 0, min(opt.MaxRows, 1024))}
	remaining := opt.Offset
	more := false
	g := &guard{ctx: ctx, maxBytes: opt.MaxSourceBytes}
	for i, src := range sources {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		src.guard = g
		r, err := open(src, i, opt)
		if err != nil {
			return nil, err
		}
		done, err := func() (bool, error) {
			defer r.Close()
			if remaining > 0 {
				k, err := r.skip(remaining)
				page.Observed += k
				remaining -= k
				if err != nil && err != io.EOF {
					return false, err
				}
				if remaining > 0 {
					return false, nil
				}
			}
			for {
				if len(page.Rows)%256 == 0 {
					if err := ctx.Err(); err != nil {
						return false, err
					}
				}
				row, err := r.next()
				if err == io.EOF {
					return false, nil
				}
				if err != nil {
					return false, err
				}
				page.Observed++
				if len(page.Rows) == opt.MaxRows || opt.Fits != nil && !opt.Fits(row) {
					more = true
					return true, nil
				}
				page.Rows = append(page.Rows, row)
			}
		}()
		if err != nil {
			return nil, err
		}
		if done {
			break
		}
	}
	population := page.Observed
	if opt.Offset > 0 && (remaining > 0 || len(page.Rows) == 0 && !more) {
		return nil, &providers.OffsetError{Offset: opt.Offset, Available: population}
	}
	page.Complete = !more
	if page.Complete {
		page.Population = population
	}
	return page, nil
}
