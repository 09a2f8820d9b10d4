package testtool

import (
	"database/sql"
	"path/filepath"
	"testing"

	_ "modernc.org/sqlite" // pure-Go SQLite, driver "sqlite"
)

// SQLiteFile creates a SQLite database named name in a new temporary directory by running
// stmts, and returns its path.
func SQLiteFile(t testing.TB, name string, stmts ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	db, err := sql.Open("sqlite", "file:"+p)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, stmt := range stmts {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// SmallSQLiteDAG is a 180 KiB SQLite file (800 rows of 200-character text) whose b-tree
// SQLiteDAG has rewired into a DAG, with Nsight Systems' StringIds table and any further
// tables stmts create: issue 40's small input that a query reads N^depth times.
func SmallSQLiteDAG(t testing.TB, stmts ...string) string {
	t.Helper()
	p := SQLiteFile(t, "export.sqlite", append([]string{
		"CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT)",
		"WITH RECURSIVE n(v) AS (SELECT 1 UNION ALL SELECT v + 1 FROM n WHERE v < 800) INSERT INTO StringIds (value) SELECT printf('%0200d', v) FROM n",
	}, stmts...)...)
	return SQLiteDAG(t, p)
}
