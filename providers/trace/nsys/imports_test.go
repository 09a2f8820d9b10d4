package nsys

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestOnlySQLiteFilesImportSQL: no file of the reader but the SQL reader's (sqlite*.go)
// imports database/sql or a SQLite package: the native reader of a parquetdir
// (parquet*.go) and what both readers share make no SQLite state (issue 33, item 8;
// decision 0057).
func TestOnlySQLiteFilesImportSQL(t *testing.T) {
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") || strings.HasPrefix(name, "sqlite") {
			continue
		}
		checked++
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, im := range f.Imports {
			if p := strings.Trim(im.Path.Value, `"`); p == "database/sql" || strings.Contains(p, "sqlite") {
				t.Errorf("%s imports %s", name, p)
			}
		}
	}
	if checked < 6 {
		t.Errorf("%d files checked", checked)
	}
}
