package nsys

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/internal/parquet"
)

// An nsys-parquet source is the directory nsys export --type parquetdir writes: one
// <TABLE>.parquet per table of the SQLite export (decision 0025, item 14). The readers
// read the columns they use from the Parquet files themselves and do the SQL readers'
// joins in Go (joins.go, decision 0057): no SQLite database is made.

const parquetSuffix = ".parquet"

// IsParquetDir is the directory detection: the top-level names hold StringIds and
// one of the tables that mark an Nsight Systems export (markerTables), as Parquet files.
func IsParquetDir(names []string) bool {
	have := map[string]bool{}
	for _, n := range names {
		if stem, ok := strings.CutSuffix(n, parquetSuffix); ok {
			have[stem] = true
		}
	}
	if !have["StringIds"] {
		return false
	}
	for _, t := range markerTables {
		if have[t] {
			return true
		}
	}
	return false
}

// parquetTables are the tables the Nsight Systems readers use besides the marker
// tables of markerTables; the others are never read (but by view "tables").
var parquetTables = []string{"StringIds", "CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY",
	"CUPTI_ACTIVITY_KIND_MEMSET", "CUPTI_ACTIVITY_KIND_RUNTIME", "NVTX_EVENTS", "OSRT_API", "ENUM_CUDA_MEMCPY_OPER",
	"ThreadNames", "PROCESSES", "TARGET_INFO_SESSION_START_TIME"}

// TablesRead are the tables the readers read besides view "tables", which reads any:
// parquetTables, then the marker tables.
func TablesRead() []string {
	return append(append([]string{}, parquetTables...), markerTables...)
}

// A read of a parquetdir is bounded by the bytes it decodes (issue 40, decisions 0050 and
// 0057): compressed pages, and dictionary pages whose one value every row repeats, expand
// far beyond the input's size (a 4.4 KB directory decoded to 37 GiB). The bound is
// parquetExpansion times the bytes of the Parquet files of the tables the readers use
// (parquetTables and markerTables), at most maxParquetLoadBytes, and applies to each
// read: one analysis's figures, one page. Two measures count against it, each on its
// own: the pages' declared decompressed sizes (the footer's column chunks of the columns
// read, checked before a table is read; the reader holds each page to its chunk's
// declared size before allocating it) and the values read (8 bytes a number, strings by
// length, checked batch by batch).
const (
	parquetExpansion    = 64
	maxParquetLoadBytes = 4 << 30
)

// parquetLoadBound is the decoded-bytes bound of a read of files of inputBytes.
func parquetLoadBound(inputBytes int64) int64 {
	if inputBytes >= maxParquetLoadBytes/parquetExpansion {
		return maxParquetLoadBytes
	}
	return max(inputBytes, 0) * parquetExpansion
}

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
	if !IsParquetDir(names) {
		return nil, &providers.UnsupportedError{Source: in.Index,
			Message: fmt.Sprintf("source %d is a directory but not an Nsight Systems parquetdir export (no StringIds.parquet with CUPTI, NVTX, OSRT or export metadata tables)", in.Index)}
	}
	return files, nil
}

// CheckParquetDir is the export check of a declared nsys-parquet source: a directory
// whose top-level names are a parquetdir's (IsParquetDir); any other is an
// UnsupportedError.
func CheckParquetDir(in providers.Input) error {
	_, err := parquetFiles(in)
	return err
}

// files, the decoded-bytes bound, and what the read has decoded so far.
type parquetRead struct {
	ctx   context.Context
	in    providers.Input
	files map[string]int64
	input int64 // bytes of the Parquet files of the tables the readers use
	bound int64 // parquetLoadBound(input)
	bytes int64 // value bytes read so far
	pages int64 // declared decompressed bytes of the column chunks opened so far
}

// openParquet starts a read of in.
func openParquet(ctx context.Context, in providers.Input) (*parquetRead, error) {
	files, err := parquetFiles(in)
	if err != nil {
		return nil, err
	}
	p := &parquetRead{ctx: ctx, in: in, files: files}
	seen := map[string]bool{}
	for _, t := range append(append([]string{}, parquetTables...), markerTables...) {
		if size, ok := files[t+parquetSuffix]; ok && !seen[t] {
			seen[t] = true
			p.input += size
		}
	}
	p.bound = parquetLoadBound(p.input)
	return p, nil
}

// has reports whether the parquetdir holds table.
func (p *parquetRead) has(table string) bool {
	_, ok := p.files[table+parquetSuffix]
	return ok
}

// limit is the failure of a read past its decoded-bytes bound; what names the measure.
func (p *parquetRead) limit(what string) error { return parquetLimit(p.in.Index, p.bound, p.input, what) }

// parquetLimit is the failure of a read of source's Parquet files of input bytes past
// its decoded-bytes bound; what names the measure.
func parquetLimit(source int, bound, input int64, what string) error {
	return &providers.LimitError{Source: source, Limit: bound, Unit: "bytes",
		Message: fmt.Sprintf("source %d's Parquet tables decode to more than %d bytes (%s; the bound is %d times the %d bytes of its Parquet files, at most %d): the export expands past what Flameox reads; analyze its SQLite export (nsys export --type sqlite) or a shorter capture",
			source, bound, what, parquetExpansion, input, int64(maxParquetLoadBytes)),
		Details: map[string]any{"reason": "parquet_decoded_bytes", "input_bytes": input, "expansion": parquetExpansion,
			"max_decoded_bytes": int64(maxParquetLoadBytes)}}
}

// decodeErr is a table that the Parquet reader cannot read: never the reader's text.
func (p *parquetRead) decodeErr(table string, err error) error {
	if ctxErr := p.ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	return &providers.DecodeError{Source: p.in.Index, Err: err,
		Message: fmt.Sprintf("source %d: %s%s is not a readable Parquet file", p.in.Index, table, parquetSuffix)}
}

// schemaErr is a table without a column the reader needs, or with one of another type.
func (p *parquetRead) schemaErr(table, column, problem string) error {
	return &providers.DecodeError{Source: p.in.Index,
		Message: fmt.Sprintf("source %d: %s%s %s column %s that the Nsight Systems reader needs (table schemas vary by Nsight Systems version; nsys writes integers and strings)",
			p.in.Index, table, parquetSuffix, problem, column)}
}

// pqColumn is one column a read takes from a table: its name, matched as SQLite matches
// a column name (ASCII case-insensitively, the first of the file's top-level flat
// columns), and whether the reader takes its values as text.
type pqColumn struct {
	name string
	text bool
}

func intCol(name string) pqColumn  { return pqColumn{name: name} }
func textCol(name string) pqColumn { return pqColumn{name: name, text: true} }

// pqValue is one value read: null, an integer (n), or text (b, valid until the visit
// returns; an integer read as text is its decimal form, as SQLite renders it).
type pqValue struct {
	null bool
	n    int64
	b    []byte
}

// num is the value of an integer column.
func (v *pqValue) num() OptInt {
	if v.null {
		return OptInt{}
	}
	return some(v.n)
}

// str is a copy of the value of a text column.
func (v *pqValue) str() OptStr {
	if v.null {
		return OptStr{}
	}
	return OptStr{s: string(v.b), ok: true}
}

// pqKind is how a leaf column's values are read.
type pqKind uint8

const (
	pqBoolean pqKind = iota
	pqInt32
	pqUint32
	pqInt64
	pqUint64
	pqBytes
	pqOther
)

// pqKindOf is the kind of a leaf column's type: integers signed or unsigned as their
// logical type says, booleans 0 and 1, byte arrays (strings, enums, JSON, bytes) text.
// Floating point and INT96 columns are pqOther, which no reader takes.
func pqKindOf(n *parquet.Node) pqKind {
	unsigned := n.IsUnsigned()
	switch n.Type {
	case parquet.Boolean:
		return pqBoolean
	case parquet.Int32:
		if unsigned {
			return pqUint32
		}
		return pqInt32
	case parquet.Int64:
		if unsigned {
			return pqUint64
		}
		return pqInt64
	case parquet.ByteArray, parquet.FixedLenByteArray:
		return pqBytes
	}
	return pqOther
}

// typeName names a leaf's type in a message: its physical type, or the text logical
// type of a byte array.
func typeName(n *parquet.Node) string {
	switch {
	case n.Logical.Kind == parquet.String || n.Converted == parquet.UTF8:
		return "STRING"
	case n.Logical.Kind == parquet.Enum || n.Converted == parquet.EnumConverted:
		return "ENUM"
	case n.Logical.Kind == parquet.JSON || n.Converted == parquet.JSONConverted:
		return "JSON"
	}
	return n.Type.String()
}

// errStop ends a scan early without failing it.
var errStop = errors.New("stop")

// pqBatch is the rows a scan decodes at a time.
const pqBatch = 512

// pqReader reads one column of a row group a batch at a time.
type pqReader struct {
	col   pqColumn
	kind  pqKind
	leaf  int
	r     *parquet.ColumnReader
	buf   []parquet.Value
	vals  []pqValue
	arena []byte
	ends  []int
}

// scan reads cols of table's rows in file order and calls visit with each row's
// ordinal (its rowid - 1) and values, which it reuses once visit returns; it returns the
// rows the table holds. visit may end the scan early with errStop (the count is then of
// no use). A table the parquetdir lacks has no rows.
// Each column is read on its own (a column chunk reader each, in step, a batch of rows
// at a time), so that columns the reader does not take are never decoded; the
// column chunks' declared sizes and the values count against the read's bound.
func (p *parquetRead) scan(table string, cols []pqColumn, visit func(row int64, vals []pqValue) error) (rows int64, err error) {
	size, ok := p.files[table+parquetSuffix]
	if !ok {
		return 0, nil
	}
	f, err := os.Open(filepath.Join(p.in.Path, table+parquetSuffix))
	if err != nil {
		return 0, &providers.InputError{Source: p.in.Index, Message: fmt.Sprintf("source %d: %s%s could not be read", p.in.Index, table, parquetSuffix), Err: err}
	}
	defer f.Close()
	pf, err := parquet.Open(f, size)
	if err != nil {
		return 0, p.decodeErr(table, err)
	}
	flat := flatColumns(pf)
	rs := make([]*pqReader, len(cols))
	index := make([]int, len(cols))
	for i, c := range cols {
		at := slices.IndexFunc(flat, func(f sqlColumn) bool { return strings.EqualFold(f.name, c.name) })
		if at < 0 {
			return 0, p.schemaErr(table, c.name, "has no")
		}
		leaf := pf.Columns[flat[at].index].Node
		kind := pqKindOf(leaf)
		if kind == pqOther || (kind == pqBytes && !c.text) {
			return 0, p.schemaErr(table, c.name, "has a "+typeName(leaf)+" in place of the")
		}
		index[i] = flat[at].index
		rs[i] = &pqReader{col: c, kind: kind, leaf: flat[at].index, buf: make([]parquet.Value, pqBatch), vals: make([]pqValue, pqBatch)}
	}
	if err := p.declared(pf, index); err != nil {
		return 0, err
	}
	row := make([]pqValue, len(cols))
	for g, rg := range pf.RowGroups {
		n := rg.NumRows
		for _, r := range rs {
			if r.r == nil {
				r.r, err = pf.Column(g, r.leaf)
			} else {
				err = r.r.Reset(g) // the readers keep their page buffers from group to group
			}
			if err != nil {
				return 0, p.decodeErr(table, err)
			}
		}
		err := func() error {
			for done := int64(0); done < n; {
				if err := p.ctx.Err(); err != nil {
					return err
				}
				k := int(min(int64(pqBatch), n-done))
				for _, r := range rs {
					if err := p.read(table, r, k); err != nil {
						return err
					}
				}
				if p.bytes > p.bound || p.bytes < 0 {
					return p.limit("their values")
				}
				for j := range k {
					for i, r := range rs {
						row[i] = r.vals[j]
					}
					if err := visit(rows+done+int64(j), row); err != nil {
						return err
					}
				}
				done += int64(k)
			}
			return nil
		}()
		if errors.Is(err, errStop) {
			return rows, nil
		}
		if err != nil {
			return 0, err
		}
		rows += n
	}
	return rows, nil
}

// declared adds the decompressed sizes the footer declares for the column chunks of the
// columns at index, and fails past the bound.
func (p *parquetRead) declared(pf *parquet.File, index []int) error {
	for _, rg := range pf.RowGroups {
		for _, i := range index {
			if n := rg.Columns[i].TotalUncompressedSize; n > 0 {
				p.pages += n
			} else if n < 0 {
				p.pages = math.MaxInt64
			}
			if p.pages > p.bound || p.pages < 0 {
				return p.limit("its pages declare that many decompressed bytes")
			}
		}
	}
	return nil
}

// read decodes the column's next k values into r.vals, counting them against the
// bound: 8 bytes a number, text by length. Text is copied into r.arena as it is read,
// since the reader reuses a page's buffers once it moves past the page.
func (p *parquetRead) read(table string, r *pqReader, k int) error {
	r.arena, r.ends = r.arena[:0], r.ends[:0]
	for got := 0; got < k; {
		n, err := r.r.Read(r.buf[got:k])
		for i := got; i < got+n; i++ {
			v, o := &r.buf[i], &r.vals[i]
			*o = pqValue{}
			if v.Null {
				o.null = true
				r.ends = append(r.ends, len(r.arena))
				continue
			}
			switch r.kind {
			case pqBoolean:
				if v.Bool() {
					o.n = 1
				}
			case pqInt32:
				o.n = int64(v.Int32())
			case pqUint32:
				o.n = int64(v.Uint32())
			case pqInt64:
				o.n = v.Int64()
			case pqUint64:
				u := v.Uint64()
				if u > math.MaxInt64 {
					return p.schemaErr(table, r.col.name, "holds an unsigned integer above 2^63-1 in the")
				}
				o.n = int64(u)
			case pqBytes:
				b := v.Bytes
				r.arena = append(r.arena, b...)
				p.bytes += int64(len(b))
			}
			if r.kind != pqBytes {
				p.bytes += 8
				if r.col.text {
					r.arena = strconv.AppendInt(r.arena, o.n, 10)
				}
			}
			r.ends = append(r.ends, len(r.arena))
		}
		got += n
		if got == k {
			break
		}
		if err == nil && n == 0 {
			err = io.ErrNoProgress
		}
		if errors.Is(err, io.EOF) {
			return p.decodeErr(table, errors.New("a column chunk holds fewer values than its row group's rows"))
		}
		if err != nil {
			return p.decodeErr(table, err)
		}
	}
	if r.col.text {
		// Slices of the arena, taken once it no longer grows.
		start := 0
		for i := range k {
			end := r.ends[i]
			if !r.vals[i].null {
				r.vals[i].b = r.arena[start:end:end]
			}
			start = end
		}
	}
	return nil
}

// sqlColumn is one top-level, non-repeated Parquet leaf column and the form the SQLite
// export gives its values (view "tables").
type sqlColumn struct {
	name     string
	index    int
	affinity string
	value    func(*parquet.Value) any
}

// flatColumns are a Parquet schema's top-level, non-repeated leaf columns in schema order:
// nested and repeated columns have no column in the SQLite export.
func flatColumns(f *parquet.File) []sqlColumn {
	var cols []sqlColumn
	for i, c := range f.Columns {
		if len(c.Path) != 1 || c.MaxRep > 0 {
			continue
		}
		aff, val := columnOf(c.Node)
		cols = append(cols, sqlColumn{name: c.Path[0], index: i, affinity: aff, value: val})
	}
	return cols
}

// columnOf maps a Parquet leaf type to the SQLite affinity nsys's SQLite export declares
// for it and the value SQLite stores: integers (signed, unsigned, boolean) INTEGER,
// floating point REAL, UTF-8 (string, enum, JSON) TEXT, other bytes BLOB; null stays
// null. An unsigned 64-bit value above 2^63-1 becomes REAL, as SQLite stores an integer
// literal out of its range.
func columnOf(n *parquet.Node) (string, func(*parquet.Value) any) {
	unsigned := n.IsUnsigned()
	switch n.Type {
	case parquet.Boolean:
		return "INTEGER", func(v *parquet.Value) any {
			if v.Bool() {
				return int64(1)
			}
			return int64(0)
		}
	case parquet.Int32:
		if unsigned {
			return "INTEGER", func(v *parquet.Value) any { return int64(v.Uint32()) }
		}
		return "INTEGER", func(v *parquet.Value) any { return int64(v.Int32()) }
	case parquet.Int64:
		if unsigned {
			return "INTEGER", func(v *parquet.Value) any {
				if u := v.Uint64(); u > math.MaxInt64 {
					return float64(u)
				}
				return int64(v.Uint64())
			}
		}
		return "INTEGER", func(v *parquet.Value) any { return v.Int64() }
	case parquet.Float:
		return "REAL", func(v *parquet.Value) any { return float64(v.Float32()) }
	case parquet.Double:
		return "REAL", func(v *parquet.Value) any { return v.Float64() }
	}
	if n.IsUTF8() {
		return "TEXT", func(v *parquet.Value) any { return string(v.Bytes) }
	}
	return "BLOB", func(v *parquet.Value) any { return append([]byte{}, v.Bytes...) }
}
