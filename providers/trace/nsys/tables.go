package nsys

import (
	"context"
	"errors"
	"fmt"

	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/internal/parquet"
)

// View "tables" reads an export's tables as Nsight Systems wrote them (decision 0032):
// an nsys-sqlite export's in SQL, a parquetdir's from its Parquet files directly (the
// tables are the top-level <TABLE>.parquet files, counted from their footers, and a read
// seeks to its first row in the files it reaches), its values in the forms nsys's SQLite
// export stores (columnOf), so that a parquetdir's rows equal its SQLite export's.

// Table is one table of an export: its name, its row count, and the expression that
// orders its rows (empty for a WITHOUT ROWID table, which a scan reads in key order) or
// its Parquet file's size.
type Table struct {
	Name  string
	Rows  int64
	order string
	size  int64
}

// TableRow is one row of a table: the table's name, its columns (a parquetdir's
// top-level, non-repeated columns) and their values as the SQLite export stores them
// (nil for null). It is valid until the function handed it returns.
type TableRow struct {
	Table   string
	Columns []string
	Values  []any
}

// Tables lists the export's tables that pick selects, in name order, with their row
// counts.
func (x Export) Tables(ctx context.Context, pick func(string) bool) ([]Table, error) {
	if x.Parquet {
		files, err := parquetFiles(x.In)
		if err != nil {
			return nil, err
		}
		return parquetTableList(x.In, files, pick)
	}
	return withDBValue(ctx, x, func(d *db) ([]Table, error) { return d.listTables(ctx, pick) })
}

// TableRows reads the rows from offset up to end of tables laid end to end (each
// table's rows in table order: rowid, or a Parquet file's order) into add, in one read
// of the export; add ends the read early with false (the row did not fit its page).
func (x Export) TableRows(ctx context.Context, tables []Table, offset, end int64, add func(*TableRow) (bool, error)) error {
	var n int64
	counted := func(r *TableRow) (bool, error) {
		ok, err := add(r)
		if ok && err == nil {
			n++
		}
		return ok, err
	}
	stop := func() int64 { return offset + n }
	if x.Parquet {
		// The pages each table's reader decompresses are bounded as an analysis's are:
		// parquetExpansion times the bytes of the tables' Parquet files, and the reads
		// stop with ctx.
		var input int64
		for _, t := range tables {
			input += t.size
		}
		bound := parquetLoadBound(input)
		return readTables(tables, offset, end, stop,
			func(t Table, skip, limit int64) (full bool, err error) {
				err = withParquet(x.In, t.Name, t.size, func(pf *parquet.File) error {
					pf.Guard(ctx, bound)
					full, err = readParquetRows(ctx, pf, t.Name, skip, limit, counted)
					if _, ok := errors.AsType[*parquet.LimitError](err); ok {
						return parquetLimit(x.In.Index, bound, input, `the pages view "tables" reads decompress past it`)
					}
					return err
				})
				return full, err
			},
			func(t Table) error {
				return &providers.DecodeError{Source: x.In.Index,
					Message: fmt.Sprintf("source %d: %s%s holds fewer rows than its footer counts", x.In.Index, t.Name, parquetSuffix)}
			})
	}
	return x.withDB(ctx, func(d *db) error {
		return readTables(tables, offset, end, stop,
			func(t Table, skip, limit int64) (bool, error) { return d.readRows(ctx, t, skip, limit, counted) },
			func(t Table) error {
				return &providers.DecodeError{Source: x.In.Index,
					Message: fmt.Sprintf("source %d: table %s holds fewer rows than it counted", x.In.Index, t.Name)}
			})
	})
}

// readTables reads the rows from offset up to end of tables laid end to end: read reads
// up to limit rows of t from its row skip and says whether every one was taken, stop is
// the population index past the last row taken, and a table that yields fewer rows than
// it counted is short's error.
func readTables(tables []Table, offset, end int64, stop func() int64,
	read func(t Table, skip, limit int64) (bool, error), short func(t Table) error) error {
	at := offset
	var first int64 // the population index of the current table's first row
	for _, t := range tables {
		if at >= end {
			break
		}
		if first+t.Rows <= at {
			first += t.Rows
			continue
		}
		full, err := read(t, at-first, end-at)
		at = stop()
		if err != nil || !full {
			return err
		}
		first += t.Rows
		if at < min(first, end) {
			return short(t)
		}
	}
	return nil
}
