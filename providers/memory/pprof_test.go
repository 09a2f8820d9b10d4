package memory

import (
	"cmp"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/testtool"
	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/providerstest"
)

// goToolPprofTop runs `go tool pprof -sample_index=<st> -top` and returns flat and cum by
// function name, in bytes (-unit=B) or objects. Names pprof lists as "(inline)" are left
// out, as in package sampled's test: its reader expands inlined calls into their function.
func goToolPprofTop(t *testing.T, path, sampleType string) map[string][2]int64 {
	t.Helper()
	res := map[string][2]int64{}
	for _, e := range goToolPprofList(t, path, sampleType, false) {
		res[e.name] = [2]int64{e.flat, e.cum}
	}
	return res
}

// pprofEntry is one line of go tool pprof -top.
type pprofEntry struct {
	name      string
	flat, cum int64
}

// goToolPprofList runs `go tool pprof -sample_index=<st> -top` (with -cum when cum is set)
// and returns its lines in pprof's order: by flat value, or by cum value with -cum. Names
// pprof lists as "(inline)" are left out.
func goToolPprofList(t *testing.T, path, sampleType string, cum bool) []pprofEntry {
	t.Helper()
	gobin := testtool.Require(t, "go")
	args := []string{"tool", "pprof", "-sample_index=" + sampleType, "-top", "-nodecount=1000000", "-nodefraction=0"}
	if cum {
		args = append(args, "-cum")
	}
	if strings.HasSuffix(sampleType, "_space") {
		args = append(args, "-unit=B")
	}
	out, err := exec.Command(gobin, append(args, path)...).Output()
	if err != nil {
		t.Fatalf("go tool pprof: %v", err)
	}
	var res []pprofEntry
	inline := map[string]bool{}
	started := false
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) >= 5 && f[0] == "flat" {
			started = true
			continue
		}
		if !started || len(f) < 6 {
			continue
		}
		flat, err1 := strconv.ParseInt(strings.TrimSuffix(f[0], "B"), 10, 64)
		cum, err2 := strconv.ParseInt(strings.TrimSuffix(f[3], "B"), 10, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("cannot parse %q", line)
		}
		name := strings.TrimSuffix(strings.Join(f[5:], " "), " (partial-inline)")
		if plain, ok := strings.CutSuffix(name, " (inline)"); ok {
			inline[plain] = true
			continue
		}
		res = append(res, pprofEntry{name, flat, cum})
	}
	return slices.DeleteFunc(res, func(e pprofEntry) bool { return inline[e.name] })
}

// memProfile writes a heap profile with go test -memprofile -memprofilerate=1 on a
// package whose allocate function keeps 64 blocks of 1 MiB and frees 64 more.
func memProfile(t *testing.T) string {
	t.Helper()
	gobin := testtool.Require(t, "go")
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/alloc\n\ngo 1.26\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "alloc_test.go"), []byte(goAllocTest), 0o644)
	prof := filepath.Join(dir, "mem.pprof")
	cmd := exec.Command(gobin, "test", "-memprofile", prof, "-memprofilerate=1", "-o", filepath.Join(dir, "alloc.test"), ".")
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go test: %v\n%s", err, b)
	}
	return prof
}

const goAllocTest = `package alloc

import "testing"

var kept [][]byte

//go:noinline
func allocateKept() { for i := 0; i < 64; i++ { kept = append(kept, make([]byte, 1<<20)) } }

//go:noinline
func allocateFreed() int { n := 0; for i := 0; i < 64; i++ { b := make([]byte, 1<<20); n += len(b) }; return n }

func TestAlloc(t *testing.T) {
	allocateKept()
	if allocateFreed() == 0 { t.Fatal() }
}
`

func rankGo(t *testing.T, path, sampleType string, retained bool) (*providers.Analysis, error) {
	t.Helper()
	return rankGoOrdered(t, path, sampleType, retained, "")
}

// rankGoOrdered ranks a Go heap profile in the given order ("" leaves the field unset).
func rankGoOrdered(t *testing.T, path, sampleType string, retained bool, order string) (*providers.Analysis, error) {
	t.Helper()
	in := providerstest.Input(t, path, gen.FormatPprof)
	var st *string
	if sampleType != "" {
		st = &sampleType
	}
	if retained {
		return providerstest.Analyze(t, rankRetained, &gen.RetainedFields{SampleType: st, Order: order}, in)
	}
	return providerstest.Analyze(t, rankAllocations, &gen.AllocationFields{SampleType: st, Order: order}, in)
}

// rankGroup is the functions a ranking lists at one value, in descending order of value.
type rankGroup struct {
	value int64
	names []string
}

// groups cuts an ordered list of (name, value) into the names of each value, the names
// sorted: rankings that break ties differently give the same groups.
func groups(names []string, values []int64) []rankGroup {
	var out []rankGroup
	for i, n := range names {
		if len(out) == 0 || out[len(out)-1].value != values[i] {
			out = append(out, rankGroup{value: values[i]})
		}
		g := &out[len(out)-1]
		g.names = append(g.names, n)
	}
	for _, g := range out {
		slices.Sort(g.names)
	}
	return out
}

// TestGoHeapOrderMatchesGoToolPprof ranks a go test -memprofile profile in both orders and
// compares the ranking with go tool pprof's own: -top lists functions by flat (self) value,
// -top -cum by cum (inclusive) value. pprof breaks ties by name and Flameox by the other
// value, so the rankings are compared as the functions listed at each value, in order. By
// inclusive value the test's runner (testing.tRunner) comes first; by self value the
// function that allocates.
func TestGoHeapOrderMatchesGoToolPprof(t *testing.T) {
	prof := memProfile(t)
	for _, c := range []struct {
		sampleType string
		retained   bool
		order      string
	}{
		{"alloc_space", false, "self"}, {"alloc_space", false, "inclusive"}, {"alloc_space", false, ""},
		{"alloc_objects", false, "self"}, {"alloc_objects", false, "inclusive"},
		{"inuse_space", true, "self"}, {"inuse_space", true, "inclusive"}, {"inuse_space", true, ""},
		{"inuse_objects", true, "self"}, {"inuse_objects", true, "inclusive"},
	} {
		t.Run(c.sampleType+"/"+cmp.Or(c.order, "default"), func(t *testing.T) {
			a, err := rankGoOrdered(t, prof, c.sampleType, c.retained, c.order)
			if err != nil {
				t.Fatal(err)
			}
			self := c.order == "self"
			truth := goToolPprofList(t, prof, c.sampleType, !self)
			listed := map[string]bool{}
			var wantNames, gotNames []string
			var wantValues, gotValues []int64
			for _, e := range truth {
				listed[e.name] = true
				wantNames = append(wantNames, e.name)
				wantValues = append(wantValues, map[bool]int64{true: e.flat, false: e.cum}[self])
			}
			key := map[bool]string{true: "self_value", false: "inclusive_value"}[self]
			rows := providerstest.Maps(t, providerstest.Rows(t, a.Rows, 100))
			seen := map[string]bool{}
			for i, r := range rows {
				if r["rank"] != float64(i+1) {
					t.Fatalf("row %d has rank %v", i, r["rank"])
				}
				n := r["function"].(string)
				if !listed[n] {
					continue
				}
				if seen[n] {
					t.Fatalf("%s has two rows", n)
				}
				seen[n] = true
				gotNames = append(gotNames, n)
				gotValues = append(gotValues, int64(r[key].(float64)))
			}
			if d := gocmp.Diff(groups(wantNames, wantValues), groups(gotNames, gotValues), gocmp.AllowUnexported(rankGroup{})); d != "" {
				t.Errorf("ranking by %s (-go tool pprof +flameox):\n%s", key, d)
			}
			first := rows[0]["function"].(string)
			if self && !strings.HasPrefix(first, "example.com/alloc.allocate") {
				t.Errorf("by self value %s ranks first, want an allocating function", first)
			}
			if !self && strings.HasPrefix(first, "example.com/alloc.allocate") {
				t.Errorf("by inclusive value the allocating %s ranks first, not one of its callers", first)
			}
		})
	}
}

// TestGoHeapMatchesGoToolPprof compares self and inclusive values per function with go
// tool pprof for the four sample types of a go test -memprofile profile, and checks the
// allocating functions rank as they must.
func TestGoHeapMatchesGoToolPprof(t *testing.T) {
	prof := memProfile(t)
	for _, c := range []struct {
		sampleType string
		retained   bool
	}{{"alloc_space", false}, {"alloc_objects", false}, {"inuse_space", true}, {"inuse_objects", true}, {"", false}, {"", true}} {
		want := c.sampleType
		if want == "" {
			want = map[bool]string{false: "alloc_space", true: "inuse_space"}[c.retained]
		}
		t.Run(want+"/"+strconv.FormatBool(c.sampleType == ""), func(t *testing.T) {
			a, err := rankGo(t, prof, c.sampleType, c.retained)
			if err != nil {
				t.Fatal(err)
			}
			if a.Metrics["sample_type"] != want {
				t.Fatalf("sample_type %v, want %s", a.Metrics["sample_type"], want)
			}
			rows := providerstest.Maps(t, providerstest.Rows(t, a.Rows, 100))
			got := map[string][2]int64{}
			for _, r := range rows {
				n := r["function"].(string)
				v := got[n]
				got[n] = [2]int64{v[0] + int64(r["self_value"].(float64)), v[1] + int64(r["inclusive_value"].(float64))}
			}
			top := goToolPprofTop(t, prof, want)
			if len(top) < 3 {
				t.Fatalf("go tool pprof lists only %v", top)
			}
			for name, w := range top {
				if g := got[name]; g != w {
					t.Errorf("%s: self/inclusive %v, go tool pprof says %v", name, g, w)
				}
			}
			// The known allocating functions: both allocate 64 MiB, one keeps it.
			first := map[string]string{"alloc_space": "example.com/alloc.allocate", "inuse_space": "example.com/alloc.allocateKept"}[want]
			if first != "" {
				var best string
				var self float64
				for _, r := range rows {
					if s := r["self_value"].(float64); s > self {
						best, self = r["function"].(string), s
					}
				}
				if !strings.HasPrefix(best, first) {
					t.Errorf("largest self value is %s, want %s", best, first)
				}
			}
		})
	}
}

// TestGoHeapFieldErrors: a sample type of the other operation is a FieldError; a CPU
// profile is not a heap profile.
func TestGoHeapFieldErrors(t *testing.T) {
	prof := memProfile(t)
	_, err := rankGo(t, prof, "alloc_space", true)
	var fe *providers.FieldError
	if !errors.As(err, &fe) || len(fe.Accepted) != 2 || fe.Accepted[0] != "inuse_space" {
		t.Errorf("alloc_space for retained memory: %v", err)
	}
	_, err = rankGo(t, testtool.Corpus(t, "speedscope__simple.pprof.gz"), "", false)
	var ue *providers.UnsupportedError
	if !errors.As(err, &ue) || !strings.Contains(ue.Message, "alloc_space") {
		t.Errorf("CPU profile: %v", err)
	}
	cut := filepath.Join(t.TempDir(), "cut.pprof")
	b, _ := os.ReadFile(prof)
	os.WriteFile(cut, b[:len(b)/2], 0o644)
	_, err = rankGo(t, cut, "", false)
	var de *providers.DecodeError
	if !errors.As(err, &de) {
		t.Errorf("truncated profile: %v", err)
	}
}
