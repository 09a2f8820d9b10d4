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
	"github.com/flameox/flameox/providers/internal/parquet"
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
			t.Rows = pf.NumRows
			return nil
		})
		if err != nil {
			return nil, err
		}
		tables = append(tables, t)
	}
	return tables, nil
}

// withParquet opens one table's file for f; a file the Parquet reader cannot read is a
// decode failure naming the table, never the reader's text.
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
	pf, err := parquet.Open(file, size)
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
	cols := flatColumns(pf)
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = c.name
	}
	vals := make([]any, len(cols))
	tr := TableRow{Table: name, Columns: names, Values: vals}
	const batch = 256
	conv := make([][]any, len(cols))
	for i := range conv {
		conv[i] = make([]any, batch)
	}
	buf := make([]parquet.Value, batch)
	readers := make([]*parquet.ColumnReader, len(cols))
	for g, rg := range pf.RowGroups {
		if limit == 0 {
			break
		}
		if n := rg.NumRows; skip >= n {
			skip -= n
			continue
		}
		rows := min(rg.NumRows-skip, limit)
		for i, c := range cols {
			var err error
			if readers[i] == nil {
				readers[i], err = pf.Column(g, c.index)
			} else {
				err = readers[i].Reset(g) // the readers keep their page buffers from group to group
			}
			if err != nil {
				return false, err
			}
			if err := readers[i].Skip(skip); err != nil {
				return false, shortChunk(err)
			}
		}
		skip = 0
		for done := int64(0); done < rows; {
			if err := ctx.Err(); err != nil {
				return false, err
			}
			k := int(min(batch, rows-done))
			for i, r := range readers {
				if err := readColumn(r, buf[:k], cols[i].value, conv[i][:k]); err != nil {
					return false, err
				}
			}
			for j := range k {
				for i := range cols {
					vals[i] = conv[i][j]
				}
				if ok, err := add(&tr); err != nil || !ok {
					return false, err
				}
				limit--
			}
			done += int64(k)
		}
	}
	return true, nil
}

// readColumn reads the next len(out) values of r, in their SQLite forms (nil for null),
// through buf: a column chunk that ends first is a format error.
func readColumn(r *parquet.ColumnReader, buf []parquet.Value, value func(*parquet.Value) any, out []any) error {
	for got := 0; got < len(out); {
		n, err := r.Read(buf[:len(out)-got])
		for j := range n {
			if v := &buf[j]; v.Null {
				out[got+j] = nil
			} else {
				out[got+j] = value(v)
			}
		}
		got += n
		if err != nil && got < len(out) {
			return shortChunk(err)
		}
	}
	return nil
}

// shortChunk is a column chunk that holds fewer values than its row group's rows.
func shortChunk(err error) error {
	if errors.Is(err, io.EOF) {
		return errors.New("a column chunk holds fewer values than its row group's rows")
	}
	return err
}
