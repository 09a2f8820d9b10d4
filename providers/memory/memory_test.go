package memory

import (
	"cmp"
	"encoding/json"
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

// analyze ranks the allocations of the profile at path.
func analyze(t *testing.T, path string, format gen.Format, sampleType *string) (*providers.Analysis, error) {
	t.Helper()
	return providerstest.Analyze(t, rankAllocations, &gen.AllocationFields{SampleType: sampleType}, providerstest.Input(t, path, format))
}

// heapTruth computes the rows with python3's json module (testdata/heaptruth.py).
func heapTruth(t *testing.T, path string) (rows []map[string]any, total, samples float64) {
	t.Helper()
	return heapTruthOrdered(t, path, "inclusive")
}

// heapTruthOrdered computes the rows in the given order (inclusive or self).
func heapTruthOrdered(t *testing.T, path, order string) (rows []map[string]any, total, samples float64) {
	t.Helper()
	py := testtool.Require(t, "python3")
	out, err := exec.Command(py, "testdata/heaptruth.py", path, order).Output()
	if err != nil {
		t.Fatalf("heaptruth.py: %v", err)
	}
	var v struct {
		Rows        []map[string]any `json:"rows"`
		TotalBytes  float64          `json:"total_bytes"`
		SampleCount float64          `json:"sample_count"`
	}
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatal(err)
	}
	return v.Rows, v.TotalBytes, v.SampleCount
}

// TestHeapProfileMatchesPython checks every row of the three corpus profiles (current
// shape, real empty, Node 10 shape) against python3's json module on the same file.
func TestHeapProfileMatchesPython(t *testing.T) {
	for _, name := range []string{"local__node_heap_prof_interval4096.heapprofile", "local__node_heap_prof_default_empty.heapprofile",
		"speedscope__node10_sampling_heap.heapprofile"} {
		t.Run(name, func(t *testing.T) {
			path := testtool.Corpus(t, name)
			a, err := analyze(t, path, gen.FormatHeapprofile, nil)
			if err != nil {
				t.Fatal(err)
			}
			got := providerstest.Maps(t, providerstest.Rows(t, a.Rows, 100))
			want, total, samples := heapTruth(t, path)
			if got == nil {
				got = []map[string]any{}
			}
			if diff := gocmp.Diff(want, got); diff != "" {
				t.Errorf("rows differ from python (-python +flameox):\n%s", diff)
			}
			if a.Metrics["total_bytes"] != int64(total) {
				t.Errorf("total_bytes %v, python %v", a.Metrics["total_bytes"], total)
			}
			if sc, ok := a.Metrics["sample_count"].(int64); ok && sc != int64(samples) {
				t.Errorf("sample_count %v, python %v", sc, samples)
			}
		})
	}
	// The empty profile is a complete result with no rows.
	a, err := analyze(t, testtool.Corpus(t, "local__node_heap_prof_default_empty.heapprofile"), gen.FormatHeapprofile, nil)
	if err != nil || len(providerstest.Maps(t, providerstest.Rows(t, a.Rows, 100))) != 0 || a.Metrics["node_count"] != 1 {
		t.Errorf("empty profile: %v %v", err, a)
	}
	// The Node 10 shape has no samples: counts are null.
	a, err = analyze(t, testtool.Corpus(t, "speedscope__node10_sampling_heap.heapprofile"), gen.FormatHeapprofile, nil)
	if err != nil || providerstest.Maps(t, providerstest.Rows(t, a.Rows, 100))[0]["allocation_count"] != nil || a.Metrics["sample_count"] != nil {
		t.Errorf("node 10 profile: %v %v", err, a.Metrics)
	}
}

// TestHeapProfileOrderMatchesPython ranks the corpus profiles in both orders and compares
// every row with python3's ranking of the same file; the default is the inclusive order.
func TestHeapProfileOrderMatchesPython(t *testing.T) {
	for _, name := range []string{"local__node_heap_prof_interval4096.heapprofile", "speedscope__node10_sampling_heap.heapprofile"} {
		for _, order := range []string{"self", "inclusive", ""} {
			t.Run(name+"/"+cmp.Or(order, "default"), func(t *testing.T) {
				path := testtool.Corpus(t, name)
				a, err := providerstest.Analyze(t, rankAllocations, &gen.AllocationFields{Order: order}, providerstest.Input(t, path, gen.FormatHeapprofile))
				if err != nil {
					t.Fatal(err)
				}
				got := providerstest.Maps(t, providerstest.Rows(t, a.Rows, 100))
				want, _, _ := heapTruthOrdered(t, path, cmp.Or(order, "inclusive"))
				if diff := gocmp.Diff(want, got); diff != "" {
					t.Errorf("rows differ from python (-python +flameox):\n%s", diff)
				}
				// By self bytes the first row allocates; by inclusive bytes it is the
				// outermost caller, which allocates nothing itself.
				if first := got[0]; (order == "self") != (first["self_bytes"].(float64) > 0) {
					t.Errorf("order %q: first row %v", order, first)
				}
			})
		}
	}
	// Any other order is a FieldError naming the field and the accepted values.
	_, err := providerstest.Analyze(t, rankRetained, &gen.RetainedFields{Order: "flat"},
		providerstest.Input(t, testtool.Corpus(t, "local__node_heap_prof_interval4096.heapprofile"), gen.FormatPprof))
	var fe *providers.FieldError
	if !errors.As(err, &fe) || !slices.Equal(fe.Accepted, []string{"self", "inclusive"}) || fe.Field[0] != "order" {
		t.Errorf("order flat: %v", err)
	}
}

// TestHeapProfileMalformed: every truncation of a real profile, and wrong shapes, fail
// with a typed error that names no host path.
func TestHeapProfileMalformed(t *testing.T) {
	b, err := os.ReadFile(testtool.Corpus(t, "local__node_heap_prof_interval4096.heapprofile"))
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]string{
		"not json":    "hello",
		"array":       "[]",
		"no head":     `{"samples":[]}`,
		"bad node":    `{"head":{"callFrame":{"functionName":"x"},"selfSize":"big","children":[]}}`,
		"negative":    `{"head":{"callFrame":{"functionName":"x"},"selfSize":-1,"children":[]}}`,
		"no frame":    `{"head":{"selfSize":1,"children":[]}}`,
		"dup id":      `{"head":{"callFrame":{},"selfSize":0,"id":1,"children":[{"callFrame":{},"selfSize":0,"id":1}]}}`,
		"sample":      `{"head":{"callFrame":{},"selfSize":0,"id":1},"samples":[{"size":1}]}`,
		"trailing":    `{"head":{"callFrame":{},"selfSize":0,"id":1}} {}`,
		"two heads":   `{"head":{"callFrame":{},"selfSize":0},"head":{"callFrame":{},"selfSize":0}}`,
		"deep":        strings.Repeat(`{"callFrame":{},"selfSize":0,"children":[`, maxHeapDepth+2),
		"fractional":  `{"head":{"callFrame":{},"selfSize":1.5}}`,
		"child shape": `{"head":{"callFrame":{},"selfSize":0,"children":{}}}`,
	}
	for _, n := range []int{1, 10, len(b) / 3, len(b) / 2, len(b) - 2} {
		cases["truncated at "+strconv.Itoa(n)] = string(b[:n])
	}
	cases["deep"] = `{"head":` + cases["deep"]
	for name, text := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := DecodeHeapProfile(strings.NewReader(text))
			var de *providers.DecodeError
			var le *providers.LimitError
			if !errors.As(err, &de) && !errors.As(err, &le) {
				t.Fatalf("got %T %v, want a DecodeError or LimitError", err, err)
			}
		})
	}
	// Through the analyzer the error names the source, not the path.
	dir := t.TempDir()
	p := filepath.Join(dir, "cut.heapprofile")
	os.WriteFile(p, b[:len(b)/2], 0o644)
	_, err = analyze(t, p, gen.FormatHeapprofile, nil)
	var de *providers.DecodeError
	if !errors.As(err, &de) || !strings.HasPrefix(de.Message, "source 0: ") || strings.Contains(de.Message, dir) {
		t.Errorf("got %v", err)
	}
	// sample_type is for pprof only.
	st := "alloc_space"
	_, err = analyze(t, testtool.Corpus(t, "local__node_heap_prof_interval4096.heapprofile"), gen.FormatHeapprofile, &st)
	var fe *providers.FieldError
	if !errors.As(err, &fe) {
		t.Errorf("sample_type on a heapprofile: %v", err)
	}
}

// TestHeapProfileNodeCapture profiles a script with node --heap-prof, as the provider
// does, and checks that the allocating function ranks first, against python too.
func TestHeapProfileNodeCapture(t *testing.T) {
	node := testtool.Require(t, "node")
	dir := t.TempDir()
	script := filepath.Join(dir, "alloc.js")
	os.WriteFile(script, []byte(nodeAllocScript), 0o644)
	cmd := exec.Command(node, "--heap-prof", "--heap-prof-dir="+dir, "--heap-prof-name=profile.heapprofile", script)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("node: %v\n%s", err, out)
	}
	prof := filepath.Join(dir, "profile.heapprofile")
	a, err := analyze(t, prof, gen.FormatHeapprofile, nil)
	if err != nil {
		t.Fatal(err)
	}
	rows := providerstest.Maps(t, providerstest.Rows(t, a.Rows, 100))
	want, _, _ := heapTruth(t, prof)
	if diff := gocmp.Diff(want, rows); diff != "" {
		t.Errorf("rows differ from python (-python +flameox):\n%s", diff)
	}
	// allocateRecords allocates the most itself, and only its callers, whose inclusive
	// bytes hold its own, may rank before it: V8's sampler now and then attributes a
	// sample to processTimers itself, which then passes it on inclusive bytes.
	at := -1
	var maxSelf float64
	for i, r := range rows {
		if r["function"] == "allocateRecords" && at < 0 {
			at = i
		}
		if b, _ := r["self_bytes"].(float64); b > maxSelf {
			maxSelf = b
		}
	}
	if at < 0 || rows[at]["self_bytes"] != maxSelf {
		t.Fatalf("rows %v: allocateRecords is not the row with the most self bytes", rows)
	}
	for _, r := range rows[:at] {
		if f := r["function"]; f != "processTimers" && f != "listOnTimeout" {
			t.Fatalf("rows %v: %v ranks before allocateRecords and is not one of its callers", rows, f)
		}
	}
}

// nodeAllocScript allocates about 40 MB in allocateRecords, called straight from a timer
// so that its only callers (processTimers, listOnTimeout) allocate little or nothing
// themselves: they tie with it on inclusive bytes (or pass it by what they allocate)
// and it has the most self bytes.
const nodeAllocScript = `globalThis.kept = [];
function allocateRecords() {
  for (let i = 0; i < 300000; i++) globalThis.kept.push({ index: i, next: i + 1, values: [i, i, i, i] });
}
setTimeout(allocateRecords, 0);
`

// TestHeapProfileRootBytes: bytes the root node itself holds (V8 writes 0; a crafted or
// foreign profile may not) are in total_bytes, in no frame's row, and said.
func TestHeapProfileRootBytes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "root.heapprofile")
	doc := `{"head":{"callFrame":{"functionName":"(root)","scriptId":"0","url":"","lineNumber":-1,"columnNumber":-1},"selfSize":100,"id":1,"children":[` +
		`{"callFrame":{"functionName":"f","scriptId":"3","url":"file:///a.js","lineNumber":4,"columnNumber":2},"selfSize":4096,"id":2,"children":[]}]}}`
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := analyze(t, path, gen.FormatHeapprofile, nil)
	if err != nil {
		t.Fatal(err)
	}
	rows := providerstest.Maps(t, providerstest.Rows(t, a.Rows, 100))
	if a.Metrics["total_bytes"] != int64(4196) || len(rows) != 1 || rows[0]["self_bytes"] != float64(4096) {
		t.Errorf("metrics %v, rows %v", a.Metrics, rows)
	}
	if !strings.Contains(strings.Join(a.Limitations, "\n"), "root node itself holds 100 of the total_bytes") {
		t.Errorf("limitations %q", a.Limitations)
	}
}
