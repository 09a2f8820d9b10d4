package nsys

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

// IsSQLiteHead is the head-based detection of an Nsight Systems SQLite export: a
// SQLite database named *.sqlite (coverage.py's data files are named .coverage). The
// tables are checked when the export is opened.
func IsSQLiteHead(name string, head []byte) bool {
	return bytes.HasPrefix(head, sqlitefile.Magic) && strings.HasSuffix(name, ".sqlite") && !strings.Contains(name, ".coverage")
}

// db is an open Nsight Systems SQLite export and the tables it holds.
type db struct {
	sql    *sqlitefile.DB
	index  int
	tables map[string]bool
}

func (d *db) Close() error { return d.sql.Close() }

// sqlErr is a driver error while reading: never its text, which may name the host path.
func (d *db) sqlErr(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	return &providers.DecodeError{Source: d.index, Err: err,
		Message: fmt.Sprintf("source %d is not a readable Nsight Systems export: the SQLite database is malformed, truncated or of an unexpected schema", d.index)}
}

// sniffSQLite checks the file's first bytes before SQLite sees it.
func sniffSQLite(in providers.Input) error {
	f, err := os.Open(in.Path)
	if err != nil {
		return &providers.InputError{Source: in.Index, Message: fmt.Sprintf("source %d could not be read", in.Index), Err: err}
	}
	defer f.Close()
	head := make([]byte, 100)
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return &providers.InputError{Source: in.Index, Message: fmt.Sprintf("source %d could not be read", in.Index), Err: err}
	}
	switch {
	case bytes.HasPrefix(head[:n], sqlitefile.Magic) && n == 100:
		return nil
	case sourcefile.IsGzip(head[:n]):
		return &providers.UnsupportedError{Source: in.Index,
			Message: fmt.Sprintf("source %d is gzip-compressed; SQLite needs random access: decompress the Nsight Systems export first", in.Index)}
	default:
		return &providers.DecodeError{Source: in.Index,
			Message: fmt.Sprintf("source %d is not a SQLite database (nsys export --type sqlite writes SQLite 3)", in.Index)}
	}
}

// maxTables bounds the table names one export may list.
const maxTables = 10_000

// openSQLite opens in as an untrusted SQLite file (sqlitefile.Open) and checks that it is
// an Nsight Systems export: StringIds and one of markerTables.
func openSQLite(ctx context.Context, in providers.Input) (*db, error) {
	if err := sniffSQLite(in); err != nil {
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
				Message: fmt.Sprintf("source %d is not an Nsight Systems export: %s, whose values SQLite would compute on read (nsys writes plain tables)", in.Index, ce)}
		}
		return nil, &providers.DecodeError{Source: in.Index, Message: fmt.Sprintf("source %d could not be opened as SQLite", in.Index), Err: err}
	}
	d := &db{sql: s, index: in.Index, tables: map[string]bool{}}
	rows, err := s.QueryContext(ctx, "SELECT name FROM sqlite_master WHERE type = 'table'")
	if err != nil {
		s.Close()
		return nil, d.sqlErr(ctx, err)
	}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			s.Close()
			return nil, d.sqlErr(ctx, err)
		}
		if len(d.tables) >= maxTables {
			rows.Close()
			s.Close()
			return nil, &providers.LimitError{Source: in.Index, Limit: maxTables, Unit: "tables",
				Message: fmt.Sprintf("source %d lists more than %d tables", in.Index, maxTables)}
		}
		d.tables[name] = true
	}
	err = rows.Err()
	rows.Close()
	if err != nil {
		s.Close()
		return nil, d.sqlErr(ctx, err)
	}
	ok := false
	for _, t := range markerTables {
		ok = ok || d.tables[t]
	}
	if !d.tables["StringIds"] || !ok {
		s.Close()
		return nil, &providers.UnsupportedError{Source: in.Index,
			Message: fmt.Sprintf("source %d is a SQLite database but not an Nsight Systems export (no StringIds table with CUPTI, NVTX, OSRT or export metadata tables)", in.Index)}
	}
	return d, nil
}

// withDB opens the SQLite export for one use.
func (x Export) withDB(ctx context.Context, f func(d *db) error) error {
	d, err := openSQLite(ctx, x.In)
	if err != nil {
		return err
	}
	defer d.Close()
	return f(d)
}

// withDBValue is f's value over the SQLite export, opened for one use.
func withDBValue[T any](ctx context.Context, x Export, f func(d *db) (T, error)) (T, error) {
	var v T
	err := x.withDB(ctx, func(d *db) error {
		var err error
		v, err = f(d)
		return err
	})
	return v, err
}

// pageRows reads the rows from offset up to end of the ordered query q over d (q
// without its LIMIT ? OFFSET ? tail: only those rows are read), scanning each into a
// record that add takes; add ends the read early with false (the row did not fit its
// page). An error of scan's is the export's; add's comes back as it is.
func pageRows[T any](ctx context.Context, d *db, q string, offset, end int64, scan func(rows *sql.Rows, r *T) error, add func(*T) (bool, error)) error {
	rows, err := d.sql.QueryContext(ctx, q+` LIMIT ? OFFSET ?`, end-offset, offset)
	if err != nil {
		return d.sqlErr(ctx, err)
	}
	defer rows.Close()
	for rows.Next() {
		var r T
		if err := scan(rows, &r); err != nil {
			return d.sqlErr(ctx, err)
		}
		ok, err := add(&r)
		if err != nil {
			return err
		}
		if !ok {
			break
		}
	}
	if err := rows.Err(); err != nil {
		return d.sqlErr(ctx, err)
	}
	return nil
}

// Scan reads a column as sql.NullInt64 does.
func (o *OptInt) Scan(src any) error {
	var n sql.NullInt64
	if err := n.Scan(src); err != nil {
		return err
	}
	*o = OptInt{}
	if n.Valid {
		*o = some(n.Int64)
	}
	return nil
}

// Scan reads a column as sql.NullString does.
func (o *OptStr) Scan(src any) error {
	var s sql.NullString
	if err := s.Scan(src); err != nil {
		return err
	}
	*o = OptStr{s: s.String, ok: s.Valid}
	return nil
}
