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

// CacheKiB bounds the connection's page cache (PRAGMA cache_size, in KiB).
const CacheKiB = 16 << 10

// maxProblems bounds the quick_check messages an open reads (the first is reported).
const maxProblems = 8

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

// CorruptError is a file whose b-trees PRAGMA quick_check finds inconsistent: a page
// referenced twice (a b-tree whose interior pages repeat a child, which makes a scan
// visit it again and again), an overflow chain that loops, a cell out of its page. A
// query over such a file can read without end or amplify a small file into gigabytes,
// so nothing is queried. Problem is SQLite's first message, which names pages, never the
// path.
type CorruptError struct{ Problem string }

func (e *CorruptError) Error() string { return "the SQLite file is damaged: " + e.Problem }

// Open opens path read only and immutable (SQLite neither locks nor writes the file and
// keeps no journal), with trusted_schema and query_only set, SQLITE_LIMIT_LENGTH at
// MaxValueBytes, a page cache of CacheKiB and temporary b-trees (sorts) in memory, so
// that what a query spills counts against the process's memory bound rather than the
// disk's. It then checks the file: PRAGMA quick_check, linear in the file's pages, must
// find it consistent (else a *CorruptError), and the schema: a virtual table or a
// generated virtual column is a *ComputedError. Other errors are the driver's: callers
// report them typed, without their text, which may name the host path. A query's time is
// bounded by its context, which the driver interrupts.
func Open(ctx context.Context, path string) (*DB, error) {
	s, err := sql.Open("sqlite", "file:"+URIPath(path)+"?mode=ro&immutable=1&_pragma=trusted_schema(0)&_pragma=query_only(1)"+
		fmt.Sprintf("&_pragma=cache_size(-%d)&_pragma=temp_store(MEMORY)", CacheKiB))
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
	if err := d.checkIntegrity(ctx); err != nil {
		d.Close()
		return nil, err
	}
	if err := d.checkSchema(ctx); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

// checkIntegrity runs PRAGMA quick_check: "ok", or the problems it found.
func (d *DB) checkIntegrity(ctx context.Context) error {
	rows, err := d.QueryContext(ctx, fmt.Sprintf("PRAGMA quick_check(%d)", maxProblems))
	if err != nil {
		return corrupt(err)
	}
	defer rows.Close()
	var first string
	for rows.Next() {
		var msg string
		if err := rows.Scan(&msg); err != nil {
			return corrupt(err)
		}
		// A message may hold many lines, after a "*** in database main ***" heading.
		for _, line := range strings.Split(msg, "\n") {
			if first == "" && line != "" && !strings.HasPrefix(line, "***") {
				first = line
			}
		}
	}
	if err := rows.Err(); err != nil {
		return corrupt(err)
	}
	if first != "ok" {
		if len(first) > 200 {
			first = strings.ToValidUTF8(first[:200], "")
		}
		return &CorruptError{Problem: first}
	}
	return nil
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

// corrupt is err as a *CorruptError when SQLite found the file malformed (SQLITE_CORRUPT,
// SQLITE_NOTADB) before quick_check could say more, else err.
func corrupt(err error) error {
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_CORRUPT:
			return &CorruptError{Problem: "database disk image is malformed"}
		case sqlite3.SQLITE_NOTADB:
			return &CorruptError{Problem: "file is not a database"}
		}
	}
	return err
}
