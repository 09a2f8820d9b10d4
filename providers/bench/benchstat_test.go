package bench

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/testtool"
	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/providerstest"
)

// goBenchRuns are the fixed per-run values of two Go benchmark outputs: ns/op, and B/op
// and allocs/op where given. Some series differ clearly, some overlap, some tie, some have
// too few runs for a median interval (under 6) or for any significant test (3 each), one
// has unequal counts and one is long enough for the normal approximation (60 a side).
type goBenchRuns struct {
	name     string
	old, new []float64
	// Constant B/op and allocs/op per side, when reported (0: not reported).
	oldBytes, newBytes, oldAllocs, newAllocs float64
}

func benchstatCorpus() []goBenchRuns {
	big := func(base float64, step, mod int) []float64 {
		v := make([]float64, 60)
		for i := range v {
			v[i] = base + float64((i*step)%mod)
		}
		return v
	}
	return []goBenchRuns{
		{name: "BenchmarkParse-8",
			old:      []float64{1000, 1012, 998, 1005, 1021, 995, 1003, 1010, 999, 1007},
			new:      []float64{802, 811, 799, 805, 820, 797, 803, 808, 800, 806},
			oldBytes: 64, newBytes: 64, oldAllocs: 2, newAllocs: 2},
		{name: "BenchmarkEncode/json-8",
			old:      []float64{500, 510, 495, 505, 520, 498, 502, 515, 507, 493},
			new:      []float64{503, 497, 512, 499, 518, 506, 494, 509, 501, 516},
			oldBytes: 128, newBytes: 96, oldAllocs: 3, newAllocs: 3},
		{name: "BenchmarkEncode/gob-8",
			old: []float64{300, 305, 298, 302, 310},
			new: []float64{350, 355, 348, 352, 360}},
		{name: "BenchmarkHash-8",
			old: []float64{40, 41, 40, 42, 43},
			new: []float64{41, 40, 42, 44, 41}},
		{name: "BenchmarkTiny-8",
			old: []float64{10, 11, 12},
			new: []float64{20, 21, 22}},
		{name: "BenchmarkUneven-8",
			old: []float64{70, 72, 71, 73, 75, 74},
			new: []float64{69, 70, 68, 71, 67, 72, 66, 70}},
		{name: "BenchmarkShifted-8",
			old: []float64{1.25, 1.5, 1.75, 2, 1.5, 1.25, 2.25, 1.5, 1.75},
			new: []float64{1.5, 1.75, 2, 2.25, 2.5, 2, 1.75, 2.25, 2.5}},
		{name: "BenchmarkBig-8", old: big(2000, 37, 101), new: big(1985, 53, 103)},
	}
}

// writeGoBench writes the old or new side of the corpus as `go test -bench` output.
func writeGoBench(t *testing.T, path string, runs []goBenchRuns, side func(goBenchRuns) ([]float64, float64, float64)) {
	t.Helper()
	var b strings.Builder
	b.WriteString("goos: linux\ngoarch: amd64\npkg: example.com/flameox/benchstat\ncpu: Fixed CPU @ 2.00GHz\n")
	for _, r := range runs {
		values, bytes, allocs := side(r)
		for _, v := range values {
			fmt.Fprintf(&b, "%s\t 1000000\t%12s ns/op", r.name, strconv.FormatFloat(v, 'f', -1, 64))
			if bytes > 0 {
				fmt.Fprintf(&b, "\t%8g B/op\t%6g allocs/op", bytes, allocs)
			}
			b.WriteString("\n")
		}
	}
	b.WriteString("PASS\nok  \texample.com/flameox/benchstat\t12.345s\n")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// benchstatCell is one row of benchstat's CSV output for two files.
type benchstatCell struct {
	line                       int // 1-based line of the output, as its warnings cite it
	oldCenter, newCenter       float64
	oldRange, newRange         string // "3%", "∞"
	delta, comparison          string // "-17.20%" or "~"; "p=0.000 n=10"
	oldWarn, newWarn, cmpWarns []string
}

var benchstatWarning = regexp.MustCompile(`^([A-Z]+)(\d+): (.*)$`)

// runBenchstat runs `go tool benchstat -format csv old new` (golang.org/x/perf's benchstat,
// the go.mod tool) and reads its table by unit and row label, with the warnings it writes
// for each cell (cited by spreadsheet column and line: B old, D new, F the comparison).
func runBenchstat(t *testing.T, oldPath, newPath string) map[[2]string]*benchstatCell {
	t.Helper()
	gobin := testtool.Require(t, "go")
	cmd := exec.Command(gobin, "tool", "benchstat", "-format", "csv", oldPath, newPath)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("go tool benchstat: %v\n%s", err, stderr.String())
	}
	cells := map[[2]string]*benchstatCell{}
	byLine := map[int]*benchstatCell{}
	unit := ""
	for i, line := range strings.Split(stdout.String(), "\n") {
		if line == "" {
			continue
		}
		rec, err := csv.NewReader(strings.NewReader(line)).Read()
		if err != nil {
			t.Fatalf("benchstat line %d %q: %v", i+1, line, err)
		}
		if len(rec) >= 3 && rec[0] == "" && rec[2] == "CI" {
			unit = rec[1]
			continue
		}
		if len(rec) < 7 || rec[0] == "" || rec[0] == "geomean" {
			continue
		}
		c := &benchstatCell{line: i + 1, oldRange: rec[2], newRange: rec[4], delta: rec[5], comparison: rec[6]}
		c.oldCenter, _ = strconv.ParseFloat(rec[1], 64)
		c.newCenter, _ = strconv.ParseFloat(rec[3], 64)
		cells[[2]string{unit, rec[0]}] = c
		byLine[i+1] = c
	}
	for _, w := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		m := benchstatWarning.FindStringSubmatch(w)
		if m == nil {
			continue
		}
		line, _ := strconv.Atoi(m[2])
		c := byLine[line]
		if c == nil {
			continue
		}
		switch m[1] {
		case "B":
			c.oldWarn = append(c.oldWarn, m[3])
		case "D":
			c.newWarn = append(c.newWarn, m[3])
		case "F":
			c.cmpWarns = append(c.cmpWarns, m[3])
		}
	}
	return cells
}

// pctRange is benchstat's rendering of an interval around its center (Summary.PctRangeString).
func pctRange(center float64, low, high *float64) string {
	if low == nil || high == nil {
		return "∞"
	}
	if center == 0 {
		return "0%"
	}
	if math.Signbit(center) != math.Signbit(*low) || math.Signbit(center) != math.Signbit(*high) {
		return "?"
	}
	return fmt.Sprintf("%.0f%%", 100*math.Max(*high/center-1, 1-*low/center))
}

// tCritical975 are published two-sided 95% Student's t critical values (NIST/SEMATECH
// e-Handbook 1.3.6.7.2) by degrees of freedom.
var tCritical975 = map[int]float64{2: 4.303, 4: 2.776, 5: 2.571, 7: 2.365, 8: 2.306, 9: 2.262}

// TestCompareMatchesBenchstat: compare_benchmarks on two Go benchmark outputs agrees with
// benchstat (golang.org/x/perf, run as `go tool benchstat`, the independent reader) on every
// matched series: the p-value and n to benchstat's printed precision, "~" exactly when the
// verdict is not significant (and "too few samples" where benchstat says more samples are
// needed), the sign of the delta as the verdict's direction, the medians, and the medians'
// intervals as benchstat prints them (± whole percent, ∞ under six values). The means'
// intervals are mean ± t·s/√n with t from the published table.
func TestCompareMatchesBenchstat(t *testing.T) {
	dir := t.TempDir()
	runs := benchstatCorpus()
	oldPath, newPath := filepath.Join(dir, "old.txt"), filepath.Join(dir, "new.txt")
	writeGoBench(t, oldPath, runs, func(r goBenchRuns) ([]float64, float64, float64) { return r.old, r.oldBytes, r.oldAllocs })
	writeGoBench(t, newPath, runs, func(r goBenchRuns) ([]float64, float64, float64) { return r.new, r.newBytes, r.newAllocs })
	cells := runBenchstat(t, oldPath, newPath)

	oldIn, newIn := providerstest.Input(t, oldPath, gen.FormatGoBench), providerstest.Input(t, newPath, gen.FormatGoBench)
	a, err := providerstest.Analyze(t, compare, &gen.CompareFields{}, oldIn, newIn)
	if err != nil {
		t.Fatal(err)
	}
	if a.Metrics["alpha"] != 0.05 || a.Metrics["confidence_level"] != 0.95 {
		t.Errorf("metrics %v", a.Metrics)
	}
	rows := providerstest.Decode[gen.BenchmarkComparisonRow](t, providerstest.Rows(t, a.Rows, 10))
	// benchstat's units for Flameox's, and the factor from Flameox's values to benchstat's.
	units := map[string]struct {
		name  string
		scale float64
	}{"ns": {"sec/op", 1e-9}, "bytes": {"B/op", 1}, "count": {"allocs/op", 1}}
	verdicts := map[string]int{}
	seen := 0
	for _, r := range rows {
		u := units[r.Unit]
		label := strings.TrimPrefix(r.Benchmark, "Benchmark") + "-" + fmt.Sprint(r.Dimensions["gomaxprocs"])
		c := cells[[2]string{u.name, label}]
		if c == nil {
			t.Errorf("%s %s: benchstat has no row", label, u.name)
			continue
		}
		seen++
		name := label + " " + u.name
		verdicts[r.Verdict]++

		n := fmt.Sprintf("n=%d", r.BaselineCount)
		if r.BaselineCount != r.CandidateCount {
			n = fmt.Sprintf("n=%d+%d", r.BaselineCount, r.CandidateCount)
		}
		want := n
		if r.PValue != 0 {
			want = fmt.Sprintf("p=%0.3f %s", r.PValue, n)
		}
		if c.comparison != want {
			t.Errorf("%s: p-value and n %q, benchstat %q", name, want, c.comparison)
		}
		notSignificant := r.Verdict == "no significant difference" || r.Verdict == "too few samples"
		if (c.delta == "~") != notSignificant || r.Significant == notSignificant {
			t.Errorf("%s: verdict %q (significant %v), benchstat's delta %q", name, r.Verdict, r.Significant, c.delta)
		}
		if c.delta != "~" && (strings.HasPrefix(c.delta, "-") != (r.Verdict == "lower")) {
			t.Errorf("%s: verdict %q, benchstat's delta %q", name, r.Verdict, c.delta)
		}
		needMore := false
		for _, w := range c.cmpWarns {
			needMore = needMore || strings.HasPrefix(w, "need >=")
		}
		if needMore && r.Verdict != "too few samples" || r.BaselineCount == r.CandidateCount && !needMore && r.Verdict == "too few samples" {
			t.Errorf("%s: verdict %q, benchstat's warnings %q", name, r.Verdict, c.cmpWarns)
		}

		for _, side := range []struct {
			what, benchstat string
			median, center  float64
			low, high       *float64
			warns           []string
		}{
			{"baseline", c.oldRange, r.BaselineMedian, c.oldCenter, r.BaselineMedianCiLow, r.BaselineMedianCiHigh, c.oldWarn},
			{"candidate", c.newRange, r.CandidateMedian, c.newCenter, r.CandidateMedianCiLow, r.CandidateMedianCiHigh, c.newWarn},
		} {
			if math.Abs(side.median*u.scale-side.center) > 1e-12*math.Abs(side.center) {
				t.Errorf("%s %s median %v, benchstat %v", name, side.what, side.median, side.center)
			}
			if got := pctRange(side.median, side.low, side.high); got != side.benchstat {
				t.Errorf("%s %s median interval [%v, %v] is %s, benchstat %s", name, side.what, deref(side.low), deref(side.high), got, side.benchstat)
			}
			unbounded := false
			for _, w := range side.warns {
				unbounded = unbounded || strings.HasPrefix(w, "need >= 6 samples for confidence interval")
			}
			if unbounded != (side.low == nil) {
				t.Errorf("%s %s median interval [%v, %v], benchstat's warnings %q", name, side.what, deref(side.low), deref(side.high), side.warns)
			}
		}
	}
	if seen != len(cells) || seen != len(rows) {
		t.Errorf("%d rows matched of %d Flameox rows and %d benchstat rows", seen, len(rows), len(cells))
	}
	// The corpus reaches every verdict.
	for _, v := range []string{"lower", "higher", "no significant difference", "too few samples"} {
		if verdicts[v] == 0 {
			t.Errorf("no series has verdict %q: %v", v, verdicts)
		}
	}

	// summarize_benchmarks's series rows of each source give its side the same figures.
	_, oldSeries := seriesRows(t, []providers.Input{oldIn})
	_, newSeries := seriesRows(t, []providers.Input{newIn})
	if len(oldSeries) != len(rows) || len(newSeries) != len(rows) {
		t.Fatalf("%d and %d series rows for %d comparisons", len(oldSeries), len(newSeries), len(rows))
	}
	for _, r := range rows {
		for side, series := range [][]gen.BenchmarkSeriesRow{oldSeries, newSeries} {
			want := []any{r.BaselineMedian, deref(r.BaselineMedianCiLow), deref(r.BaselineMedianCiHigh), r.BaselineMean, deref(r.BaselineMeanCiLow), deref(r.BaselineMeanCiHigh)}
			if side == 1 {
				want = []any{r.CandidateMedian, deref(r.CandidateMedianCiLow), deref(r.CandidateMedianCiHigh), r.CandidateMean, deref(r.CandidateMeanCiLow), deref(r.CandidateMeanCiHigh)}
			}
			found := 0
			for _, s := range series {
				if s.Benchmark != r.Benchmark || s.Unit != r.Unit || fmt.Sprint(s.Dimensions) != fmt.Sprint(r.Dimensions) {
					continue
				}
				found++
				got := []any{*s.Median, deref(s.MedianCiLow), deref(s.MedianCiHigh), *s.Mean, deref(s.MeanCiLow), deref(s.MeanCiHigh)}
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("%s %s side %d: series figures %v, comparison %v", s.Benchmark, s.Unit, side, got, want)
				}
			}
			if found != 1 {
				t.Errorf("%s %s side %d: %d series rows", r.Benchmark, r.Unit, side, found)
			}
		}
	}

	// The means' intervals: Student's t with the table's critical value.
	for _, r := range rows {
		for _, run := range runs {
			if r.Unit != "ns" || strings.TrimPrefix(run.name, "Benchmark") != strings.TrimPrefix(r.Benchmark, "Benchmark")+"-8" {
				continue
			}
			for _, side := range []struct {
				values    []float64
				mean      float64
				low, high *float64
			}{{run.old, r.BaselineMean, r.BaselineMeanCiLow, r.BaselineMeanCiHigh}, {run.new, r.CandidateMean, r.CandidateMeanCiLow, r.CandidateMeanCiHigh}} {
				tc, ok := tCritical975[len(side.values)-1]
				if !ok {
					continue
				}
				var sum, ss float64
				for _, v := range side.values {
					sum += v
				}
				mean := sum / float64(len(side.values))
				for _, v := range side.values {
					ss += (v - mean) * (v - mean)
				}
				se := math.Sqrt(ss/float64(len(side.values)-1)) / math.Sqrt(float64(len(side.values)))
				if side.low == nil || side.high == nil || math.Abs(side.mean-mean) > 1e-9*mean ||
					math.Abs(*side.high-mean-tc*se) > 0.0005*se+1e-9 || math.Abs(mean-*side.low-tc*se) > 0.0005*se+1e-9 {
					t.Errorf("%s n=%d: mean %v [%v, %v], want %v ± %v·%v", run.name, len(side.values), side.mean, deref(side.low), deref(side.high), mean, tc, se)
				}
			}
		}
	}
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}
