package coverage

import (
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

// lcovTruthScript reads a tracefile as geninfo(1) describes it, independently of the Go
// reader: the executed lines per file and test name, the instrumented lines, branches
// and functions, and the producer's own per-record LH figures.
const lcovTruthScript = `
import json, re, sys
rows, files, tests, instr, br, fn, lh = set(), set(), set(), set(), {}, {}, []
tn, sf, hit = None, None, 0
for line in open(sys.argv[1], encoding="utf-8"):
    line = line.rstrip("\r\n")
    key, _, v = line.partition(":")
    if key == "TN": tn = v; tests.add(v)
    elif key == "SF": sf = v; files.add(v); hit = 0
    elif line == "end_of_record": sf = None
    elif key == "LH": lh.append([int(v), hit])
    elif key == "DA":
        p = v.split(","); l, c = int(p[0]), int(p[1]); instr.add((sf, l))
        if c > 0:
            hit += 1
            t = "" if tn is None else tn
            tests.add(t); rows.add((sf, l, t))
    elif key == "BRDA":
        l, b, i, t = v.split(","); k = (sf, int(l), b, i)
        br[k] = br.get(k, False) or (t != "-" and int(t) > 0)
    elif key == "FN":
        m = re.match(r"(\d+),(?:(\d+),)?(.*)$", v); fn.setdefault((sf, m.group(3)), False)
    elif key == "FNDA":
        c, name = v.split(",", 1); fn[(sf, name)] = fn.get((sf, name), False) or int(c) > 0
json.dump({"rows": sorted(rows), "files": len(files), "tests": len(tests), "instrumented": len(instr),
    "branches": len(br), "branches_hit": sum(br.values()), "functions": len(fn), "functions_hit": sum(fn.values()),
    "lh": lh}, sys.stdout)
`

type lcovTruth struct {
	Rows         [][]any `json:"rows"`
	Files        int     `json:"files"`
	Tests        int     `json:"tests"`
	Instrumented int64   `json:"instrumented"`
	Branches     int     `json:"branches"`
	BranchesHit  int     `json:"branches_hit"`
	Functions    int     `json:"functions"`
	FunctionsHit int     `json:"functions_hit"`
	LH           [][2]int64
}

// checkLCOV pages every row of the tracefile at path and compares rows and metrics with
// Python's reading of the same file; it returns the rows.
func checkLCOV(t *testing.T, path string) []row {
	t.Helper()
	out, err := exec.Command(testtool.Require(t, "python3"), "-c", lcovTruthScript, path).Output()
	if err != nil {
		t.Fatalf("python3 reading %s: %v", path, err)
	}
	var tr lcovTruth
	if err := json.Unmarshal(out, &tr); err != nil {
		t.Fatal(err)
	}
	// The producer's own LH (lines hit) agrees with its DA records, record by record.
	for _, p := range tr.LH {
		if p[0] != p[1] {
			t.Errorf("a record says LH:%d but has %d DA records with a count above 0", p[0], p[1])
		}
	}
	var want []row
	for _, r := range tr.Rows {
		want = append(want, row{Kind: "line_hit", File: r[0].(string), LineFrom: int64(r[1].(float64)), Context: r[2].(string)})
	}
	slices.SortFunc(want, rowOrder)
	a, err := providerstest.Analyze(t, summarize, &gen.NoFields{}, providerstest.Input(t, path, gen.FormatLcov))
	if err != nil {
		t.Fatal(err)
	}
	got := providerstest.Decode[row](t, providerstest.Rows(t, a.Rows, 5))
	if diff := gocmp.Diff(want, got); diff != "" {
		t.Errorf("rows differ from Python's reading (-want +got):\n%s", diff)
	}
	lines, _ := distinctCounts(want)
	wantMetrics := map[string]any{"file_count": tr.Files, "line_count": lines, "arc_count": int64(0), "has_arcs": false,
		"context_count": tr.Tests, "instrumented_line_count": tr.Instrumented, "branch_count": tr.Branches,
		"branch_hit_count": tr.BranchesHit, "function_count": tr.Functions, "function_hit_count": tr.FunctionsHit}
	if diff := gocmp.Diff(wantMetrics, a.Metrics); diff != "" {
		t.Errorf("metrics differ from Python's reading (-want +got):\n%s", diff)
	}
	return got
}

// nodeLibrary has a taken and an untaken branch and a function no test calls.
const nodeLibrary = `function classify(n) {
  if (n < 0) {
    return "negative";
  }
  if (n === 0) {
    return "zero";
  }
  return "positive";
}
function unused(a, b) {
  return a + b;
}
module.exports = { classify, unused };
`

const nodeTest = `const test = require("node:test");
const { classify } = require("./lib.js");
test("positive", () => { classify(3); });
test("zero", () => { classify(0); });
`

// TestLCOVFromNode reads the tracefile Node's test runner writes (--test-reporter=lcov).
func TestLCOVFromNode(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("CI installs Node.js for the MCP end-to-end client; node is not on PATH")
		}
		t.Skip("node is not on PATH")
	}
	dir := t.TempDir()
	for name, src := range map[string]string{"lib.js": nodeLibrary, "lib.test.js": nodeTest} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(node, "--test", "--experimental-test-coverage", "--test-reporter=lcov",
		"--test-reporter-destination=lcov.info", "lib.test.js")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Skipf("this node writes no LCOV (--test-reporter=lcov needs Node 20.11 or later): %v\n%s", err, out)
	}
	path := filepath.Join(dir, "lcov.info")
	got := checkLCOV(t, path)
	// Lines 3 (negative) and 11 (unused's body) never ran.
	for _, r := range got {
		if r.File == "lib.js" && (r.LineFrom == 3 || r.LineFrom == 11) {
			t.Errorf("line %d of lib.js is listed as executed", r.LineFrom)
		}
	}
	head, _ := os.ReadFile(path)
	if !lcovDetector.Match("lcov.info", head[:min(len(head), 512)]) {
		t.Error("the detector does not recognize Node's tracefile")
	}
}

// TestLCOVFromCoveragePy reads coverage.py's LCOV report and compares its executed lines
// with coverage.py's own data file of the same run.
func TestLCOVFromCoveragePy(t *testing.T) {
	needCoverage(t)
	dir := t.TempDir()
	script := filepath.Join(dir, "prog.py")
	if err := os.WriteFile(script, []byte(program), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"run", "--branch", "prog.py", "7"}, {"lcov", "-o", "coverage.info"}} {
		cmd := exec.Command(systemPython, append([]string{"-m", "coverage"}, args...)...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("coverage %s: %v\n%s", args[0], err, out)
		}
	}
	got := checkLCOV(t, filepath.Join(dir, "coverage.info"))
	_, data := readTruth(t, filepath.Join(dir, ".coverage"))
	var want []row
	for _, r := range data {
		if r.Kind == "line_hit" {
			want = append(want, row{Kind: "line_hit", File: filepath.Base(r.File), LineFrom: r.LineFrom})
		}
	}
	if diff := gocmp.Diff(want, got); diff != "" {
		t.Errorf("the LCOV report's executed lines differ from coverage.py's data file (-data +lcov):\n%s", diff)
	}
}

// TestLCOVTestNamesAndMerging: records of one file under two test names are two contexts;
// a file's records repeated under one name (lcov -a without merging) count once.
func TestLCOVTestNamesAndMerging(t *testing.T) {
	trace := strings.Join([]string{
		"TN:unit",
		"SF:/src/a.c", "FN:1,3,main", "FN:5,helper<int, long>", "FNDA:1,main", "FNDA:0,helper<int, long>",
		"DA:1,4", "DA:2,0", "DA:3,1", "BRDA:2,0,0,1", "BRDA:2,0,1,-", "LF:3", "LH:2", "end_of_record",
		"SF:/src/b.c", "DA:7,2", "end_of_record",
		"TN:integration",
		"SF:/src/a.c", "DA:1,1", "DA:2,3", "BRDA:2,0,1,2", "end_of_record",
		"TN:unit",
		"SF:/src/a.c", "DA:3,9", "DA:9,0", "end_of_record",
		"",
	}, "\n")
	path := filepath.Join(t.TempDir(), "merged.info")
	if err := os.WriteFile(path, []byte(trace), 0o644); err != nil {
		t.Fatal(err)
	}
	got := checkLCOV(t, path)
	if len(got) != 5 {
		t.Errorf("%d rows, want 5 (a.c 1 and 3 in unit, 1 and 2 in integration; b.c 7): %+v", len(got), got)
	}
}

// TestReadersCoverTheCatalog: every format the catalog lists for summarize_coverage has
// a row in the family's reader table, so no accepted format reaches a missing reader.
func TestReadersCoverTheCatalog(t *testing.T) {
	op, ok := gen.LookupOperation(string(gen.OperationNameSummarizeCoverage))
	if !ok {
		t.Fatal("summarize_coverage is not in the catalog")
	}
	for _, f := range op.Formats {
		if readers[f] == nil {
			t.Errorf("format %s has no reader in readers", f)
		}
	}
	if len(readers) != len(op.Formats) {
		t.Errorf("readers has %d rows for the catalog's %d formats", len(readers), len(op.Formats))
	}
}

// TestLCOVMalformed: what is not a tracefile, or is cut short, is a typed failure that
// names the line; what exceeds a bound is a LimitError.
func TestLCOVMalformed(t *testing.T) {
	long := "SF:" + strings.Repeat("x", maxLCOVLine+1)
	for _, c := range []struct {
		name, text, want string
		limit            bool
	}{
		{"empty", "", "holds no SF record", false},
		{"summary only", "TN:\nLF:3\n", "holds no SF record", false},
		{"truncated", "SF:a.js\nDA:1,1\n", "the record of a.js has no end_of_record", false},
		{"outside a record", "TN:\nDA:1,1\n", "line 2: DA: outside a record", false},
		{"nested record", "SF:a\nSF:b\nend_of_record\n", "line 2: SF: a record starts before the record of a ended", false},
		{"stray end", "SF:a\nend_of_record\nend_of_record\n", "line 3: end_of_record outside a record", false},
		{"bad count", "SF:a\nDA:1,many\nend_of_record\n", `line 2: DA: execution count "many" is not an integer`, false},
		{"line zero", "SF:a\nDA:0,1\nend_of_record\n", "line 2: DA: line number 0 is out of range", false},
		{"short DA", "SF:a\nDA:4\nend_of_record\n", "line 2: DA: want <line>,<count>[,<checksum>]", false},
		{"short BRDA", "SF:a\nBRDA:4,0,1\nend_of_record\n", "line 2: BRDA: want <line>,<block>,<branch>,<taken>", false},
		{"not a record line", "SF:a\nhello world\nend_of_record\n", `line 2: "hello world" is not a KEY:value record line`, false},
		{"binary", "\x00\x01\x02\n", "is not a KEY:value record line", false},
		{"long line", long + "\nend_of_record\n", "line 1 is longer than 65536 bytes", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "x.info")
			if err := os.WriteFile(path, []byte(c.text), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := providerstest.Analyze(t, summarize, &gen.NoFields{}, providerstest.Input(t, path, gen.FormatLcov))
			var de *providers.DecodeError
			var le *providers.LimitError
			switch {
			case c.limit && !errors.As(err, &le):
				t.Fatalf("error %v (%T), want a LimitError", err, err)
			case !c.limit && !errors.As(err, &de):
				t.Fatalf("error %v (%T), want a DecodeError", err, err)
			}
			if !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), path) {
				t.Errorf("error %q, want it to say %q and not name the path", err, c.want)
			}
		})
	}
}

// TestLCOVDetector: a tracefile's first record line, not the JSON, SQLite or text of the
// neighbouring formats.
func TestLCOVDetector(t *testing.T) {
	for _, c := range []struct {
		head string
		want bool
	}{
		{"TN:\nSF:lib.js\n", true},
		{"SF:/src/a.c\nDA:1,1\n", true},
		{"\xef\xbb\xbfVER:2.0\nTN:x\n", true},
		{"\nTN:t\n", true},
		{"SQLite format 3\x00", false},
		{`{"version": "2.1.0", "runs": []}`, false},
		{"This is a.info, produced by makeinfo version 6.8 from a.texi.\n", false},
		{"TNT:\n", false},
	} {
		if got := lcovDetector.Match("x.info", []byte(c.head)); got != c.want {
			t.Errorf("Match(%q) = %v, want %v", c.head, got, c.want)
		}
	}
}

// FuzzLCOV: any bytes are read or refused with a typed error, never a panic.
func FuzzLCOV(f *testing.F) {
	f.Add([]byte("TN:\nSF:a.js\nFN:1,f\nFNDA:1,f\nDA:1,1\nBRDA:1,0,0,-\nend_of_record\n"))
	f.Add([]byte("SF:a\nFNL:0,1,3\nFNA:0,2,f\nDA:2,0,abc\nend_of_record\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		path := filepath.Join(t.TempDir(), "f.info")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		d, err := readLCOV(t.Context(), providers.Input{Path: path, Format: gen.FormatLcov}, gen.EffectiveLimits{MaxInputBytes: 1 << 20})
		if err != nil {
			var de *providers.DecodeError
			var le *providers.LimitError
			if !errors.As(err, &de) && !errors.As(err, &le) {
				t.Fatalf("untyped error %T: %v", err, err)
			}
			return
		}
		if int64(len(d.store)) > d.total {
			t.Fatalf("kept %d rows of %d", len(d.store), d.total)
		}
	})
}
