package coverage

import (
	"context"
	"testing"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/internal/fuzztool"
)

// coverageSeed is a coverage.py 7 data file with lines, arcs and two contexts, made here
// so that the target has a seed without the shared corpus.
const coverageSeed = `
CREATE TABLE coverage_schema (version integer);
CREATE TABLE meta (key text, value text, unique (key));
CREATE TABLE file (id integer primary key, path text, unique (path));
CREATE TABLE context (id integer primary key, context text, unique (context));
CREATE TABLE line_bits (file_id integer, context_id integer, numbits blob, unique (file_id, context_id));
CREATE TABLE arc (file_id integer, context_id integer, fromno integer, tono integer, unique (file_id, context_id, fromno, tono));
CREATE TABLE tracer (file_id integer primary key, tracer text);
INSERT INTO coverage_schema VALUES (7);
INSERT INTO meta VALUES ('version', '7.6.1'), ('has_arcs', '1');
INSERT INTO file VALUES (1, '/src/a.py'), (2, '/src/b.py');
INSERT INTO context VALUES (1, ''), (2, 'test_a|run');
INSERT INTO arc VALUES (1, 1, -1, 1), (1, 1, 1, 2), (1, 2, 2, 4), (1, 2, 4, -1), (2, 1, -1, 3), (2, 1, 3, -1);
`

// FuzzCoverageSQLite: go test ./providers/coverage -run '^$' -fuzz FuzzCoverageSQLite -fuzztime 20s
// mutates coverage.py data files (the corpus's, a line-only copy, one made here) and
// checks that summarize_coverage ends in rows or a typed provider error naming no path,
// within fuzztool.HangAfter.
func FuzzCoverageSQLite(f *testing.F) {
	fuzztool.AddFile(f, "local__coverage_py_branch.coverage")
	fuzztool.AddTrimmed(f, "local__coverage_py_branch.coverage", func(string) bool { return true }, 8, 512)
	fuzztool.AddSQL(f, 512, coverageSeed)
	fuzztool.AddSQL(f, 1024, coverageSeed+`DELETE FROM arc; UPDATE meta SET value = '0' WHERE key = 'has_arcs';
INSERT INTO line_bits VALUES (1, 1, x'0f81'), (2, 2, x'ff00ff');`)
	f.Fuzz(func(t *testing.T, b []byte) {
		path := fuzztool.WriteInput(t, ".coverage", b)
		fuzztool.Bounded(t, func() {
			ctx := context.Background()
			a, err := summarize(ctx, &providers.Request[gen.NoFields]{Fields: &gen.NoFields{},
				Inputs: []providers.Input{{Path: path, Format: gen.FormatCoverage, Size: int64(len(b))}}})
			fuzztool.CheckError(t, err, path)
			if err != nil {
				return
			}
			p, err := a.Rows.Page(ctx, 0, 1000, nil)
			fuzztool.CheckError(t, err, path)
			if err == nil && int64(len(p.Rows)) > 1000 {
				t.Fatalf("a page of 1000 holds %d rows", len(p.Rows))
			}
		})
	})
}
