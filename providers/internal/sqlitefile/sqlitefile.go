// Package sqlitefile opens the SQLite files Flameox reads as untrusted inputs (Nsight
// Systems exports, coverage.py data) so that reading them is bounded by the file: read
// only and immutable, the schema not trusted, one value at most MaxValueBytes, and the
// schema features that compute values on read (generated virtual columns, virtual
// tables) refused before any query touches them. A 12 KiB file whose table declares a
// column "AS (zeroblob(400000000))" otherwise makes every read of that column allocate
// 400 MB.
package sqlitefile

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Magic opens every SQLite 3 database file.
var Magic = []byte("SQLite format 3\x00")

// MaxValueBytes bounds one string or blob while reading (SQLITE_LIMIT_LENGTH): a larger
// value fails the statement. It is the most one result page may hold.
const MaxValueBytes = 64 << 20

// URIPath escapes the characters an SQLite URI filename treats specially.
func URIPath(p string) string {
	return strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(p)
}

// DB is one open file: a single connection, on which every query runs.
type DB struct {
	*sql.Conn
	db *sql.DB
}

// Close closes the connection and the database.
func (d *DB) Close() error {
	err := d.Conn.Close()
	if cerr := d.db.Close(); err == nil {
		err = cerr
	}
	return err
}

// ComputedError is a table whose values SQLite would compute on read: a virtual table, or
// a table with generated virtual columns.
type ComputedError struct {
	Table string
	What  string
}

func (e *ComputedError) Error() string { return fmt.Sprintf("table %q %s", e.Table, e.What) }

// Open opens path read only and immutable (SQLite neither locks nor writes the file and
// keeps no journal), with trusted_schema and query_only set and SQLITE_LIMIT_LENGTH at
// MaxValueBytes, and checks the schema: a virtual table or a generated virtual column
// is a *ComputedError. Other errors are the driver's: callers report them typed, without
// their text, which may name the host path.
func Open(ctx context.Context, path string) (*DB, error) {
	s, err := sql.Open("sqlite", "file:"+URIPath(path)+"?mode=ro&immutable=1&_pragma=trusted_schema(0)&_pragma=query_only(1)")
	if err != nil {
		return nil, err
	}
	s.SetMaxOpenConns(1)
	c, err := s.Conn(ctx)
	if err != nil {
		s.Close()
		return nil, err
	}
	d := &DB{Conn: c, db: s}
	if _, err := sqlite.Limit(c, sqlite3.SQLITE_LIMIT_LENGTH, MaxValueBytes); err != nil {
		d.Close()
		return nil, err
	}
	if err := d.checkSchema(ctx); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

// checkSchema refuses virtual tables and generated virtual columns (table_xinfo's hidden
// 2; stored generated columns, hidden 3, are read from the file like any value).
func (d *DB) checkSchema(ctx context.Context) error {
	var name string
	err := d.QueryRowContext(ctx, `SELECT name FROM sqlite_master WHERE type = 'table' AND sql LIKE 'CREATE VIRTUAL TABLE%' LIMIT 1`).Scan(&name)
	switch {
	case err == nil:
		return &ComputedError{Table: name, What: "is a virtual table"}
	case !errors.Is(err, sql.ErrNoRows):
		return err
	}
	err = d.QueryRowContext(ctx, `SELECT m.name FROM sqlite_master AS m JOIN pragma_table_xinfo(m.name) AS x
		WHERE m.type = 'table' AND x.hidden = 2 LIMIT 1`).Scan(&name)
	switch {
	case err == nil:
		return &ComputedError{Table: name, What: "has generated virtual columns"}
	case !errors.Is(err, sql.ErrNoRows):
		return err
	}
	return nil
}
