package static

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/testtool"
	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/providerstest"
)

// truthScript reads a SARIF log with Python's json module and reports, independently of
// the Go reader, what every result holds: counts per run, levels (result.level, else none
// for a kind other than fail, else the rule's default level, else warning), suppressions
// (accepted or without status), the first location's URI decoded and made relative to
// the root, its region, code flows and related locations, the message text with {n}
// placeholders filled, the first fingerprint, and whether any invocation failed.
const truthScript = `
import sys, json, os, re, urllib.parse
path, root = sys.argv[1], sys.argv[2]
doc = json.load(open(path, encoding='utf-8'))
out = {'run_count': len(doc.get('runs') or []), 'result_count': 0, 'suppressed_count': 0,
       'levels': {'error': 0, 'warning': 0, 'note': 0, 'none': 0}, 'failed': False,
       'exit_code': None, 'rows': {}}
for ri, run in enumerate(doc.get('runs') or []):
    drv = run['tool']['driver']
    rules = drv.get('rules') or []
    for inv in run.get('invocations') or []:
        if inv.get('executionSuccessful') is False:
            out['failed'] = True
        if 'exitCode' in inv and (out['exit_code'] in (None, 0)):
            out['exit_code'] = inv['exitCode']
    for i, r in enumerate(run.get('results') or []):
        out['result_count'] += 1
        rule = None
        if 'ruleIndex' in r:
            rule = rules[r['ruleIndex']]
        else:
            rule = next((x for x in rules if x.get('id') == r.get('ruleId')), None)
        level = r.get('level')
        if level is None:
            if r.get('kind', 'fail') != 'fail':
                level = 'none'
            else:
                level = ((rule or {}).get('defaultConfiguration') or {}).get('level', 'warning')
        out['levels'][level] += 1
        sup = any(s.get('status', 'accepted') == 'accepted' for s in r.get('suppressions') or [])
        out['suppressed_count'] += sup
        msg = r['message'].get('text')
        args = r['message'].get('arguments') or []
        msg = re.sub(r'\{(\d+)\}', lambda m: args[int(m.group(1))] if int(m.group(1)) < len(args) else m.group(0), msg)
        file = line = col = end_line = end_col = None
        locs = r.get('locations') or []
        if locs and 'physicalLocation' in locs[0]:
            ph = locs[0]['physicalLocation']
            uri = ph['artifactLocation']['uri']
            u = urllib.parse.urlparse(uri)
            p = urllib.parse.unquote(u.path)
            if root and p.startswith(root + '/'):
                p = os.path.relpath(p, root)
            file = p
            rg = ph.get('region') or {}
            line = rg.get('startLine')
            col = rg.get('startColumn', 1 if line else None)
            end_line = rg.get('endLine', line)
            end_col = rg.get('endColumn')
        fp = None
        for key in ('partialFingerprints', 'fingerprints'):
            if r.get(key):
                fp = r[key][sorted(r[key])[0]]
                break
        out['rows']['%d/%d' % (ri, i)] = {
            'rule_id': r.get('ruleId'), 'level': level, 'message': msg, 'file': file,
            'start_line': line, 'start_column': col, 'end_line': end_line, 'end_column': end_col,
            'suppressed': sup, 'fingerprint': fp, 'code_flow_count': len(r.get('codeFlows') or []),
            'related_location_count': len(r.get('relatedLocations') or []),
            'analyzer': drv['name'], 'kind': r.get('kind', 'fail')}
json.dump(out, sys.stdout)
`

type truthRow struct {
	RuleID               *string `json:"rule_id"`
	Level                string  `json:"level"`
	Message              string  `json:"message"`
	File                 *string `json:"file"`
	StartLine            *int64  `json:"start_line"`
	StartColumn          *int64  `json:"start_column"`
	EndLine              *int64  `json:"end_line"`
	EndColumn            *int64  `json:"end_column"`
	Suppressed           bool    `json:"suppressed"`
	Fingerprint          *string `json:"fingerprint"`
	CodeFlowCount        int64   `json:"code_flow_count"`
	RelatedLocationCount int64   `json:"related_location_count"`
	Analyzer             string  `json:"analyzer"`
	Kind                 string  `json:"kind"`
}

type truth struct {
	RunCount        int64               `json:"run_count"`
	ResultCount     int64               `json:"result_count"`
	SuppressedCount int64               `json:"suppressed_count"`
	Levels          map[string]int64    `json:"levels"`
	Failed          bool                `json:"failed"`
	ExitCode        *int64              `json:"exit_code"`
	Rows            map[string]truthRow `json:"rows"`
}

func pythonTruth(t *testing.T, path, root string) truth {
	t.Helper()
	py := testtool.Require(t, "python3")
	out, err := exec.Command(py, "-c", truthScript, path, root).Output()
	if err != nil {
		t.Fatalf("truth script: %v", err)
	}
	var tr truth
	if err := json.Unmarshal(out, &tr); err != nil {
		t.Fatal(err)
	}
	return tr
}

func inspectFile(t *testing.T, path string, f gen.StaticFields, maxRows int) (*candidates, error) {
	t.Helper()
	o, err := compile(&f)
	if err != nil {
		return nil, err
	}
	return readCandidates(context.Background(), providerstest.Input(t, path, gen.FormatSarif), 0, o, maxRows)
}

func ptr[T any](v T) *T { return &v }

// The corpus, read by the Go reader, agrees with Python's reading of the same files.
func TestCorpusAgainstPython(t *testing.T) {
	for _, tc := range []struct {
		file, root string
		failed     bool
	}{
		{file: "local__flawfinder_2.0.19.sarif"},
		{file: "local__clang14_static_analyzer.sarif", root: "/tmp/wave2-work"},
		{file: "local__clang14_static_analyzer.sarif"},
		{file: "sarif-tutorials__CodeFlows.sarif"},
		{file: "sarif-tutorials__Suppressions.sarif"},
		{file: "sarif-tutorials__Empty_runs.sarif"},
		{file: "sarif-tutorials__Catastrophic_execution_error.sarif", failed: true},
	} {
		t.Run(tc.file+tc.root, func(t *testing.T) {
			path := testtool.Corpus(t, tc.file)
			want := pythonTruth(t, path, tc.root)
			var f gen.StaticFields
			if tc.root != "" {
				f.SourceRoot = &tc.root
			}
			c, err := inspectFile(t, path, f, providers.MaxProjectionRows)
			if err != nil {
				t.Fatal(err)
			}
			m := c.metrics()
			got := truth{RunCount: m["run_count"].(int64), ResultCount: m["result_count"].(int64),
				SuppressedCount: m["suppressed_count"].(int64), Levels: m["level_counts"].(map[string]int64),
				Failed: m["exit_status"] == "failed", ExitCode: m["exit_code"].(*int64), Rows: map[string]truthRow{}}
			for _, r := range c.rows {
				got.Rows[strconv.FormatInt(r.RunIndex, 10)+"/"+strconv.FormatInt(r.ResultIndex, 10)] = truthRow{
					RuleID: r.RuleID, Level: r.Level, Message: r.Message, File: r.File, StartLine: r.StartLine,
					StartColumn: r.StartColumn, EndLine: r.EndLine, EndColumn: r.EndColumn, Suppressed: r.Suppressed,
					Fingerprint: r.Fingerprint, CodeFlowCount: r.CodeFlowCount, RelatedLocationCount: r.RelatedLocationCount,
					Analyzer: r.Analyzer, Kind: r.Kind}
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("Go reader vs Python (-python +go):\n%s", d)
			}
			if want.Failed != tc.failed {
				t.Errorf("python says failed=%v, the test expects %v", want.Failed, tc.failed)
			}
			if c.normalized != c.results || c.invalid != 0 || c.excluded != 0 || c.omitted != 0 {
				t.Errorf("counts: normalized %d of %d, invalid %d, excluded %d, omitted %d", c.normalized, c.results, c.invalid, c.excluded, c.omitted)
			}
			if tc.failed && !strings.Contains(strings.Join(c.limitations(), " "), `analyzer_failed: run 0 (CodeScanner) reports an unsuccessful execution; its results may be incomplete. Its first error notification: "Out of memory."`) {
				t.Errorf("limitations %q do not report the failed run", c.limitations())
			}
		})
	}
}

// Rows come unsuppressed first, then by severity, file, line, rule and log position.
func TestOrder(t *testing.T) {
	c, err := inspectFile(t, testtool.Corpus(t, "local__flawfinder_2.0.19.sarif"), gen.StaticFields{}, 100)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range c.rows {
		got = append(got, r.Level+" "+strconv.FormatInt(*r.StartLine, 10)+" "+*r.RuleID)
	}
	want := []string{"error 8 FF1016", "error 29 FF1014", "note 6 FF1013", "note 9 FF1022", "note 27 FF1013"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("order (-want +got):\n%s", d)
	}
	c, err = inspectFile(t, testtool.Corpus(t, "sarif-tutorials__Suppressions.sarif"), gen.StaticFields{}, 100)
	if err != nil {
		t.Fatal(err)
	}
	var idx []int64
	for _, r := range c.rows {
		idx = append(idx, r.ResultIndex)
	}
	if d := cmp.Diff([]int64{0, 3, 5, 8, 1, 2, 4, 6, 7}, idx); d != "" {
		t.Errorf("suppressed last (-want +got):\n%s", d)
	}
}

func writeLog(t *testing.T, doc string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "log.sarif")
	if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// synthetic is a log exercising rule defaults, message strings, URI bases, artifact
// indices, kinds, baselines and invalid results.
const synthetic = `{"version": "2.1.0", "runs": [{
  "results": [
    {"ruleIndex": 0, "message": {"id": "m", "arguments": ["x", "y"]},
     "locations": [{"physicalLocation": {"artifactLocation": {"uri": "a%20b.c", "uriBaseId": "SRC"}, "region": {"startLine": 3}}}]},
    {"ruleId": "R2", "kind": "pass", "message": {"text": "{{literal}} {1} {0} {7}", "arguments": ["a", "b"]},
     "locations": [{"physicalLocation": {"artifactLocation": {"index": 0}}}], "baselineState": "new",
     "partialFingerprints": {"z": "2", "a": "1"}, "relatedLocations": [{}, {}]},
    {"ruleId": "R1", "message": {"markdown": "**md**"}, "locations": [{"physicalLocation": {"artifactLocation": {"uri": "file:///opt/lib/node_modules/x.js"}}}]},
    {"ruleId": "R1", "message": {"text": "no location"}},
    {"ruleId": "R1", "level": "fatal", "message": {"text": "bad level"}},
    {"ruleId": "R1", "message": {"text": "bad line"}, "locations": [{"physicalLocation": {"artifactLocation": {"uri": "x"}, "region": {"startLine": "3"}}}]},
    {"ruleId": "R1"},
    {"ruleId": "R1", "message": {"text": "zero column"}, "locations": [{"physicalLocation": {"artifactLocation": {"uri": "x"}, "region": {"startLine": 1, "startColumn": 0}}}]},
    {"ruleId": "R1", "message": {"text": "bad index"}, "locations": [{"physicalLocation": {"artifactLocation": {"index": 9}}}]},
    "not an object",
    {"ruleId": "R9", "message": {"text": "unknown base"}, "locations": [{"physicalLocation": {"artifactLocation": {"uri": "k/l.c", "uriBaseId": "NOPE"}}}]}
  ],
  "originalUriBaseIds": {"SRC": {"uri": "src/", "uriBaseId": "ROOT"}, "ROOT": {"uri": "file:///work/proj/"}},
  "artifacts": [{"location": {"uri": "gen/out.c", "uriBaseId": "SRC"}}],
  "tool": {"driver": {"name": "synth", "semanticVersion": "1.2.3", "rules": [
    {"id": "R1", "name": "first-rule", "defaultConfiguration": {"level": "error"}, "messageStrings": {"m": {"text": "use {1} not {0}"}}},
    {"id": "R2", "name": "second"}]}},
  "invocations": [{"executionSuccessful": true, "exitCode": 0}, {"executionSuccessful": true, "exitCode": 3}]
}]}`

func TestNormalize(t *testing.T) {
	c, err := inspectFile(t, writeLog(t, synthetic), gen.StaticFields{SourceRoot: ptr("/work/proj")}, 100)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		I                          int64
		Rule, RuleName, File, Base *string
		Level, Kind, Message       string
		Line, Col, EndLine         *int64
		Fingerprint                *string
		Related                    int64
	}
	var got []row
	for _, r := range c.rows {
		got = append(got, row{I: r.ResultIndex, Rule: r.RuleID, RuleName: r.RuleName, File: r.File, Base: r.BaselineState,
			Level: r.Level, Kind: r.Kind, Message: r.Message, Line: r.StartLine, Col: r.StartColumn, EndLine: r.EndLine,
			Fingerprint: r.Fingerprint, Related: r.RelatedLocationCount})
	}
	want := []row{
		{I: 0, Rule: ptr("R1"), RuleName: ptr("first-rule"), File: ptr("src/a b.c"), Level: "error", Kind: "fail", Message: "use y not x",
			Line: ptr[int64](3), Col: ptr[int64](1), EndLine: ptr[int64](3)},
		{I: 3, Rule: ptr("R1"), RuleName: ptr("first-rule"), Level: "error", Kind: "fail", Message: "no location"},
		{I: 10, Rule: ptr("R9"), File: ptr("k/l.c"), Level: "warning", Kind: "fail", Message: "unknown base"},
		{I: 1, Rule: ptr("R2"), RuleName: ptr("second"), File: ptr("src/gen/out.c"), Base: ptr("new"), Level: "none", Kind: "pass",
			Message: "{literal} b a {7}", Fingerprint: ptr("1"), Related: 2},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("rows (-want +got):\n%s", d)
	}
	m := c.metrics()
	for k, v := range map[string]any{"result_count": int64(11), "normalized_count": int64(4), "invalid_count": int64(6),
		"excluded_count": int64(1), "default_excluded_count": int64(1), "exit_status": "succeeded"} {
		if m[k] != v {
			t.Errorf("%s = %v, want %v", k, m[k], v)
		}
	}
	if code := m["exit_code"].(*int64); code == nil || *code != 3 {
		t.Errorf("exit_code = %v, want 3 (the first non-zero)", code)
	}
	lim := strings.Join(c.limitations(), "\n")
	for _, s := range []string{"invalid_results: 6 results were malformed and skipped; the first, run 0 result 4: its level is not error, warning, note or none.",
		"unresolved_uri_base: 1 results"} {
		if !strings.Contains(lim, s) {
			t.Errorf("limitations lack %q:\n%s", s, lim)
		}
	}
}

func TestFilters(t *testing.T) {
	path := writeLog(t, synthetic)
	clang := testtool.Corpus(t, "local__clang14_static_analyzer.sarif")
	for _, tc := range []struct {
		name               string
		path               string
		f                  gen.StaticFields
		want               []int64
		excluded, defaults int64
	}{
		{name: "defaults", path: path, f: gen.StaticFields{SourceRoot: ptr("/work/proj")}, want: []int64{0, 3, 10, 1}, excluded: 1, defaults: 1},
		{name: "include replaces defaults", path: path, f: gen.StaticFields{IncludePaths: []string{"/opt/**/*.js"}}, want: []int64{2}, excluded: 4},
		{name: "directory prefix", path: path, f: gen.StaticFields{SourceRoot: ptr("/work/proj/"), IncludePaths: []string{"src"}}, want: []int64{0, 1}, excluded: 3},
		{name: "double star", path: path, f: gen.StaticFields{SourceRoot: ptr("/work/proj"), IncludePaths: []string{"**/*.c"}}, want: []int64{0, 10, 1}, excluded: 2},
		{name: "exclude after include", path: path, f: gen.StaticFields{SourceRoot: ptr("/work/proj"), IncludePaths: []string{"**/*.c"}, ExcludePaths: []string{"src/gen"}}, want: []int64{0, 10}, excluded: 3},
		{name: "exclude keeps fileless", path: path, f: gen.StaticFields{SourceRoot: ptr("/work/proj"), ExcludePaths: []string{"**"}}, want: []int64{3}, excluded: 4, defaults: 1},
		{name: "clang relative", path: clang, f: gen.StaticFields{SourceRoot: ptr("/tmp/wave2-work"), IncludePaths: []string{"sarif/*.c"}}, want: []int64{0, 1}},
		{name: "clang absolute glob", path: clang, f: gen.StaticFields{ExcludePaths: []string{"/tmp/*/sarif/vuln.c"}}, want: nil, excluded: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := inspectFile(t, tc.path, tc.f, 100)
			if err != nil {
				t.Fatal(err)
			}
			var got []int64
			for _, r := range c.rows {
				got = append(got, r.ResultIndex)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("kept (-want +got):\n%s", d)
			}
			if c.excluded != tc.excluded || c.defaultExcluded != tc.defaults {
				t.Errorf("excluded %d (default %d), want %d (%d)", c.excluded, c.defaultExcluded, tc.excluded, tc.defaults)
			}
			if c.normalized+c.excluded+c.invalid != c.results {
				t.Errorf("normalized %d + excluded %d + invalid %d != results %d", c.normalized, c.excluded, c.invalid, c.results)
			}
		})
	}
	var fe *providers.FieldError
	if _, err := inspectFile(t, path, gen.StaticFields{ExcludePaths: []string{"ok", "bad["}}, 100); !errors.As(err, &fe) || cmp.Diff([]any{"exclude_paths", 1}, fe.Field) != "" {
		t.Errorf("a malformed glob: %v, want a FieldError at exclude_paths[1]", err)
	}
}

func TestGlob(t *testing.T) {
	for _, tc := range []struct {
		pattern, file string
		want          bool
	}{
		{"src", "src/a.c", true},
		{"src", "src", true},
		{"src", "lib/src/a.c", false},
		{"*.c", "a.c", true},
		{"*.c", "src/a.c", false},
		{"**/*.c", "src/a.c", true},
		{"**/*.c", "a.c", true},
		{"src/**", "src/x/y/z.h", true},
		{"src/**/z.h", "src/z.h", true},
		{"**/gen/**/*.go", "a/gen/b/c/d.go", true},
		{"**/gen/**/*.go", "a/gen/b/c/d.py", false},
		{"/tmp/**", "/tmp/a/b", true},
		{"a?c", "abc/x", true},
		{"[a-c]", "d", false},
	} {
		g, ok := compileGlob(tc.pattern)
		if !ok {
			t.Fatalf("%q does not compile", tc.pattern)
		}
		if got := g.match(tc.file); got != tc.want {
			t.Errorf("%q matches %q: %v, want %v", tc.pattern, tc.file, got, tc.want)
		}
	}
	if _, ok := compileGlob("a/[b"); ok {
		t.Error("a/[b compiles")
	}
}

func TestMalformed(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		want      any
		msg       string
	}{
		{"not json", "{not json", &providers.DecodeError{}, "malformed JSON"},
		{"truncated", `{"version": "2.1.0", "runs": [{"results": [`, &providers.DecodeError{}, "ends before"},
		{"trailing", `{"version": "2.1.0", "runs": []} {}`, &providers.DecodeError{}, "data follows"},
		{"root array", `[]`, &providers.DecodeError{}, "the root is not an object"},
		{"runs object", `{"version": "2.1.0", "runs": {}}`, &providers.DecodeError{}, "runs is not an array"},
		{"run string", `{"version": "2.1.0", "runs": ["x"]}`, &providers.DecodeError{}, "run 0 is not an object"},
		{"driver name number", `{"version": "2.1.0", "runs": [{"tool": {"driver": {"name": 3}}}]}`, &providers.DecodeError{}, "name is not a string"},
		{"version 2.0.0", `{"version": "2.0.0", "runs": []}`, &providers.UnsupportedError{}, `its version is "2.0.0"`},
		{"no version", `{"runs": []}`, &providers.UnsupportedError{}, "its version is absent"},
		{"duplicate key", `{"version": "2.1.0", "version": "2.1.0", "runs": []}`, &providers.DecodeError{}, "malformed JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := inspectFile(t, writeLog(t, tc.doc), gen.StaticFields{}, 100)
			switch tc.want.(type) {
			case *providers.DecodeError:
				var e *providers.DecodeError
				if !errors.As(err, &e) {
					t.Fatalf("err = %v, want a DecodeError", err)
				}
			case *providers.UnsupportedError:
				var e *providers.UnsupportedError
				if !errors.As(err, &e) {
					t.Fatalf("err = %v, want an UnsupportedError", err)
				}
			}
			if !strings.Contains(err.Error(), tc.msg) || strings.Contains(err.Error(), "jsontext") || strings.Contains(err.Error(), os.TempDir()) {
				t.Errorf("message %q: want %q, no library text or host path", err, tc.msg)
			}
		})
	}
}

func TestBounds(t *testing.T) {
	// Rows beyond the bound are counted, not kept; the kept ones are the first in log order.
	var b strings.Builder
	b.WriteString(`{"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "n"}}, "results": [`)
	for i := range 50 {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`{"message": {"text": "m` + strconv.Itoa(i) + `"}}`)
	}
	b.WriteString(`]}]}`)
	path := writeLog(t, b.String())
	c, err := inspectFile(t, path, gen.StaticFields{}, 20)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.rows) != 20 || c.omitted != 30 || c.normalized != 50 || c.rows[19].ResultIndex != 19 {
		t.Errorf("rows %d, omitted %d, normalized %d", len(c.rows), c.omitted, c.normalized)
	}
	if lim := strings.Join(c.limitations(), " "); !strings.Contains(lim, "provider_limit: 30 normalized results beyond the first 20") {
		t.Errorf("limitations %q", lim)
	}
	// max_input_bytes bounds the bytes read.
	o, _ := compile(&gen.StaticFields{})
	_, err = readCandidates(context.Background(), providerstest.Input(t, path, gen.FormatSarif), 1024, o, 100)
	var le *providers.LimitError
	if !errors.As(err, &le) || le.Limit != 1024 {
		t.Errorf("err = %v, want a LimitError at 1024 bytes", err)
	}
	big := providerstest.Input(t, path, gen.FormatSarif)
	big.Size = maxSarifBytes + 1
	if _, err = readCandidates(context.Background(), big, 0, o, 100); !errors.As(err, &le) || le.Limit != maxSarifBytes {
		t.Errorf("err = %v, want a LimitError at the SARIF bound", err)
	}
	// A long message is cut on a rune boundary; placeholders cannot grow it past the bound.
	long := formatMessage(strings.Repeat("é{0}", 400), []string{strings.Repeat("x", 5000)})
	if len(long) > maxMessageBytes || !strings.HasSuffix(long, "...") {
		t.Errorf("message of %d bytes", len(long))
	}
}
