package trace

import (
	"context"
	"database/sql"
	"encoding/json"

	"github.com/flameox/flameox/providers"
)

// sqlPages pages an ordered query over an export with LIMIT and OFFSET: each page reads
// only its rows. query is the statement without its LIMIT ? OFFSET ? tail; scan reads
// one row.
type sqlPages struct {
	src   nsysData
	total int64
	query func(ctx context.Context, d *nsysDB) (string, error)
	scan  func(rows *sql.Rows) (any, error)
	// done removes a converted report's scratch export once the page is read.
	done func()
}

func (r *sqlPages) Page(ctx context.Context, offset, limit int64, fits func(json.RawMessage) bool) (*providers.Page, error) {
	return pageExport(ctx, r.src, r.done, r.total, offset, limit, func(d *nsysDB, end int64, page *providers.Page) error {
		q, err := r.query(ctx, d)
		if err != nil {
			return err
		}
		rows, err := d.sql.QueryContext(ctx, q+` LIMIT ? OFFSET ?`, end-offset, offset)
		if err != nil {
			return d.sqlErr(ctx, err)
		}
		defer rows.Close()
		for rows.Next() {
			row, err := r.scan(rows)
			if err != nil {
				return d.sqlErr(ctx, err)
			}
			b, err := providers.EncodeRow(row)
			if err != nil {
				return err
			}
			if fits != nil && !fits(b) {
				break
			}
			page.Rows = append(page.Rows, b)
		}
		if err := rows.Err(); err != nil {
			return d.sqlErr(ctx, err)
		}
		return nil
	})
}

// pageExport reads one page of an export's population of total rows (pageOf) through one
// open of the export; done removes a converted export's scratch once the page is read.
func pageExport(ctx context.Context, src nsysData, done func(), total, offset, limit int64,
	read func(d *nsysDB, end int64, page *providers.Page) error) (*providers.Page, error) {
	defer done()
	return pageOf(total, offset, limit, func(end int64, page *providers.Page) error {
		return src.withNsys(ctx, func(d *nsysDB) error { return read(d, end, page) })
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
