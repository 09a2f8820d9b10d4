package trace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/sourcefile"
	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/internal/sqlitefile"
	_ "modernc.org/sqlite" // pure-Go SQLite, driver "sqlite"
)

// isNsysSQLiteHead is the head-based detection of an Nsight Systems SQLite export: a
// SQLite database named *.sqlite (coverage.py's data files are named .coverage). The
// tables are checked when the export is opened.
func isNsysSQLiteHead(name string, head []byte) bool {
	return bytes.HasPrefix(head, sqlitefile.Magic) && strings.HasSuffix(name, ".sqlite") && !strings.Contains(name, ".coverage")
}

// nsysTables are tables of which an Nsight Systems export holds at least one besides
// StringIds.
var nsysTables = []string{"META_DATA_EXPORT", "TARGET_INFO_SESSION_START_TIME", "CUPTI_ACTIVITY_KIND_KERNEL",
	"CUPTI_ACTIVITY_KIND_RUNTIME", "NVTX_EVENTS", "OSRT_API", "ANALYSIS_DETAILS"}

// nsysDB is an open Nsight Systems SQLite export and the tables it holds.
type nsysDB struct {
	sql    *sqlitefile.DB
	index  int
	tables map[string]bool
}

func (d *nsysDB) Close() error { return d.sql.Close() }

// sqlErr is a driver error while reading: never its text, which may name the host path.
func (d *nsysDB) sqlErr(ctx context.Context, err error) error {
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

// maxNsysTables bounds the table names one export may list.
const maxNsysTables = 10_000

// openNsys opens in as an untrusted SQLite file (sqlitefile.Open) and checks that it is
// an Nsight Systems export: StringIds and one of nsysTables.
func openNsys(ctx context.Context, in providers.Input) (*nsysDB, error) {
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
	d := &nsysDB{sql: s, index: in.Index, tables: map[string]bool{}}
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
		if len(d.tables) >= maxNsysTables {
			rows.Close()
			s.Close()
			return nil, &providers.LimitError{Source: in.Index, Limit: maxNsysTables, Unit: "tables",
				Message: fmt.Sprintf("source %d lists more than %d tables", in.Index, maxNsysTables)}
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
	for _, t := range nsysTables {
		ok = ok || d.tables[t]
	}
	if !d.tables["StringIds"] || !ok {
		s.Close()
		return nil, &providers.UnsupportedError{Source: in.Index,
			Message: fmt.Sprintf("source %d is a SQLite database but not an Nsight Systems export (no StringIds table with CUPTI, NVTX, OSRT or export metadata tables)", in.Index)}
	}
	return d, nil
}

// nsysProvider identifies the native SQLite reader.
func nsysProvider() gen.Provider {
	return gen.Provider{ID: "nsight-systems-sqlite", Version: "native-1"}
}

// nsysData is the export an Nsight Systems source is read from (nsysSource.export): an
// nsys-sqlite export (for nsys-rep, the report's conversion), or a parquetdir, which the
// native reader reads (decision 0057).
type nsysData struct {
	in providers.Input
	// parquet is set for a parquetdir.
	parquet bool
}

// withNsys opens the export for one use.
func (s nsysData) withNsys(ctx context.Context, f func(d *nsysDB) error) error {
	d, err := openNsys(ctx, s.in)
	if err != nil {
		return err
	}
	defer d.Close()
	return f(d)
}
