package coverage

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/testtool"
	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/providerstest"
)

// systemPython is Debian's interpreter, the one python3-coverage serves.
const systemPython = "/usr/bin/python3"

// needCoverage skips without Debian's python3-coverage, and fails in CI, which installs it.
func needCoverage(t *testing.T) {
	t.Helper()
	testtool.Short(t, "runs coverage.py")
	if exec.Command(systemPython, "-c", "import coverage").Run() != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("CI must run coverage.py: install python3-coverage for /usr/bin/python3")
		}
		t.Skip("coverage is not importable by /usr/bin/python3")
	}
}

// truthScript prints what coverage.py's own CoverageData reads from a data file: per
// context and file, the executed lines and arcs.
const truthScript = `
import json, sys
from coverage import CoverageData
data = CoverageData(sys.argv[1])
data.read()
out = {"has_arcs": data.has_arcs(), "files": sorted(data.measured_files()), "contexts": sorted(data.measured_contexts()), "hits": []}
for ctx in sorted(data.measured_contexts()):
    data.set_query_context(ctx)
    for f in sorted(data.measured_files()):
        for l in sorted(data.lines(f) or []):
            out["hits"].append(["line_hit", f, l, None, ctx])
        for a, b in sorted(data.arcs(f) or []):
            out["hits"].append(["branch_arc", f, a, b, ctx])
json.dump(out, sys.stdout)
`

type truth struct {
	HasArcs  bool     `json:"has_arcs"`
	Files    []string `json:"files"`
	Contexts []string `json:"contexts"`
	Hits     [][]any  `json:"hits"`
}

// row is a decoded CoverageRow.
type row struct {
	Kind     string `json:"kind"`
	File     string `json:"file"`
	LineFrom int64  `json:"line_from"`
	LineTo   *int64 `json:"line_to"`
	Context  string `json:"context"`
}

var kindOrder = map[string]int{"line_hit": 0, "branch_arc": 1}

func rowOrder(a, b row) int {
	to := func(r row) int64 {
		if r.LineTo == nil {
			return -1 << 62
		}
		return *r.LineTo
	}
	return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(kindOrder[a.Kind], kindOrder[b.Kind]),
		cmp.Compare(a.LineFrom, b.LineFrom), cmp.Compare(to(a), to(b)), cmp.Compare(a.Context, b.Context))
}

// readTruth asks coverage.py for the rows of path, in the documented order.
func readTruth(t *testing.T, path string) (truth, []row) {
	t.Helper()
	out, err := exec.Command(systemPython, "-c", truthScript, path).Output()
	if err != nil {
		t.Fatalf("coverage.py reading %s: %v", path, err)
	}
	var tr truth
	if err := json.Unmarshal(out, &tr); err != nil {
		t.Fatal(err)
	}
	var rows []row
	for _, h := range tr.Hits {
		r := row{Kind: h[0].(string), File: h[1].(string), LineFrom: int64(h[2].(float64)), Context: h[4].(string)}
		if h[3] != nil {
			to := int64(h[3].(float64))
			r.LineTo = &to
		}
		rows = append(rows, r)
	}
	slices.SortFunc(rows, rowOrder)
	return tr, rows
}

// analyze summarizes the coverage data file at path.
func analyze(t *testing.T, path string) (*providers.Analysis, error) {
	t.Helper()
	return providerstest.Analyze(t, summarize, &gen.NoFields{}, providerstest.Input(t, path, gen.FormatCoverage))
}

// distinctCounts are the distinct (file, line) and (file, from, to) pairs of rows.
func distinctCounts(rows []row) (lines, arcs int64) {
	type key struct {
		f        string
		from, to int64
	}
	seenL, seenA := map[key]bool{}, map[key]bool{}
	for _, r := range rows {
		if r.LineTo == nil {
			seenL[key{r.File, r.LineFrom, 0}] = true
		} else {
			seenA[key{r.File, r.LineFrom, *r.LineTo}] = true
		}
	}
	return int64(len(seenL)), int64(len(seenA))
}

// checkAgainstTruth compares every row and the metrics with coverage.py's reading.
func checkAgainstTruth(t *testing.T, path string) []row {
	t.Helper()
	tr, want := readTruth(t, path)
	sum := digest(t, path)
	a, err := analyze(t, path)
	if err != nil {
		t.Fatal(err)
	}
	got := providerstest.Decode[row](t, providerstest.Rows(t, a.Rows, 7))
	if diff := gocmp.Diff(want, got); diff != "" {
		t.Errorf("rows differ from coverage.py's CoverageData (-want +got):\n%s", diff)
	}
	lines, arcs := distinctCounts(want)
	m := a.Metrics
	if m["file_count"] != len(tr.Files) || m["line_count"] != lines || m["arc_count"] != arcs || m["has_arcs"] != tr.HasArcs {
		t.Errorf("metrics %v; coverage.py: %d files, %d lines, %d arcs, has_arcs %v", m, len(tr.Files), lines, arcs, tr.HasArcs)
	}
	if m["context_count"] != len(tr.Contexts) {
		t.Errorf("context_count %v; coverage.py measured %d contexts", m["context_count"], len(tr.Contexts))
	}
	// Read-only and immutable: the file is unchanged and SQLite left no journal beside it.
	if digest(t, path) != sum {
		t.Error("reading changed the data file")
	}
	for _, sfx := range []string{"-journal", "-wal", "-shm"} {
		if _, err := os.Stat(path + sfx); err == nil {
			t.Errorf("reading left %s beside the data file", sfx)
		}
	}
	return got
}

func digest(t *testing.T, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

func TestCorpusBranchDataMatchesCoveragePy(t *testing.T) {
	needCoverage(t)
	path := testtool.Corpus(t, "local__coverage_py_branch.coverage")
	got := checkAgainstTruth(t, path)
	// Independent figures from the corpus README: 2 files, branch data, one context.
	a, _ := analyze(t, path)
	if a.Metrics["coverage_version"].(*string) == nil || *a.Metrics["coverage_version"].(*string) != "6.5.0" {
		t.Errorf("coverage_version %v, want 6.5.0", a.Metrics["coverage_version"])
	}
	var negative bool
	for _, r := range got {
		if r.LineTo != nil && (r.LineFrom < 0 || *r.LineTo < 0) {
			negative = true
		}
	}
	if !negative {
		t.Error("no entry or exit arc kept coverage.py's negative line numbers")
	}
}

// program has branches, a partial branch and test functions for dynamic contexts.
const program = `import sys

def classify(n):
    if n < 0:
        return "negative"
    elif n == 0:
        return "zero"
    return "positive"

def test_small():
    for n in (-1, 0):
        classify(n)

def test_large():
    total = 0
    for n in range(3):
        if n > 100:
            total += 1
    return classify(total + 5)

if len(sys.argv) > 1 and sys.argv[1] == "small":
    test_small()
else:
    test_large()
`

// record runs coverage.py in dir with extra arguments, writing dir/.coverage.
func record(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command(systemPython, append([]string{"-m", "coverage", "run"}, args...)...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("coverage run %v: %v\n%s", args, err, out)
	}
}

func TestRecordedDataMatchesCoveragePy(t *testing.T) {
	needCoverage(t)
	for _, tt := range []struct {
		name string
		rc   string
		runs [][]string
	}{
		{name: "branch static contexts", runs: [][]string{
			{"--branch", "--context=first", "prog.py", "small"},
			{"--branch", "--append", "--context=second", "prog.py", "large"}}},
		{name: "branch dynamic contexts", rc: "[run]\nbranch = True\ndynamic_context = test_function\n", runs: [][]string{
			{"prog.py", "small"}, {"--append", "prog.py", "large"}}},
		{name: "lines dynamic contexts", rc: "[run]\ndynamic_context = test_function\n", runs: [][]string{
			{"prog.py", "small"}, {"--append", "prog.py", "large"}}},
		{name: "lines one context", runs: [][]string{{"prog.py"}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "prog.py"), []byte(program), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "rc.ini"), []byte(tt.rc+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			for _, args := range tt.runs {
				record(t, dir, append([]string{"--rcfile=rc.ini"}, args...)...)
			}
			path := filepath.Join(dir, ".coverage")
			got := checkAgainstTruth(t, path)
			contexts := map[string]bool{}
			for _, r := range got {
				contexts[r.Context] = true
			}
			if strings.Contains(tt.name, "contexts") && len(contexts) < 2 {
				t.Errorf("rows carry contexts %v; the runs recorded at least two", contexts)
			}
			// coverage json, a report from the sources: its executed lines per file are
			// the distinct line hits.
			cmd := exec.Command(systemPython, "-m", "coverage", "json", "--rcfile=rc.ini", "-o", "-")
			cmd.Dir = dir
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("coverage json: %v", err)
			}
			var report struct {
				Files map[string]struct {
					ExecutedLines []int64 `json:"executed_lines"`
				} `json:"files"`
			}
			if err := json.Unmarshal(out, &report); err != nil {
				t.Fatal(err)
			}
			byFile := map[string][]int64{}
			for _, r := range got {
				if r.LineTo == nil {
					rel, _ := filepath.Rel(dir, r.File)
					if !slices.Contains(byFile[rel], r.LineFrom) {
						byFile[rel] = append(byFile[rel], r.LineFrom)
					}
				}
			}
			for f, rep := range report.Files {
				slices.Sort(byFile[f])
				if diff := gocmp.Diff(rep.ExecutedLines, byFile[f]); diff != "" {
					t.Errorf("%s: executed lines differ from coverage json (-json +rows):\n%s", f, diff)
				}
			}
		})
	}
}

// TestLargePopulationIsBoundedAndLazy writes 150,000 line hits with coverage.py's own
// CoverageData: the projection stops at MaxProjectionRows, the metrics count them all.
func TestLargePopulationIsBoundedAndLazy(t *testing.T) {
	needCoverage(t)
	path := filepath.Join(t.TempDir(), "big.coverage")
	script := `import sys
from coverage import CoverageData
d = CoverageData(sys.argv[1])
d.add_lines({"/src/big.py": range(1, 150001), "/src/a.py": [1, 2]})
d.write()
`
	if out, err := exec.Command(systemPython, "-c", script, path).CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	a, err := analyze(t, path)
	if err != nil {
		t.Fatal(err)
	}
	if a.Metrics["line_count"] != int64(150002) || a.Metrics["file_count"] != 2 || a.Metrics["has_arcs"] != false {
		t.Errorf("metrics %v", a.Metrics)
	}
	if !slices.ContainsFunc(a.Limitations, func(s string) bool { return strings.HasPrefix(s, "no_branch_data") }) {
		t.Errorf("limitations %v lack no_branch_data", a.Limitations)
	}
	last := int64(providers.MaxProjectionRows - 1)
	p, err := a.Rows.Page(context.Background(), last, 10, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Rows) != 1 || p.More || !p.Limited {
		t.Fatalf("last page: %d rows, more %v, limited %v", len(p.Rows), p.More, p.Limited)
	}
	// /src/a.py sorts first: its 2 lines, then big.py from line 1.
	want := `{"kind":"line_hit","file":"/src/big.py","line_from":99998,"line_to":null,"context":""}`
	if string(p.Rows[0]) != want {
		t.Errorf("row %d = %s, want %s", last, p.Rows[0], want)
	}
	if _, err := a.Rows.Page(context.Background(), last+1, 10, nil); !errors.As(err, new(*providers.OffsetError)) {
		t.Errorf("a page past the bound: %v, want an OffsetError", err)
	}
}

func TestMalformedInputsFailTyped(t *testing.T) {
	dir := t.TempDir()
	corpus, err := os.ReadFile(testtool.Corpus(t, "local__coverage_py_branch.coverage"))
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	sqlite := func(name, script string) string {
		p := filepath.Join(dir, name)
		if out, err := exec.Command(systemPython, "-c", "import sqlite3, sys\nc = sqlite3.connect(sys.argv[1])\nc.executescript(sys.argv[2])\nc.commit()", p, script).CombinedOutput(); err != nil {
			t.Skipf("python3 sqlite3: %v %s", err, out)
		}
		return p
	}
	// The corpus schema with a wrong version.
	schema := "CREATE TABLE coverage_schema (version integer); CREATE TABLE meta (key text, value text, unique (key)); CREATE TABLE file (id integer primary key, path text, unique (path)); CREATE TABLE context (id integer primary key, context text, unique (context)); CREATE TABLE line_bits (file_id integer, context_id integer, numbits blob, unique (file_id, context_id)); CREATE TABLE arc (file_id integer, context_id integer, fromno integer, tono integer, unique (file_id, context_id, fromno, tono)); CREATE TABLE tracer (file_id integer primary key, tracer text);"
	var unsupported *providers.UnsupportedError
	var decode *providers.DecodeError
	for _, tt := range []struct {
		name string
		path string
		want any
	}{
		{"truncated", write("truncated.coverage", corpus[:12288]), &decode},
		{"header only", write("header.coverage", corpus[:100]), &decode},
		{"garbage after the header", write("garbage.coverage", append(append([]byte{}, corpus[:100]...), bytes.Repeat([]byte{0xa5}, 8000)...)), &decode},
		{"empty file", write("empty.coverage", nil), &decode},
		{"not sqlite", write("text.coverage", []byte("hello, this is not a database\n")), &decode},
		{"coverage 4 json", write("old.coverage", []byte(`!coverage.py: This is a private format, don't read it directly!{"lines":{}}`)), &unsupported},
		{"gzip", write("gz.coverage", []byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3}), &unsupported},
		{"empty database", sqlite("emptydb.coverage", "PRAGMA user_version = 1;"), &unsupported},
		{"another database", sqlite("other.coverage", "CREATE TABLE t (x integer); INSERT INTO t VALUES (1);"), &unsupported},
		{"wrong schema version", sqlite("schema6.coverage", schema+"INSERT INTO coverage_schema VALUES (6);"), &unsupported},
		{"unknown context", sqlite("ctx.coverage", schema+"INSERT INTO coverage_schema VALUES (7); INSERT INTO meta VALUES ('has_arcs', '1'); INSERT INTO file VALUES (1, '/a.py'); INSERT INTO arc VALUES (1, 9, 1, 2);"), &decode},
		{"bad has_arcs", sqlite("hasarcs.coverage", schema+"INSERT INTO coverage_schema VALUES (7); INSERT INTO meta VALUES ('has_arcs', 'yes');"), &decode},
		// A numbits column SQLite would compute on read (400 MB per row) is refused before
		// any query reads it.
		{"computed numbits", sqlite("computed.coverage", strings.Replace(schema, "numbits blob,", "numbits blob AS (zeroblob(400000000)),", 1)+
			"INSERT INTO coverage_schema VALUES (7); INSERT INTO meta VALUES ('has_arcs', '0'); INSERT INTO file VALUES (1, '/a.py'); INSERT INTO context VALUES (1, ''); INSERT INTO line_bits (file_id, context_id) VALUES (1, 1);"), &unsupported},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := analyze(t, tt.path)
			switch want := tt.want.(type) {
			case **providers.DecodeError:
				if !errors.As(err, want) {
					t.Fatalf("error %T %v, want a DecodeError", err, err)
				}
			case **providers.UnsupportedError:
				if !errors.As(err, want) {
					t.Fatalf("error %T %v, want an UnsupportedError", err, err)
				}
			}
			if msg := err.Error(); strings.Contains(msg, dir) || strings.Contains(strings.ToLower(msg), "sqlite_") || strings.Contains(msg, "(11)") {
				t.Errorf("message %q names a host path or driver text", msg)
			}
		})
	}
}

func TestEmptyDataFileHasNoRows(t *testing.T) {
	needCoverage(t)
	path := filepath.Join(t.TempDir(), ".coverage")
	// coverage.py writes its schema with no measured data when nothing was recorded.
	if out, err := exec.Command(systemPython, "-c", "import sys\nfrom coverage import CoverageData\nd = CoverageData(sys.argv[1])\nd.add_lines({})\nd.write()", path).CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	a, err := analyze(t, path)
	if err != nil {
		t.Fatal(err)
	}
	if got := providerstest.Decode[row](t, providerstest.Rows(t, a.Rows, 10)); len(got) != 0 || a.Metrics["line_count"] != int64(0) {
		t.Errorf("rows %v, metrics %v", got, a.Metrics)
	}
	if !slices.ContainsFunc(a.Limitations, func(s string) bool { return strings.HasPrefix(s, "no_coverage_recorded") }) {
		t.Errorf("limitations %v", a.Limitations)
	}
}

func TestNumbits(t *testing.T) {
	var got []int64
	numbits([]byte{0b0000_0110, 0, 0b1000_0001}, func(l int64) { got = append(got, l) })
	if diff := gocmp.Diff([]int64{1, 2, 16, 23}, got); diff != "" {
		t.Error(diff)
	}
}

func TestDetector(t *testing.T) {
	head := append([]byte("SQLite format 3\x00"), make([]byte, 84)...)
	for _, tt := range []struct {
		name string
		head []byte
		want bool
	}{
		{".coverage", head, true},
		{".coverage.myhost.1234.xyzzy", head, true},
		{"run.coverage", head, true},
		{"app.db", head, false},
		{".coverage", []byte("!coverage.py: This is"), false},
	} {
		if got := detector.Match(tt.name, tt.head); got != tt.want {
			t.Errorf("Match(%q) = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestCommand(t *testing.T) {
	o := &gen.CoverageProvider{Kind: "coverage", Branch: true, Source: []string{"pkg", "tools"}, Omit: []string{"*/tests/*"}}
	dir := t.TempDir()
	got := command(o, nil, providers.Case{Argv: []string{"python3", "-m", "pytest", "-q"}}, dir)
	want := []string{"python3", "-m", "coverage", "run", "--data-file", filepath.Join(dir, ".coverage"), "--rcfile", filepath.Join(dir, "coverage.ini"),
		"--branch", "--source=pkg,tools", "--omit=*/tests/*", "-m", "pytest", "-q"}
	if diff := gocmp.Diff(want, got); diff != "" {
		t.Error(diff)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "coverage.ini")); err != nil || !strings.Contains(string(b), "parallel = False") {
		t.Errorf("coverage.ini: %q, %v", b, err)
	}
}

func TestAdmitRefusesArgv(t *testing.T) {
	field := []any{"target", "argv"}
	for _, tt := range []struct {
		argv []string
		at   int
	}{
		{[]string{"/bin/echo", "x.py"}, 0},
		{[]string{"python3"}, 1},
		{[]string{"python3", "-c", "print(1)"}, 1},
		{[]string{"python3", "-m"}, 2},
	} {
		_, err := admit([]providers.Case{{Argv: tt.argv, ArgvField: field}})
		var fe *providers.FieldError
		if !errors.As(err, &fe) {
			t.Fatalf("%v: error %v, want a FieldError", tt.argv, err)
		}
		if diff := gocmp.Diff([]any{"target", "argv", tt.at}, fe.Field); diff != "" {
			t.Errorf("%v: field %s", tt.argv, diff)
		}
	}
}

func TestAdmitProbesTheWorkloadInterpreter(t *testing.T) {
	needCoverage(t)
	if _, err := admit([]providers.Case{{Argv: []string{systemPython, "x.py"}}}); err != nil {
		t.Fatalf("Debian's python3 with python3-coverage: %v", err)
	}
	// A virtual environment without system packages is asked as the workload names it.
	venv := filepath.Join(t.TempDir(), "venv")
	if out, err := exec.Command(systemPython, "-m", "venv", "--without-pip", venv).CombinedOutput(); err != nil {
		t.Skipf("venv: %v %s", err, out)
	}
	_, err := admit([]providers.Case{{Argv: []string{filepath.Join(venv, "bin", "python3"), "x.py"}}})
	var ue *providers.UnavailableError
	if !errors.As(err, &ue) || ue.Remediation == "" || ue.Module != "coverage" {
		t.Fatalf("error %v, want UNAVAILABLE_CAPABILITY with a remediation", err)
	}
}
