package cpu

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/testtool"
	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/internal/sampled"
	"github.com/flameox/flameox/providers/providerstest"
)

func corpus(t testing.TB, name string) string {
	t.Helper()
	return testtool.Corpus(t, name)
}

func decodePstatsFile(t *testing.T, path string) []PstatsFunction {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fs, err := DecodePstats(f)
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

// pythonName imports pstats and names a function as Flameox does (a code object, which
// profile.py keys its own entry with, as its repr-like form).
const pythonName = `
import pstats, sys
def name(n):
    if isinstance(n, str):
        return n
    return '<code object %s, file "%s", line %d>' % (n.co_name, n.co_filename, n.co_firstlineno)
`

// pythonPstats is what Python's own pstats module reads from path: one line per function
// "file|line|func|cc|nc|tt|ct" and one per caller edge
// "caller file|line|func -> callee file|line|func|nc|cc|tt|ct" (or a bare count).
const pythonPstats = pythonName + `
s = pstats.Stats(sys.argv[1])
for (f, l, n), (cc, nc, tt, ct, callers) in s.stats.items():
    n = name(n)
    print("F", f, l, n, cc, nc, repr(float(tt)), repr(float(ct)), sep="|")
    for (cf, cl, cn), v in callers.items():
        cn = name(cn)
        if isinstance(v, tuple):
            print("E", cf, cl, cn, f, l, n, v[0], v[1], repr(float(v[2])), repr(float(v[3])), sep="|")
        else:
            print("E", cf, cl, cn, f, l, n, v, sep="|")
`

// ours renders decoded functions in the same lines as pythonPstats.
func ours(fs []PstatsFunction) []string {
	var out []string
	for _, f := range fs {
		out = append(out, strings.Join([]string{"F", f.File, strconv.FormatInt(f.Line, 10), f.Function,
			strconv.FormatInt(f.PrimitiveCalls, 10), strconv.FormatInt(f.TotalCalls, 10), pyRepr(f.SelfSeconds), pyRepr(f.CumSeconds)}, "|"))
		for _, e := range f.Callers {
			fields := []string{"E", e.Caller.File, strconv.FormatInt(e.Caller.Line, 10), e.Caller.Function,
				f.File, strconv.FormatInt(f.Line, 10), f.Function, strconv.FormatInt(e.TotalCalls, 10)}
			if e.PrimitiveCalls != nil {
				fields = append(fields, strconv.FormatInt(*e.PrimitiveCalls, 10), pyRepr(*e.SelfSeconds), pyRepr(*e.CumSeconds))
			}
			out = append(out, strings.Join(fields, "|"))
		}
	}
	sort.Strings(out)
	return out
}

// pyRepr formats a float as Python's repr does (shortest round-trip, .0 for integers).
func pyRepr(f float64) string {
	s := strconv.FormatFloat(f, 'g', -1, 64)
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	if strings.Contains(s, "e") {
		// Python writes 1e-05 where Go writes 1e-05 too, but 1.5e-07 likewise; pad the
		// exponent to two digits as Python does.
		mant, exp, _ := strings.Cut(s, "e")
		sign := exp[:1]
		digits := strings.TrimLeft(exp[1:], "0")
		if len(digits) < 2 {
			digits = strings.Repeat("0", 2-len(digits)) + digits
		}
		s = mant + "e" + sign + digits
	}
	return s
}

func pythonLines(t *testing.T, python, path string) []string {
	t.Helper()
	out, err := exec.Command(python, "-c", pythonPstats, path).Output()
	if err != nil {
		t.Fatalf("python pstats: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	sort.Strings(lines)
	return lines
}

// TestPstatsMatchesPython reads the corpus file and files python3 -m cProfile writes
// during the test, and checks every function, call count, time and caller edge against
// Python's own pstats module.
func TestPstatsMatchesPython(t *testing.T) {
	python := testtool.Require(t, "python3")
	dir := t.TempDir()
	workload := filepath.Join(dir, "work.py")
	os.WriteFile(workload, []byte(`
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)

def squares(n):
    return sum(i * i for i in range(n))

def main():
    fib(18)
    for _ in range(3):
        squares(20000)
    sorted(range(1000), key=lambda x: -x)

main()
`), 0o644)
	paths := []string{corpus(t, "gprof2dot__print1.pstats"), testtool.CProfileFile(t, 5000)}
	for _, mod := range []string{"cProfile", "profile"} {
		out := filepath.Join(dir, mod+".pstats")
		if b, err := exec.Command(python, "-m", mod, "-o", out, workload).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", mod, err, b)
		}
		paths = append(paths, out)
	}
	for _, p := range paths {
		t.Run(filepath.Base(p), func(t *testing.T) {
			got := ours(decodePstatsFile(t, p))
			if diff := cmp.Diff(pythonLines(t, python, p), got); diff != "" {
				t.Errorf("differs from Python's pstats (-python +flameox):\n%s", diff)
			}
			if len(got) < 5 {
				t.Errorf("only %d lines decoded", len(got))
			}
		})
	}
}

// pythonTop prints, from Python's own pstats, the first 100 functions sorted by a pstats
// key with the ties broken by file, line and function (as Flameox breaks them), and the
// first 100 caller edges in Flameox's edge order, computed from the same Stats.
const pythonTop = pythonName + `
s = pstats.Stats(sys.argv[1])
if sys.argv[2] == "edges":
    edges = [(caller, callee, v) for callee, (cc, nc, tt, ct, callers) in s.stats.items() for caller, v in callers.items()]
    def key(e):
        caller, callee, v = e
        return (-(v[3] if isinstance(v, tuple) else -1), caller[0], caller[1], callee[0], callee[1], name(caller[2]), name(callee[2]))
    edges.sort(key=key)
    for caller, callee, v in edges[:100]:
        stats = [v[0], v[1], repr(float(v[2])), repr(float(v[3]))] if isinstance(v, tuple) else [v]
        print(caller[0], caller[1], name(caller[2]), callee[0], callee[1], name(callee[2]), *stats, sep="|")
else:
    s.sort_stats(sys.argv[2], "filename", "line", "name")
    for f in s.fcn_list[:100]:
        cc, nc, tt, ct, _ = s.stats[f]
        print(f[0], f[1], name(f[2]), cc, nc, repr(float(tt)), repr(float(ct)), sep="|")
`

// firstRows returns an analysis's first page of 100 rows, decoded.
func firstRows[R any](t *testing.T, a *providers.Analysis, err error) []R {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	page, err := a.Rows.Page(context.Background(), 0, 100, nil)
	if err != nil {
		t.Fatal(err)
	}
	return providerstest.Decode[R](t, page.Rows)
}

// TestPstatsRankingMatchesPython ranks real cProfile output of a generated program of
// 50,000 functions (python3 -m cProfile) by every metric, and lists its caller edges,
// and checks the first 100 rows, in order, against Python's pstats on the same file.
func TestPstatsRankingMatchesPython(t *testing.T) {
	python := testtool.Require(t, "python3")
	path := testtool.CProfileFile(t, 50000)
	in := providerstest.Input(t, path, gen.FormatPstats)
	limits := gen.EffectiveLimits{MaxInputBytes: 1 << 30}
	python100 := func(key string) []string {
		out, err := exec.Command(python, "-c", pythonTop, path, key).Output()
		if err != nil {
			t.Fatalf("python: %v", err)
		}
		return strings.Split(strings.TrimSpace(string(out)), "\n")
	}
	for metric, key := range map[string]string{"self_time_seconds": "tottime", "cumulative_time_seconds": "cumulative",
		"total_calls": "calls", "primitive_calls": "pcalls"} {
		t.Run(metric, func(t *testing.T) {
			a, err := providerstest.AnalyzeLimits(t, rankHotspots, &gen.CpuHotspotFields{Metric: &metric}, limits, in)
			var got []string
			for _, r := range firstRows[gen.CpuHotspotPstatsRow](t, a, err) {
				got = append(got, fmt.Sprintf("%s|%d|%s|%d|%d|%s|%s", r.File, r.Line, r.Function, r.PrimitiveCalls, r.TotalCalls,
					pyRepr(r.SelfTimeSeconds), pyRepr(r.CumulativeTimeSeconds)))
			}
			if diff := cmp.Diff(python100(key), got); diff != "" {
				t.Errorf("first 100 rows differ from Python's pstats (-python +flameox):\n%s", diff)
			}
			if n := a.Metrics["function_count"]; n.(int) < 50000 {
				t.Errorf("function_count %v", n)
			}
		})
	}
	t.Run("edges", func(t *testing.T) {
		a, err := providerstest.AnalyzeLimits(t, inspectCallers, &gen.CpuCallerFields{Direction: "both"}, limits, in)
		var got []string
		for _, r := range firstRows[gen.CpuCallerPstatsRow](t, a, err) {
			line := fmt.Sprintf("%s|%d|%s|%s|%d|%s|%d", r.CallerFile, r.CallerLine, r.CallerFunction, r.CalleeFile, r.CalleeLine, r.CalleeFunction, r.TotalCalls)
			if r.PrimitiveCalls != nil {
				line += fmt.Sprintf("|%d|%s|%s", *r.PrimitiveCalls, pyRepr(*r.SelfTimeSeconds), pyRepr(*r.CumulativeTimeSeconds))
			}
			got = append(got, line)
		}
		if diff := cmp.Diff(python100("edges"), got); diff != "" {
			t.Errorf("first 100 edges differ from Python's pstats (-python +flameox):\n%s", diff)
		}
	})
}

func TestPstatsRejectsPython2AndMalformed(t *testing.T) {
	f, _ := os.Open(corpus(t, "gprof2dot__cProfile-py2.pstats"))
	defer f.Close()
	_, err := DecodePstats(f)
	var de *providers.DecodeError
	if !errors.As(err, &de) || de.Details["python_major_version"] != 2 {
		t.Fatalf("python 2 file: %v", err)
	}
	good, _ := os.ReadFile(corpus(t, "gprof2dot__print1.pstats"))
	tests := map[string][]byte{
		"empty":          nil,
		"truncated":      good[:len(good)/2],
		"trailing data":  append(append([]byte{}, good...), 'N'),
		"not a dict":     {'N'},
		"unknown code":   {'{', '?'},
		"bad reference":  {'{', 'r', 9, 0, 0, 0},
		"wrong shape":    {'{', 'N', 'N', '0'},
		"negative count": {'(', 0xff, 0xff, 0xff, 0xff},
	}
	for name, b := range tests {
		t.Run(name, func(t *testing.T) {
			fs, err := DecodePstats(bytes.NewReader(b))
			var de *providers.DecodeError
			if !errors.As(err, &de) || fs != nil {
				t.Fatalf("got %v, %v; want a DecodeError", fs, err)
			}
		})
	}
}

// wholeValuePstats decodes a pstats file the plain way: the whole marshal value into Go
// values (u.value), then each entry judged as a decoded object is. It is the reference
// the typed reader is checked against.
func wholeValuePstats(b []byte) ([]PstatsFunction, error) {
	u := newUnmarshaler(bytes.NewReader(b))
	v, err := u.value(0)
	if err != nil {
		return nil, err
	}
	if !u.AtEnd() {
		return nil, errors.New("data after the value")
	}
	entries, ok := v.(dict)
	if !ok {
		return nil, errors.New("not a dict")
	}
	d := &pstatsDecoder{u: u, keep: true}
	for i, p := range entries {
		d.count++
		key, err := d.keyFrom(p.key)
		if err != nil {
			d.fail(fmt.Errorf("entry %d: %w", i, err))
		}
		d.entryFrom(i, pstatsRecord{fkey: key}, len(d.callers), p.value)
	}
	if d.bad != nil {
		return nil, d.bad
	}
	return d.table().functions(), nil
}

// TestPstatsTypedReaderMatchesWholeValue checks the typed reader against the whole-value
// decode on every truncation and on single-byte changes (type codes, lengths, the
// reference flag) at every offset of small files: a cProfile and a profile.py file, and
// marshal data with shared key tuples, bare counts and version 2 (no references). Both
// must decode to the same functions, or both fail, with the same message where the
// failure is a malformed entry.
func TestPstatsTypedReaderMatchesWholeValue(t *testing.T) {
	python := testtool.Require(t, "python3")
	dir := t.TempDir()
	script := `
import cProfile, marshal, profile, random, sys
random.seed(5)
keys = [("/src/m%d.py" % (i % 3), i, "f%d" % i) for i in range(6)]
stats = {}
for i, k in enumerate(keys):
    callers = {keys[c]: (random.randint(1, 50), random.randint(1, 50), random.random(), random.random()) for c in random.sample(range(6), 2)}
    if i % 5 == 0:
        callers[keys[(i + 1) % 6]] = 3
    stats[k] = (random.randint(1, 5), random.randint(1, 5), 0.5, 1.5 * i, callers)
open(sys.argv[1] + "/shared.pstats", "wb").write(marshal.dumps(stats))
open(sys.argv[1] + "/v2.pstats", "wb").write(marshal.dumps(stats, 2))
def work():
    return sorted(range(50), key=lambda x: -x)
for mod in (cProfile, profile):
    p = mod.Profile()
    p.runcall(work)
    p.dump_stats(sys.argv[1] + "/" + mod.__name__ + ".pstats")
`
	if out, err := exec.Command(python, "-c", script, dir).CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, name := range []string{"shared.pstats", "v2.pstats", "cProfile.pstats", "profile.pstats"} {
		good, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		var variants [][]byte
		for n := 0; n <= len(good); n++ {
			variants = append(variants, good[:n])
		}
		for off := range good {
			for _, v := range []byte{0, 0xff, '0', 'N', 'r', ')', 'i', 'g', 'l', '[', '{', 's', 'R', 0x80 | ')', 0x80 | 'r', 1, 3} {
				b := append([]byte(nil), good...)
				b[off] = v
				variants = append(variants, b)
			}
		}
		decoded := 0
		for _, b := range variants {
			want, wantErr := wholeValuePstats(b)
			got, gotErr := DecodePstats(bytes.NewReader(b))
			if (wantErr == nil) != (gotErr == nil) {
				t.Fatalf("%s %x: whole value %v, typed reader %v", name, b, wantErr, gotErr)
			}
			if wantErr != nil {
				if strings.HasPrefix(wantErr.Error(), "entry ") && wantErr.Error() != gotErr.Error() {
					t.Fatalf("%s %x: whole value %q, typed reader %q", name, b, wantErr, gotErr)
				}
				continue
			}
			decoded++
			if w, g := ours(want), ours(got); !slices.Equal(w, g) {
				t.Fatalf("%s %x: %s", name, b, cmp.Diff(w, g))
			}
		}
		if decoded < 100 {
			t.Errorf("%s: only %d of %d variants decode", name, decoded, len(variants))
		}
	}
}

func TestSpeedscopeAndVariants(t *testing.T) {
	doc := func(profiles string) string {
		return `{"$schema":"https://www.speedscope.app/file-format-schema.json","shared":{"frames":[{"name":"main","file":"a.py","line":1},{"name":"work","file":"a.py","line":5},{"name":"idle"}]},"profiles":[` + profiles + `]}`
	}
	s, n, err := DecodeSpeedscope(strings.NewReader(doc(`{"type":"sampled","name":"t","unit":"milliseconds","startValue":0,"endValue":4,"samples":[[0,1],[0,1],[0],[]],"weights":[1,1,2,1]}`)), sampled.Options{Edges: true})
	if err != nil || n != 1 {
		t.Fatal(err)
	}
	hs := s.Hotspots()
	if hs[0].Function != "main" || hs[0].SelfWeight != 0.002 || hs[0].InclusiveWeight != 0.004 || s.Unresolved != 1 || s.Unit != "seconds" {
		t.Errorf("hotspots = %+v unresolved %d", hs, s.Unresolved)
	}
	edges := s.CallerEdges("work", "callers")
	if len(edges) != 1 || edges[0].Caller.Function != "main" || edges[0].Samples != 2 {
		t.Errorf("edges = %+v", edges)
	}
	bad := map[string]string{
		"evented":      `{"type":"evented","unit":"none","events":[]}`,
		"bytes":        `{"type":"sampled","unit":"bytes","samples":[],"weights":[]}`,
		"frame index":  `{"type":"sampled","unit":"none","samples":[[7]],"weights":[1]}`,
		"weight count": `{"type":"sampled","unit":"none","samples":[[0]],"weights":[]}`,
	}
	for name, p := range bad {
		if _, _, err := DecodeSpeedscope(strings.NewReader(doc(p)), sampled.Options{Edges: true}); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
	if _, _, err := DecodeSpeedscope(strings.NewReader(`[1,2`), sampled.Options{}); err == nil {
		t.Error("malformed JSON decoded")
	}
}

func TestCollapsedAndPerfScript(t *testing.T) {
	s, err := DecodeCollapsed(strings.NewReader("main;a;b 5\nmain;a 3\n\nmain;c;b 2\n"), sampled.Options{Edges: true})
	if err != nil {
		t.Fatal(err)
	}
	hs := s.Hotspots()
	got := fmt.Sprintf("%s:%v %s:%v", hs[0].Function, hs[0].SelfWeight, hs[1].Function, hs[1].SelfWeight)
	if got != "b:7 a:3" || s.Samples != 10 {
		t.Errorf("hotspots = %s samples %d", got, s.Samples)
	}
	for _, bad := range []string{"main;a x\n", "nocount\n", "main;a -3\n"} {
		if _, err := DecodeCollapsed(strings.NewReader(bad), sampled.Options{}); err == nil {
			t.Errorf("%q decoded", bad)
		}
	}
	script := "prog 1 [000] 1.0: 1 cpu-clock:\n\t 401000 main.burn+0x10 (/bin/prog)\n\t 402000 main.main+0x2 (/bin/prog)\n\nprog 1 [000] 1.1: 1 cpu-clock:\n\t ffff [unknown] ([kernel.kallsyms])\n\n"
	s, err = DecodePerfScript(strings.NewReader(script), sampled.Options{Edges: true})
	if err != nil {
		t.Fatal(err)
	}
	hs = s.Hotspots()
	if s.Samples != 2 || hs[0].Function != "[unknown]" && hs[0].Function != "main.burn" || len(s.Edges) != 1 {
		t.Errorf("perf script: %+v edges %d", hs, len(s.Edges))
	}
	if _, err := DecodePerfScript(strings.NewReader("\t 401000 orphan (/bin/x)\n"), sampled.Options{}); err == nil {
		t.Error("a frame outside a sample decoded")
	}
}

func TestCPUProfile(t *testing.T) {
	doc := `{"nodes":[{"id":1,"callFrame":{"functionName":"(root)","url":"","lineNumber":-1,"columnNumber":-1},"children":[2]},
{"id":2,"callFrame":{"functionName":"main","url":"file:///a.js","lineNumber":0,"columnNumber":0},"children":[3]},
{"id":3,"callFrame":{"functionName":"hot","url":"file:///a.js","lineNumber":4,"columnNumber":2}}],
"startTime":0,"endTime":30,"samples":[3,3,2],"timeDeltas":[0,10,10]}`
	s, err := DecodeCPUProfile(strings.NewReader(doc), sampled.Options{})
	if err != nil {
		t.Fatal(err)
	}
	hs := s.Hotspots()
	if hs[0].Function != "hot" || hs[0].Line != 5 || hs[0].Column != 3 || math.Abs(hs[0].SelfWeight-20e-6) > 1e-15 || s.Unit != "seconds" {
		t.Errorf("hotspots = %+v", hs)
	}
	for _, bad := range []string{`{"nodes":[]}`, `{"nodes":[{"id":1,"callFrame":{},"children":[9]}]}`, `{"nodes":[{"id":1,"callFrame":{}}],"samples":[1],"timeDeltas":[]}`, `nope`} {
		if _, err := DecodeCPUProfile(strings.NewReader(bad), sampled.Options{}); err == nil {
			t.Errorf("%s decoded", bad)
		}
	}
}

// TestEmptyProfilesSayTheyAreEmpty (issue 21, item 9): a sampled profile without a sample
// (an empty collapsed-stacks file, a Speedscope or V8 profile with no samples) is a
// complete result with no rows and the empty-profile limitation, for both operations.
func TestEmptyProfilesSayTheyAreEmpty(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name   string
		format gen.Format
		body   string
	}{
		{"empty.folded", gen.FormatPerf, ""},
		{"none.speedscope.json", gen.FormatPySpy, `{"shared":{"frames":[]},"profiles":[{"type":"sampled","name":"x","unit":"none","startValue":0,"endValue":0,"samples":[],"weights":[]}]}`},
		{"none.cpuprofile", gen.FormatCpuprofile, `{"nodes":[{"id":1,"callFrame":{"functionName":"(root)","url":"","lineNumber":-1,"columnNumber":-1},"children":[]}],"startTime":0,"endTime":1,"samples":[],"timeDeltas":[]}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, c.name)
			os.WriteFile(path, []byte(c.body), 0o600)
			in := providerstest.Input(t, path, c.format)
			limits := gen.EffectiveLimits{MaxInputBytes: 1 << 20}
			a, err := providerstest.AnalyzeLimits(t, rankHotspots, nil, limits, in)
			if rows := allRows[gen.CpuHotspotSampledRow](t, a, err); len(rows) != 0 || !slices.Contains(a.Limitations, emptyProfile) {
				t.Errorf("rank: %d rows, limitations %q", len(rows), a.Limitations)
			}
			a, err = providerstest.AnalyzeLimits(t, inspectCallers, nil, limits, in)
			if err != nil || !slices.Contains(a.Limitations, emptyProfile) {
				t.Errorf("callers: %v, limitations %q", err, a.Limitations)
			}
		})
	}
}
