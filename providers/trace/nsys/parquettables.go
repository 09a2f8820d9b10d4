package nsys

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/flameox/flameox/providers"
	"github.com/parquet-go/parquet-go"
)

// parquetTableList lists the selected tables of a parquetdir (its top-level files, from
// parquetFiles) with their row counts.
func parquetTableList(in providers.Input, files map[string]int64, pick func(string) bool) ([]Table, error) {
	var names []string
	for n := range files {
		if stem, ok := strings.CutSuffix(n, parquetSuffix); ok && pick(stem) {
			names = append(names, stem)
		}
	}
	slices.Sort(names)
	tables := make([]Table, 0, len(names))
	for _, n := range names {
		t := Table{Name: n, size: files[n+parquetSuffix]}
		err := withParquet(in, n, t.size, func(pf *parquet.File) error {
			t.Rows = pf.NumRows()
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

// readParquetRows reads up to limit rows of one table from its row skip into add; full
// is false when add ended the read.
func readParquetRows(ctx context.Context, pf *parquet.File, name string, skip, limit int64, add func(*TableRow) (bool, error)) (bool, error) {
	cols := flatColumns(pf.Schema())
	names := make([]string, len(cols))
	at := map[int]int{}
	for i, c := range cols {
		names[i], at[c.index] = c.name, i
	}
	vals := make([]any, len(cols))
	tr := TableRow{Table: name, Columns: names, Values: vals}
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
				if ok, err := add(&tr); err != nil || !ok {
					rows.Close()
					return false, err
				}
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
