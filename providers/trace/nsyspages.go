package trace

import (
	"context"
	"encoding/json"

	"github.com/flameox/flameox/providers"
)

// exportPages pages one of an Nsight Systems export's ordered populations of total rows
// (lifecycle transitions, GPU launches, view "tables"' rows): read reads the rows from
// offset up to end in one read of the export (nsys.Export's Transitions, LaunchRows,
// TableRows: LIMIT and OFFSET over an nsys-sqlite export, the population ordered anew
// over a parquetdir), and encode renders each. done removes a converted report's scratch
// export once the page is read.
type exportPages[T any] struct {
	total  int64
	done   func()
	read   func(ctx context.Context, offset, end int64, add func(*T) (bool, error)) error
	encode func(*T) (json.RawMessage, error)
}

func (r *exportPages[T]) Page(ctx context.Context, offset, limit int64, fits func(json.RawMessage) bool) (*providers.Page, error) {
	defer r.done()
	return pageOf(r.total, offset, limit, func(end int64, page *providers.Page) error {
		return r.read(ctx, offset, end, func(row *T) (bool, error) {
			b, err := r.encode(row)
			if err != nil {
				return false, err
			}
			if fits != nil && !fits(b) {
				return false, nil
			}
			page.Rows = append(page.Rows, b)
			return true, nil
		})
	})
}

// pageOf reads one page of a population of total rows: read appends the rows from offset
// up to end (offset+limit, bounded by MaxProjectionRows) to page, and may end early when a
// row does not fit. An offset at or past that bound (but the first) is refused.
func pageOf(total, offset, limit int64, read func(end int64, page *providers.Page) error) (*providers.Page, error) {
	reach := min(total, int64(providers.MaxProjectionRows))
	if offset > 0 && offset >= reach {
		return nil, &providers.OffsetError{Offset: offset, Available: reach}
	}
	end := min(offset+limit, reach)
	page := &providers.Page{}
	if end > offset {
		if err := read(end, page); err != nil {
			return nil, err
		}
	}
	stop := offset + int64(len(page.Rows))
	page.More = stop < reach
	page.Observed = stop
	if page.More {
		page.Observed++
	}
	page.Limited = !page.More && total > int64(providers.MaxProjectionRows)
	return page, nil
}
