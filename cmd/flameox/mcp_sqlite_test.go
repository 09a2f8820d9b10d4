package main

import (
	"strings"
	"testing"

	"github.com/flameox/flameox/internal/testtool"
)

// TestMCPSurvivesAnAmplifyingSQLite is issue 40's critical reproduction: a SQLite file
// under the in-process size (256 KiB) whose b-tree interior pages all point at one child
// (a scan revisits it at every level; such a 40 KiB .coverage took the server to 4.2 GB).
// Declared as an Nsight Systems export and as coverage.py data, it is refused typed
// before any query, and the server answers the next request.
func TestMCPSurvivesAnAmplifyingSQLite(t *testing.T) {
	dag := testtool.SmallSQLiteDAG(t, "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, shortName INTEGER)")
	s := connect(t, "")
	for _, c := range []struct{ tool, format string }{{"summarize_trace", "nsys-sqlite"}, {"summarize_coverage", "coverage"}} {
		res, isErr := s.call(c.tool, map[string]any{"sources": []any{map[string]any{"kind": "path", "path": dag, "format": c.format}}})
		msg, _ := res["message"].(string)
		if !isErr || res["code"] != "DECODE_FAILURE" || !strings.Contains(msg, "damaged SQLite file") || strings.Contains(msg, dag) {
			t.Errorf("%s: %v %v %q", c.tool, isErr, res["code"], msg)
		}
	}
	if _, isErr := s.call("query_evidence", map[string]any{}); isErr {
		t.Error("the server did not answer after the damaged file")
	}
}
