package fuzztool

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "modernc.org/sqlite" // the "sqlite" driver
)

// SQLite seeds. A SQLite target mutates whole database files: the real files of the shared
// corpus (read when the target starts; left out when the corpus is absent), copies of them
// cut down to the tables a reader uses and rewritten with small pages (a few pages of
// b-tree interior, overflow and freelist structure instead of a megabyte of rows), and
// databases made here from SQL, so that the target has seeds without the corpus.

// AddFile adds the named corpus file as a seed whatever its size (MaxSeedBytes is for the
// text targets: a SQLite seed is one file however large); a missing file is left out.
func AddFile(f *testing.F, name string) {
	f.Helper()
	if b, err := os.ReadFile(filepath.Join(corpusDir(), name)); err == nil {
		f.Add(b)
	}
}

// AddTrimmed adds the named corpus SQLite file cut down to the tables keep selects, each
// to its first rows rows in rowid order, rewritten with pageSize-byte pages; a missing file
// is left out.
func AddTrimmed(f *testing.F, name string, keep func(table string) bool, rows, pageSize int) {
	f.Helper()
	b, err := os.ReadFile(filepath.Join(corpusDir(), name))
	if err != nil {
		return
	}
	path := filepath.Join(f.TempDir(), "trimmed.sqlite")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		f.Fatal(err)
	}
	err = withSQLite(path, func(db *sql.DB) error {
		tables, err := names(db)
		if err != nil {
			return err
		}
		for _, t := range tables {
			q := `"` + strings.ReplaceAll(t, `"`, `""`) + `"`
			stmt := "DROP TABLE " + q
			if keep(t) {
				stmt = fmt.Sprintf("DELETE FROM %s WHERE rowid NOT IN (SELECT rowid FROM %s ORDER BY rowid LIMIT %d)", q, q, rows)
			}
			if _, err := db.Exec(stmt); err != nil {
				return fmt.Errorf("%s: %w", stmt, err)
			}
		}
		return vacuum(db, pageSize)
	})
	if err != nil {
		f.Fatalf("trimming %s: %v", name, err)
	}
	addPath(f, path)
}

// AddSQL adds the database that script makes, with pageSize-byte pages.
func AddSQL(f *testing.F, pageSize int, script string) {
	f.Helper()
	path := filepath.Join(f.TempDir(), "made.sqlite")
	err := withSQLite(path, func(db *sql.DB) error {
		if _, err := db.Exec(fmt.Sprintf("PRAGMA page_size = %d", pageSize)); err != nil {
			return err
		}
		_, err := db.Exec(script)
		return err
	})
	if err != nil {
		f.Fatalf("making a seed database: %v", err)
	}
	addPath(f, path)
}

func addPath(f *testing.F, path string) {
	f.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
}

func withSQLite(path string, do func(db *sql.DB) error) error {
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		return err
	}
	db.SetMaxOpenConns(1)
	if err := do(db); err != nil {
		db.Close()
		return err
	}
	return db.Close()
}

func names(db *sql.DB) ([]string, error) {
	rows, err := db.Query("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, rows.Err()
}

// vacuum rewrites the database with pageSize-byte pages.
func vacuum(db *sql.DB, pageSize int) error {
	for _, stmt := range []string{fmt.Sprintf("PRAGMA page_size = %d", pageSize), "VACUUM"} {
		if _, err := db.Exec(stmt); err != nil {
			return fmt.Errorf("%s: %w", stmt, err)
		}
	}
	return nil
}
