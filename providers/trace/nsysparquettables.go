package trace

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/parquet-go/parquet-go"

	"github.com/flameox/flameox/providers"
)

// View "tables" of a parquetdir reads the Parquet files directly (decision 0032): the
// tables are the top-level <TABLE>.parquet files, counted from their footers, and a page
// seeks to its first row in the files it reaches. Values take the forms nsys's SQLite
// export stores (columnOf), so a page equals the SQLite export's.

// parquetTableList lists the selected tables of a parquetdir (its top-level files, from
// parquetFiles) with their row counts.
func parquetTableList(in providers.Input, files map[string]int64, pick func(string) bool) ([]table, error) {
	var names []string
	for n := range files {
		if stem, ok := strings.CutSuffix(n, parquetSuffix); ok && pick(stem) {
			names = append(names, stem)
		}
	}
	slices.Sort(names)
	tables := make([]table, 0, len(names))
	for _, n := range names {
		t := table{name: n}
		err := withParquet(in, n, files[n+parquetSuffix], func(pf *parquet.File) error {
			t.rows = pf.NumRows()
			return nil
		})
		if err != nil {
			return nil, err
		}
		tables = append(tables, t)
	}
	return tables, nil
}

// withParquet opens one table's file for f; a file parquet-go cannot read (its error or
// panic) is a decode failure naming the table, never the library's text.
func withParquet(in providers.Input, name string, size int64, f func(pf *parquet.File) error) (err error) {
	fail := func(err error) error {
		return &providers.DecodeError{Source: in.Index, Err: err,
			Message: fmt.Sprintf("source %d: %s%s is not a readable Parquet file", in.Index, name, parquetSuffix)}
	}
	file, err := os.Open(filepath.Join(in.Path, name+parquetSuffix))
	if err != nil {
		return &providers.InputError{Source: in.Index, Message: fmt.Sprintf("source %d: %s%s could not be read", in.Index, name, parquetSuffix), Err: err}
	}
	defer file.Close()
	defer func() {
		if p := recover(); p != nil {
			err = fail(fmt.Errorf("parquet: %v", p))
		}
	}()
	pf, err := parquet.OpenFile(file, size)
	if err != nil {
		return fail(err)
	}
	var de *providers.DecodeError
	if err := f(pf); err != nil && !errors.As(err, &de) && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		return fail(err)
	} else if err != nil {
		return err
	}
	return nil
}

// parquetTablePages pages a parquetdir's selected tables in name order, rows in file order.
type parquetTablePages struct {
	in     providers.Input
	files  map[string]int64
	tables []table
	total  int64
}

func (r *parquetTablePages) Page(ctx context.Context, offset, limit int64, fits func(json.RawMessage) bool) (*providers.Page, error) {
	return pageOf(r.total, offset, limit, func(end int64, page *providers.Page) error {
		return readTables(r.tables, offset, end, page,
			func(t table, skip, limit int64) (full bool, err error) {
				err = withParquet(r.in, t.name, r.files[t.name+parquetSuffix], func(pf *parquet.File) error {
					full, err = readParquetRows(ctx, pf, t.name, skip, limit, fits, page)
					return err
				})
				return full, err
			},
			func(t table) error {
				return &providers.DecodeError{Source: r.in.Index,
					Message: fmt.Sprintf("source %d: %s%s holds fewer rows than its footer counts", r.in.Index, t.name, parquetSuffix)}
			})
	})
}

// readParquetRows appends up to limit rows of one table from its row skip; full is false
// when a row did not fit the page.
func readParquetRows(ctx context.Context, pf *parquet.File, name string, skip, limit int64, fits func(json.RawMessage) bool, page *providers.Page) (bool, error) {
	cols := flatColumns(pf.Schema())
	names := make([]string, len(cols))
	at := map[int]int{}
	for i, c := range cols {
		names[i], at[c.index] = c.name, i
	}
	nested := slices.Contains(names, "table")
	vals := make([]any, len(cols))
	buf := make([]parquet.Row, 256)
	for _, rg := range pf.RowGroups() {
		if n := rg.NumRows(); skip >= n {
			skip -= n
			continue
		}
		rows := rg.Rows()
		if skip > 0 {
			if err := rows.SeekToRow(skip); err != nil {
				rows.Close()
				return false, err
			}
			skip = 0
		}
		for limit > 0 {
			if err := ctx.Err(); err != nil {
				rows.Close()
				return false, err
			}
			n, rerr := rows.ReadRows(buf[:min(int64(len(buf)), limit)])
			for _, row := range buf[:n] {
				clear(vals)
				for _, v := range row {
					if i, ok := at[v.Column()]; ok && !v.IsNull() {
						vals[i] = cols[i].value(v)
					}
				}
				b := tableRow(name, names, vals, nested)
				if fits != nil && !fits(b) {
					rows.Close()
					return false, nil
				}
				page.Rows = append(page.Rows, b)
				limit--
			}
			if errors.Is(rerr, io.EOF) {
				break
			}
			if rerr != nil {
				rows.Close()
				return false, rerr
			}
		}
		rows.Close()
		if limit == 0 {
			break
		}
	}
	return true, nil
}
