package sqlitefile

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flameox/flameox/internal/testtool"
)

// create writes a database with the statements, through the driver in read-write mode.
func create(t *testing.T, stmts ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "db.sqlite")
	db, err := sql.Open("sqlite", "file:"+URIPath(p))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	return p
}

// TestOpenRefusesComputedValues: a generated virtual column or a virtual table is refused
// by name before any query reads it; stored generated columns and plain tables open.
func TestOpenRefusesComputedValues(t *testing.T) {
	for _, c := range []struct {
		name  string
		stmts []string
		table string // the refused table; empty when the file opens
	}{
		{"plain", []string{"CREATE TABLE a (x INTEGER, y TEXT)", "INSERT INTO a VALUES (1, 'one')"}, ""},
		{"stored generated column", []string{"CREATE TABLE a (x INTEGER, y INTEGER GENERATED ALWAYS AS (x * 2) STORED)", "INSERT INTO a (x) VALUES (1)"}, ""},
		{"virtual generated column", []string{"CREATE TABLE a (x INTEGER)", "CREATE TABLE b (x INTEGER, big BLOB AS (zeroblob(400000000)))", "INSERT INTO b (x) VALUES (1)"}, "b"},
		{"virtual table", []string{"CREATE TABLE a (x INTEGER)", "CREATE VIRTUAL TABLE v USING fts5(body)", "INSERT INTO v VALUES ('text')"}, "v"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := create(t, c.stmts...)
			before, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			d, err := Open(context.Background(), p)
			var ce *ComputedError
			switch {
			case c.table == "" && err != nil:
				t.Fatalf("open: %v", err)
			case c.table != "" && !errors.As(err, &ce):
				t.Fatalf("open = %v, want a ComputedError", err)
			case c.table != "" && ce.Table != c.table:
				t.Fatalf("refused table %q, want %q", ce.Table, c.table)
			}
			if d != nil {
				var n int
				if err := d.QueryRowContext(context.Background(), "SELECT count(*) FROM a").Scan(&n); err != nil || n != 1 {
					t.Fatalf("count = %d, %v", n, err)
				}
				d.Close()
			}
			after, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(before, after) {
				t.Fatal("the file changed")
			}
		})
	}
}

// TestOpenBoundsAndPragmas: a value longer than MaxValueBytes fails the statement, and
// the connection does not trust the schema and cannot write.
func TestOpenBoundsAndPragmas(t *testing.T) {
	d, err := Open(context.Background(), create(t, "CREATE TABLE a (x INTEGER)"))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ctx := context.Background()
	var n int64
	if err := d.QueryRowContext(ctx, "SELECT length(zeroblob(?))", MaxValueBytes).Scan(&n); err != nil || n != MaxValueBytes {
		t.Fatalf("a value of MaxValueBytes: %d, %v", n, err)
	}
	if err := d.QueryRowContext(ctx, "SELECT length(zeroblob(?))", MaxValueBytes+1).Scan(&n); err == nil {
		t.Fatal("a value over MaxValueBytes was made")
	}
	for pragma, want := range map[string]int{"trusted_schema": 0, "query_only": 1} {
		var v int
		if err := d.QueryRowContext(ctx, "PRAGMA "+pragma).Scan(&v); err != nil || v != want {
			t.Fatalf("%s = %d, %v; want %d", pragma, v, err, want)
		}
	}
	if _, err := d.ExecContext(ctx, "INSERT INTO a VALUES (1)"); err == nil {
		t.Fatal("an insert succeeded")
	}
}

// TestOpenRefusesDamagedBTrees: a file whose interior pages all point at one child (a
// scan would visit it once per cell at every level: a 40 KiB file made a query take
// 4 GB) is refused by PRAGMA quick_check before any query, and the refusal names pages,
// not the path.
func TestOpenRefusesDamagedBTrees(t *testing.T) {
	stmts := []string{"CREATE TABLE a (x INTEGER PRIMARY KEY, y TEXT)"}
	for i := 0; i < 40; i++ {
		stmts = append(stmts, "WITH RECURSIVE n(v) AS (SELECT 1 UNION ALL SELECT v + 1 FROM n WHERE v < 100) INSERT INTO a (y) SELECT printf('%0200d', v) FROM n")
	}
	p := create(t, stmts...)
	if d, err := Open(context.Background(), p); err != nil {
		t.Fatalf("the intact file: %v", err)
	} else {
		d.Close()
	}
	dag := testtool.SQLiteDAG(t, p)
	_, err := Open(context.Background(), dag)
	var ce *CorruptError
	if !errors.As(err, &ce) {
		t.Fatalf("open = %v, want a CorruptError", err)
	}
	if !strings.Contains(ce.Problem, "page") || strings.Contains(ce.Error(), dag) {
		t.Errorf("problem %q", ce.Problem)
	}
}
