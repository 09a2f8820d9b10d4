package trace

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/internal/sqlitefile"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/deprecated"
	"github.com/parquet-go/parquet-go/format"
)

// An nsys-parquet source is the directory nsys export --type parquetdir writes: one
// <TABLE>.parquet per table of the SQLite export (decision 0025, item 14). The tables the
// SQL readers use are loaded into a scratch SQLite database, which the nsys-sqlite code
// then reads unchanged.

const parquetSuffix = ".parquet"

// isNsysParquetNames is the directory detection: the top-level names hold StringIds and
// one of the tables that mark an Nsight Systems export (nsysTables), as Parquet files.
func isNsysParquetNames(names []string) bool {
	have := map[string]bool{}
	for _, n := range names {
		if stem, ok := strings.CutSuffix(n, parquetSuffix); ok {
			have[stem] = true
		}
	}
	if !have["StringIds"] {
		return false
	}
	for _, t := range nsysTables {
		if have[t] {
			return true
		}
	}
	return false
}

// nsysParquetTables are the tables the nsys-sqlite readers query (besides the marker
// tables of nsysTables): the others are not loaded.
var nsysParquetTables = []string{"StringIds", "CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY",
	"CUPTI_ACTIVITY_KIND_MEMSET", "CUPTI_ACTIVITY_KIND_RUNTIME", "NVTX_EVENTS", "OSRT_API", "ENUM_CUDA_MEMCPY_OPER",
	"ThreadNames", "PROCESSES", "TARGET_INFO_SESSION_START_TIME"}

// nsysParquetIndexes index the columns the readers join on (the SQLite export's id
// primary keys).
var nsysParquetIndexes = map[string]string{"StringIds": "id", "ENUM_CUDA_MEMCPY_OPER": "id"}

// A parquetdir load is bounded by the bytes it decodes (issue 40, decision 0050):
// compressed pages, and dictionary pages whose one value every row repeats, expand far
// beyond the input's size (a 4.4 KB directory decoded to 37 GiB). The bound is
// parquetExpansion times the bytes of the Parquet files the load reads, at most
// maxParquetLoadBytes. Two measures count against it, each on its own: the pages'
// declared decompressed sizes (the footer's column chunks, checked before a table is
// read, since parquet-go allocates them) and the values written to the scratch database
// (8 bytes a number, strings and blobs by length, checked row by row).
const (
	parquetExpansion    = 64
	maxParquetLoadBytes = 4 << 30
)

// parquetLoadBound is the decoded-bytes bound of a load that reads files of inputBytes.
func parquetLoadBound(inputBytes int64) int64 {
	if inputBytes >= maxParquetLoadBytes/parquetExpansion {
		return maxParquetLoadBytes
	}
	return max(inputBytes, 0) * parquetExpansion
}

// nsysParquetProvider identifies the parquetdir reader (catalog §1.3).
func nsysParquetProvider() gen.Provider {
	return gen.Provider{ID: "nsight-systems-parquetdir", Version: "parquetdir-v1"}
}

// nsysParquetExport is the scratch database a parquetdir is loaded into.
const nsysParquetExport = "parquetdir.sqlite"

// parquetFiles are the parquetdir's top-level files by name, with their sizes, once the
// directory passes the export check.
func parquetFiles(in providers.Input) (map[string]int64, error) {
	if in.Members == nil {
		return nil, &providers.UnsupportedError{Source: in.Index,
			Message: fmt.Sprintf("source %d is not a directory; nsys-parquet is the directory nsys export --type parquetdir writes", in.Index)}
	}
	files := map[string]int64{}
	var names []string
	for _, m := range in.Members {
		if !strings.Contains(m.Rel, "/") {
			names = append(names, m.Rel)
			files[m.Rel] = m.Size
		}
	}
	if !isNsysParquetNames(names) {
		return nil, &providers.UnsupportedError{Source: in.Index,
			Message: fmt.Sprintf("source %d is a directory but not an Nsight Systems parquetdir export (no StringIds.parquet with CUPTI, NVTX, OSRT or export metadata tables)", in.Index)}
	}
	return files, nil
}

// loadNsysParquet loads the tables the SQL readers use from the parquetdir into a scratch
// SQLite database and returns it as an nsys-sqlite input and the function that removes it.
func loadNsysParquet(ctx context.Context, in providers.Input) (providers.Input, func(), error) {
	files, err := parquetFiles(in)
	if err != nil {
		return in, nil, err
	}
	dir, err := os.MkdirTemp("", "flameox-nsys-parquet-")
	if err != nil {
		return in, nil, &providers.DecodeError{Source: in.Index, Message: "the Nsight Systems parquetdir could not be loaded: no scratch directory", Err: err}
	}
	var once sync.Once
	done := func() { once.Do(func() { os.RemoveAll(dir) }) }
	out := filepath.Join(dir, nsysParquetExport)
	if err := writeNsysParquet(ctx, in, files, out); err != nil {
		done()
		return in, nil, err
	}
	conv := in
	conv.Path, conv.Format, conv.Members = out, gen.FormatNsysSqlite, nil
	return conv, done, nil
}

func writeNsysParquet(ctx context.Context, in providers.Input, files map[string]int64, out string) error {
	db, err := sql.Open("sqlite", "file:"+sqlitefile.URIPath(out))
	if err != nil {
		return &providers.DecodeError{Source: in.Index, Message: "the Nsight Systems parquetdir could not be loaded", Err: err}
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	tables := append(append([]string{}, nsysParquetTables...), nsysTables...)
	var inputBytes int64
	seen := map[string]bool{}
	for _, t := range tables {
		if size, ok := files[t+parquetSuffix]; ok && !seen[t] {
			seen[t] = true
			inputBytes += size
		}
	}
	l := &parquetLoad{ctx: ctx, in: in, db: db, input: inputBytes, bound: parquetLoadBound(inputBytes)}
	for _, p := range []string{"PRAGMA journal_mode = OFF", "PRAGMA synchronous = OFF"} {
		if _, err := db.ExecContext(ctx, p); err != nil {
			return l.sqlErr(err)
		}
	}
	for _, t := range tables {
		size, ok := files[t+parquetSuffix]
		if !ok || l.loaded[t] {
			continue
		}
		if err := l.table(t, filepath.Join(in.Path, t+parquetSuffix), size); err != nil {
			return err
		}
	}
	return nil
}

// parquetLoad is one parquetdir being loaded.
type parquetLoad struct {
	ctx    context.Context
	in     providers.Input
	db     *sql.DB
	input  int64 // bytes of the Parquet files the load reads
	bound  int64 // parquetLoadBound(input)
	bytes  int64 // value bytes written so far
	pages  int64 // declared decompressed page bytes of the tables opened so far
	loaded map[string]bool
}

// limit is the failure of a load past its decoded-bytes bound; what names the measure.
func (l *parquetLoad) limit(what string) error {
	return &providers.LimitError{Source: l.in.Index, Limit: l.bound, Unit: "bytes",
		Message: fmt.Sprintf("source %d's Parquet tables decode to more than %d bytes (%s; the bound is %d times the %d bytes of its Parquet files, at most %d): the export expands past what Flameox loads; analyze its SQLite export (nsys export --type sqlite) or a shorter capture",
			l.in.Index, l.bound, what, parquetExpansion, l.input, int64(maxParquetLoadBytes)),
		Details: map[string]any{"reason": "parquet_decoded_bytes", "input_bytes": l.input, "expansion": parquetExpansion,
			"max_decoded_bytes": int64(maxParquetLoadBytes)}}
}

// declared adds the decompressed sizes the footer declares for the file's column chunks.
func (l *parquetLoad) declared(pf *parquet.File) error {
	for _, rg := range pf.Metadata().RowGroups {
		for _, c := range rg.Columns {
			if n := c.MetaData.TotalUncompressedSize; n > 0 {
				l.pages += n
			} else if n < 0 {
				l.pages = math.MaxInt64
			}
			if l.pages > l.bound || l.pages < 0 {
				return l.limit("its pages declare that many decompressed bytes")
			}
		}
	}
	return nil
}

func (l *parquetLoad) sqlErr(err error) error {
	if ctxErr := l.ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	return &providers.DecodeError{Source: l.in.Index, Err: err,
		Message: fmt.Sprintf("source %d could not be loaded: the scratch SQLite database refused a write", l.in.Index)}
}

func (l *parquetLoad) decodeErr(table string, err error) error {
	if ctxErr := l.ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	return &providers.DecodeError{Source: l.in.Index, Err: err,
		Message: fmt.Sprintf("source %d: %s%s is not a readable Parquet file", l.in.Index, table, parquetSuffix)}
}

// sqlColumn is one top-level, non-repeated Parquet leaf column and its SQLite form.
type sqlColumn struct {
	name     string
	index    int
	affinity string
	value    func(parquet.Value) any
}

// flatColumns are a Parquet schema's top-level, non-repeated leaf columns in schema order:
// nested and repeated columns have no SQLite column.
func flatColumns(schema *parquet.Schema) []sqlColumn {
	var cols []sqlColumn
	for i, path := range schema.Columns() {
		leaf, ok := schema.Lookup(path...)
		if len(path) != 1 || !ok || leaf.MaxRepetitionLevel > 0 {
			continue
		}
		aff, val := columnOf(leaf.Node.Type())
		cols = append(cols, sqlColumn{name: path[0], index: i, affinity: aff, value: val})
	}
	return cols
}

// columnOf maps a Parquet leaf type to the SQLite affinity nsys's SQLite export declares
// for it and the value SQLite stores: integers (signed, unsigned, boolean) INTEGER,
// floating point REAL, UTF-8 (string, enum, JSON) TEXT, other bytes BLOB; null stays
// null. An unsigned 64-bit value above 2^63-1 becomes REAL, as SQLite stores an integer
// literal out of its range.
func columnOf(t parquet.Type) (string, func(parquet.Value) any) {
	unsigned := false
	if lt := t.LogicalType(); lt != nil {
		if it, ok := lt.Value.(*format.IntType); ok {
			unsigned = !it.IsSigned
		}
	}
	switch t.Kind() {
	case parquet.Boolean:
		return "INTEGER", func(v parquet.Value) any {
			if v.Boolean() {
				return int64(1)
			}
			return int64(0)
		}
	case parquet.Int32:
		if unsigned {
			return "INTEGER", func(v parquet.Value) any { return int64(v.Uint32()) }
		}
		return "INTEGER", func(v parquet.Value) any { return int64(v.Int32()) }
	case parquet.Int64:
		if unsigned {
			return "INTEGER", func(v parquet.Value) any {
				if u := v.Uint64(); u > math.MaxInt64 {
					return float64(u)
				}
				return int64(v.Uint64())
			}
		}
		return "INTEGER", func(v parquet.Value) any { return v.Int64() }
	case parquet.Float:
		return "REAL", func(v parquet.Value) any { return float64(v.Float()) }
	case parquet.Double:
		return "REAL", func(v parquet.Value) any { return v.Double() }
	}
	if isUTF8(t) {
		return "TEXT", func(v parquet.Value) any { return string(v.ByteArray()) }
	}
	return "BLOB", func(v parquet.Value) any { return append([]byte{}, v.ByteArray()...) }
}

func isUTF8(t parquet.Type) bool {
	if lt := t.LogicalType(); lt != nil {
		switch lt.Value.(type) {
		case *format.StringType, *format.EnumType, *format.JsonType:
			return true
		}
	}
	if ct := t.ConvertedType(); ct != nil {
		return *ct == deprecated.UTF8 || *ct == deprecated.Enum || *ct == deprecated.Json
	}
	return false
}

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// table loads table's Parquet file row by row, in file order: a table without an integer
// primary key thus keeps the export's rowids 1..n.
func (l *parquetLoad) table(table, path string, size int64) (err error) {
	f, err := os.Open(path)
	if err != nil {
		return &providers.InputError{Source: l.in.Index, Message: fmt.Sprintf("source %d: %s%s could not be read", l.in.Index, table, parquetSuffix), Err: err}
	}
	defer f.Close()
	defer func() {
		if p := recover(); p != nil { // parquet-go panics on some malformed files
			err = l.decodeErr(table, fmt.Errorf("parquet: %v", p))
		}
	}()
	pf, err := parquet.OpenFile(f, size)
	if err != nil {
		return l.decodeErr(table, err)
	}
	if err := l.declared(pf); err != nil {
		return err
	}
	cols := flatColumns(pf.Schema())
	if len(cols) == 0 {
		return l.decodeErr(table, errors.New("no flat columns"))
	}
	defs := make([]string, len(cols))
	marks := make([]string, len(cols))
	at := map[int]int{}
	for i, c := range cols {
		defs[i], marks[i], at[c.index] = quoteIdent(c.name)+" "+c.affinity, "?", i
	}
	if _, err := l.db.ExecContext(l.ctx, "CREATE TABLE "+quoteIdent(table)+" ("+strings.Join(defs, ", ")+")"); err != nil {
		return l.sqlErr(err)
	}
	if l.loaded == nil {
		l.loaded = map[string]bool{}
	}
	l.loaded[table] = true
	tx, err := l.db.BeginTx(l.ctx, nil)
	if err != nil {
		return l.sqlErr(err)
	}
	defer tx.Rollback()
	ins, err := tx.PrepareContext(l.ctx, "INSERT INTO "+quoteIdent(table)+" VALUES ("+strings.Join(marks, ", ")+")")
	if err != nil {
		return l.sqlErr(err)
	}
	defer ins.Close()
	args := make([]any, len(cols))
	buf := make([]parquet.Row, 256)
	for _, rg := range pf.RowGroups() {
		rows := rg.Rows()
		for {
			if err := l.ctx.Err(); err != nil {
				rows.Close()
				return err
			}
			n, rerr := rows.ReadRows(buf)
			for _, row := range buf[:n] {
				clear(args)
				for _, v := range row {
					i, ok := at[v.Column()]
					if !ok || v.IsNull() {
						continue
					}
					args[i] = cols[i].value(v)
					switch x := args[i].(type) {
					case string:
						l.bytes += int64(len(x))
					case []byte:
						l.bytes += int64(len(x))
					default:
						l.bytes += 8
					}
				}
				if l.bytes > l.bound {
					rows.Close()
					return l.limit("their values")
				}
				if _, err := ins.ExecContext(l.ctx, args...); err != nil {
					rows.Close()
					return l.sqlErr(err)
				}
			}
			if errors.Is(rerr, io.EOF) {
				break
			}
			if rerr != nil {
				rows.Close()
				return l.decodeErr(table, rerr)
			}
		}
		rows.Close()
	}
	if c, ok := nsysParquetIndexes[table]; ok {
		for _, col := range cols {
			if col.name == c {
				if _, err := tx.ExecContext(l.ctx, "CREATE INDEX "+quoteIdent(table+"_"+c)+" ON "+quoteIdent(table)+" ("+quoteIdent(c)+")"); err != nil {
					return l.sqlErr(err)
				}
			}
		}
	}
	if err := tx.Commit(); err != nil {
		return l.sqlErr(err)
	}
	return nil
}
