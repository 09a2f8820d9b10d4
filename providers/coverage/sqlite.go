package coverage

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/flameox/flameox/internal/sourcefile"
	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/internal/sqlitefile"
	_ "modernc.org/sqlite" // pure-Go SQLite, driver "sqlite"
)

// schemaVersion is the coverage_schema version coverage.py 5.0 and later write.
const schemaVersion = 7

// Decoder bounds. A data file is bounded by max_input_bytes; these bound what one file
// may make the decoder hold or read.
const (
	// maxDataRows bounds the line_bits and arc rows read in all.
	maxDataRows = 50_000_000
	// maxFileHits bounds the rows (line hits and arcs, every context) of one measured file.
	maxFileHits = 2_000_000
	// maxNumbitsBytes bounds one numbits blob: lines up to 8,388,607.
	maxNumbitsBytes = 1 << 20
	// maxLine bounds the magnitude of a recorded line number.
	maxLine = 1<<31 - 1
	// maxNames bounds the file and context tables.
	maxNames = 1_000_000
)

// db is an open, validated coverage.py data file.
type db struct {
	sql   *sqlitefile.DB
	index int
}

func decodeErr(index int, err error, format string, args ...any) error {
	return &providers.DecodeError{Source: index, Message: fmt.Sprintf(format, args...), Err: err}
}

// sqlErr is a driver error while reading: never its text, which may name the host path.
func (d *db) sqlErr(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	return decodeErr(d.index, err, "source %d is not a readable coverage.py data file: the SQLite database is malformed or truncated", d.index)
}

// sniff checks the file's first bytes before SQLite sees it.
func sniff(in providers.Input) error {
	f, err := os.Open(in.Path)
	if err != nil {
		return &providers.InputError{Source: in.Index, Message: fmt.Sprintf("source %d could not be read", in.Index), Err: err}
	}
	defer f.Close()
	head := make([]byte, 100)
	n, err := io.ReadFull(f, head)
	head = head[:n]
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return &providers.InputError{Source: in.Index, Message: fmt.Sprintf("source %d could not be read", in.Index), Err: err}
	}
	switch {
	case bytes.HasPrefix(head, sqlitefile.Magic) && n == 100:
		return nil
	case n == 0:
		return decodeErr(in.Index, nil, "source %d is empty, not a coverage.py data file", in.Index)
	case sourcefile.IsGzip(head):
		return &providers.UnsupportedError{Source: in.Index,
			Message: fmt.Sprintf("source %d is gzip-compressed; SQLite needs random access: decompress the coverage data file first", in.Index)}
	case bytes.HasPrefix(head, []byte("!coverage.py")):
		return &providers.UnsupportedError{Source: in.Index,
			Message: fmt.Sprintf("source %d is a coverage.py 4 JSON data file; only the SQLite data of coverage.py 5 and later is read (re-record with a current coverage.py)", in.Index)}
	default:
		return decodeErr(in.Index, nil, "source %d is not a SQLite database (coverage.py data files are SQLite 3)", in.Index)
	}
}

// open opens the file as an untrusted SQLite input (sqlitefile.Open: read only and
// immutable, so a preserved payload is never changed and no journal is created) and
// checks that it holds coverage.py data of the supported schema.
func open(ctx context.Context, in providers.Input) (*db, error) {
	if err := sniff(in); err != nil {
		return nil, err
	}
	s, err := sqlitefile.Open(ctx, in.Path)
	if err != nil {
		var damaged *sqlitefile.CorruptError
		if errors.As(err, &damaged) {
			return nil, &providers.DecodeError{Source: in.Index,
				Message: fmt.Sprintf("source %d is a damaged SQLite file (PRAGMA quick_check: %s); nothing was queried", in.Index, damaged.Problem),
				Details: map[string]any{"integrity_check": damaged.Problem}}
		}
		var ce *sqlitefile.ComputedError
		if errors.As(err, &ce) {
			return nil, &providers.UnsupportedError{Source: in.Index,
				Message: fmt.Sprintf("source %d is not a coverage.py data file: %s, whose values SQLite would compute on read (coverage.py writes plain tables)", in.Index, ce)}
		}
		return nil, decodeErr(in.Index, err, "source %d could not be opened as SQLite", in.Index)
	}
	d := &db{sql: s, index: in.Index}
	if err := d.checkSchema(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return d, nil
}

func (d *db) Close() error { return d.sql.Close() }

// checkSchema requires coverage.py's tables and schema version 7.
func (d *db) checkSchema(ctx context.Context) error {
	rows, err := d.sql.QueryContext(ctx, "SELECT name FROM sqlite_master WHERE type = 'table'")
	if err != nil {
		return d.sqlErr(ctx, err)
	}
	tables := map[string]bool{}
	for rows.Next() && len(tables) < 1000 {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return d.sqlErr(ctx, err)
		}
		tables[name] = true
	}
	if err := rows.Err(); err != nil {
		rows.Close()
		return d.sqlErr(ctx, err)
	}
	rows.Close()
	var missing []string
	for _, t := range []string{"coverage_schema", "meta", "file", "context", "line_bits", "arc"} {
		if !tables[t] {
			missing = append(missing, t)
		}
	}
	if len(missing) > 0 {
		return &providers.UnsupportedError{Source: d.index,
			Message: fmt.Sprintf("source %d is a SQLite database but not a coverage.py data file: it lacks the table(s) %s", d.index, strings.Join(missing, ", ")),
			Details: map[string]any{"missing_tables": missing}}
	}
	var version sql.NullInt64
	if err := d.sql.QueryRowContext(ctx, "SELECT version FROM coverage_schema LIMIT 1").Scan(&version); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return d.sqlErr(ctx, err)
	}
	if !version.Valid || version.Int64 != schemaVersion {
		v := any(nil)
		if version.Valid {
			v = version.Int64
		}
		return &providers.UnsupportedError{Source: d.index,
			Message: fmt.Sprintf("source %d has coverage.py data schema %v; only schema %d (coverage.py 5.0 and later) is read", d.index, v, schemaVersion),
			Details: map[string]any{"schema_version": v, "supported_schema_version": schemaVersion}}
	}
	return nil
}

// meta returns the recording coverage.py version and whether the data are arcs. A file
// without has_arcs recorded nothing (coverage.py writes it with the first data).
func (d *db) meta(ctx context.Context) (version *string, hasArcs, recorded bool, err error) {
	rows, err := d.sql.QueryContext(ctx, "SELECT key, value FROM meta WHERE key IN ('version', 'has_arcs')")
	if err != nil {
		return nil, false, false, d.sqlErr(ctx, err)
	}
	defer rows.Close()
	for rows.Next() {
		var k string
		var v sql.NullString
		if err := rows.Scan(&k, &v); err != nil {
			return nil, false, false, d.sqlErr(ctx, err)
		}
		switch {
		case k == "version" && v.Valid && len(v.String) <= 64:
			s := v.String
			version = &s
		case k == "has_arcs":
			switch strings.TrimSpace(v.String) {
			case "0":
				recorded = true
			case "1":
				recorded, hasArcs = true, true
			default:
				return nil, false, false, decodeErr(d.index, nil, "source %d: coverage.py meta has_arcs is neither 0 nor 1", d.index)
			}
		}
	}
	if err := rows.Err(); err != nil {
		return nil, false, false, d.sqlErr(ctx, err)
	}
	return version, hasArcs, recorded, nil
}

// name is one row of the file or context table.
type name struct {
	id   int64
	text string
}

// names reads table (file or context) as id and text, at most maxNames rows.
func (d *db) names(ctx context.Context, query string) ([]name, error) {
	rows, err := d.sql.QueryContext(ctx, query)
	if err != nil {
		return nil, d.sqlErr(ctx, err)
	}
	defer rows.Close()
	var out []name
	for rows.Next() {
		if len(out) >= maxNames {
			return nil, &providers.LimitError{Source: d.index, Limit: maxNames, Unit: "rows",
				Message: fmt.Sprintf("source %d names more than %d files or contexts", d.index, maxNames)}
		}
		var id int64
		var text sql.NullString
		if err := rows.Scan(&id, &text); err != nil {
			return nil, d.sqlErr(ctx, err)
		}
		out = append(out, name{id, text.String})
	}
	if err := rows.Err(); err != nil {
		return nil, d.sqlErr(ctx, err)
	}
	return out, nil
}

// numbits decodes coverage.py's numbits: bit j of byte i is line i*8+j.
func numbits(b []byte, add func(line int64)) {
	for i, v := range b {
		for j := 0; v != 0; j++ {
			if v&1 != 0 {
				add(int64(i)*8 + int64(j))
			}
			v >>= 1
		}
	}
}
