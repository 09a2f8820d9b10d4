package cpu

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/testtool"
	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/providerstest"
)

// pythonFiltered is Python's pstats reading path with the path filters applied in Python:
// a function passes when its file contains one of the includes (when there are any) and
// none of the excludes. The first line holds the whole profile's figures (functions,
// pstats' own total_tt, caller edges) and what the filter left out; then "hotspots" lists
// every passing function sorted as rank_cpu_hotspots ranks by self time, and "edges"
// every edge whose two functions pass, in inspect_cpu_callers's order.
const pythonFiltered = pythonName + `
import json
inc, exc = json.loads(sys.argv[2]), json.loads(sys.argv[3])
ok = lambda f: (not inc or any(x in f for x in inc)) and not any(x in f for x in exc)
s = pstats.Stats(sys.argv[1])
edges = [(caller, callee, v) for callee, (cc, nc, tt, ct, callers) in s.stats.items() for caller, v in callers.items()]
if sys.argv[4] == "edges":
    kept = [e for e in edges if ok(e[0][0]) and ok(e[1][0])]
    print(json.dumps({"functions": len(s.stats), "edges": len(edges), "excluded": len(edges) - len(kept)}))
    def key(e):
        caller, callee, v = e
        return (-(v[3] if isinstance(v, tuple) else -1), caller[0], caller[1], callee[0], callee[1], name(caller[2]), name(callee[2]))
    kept.sort(key=key)
    for caller, callee, v in kept:
        stats = [v[0], v[1], repr(float(v[2])), repr(float(v[3]))] if isinstance(v, tuple) else [v]
        print(caller[0], caller[1], name(caller[2]), callee[0], callee[1], name(callee[2]), *stats, sep="|")
else:
    s.sort_stats("tottime", "filename", "line", "name")
    kept = [f for f in s.fcn_list if ok(f[0])]
    print(json.dumps({"functions": len(s.stats), "total_tt": s.total_tt, "excluded": len(s.stats) - len(kept)}))
    for f in kept:
        cc, nc, tt, ct, _ = s.stats[f]
        print(f[0], f[1], name(f[2]), cc, nc, repr(float(tt)), repr(float(ct)), sep="|")
`

// pythonFilteredLines runs pythonFiltered: the whole profile's figures and the lines.
func pythonFilteredLines(t *testing.T, path string, include, exclude []string, what string) (map[string]float64, []string) {
	t.Helper()
	py := testtool.Require(t, "python3")
	inc, _ := json.Marshal(append([]string{}, include...))
	exc, _ := json.Marshal(append([]string{}, exclude...))
	out, err := exec.Command(py, "-c", pythonFiltered, path, string(inc), string(exc), what).Output()
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			t.Fatalf("python pstats: %v\n%s", err, exit.Stderr)
		}
		t.Fatalf("python pstats: %v", err)
	}
	head, rest, _ := strings.Cut(string(out), "\n")
	var figures map[string]float64
	if err := json.Unmarshal([]byte(head), &figures); err != nil {
		t.Fatal(err)
	}
	lines := []string{}
	if rest = strings.TrimSpace(rest); rest != "" {
		lines = strings.Split(rest, "\n")
	}
	return figures, lines
}

// cprofileWithStdlib runs python3 -m cProfile over a small program of two project files
// (main.py, helper.py) calling into the standard library (json, re, collections) and
// built-ins, and returns the pstats file, the project directory and the standard
// library's directory as Python names it.
func cprofileWithStdlib(t *testing.T) (path, project, stdlib string) {
	t.Helper()
	py := testtool.Require(t, "python3")
	project = t.TempDir()
	files := map[string]string{
		"helper.py": "import json, re\n\ndef encode(n):\n    return json.dumps({\"k\": list(range(n))})\n\ndef parse(s):\n    return re.findall(r\"\\d+\", s)\n",
		"main.py":   "import collections, helper\n\ndef run():\n    c = collections.Counter()\n    for i in range(300):\n        c.update(helper.parse(helper.encode(i % 40)))\n    return c\n\nrun()\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(project, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	path = filepath.Join(t.TempDir(), "run.pstats")
	if out, err := exec.Command(py, "-m", "cProfile", "-o", path, filepath.Join(project, "main.py")).CombinedOutput(); err != nil {
		t.Fatalf("cProfile: %v\n%s", err, out)
	}
	out, err := exec.Command(py, "-c", "import sysconfig; print(sysconfig.get_paths()['stdlib'])").Output()
	if err != nil {
		t.Fatal(err)
	}
	return path, project, strings.TrimSpace(string(out))
}

// TestPathFiltersMatchPython ranks and lists the caller edges of a cProfile run made
// here and of the corpus pstats under include_paths and exclude_paths, and compares every
// row, in order, and the whole profile's figures with Python's pstats reading the same
// file with the same filter applied in Python.
func TestPathFiltersMatchPython(t *testing.T) {
	run, project, stdlib := cprofileWithStdlib(t)
	print1 := corpus(t, "gprof2dot__print1.pstats")
	for _, tt := range []struct {
		name, path       string
		include, exclude []string
		// empty: the filter passes no function of the profile.
		empty bool
	}{
		{name: "run: standard library and built-ins out", path: run, exclude: []string{stdlib, "~"}},
		{name: "run: the project only", path: run, include: []string{project}},
		{name: "run: the project less one file", path: run, include: []string{project}, exclude: []string{"helper.py"}},
		{name: "run: either of two includes", path: run, include: []string{"helper.py", "/json/"}},
		{name: "run: nothing passes", path: run, include: []string{"/no/such/directory/"}, empty: true},
		{name: "print1: built-ins out", path: print1, exclude: []string{"~"}},
		{name: "print1: built-ins only", path: print1, include: []string{"~"}},
		{name: "print1: include and exclude the same", path: print1, include: []string{"test.py"}, exclude: []string{"test.py"}, empty: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in := providerstest.Input(t, tt.path, gen.FormatPstats)
			limits := gen.EffectiveLimits{MaxInputBytes: 1 << 30}

			figures, want := pythonFilteredLines(t, tt.path, tt.include, tt.exclude, "hotspots")
			if (len(want) == 0) != tt.empty || figures["excluded"] == 0 {
				t.Fatalf("python keeps %d of %v functions (%v excluded); the case expects empty=%v and some excluded", len(want), figures["functions"], figures["excluded"], tt.empty)
			}
			a, err := providerstest.AnalyzeLimits(t, rankHotspots, &gen.CpuHotspotFields{IncludePaths: tt.include, ExcludePaths: tt.exclude}, limits, in)
			got := []string{}
			for _, r := range allRows[gen.CpuHotspotPstatsRow](t, a, err) {
				got = append(got, fmt.Sprintf("%s|%d|%s|%d|%d|%s|%s", r.File, r.Line, r.Function, r.PrimitiveCalls, r.TotalCalls,
					pyRepr(r.SelfTimeSeconds), pyRepr(r.CumulativeTimeSeconds)))
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("hotspots differ from Python's pstats with the filter (-python +flameox):\n%s", diff)
			}
			total := a.Metrics["total_self_time_seconds"].(float64)
			if a.Metrics["function_count"] != int(figures["functions"]) || math.Abs(total-figures["total_tt"]) > 1e-12*math.Max(1, total) ||
				a.Metrics["filter_excluded_count"] != int(figures["excluded"]) {
				t.Errorf("metrics %v; python: %v functions, total_tt %v, %v excluded", a.Metrics, figures["functions"], figures["total_tt"], figures["excluded"])
			}
			checkFilterNotes(t, a, tt.empty)

			figures, want = pythonFilteredLines(t, tt.path, tt.include, tt.exclude, "edges")
			a, err = providerstest.AnalyzeLimits(t, inspectCallers, &gen.CpuCallerFields{Direction: "both", IncludePaths: tt.include, ExcludePaths: tt.exclude}, limits, in)
			got = []string{}
			for _, r := range allRows[gen.CpuCallerPstatsRow](t, a, err) {
				line := fmt.Sprintf("%s|%d|%s|%s|%d|%s|%d", r.CallerFile, r.CallerLine, r.CallerFunction, r.CalleeFile, r.CalleeLine, r.CalleeFunction, r.TotalCalls)
				if r.PrimitiveCalls != nil {
					line += fmt.Sprintf("|%d|%s|%s", *r.PrimitiveCalls, pyRepr(*r.SelfTimeSeconds), pyRepr(*r.CumulativeTimeSeconds))
				}
				got = append(got, line)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("caller edges differ from Python's pstats with the filter (-python +flameox):\n%s", diff)
			}
			if a.Metrics["edge_count"] != int(figures["edges"]) || a.Metrics["matching_edge_count"] != len(want) ||
				a.Metrics["filter_excluded_count"] != int(figures["excluded"]) {
				t.Errorf("metrics %v; python: %v edges, %d kept, %v excluded", a.Metrics, figures["edges"], len(want), figures["excluded"])
			}
			checkFilterNotes(t, a, len(want) == 0)
		})
	}
}

// checkFilterNotes checks a filtered result's limitations: what the filter leaves as it
// was, always, and the emptied population exactly when it is empty.
func checkFilterNotes(t *testing.T, a *providers.Analysis, empty bool) {
	t.Helper()
	var said, emptied bool
	for _, l := range a.Limitations {
		said = said || strings.HasPrefix(l, "path_filters: ")
		emptied = emptied || strings.HasPrefix(l, "no_rows_match_filters: ")
	}
	if !said || emptied != empty || slices.Contains(a.Limitations, "No caller edge matches the request.") {
		t.Errorf("limitations %q; want path_filters, and no_rows_match_filters only when empty (%v)", a.Limitations, empty)
	}
}

// allRows runs an analyzer and returns every row, decoded.
func allRows[R any](t *testing.T, a *providers.Analysis, err error) []R {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	return providerstest.Decode[R](t, providerstest.Rows(t, a.Rows, 100))
}

// TestPathFiltersSampled filters the frames of a Speedscope profile (main and work in
// a.py, json in the standard library, a native frame without a file): rows and edges of
// frames outside the filter go, the whole profile's weights stay; perf collapsed stacks,
// which carry no file, refuse the filters.
func TestPathFiltersSampled(t *testing.T) {
	dir := t.TempDir()
	doc := `{"$schema":"https://www.speedscope.app/file-format-schema.json","shared":{"frames":[` +
		`{"name":"main","file":"/app/a.py","line":1},{"name":"work","file":"/app/a.py","line":5},` +
		`{"name":"dumps","file":"/usr/lib/python3/json/__init__.py","line":183},{"name":"memcpy"}]},` +
		`"profiles":[{"type":"sampled","name":"t","unit":"none","startValue":0,"endValue":6,` +
		`"samples":[[0,1],[0,1,2],[0,1,2,3],[0]],"weights":[1,2,3,4]}]}`
	path := filepath.Join(dir, "p.speedscope.json")
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	in := providerstest.Input(t, path, gen.FormatPySpy)
	limits := gen.EffectiveLimits{MaxInputBytes: 1 << 20}
	for _, tt := range []struct {
		name             string
		include, exclude []string
		// hotspots: function:self:inclusive; edges: caller>callee:weight.
		hotspots, edges []string
		excluded        [2]int
	}{
		{"unfiltered", nil, nil,
			[]string{"main:4:10", "memcpy:3:3", "dumps:2:5", "work:1:6"}, []string{"main>work:6", "work>dumps:5", "dumps>memcpy:3"}, [2]int{-1, -1}},
		{"standard library out", nil, []string{"/usr/lib/python3"},
			[]string{"main:4:10", "memcpy:3:3", "work:1:6"}, []string{"main>work:6"}, [2]int{1, 2}},
		{"the application only (a frame without a file passes no include)", []string{"/app/"}, nil,
			[]string{"main:4:10", "work:1:6"}, []string{"main>work:6"}, [2]int{2, 2}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a, err := providerstest.AnalyzeLimits(t, rankHotspots, &gen.CpuHotspotFields{IncludePaths: tt.include, ExcludePaths: tt.exclude}, limits, in)
			var got []string
			for _, r := range allRows[gen.CpuHotspotSampledRow](t, a, err) {
				got = append(got, fmt.Sprintf("%s:%v:%v", r.Function, r.SelfWeight, r.InclusiveWeight))
			}
			if diff := cmp.Diff(tt.hotspots, got); diff != "" {
				t.Errorf("hotspots (-want +got):\n%s", diff)
			}
			if a.Metrics["total_weight"] != 10.0 || a.Metrics["frame_count"] != 4 || excludedCount(a) != tt.excluded[0] {
				t.Errorf("metrics %v; want the whole profile's total 10 and 4 frames, %d excluded", a.Metrics, tt.excluded[0])
			}
			a, err = providerstest.AnalyzeLimits(t, inspectCallers, &gen.CpuCallerFields{Direction: "both", IncludePaths: tt.include, ExcludePaths: tt.exclude}, limits, in)
			got = nil
			for _, r := range allRows[gen.CpuCallerSampledRow](t, a, err) {
				got = append(got, fmt.Sprintf("%s>%s:%v", r.CallerFunction, r.CalleeFunction, r.Weight))
			}
			if diff := cmp.Diff(tt.edges, got); diff != "" {
				t.Errorf("edges (-want +got):\n%s", diff)
			}
			if excludedCount(a) != tt.excluded[1] || a.Metrics["edge_count"] != 3 {
				t.Errorf("metrics %v; want 3 edges in the profile, %d excluded", a.Metrics, tt.excluded[1])
			}
		})
	}

	folded := filepath.Join(dir, "s.folded")
	if err := os.WriteFile(folded, []byte("main;work 3\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, fields := range []gen.CpuHotspotFields{{IncludePaths: []string{"/app/"}}, {ExcludePaths: []string{"libc"}}} {
		_, err := providerstest.AnalyzeLimits(t, rankHotspots, &fields, limits, providerstest.Input(t, folded, gen.FormatPerf))
		var fe *providers.FieldError
		want := "include_paths"
		if fields.IncludePaths == nil {
			want = "exclude_paths"
		}
		if !errors.As(err, &fe) || !cmp.Equal(fe.Field, []any{want}) || slices.Contains(fe.Accepted, string(gen.FormatPerf)) {
			t.Errorf("perf collapsed stacks with %s: %v; want a FieldError at %s", want, err, want)
		}
	}
}

// excludedCount is the filter_excluded_count metric, or -1 when there is none.
func excludedCount(a *providers.Analysis) int {
	if n, ok := a.Metrics["filter_excluded_count"].(int); ok {
		return n
	}
	return -1
}
