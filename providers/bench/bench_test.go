package bench

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"strings"
	"testing"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/testtool"
	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/providerstest"
)

func corpus(t testing.TB, name string) string {
	t.Helper()
	return testtool.Corpus(t, name)
}

func decodeFile(t *testing.T, path string) []Measurement {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ms, err := DecodePyperf(f, 0)
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

// TestPyperfCorpusFigures checks the series figures of the corpus suites against the
// statistics Python computes from the same JSON (pyperf itself cannot be installed here:
// its mean and median are statistics.mean and statistics.median of the run values).
func TestPyperfCorpusFigures(t *testing.T) {
	python := testtool.Require(t, "python3")
	script := `
import json, statistics, sys
d = json.load(open(sys.argv[1]))
vals = [v for b in d["benchmarks"] for r in b["runs"] for v in r.get("values", [])]
warm = sum(len(r.get("warmups", [])) for b in d["benchmarks"] for r in b["runs"])
print(json.dumps({"n": len(vals), "warmups": warm, "mean": statistics.mean(vals), "median": statistics.median(vals), "unit": d["metadata"].get("unit", "second")}))
`
	for _, name := range []string{"pyperf__telco.json", "pyperf__track_memory.json"} {
		t.Run(name, func(t *testing.T) {
			out, err := exec.Command(python, "-c", script, corpus(t, name)).Output()
			if err != nil {
				t.Fatal(err)
			}
			var want struct {
				N, Warmups   int
				Mean, Median float64
				Unit         string
			}
			json.Unmarshal(out, &want)
			series := Summaries(decodeFile(t, corpus(t, name)))
			if len(series) != 1 {
				t.Fatalf("series = %+v", series)
			}
			s := series[0]
			scale, unit := 1e9, "ns"
			if want.Unit == "byte" {
				scale, unit = 1, "bytes"
			}
			if s.Unit != unit || s.ValueCount != want.N || s.WarmupCount != want.Warmups {
				t.Errorf("unit %s count %d warmups %d, want %s %d %d", s.Unit, s.ValueCount, s.WarmupCount, unit, want.N, want.Warmups)
			}
			// Values are rounded to whole nanoseconds, so allow half a nanosecond.
			if math.Abs(*s.Mean-want.Mean*scale) > 0.5 || math.Abs(*s.Median-want.Median*scale) > 0.5 {
				t.Errorf("mean %v median %v, want %v %v", *s.Mean, *s.Median, want.Mean*scale, want.Median*scale)
			}
		})
	}
}

func TestPyperfVersionsAndGzip(t *testing.T) {
	v5 := `{"version":5,"metadata":{"name":"old","loops":4},"benchmarks":[{"runs":[{"samples":[0.5,0.25],"warmups":[[4,2.0]]}]}]}`
	ms, err := DecodePyperf(strings.NewReader(v5), 0)
	if err != nil {
		t.Fatal(err)
	}
	// Version 5 warmups are raw totals: 2.0 s over 4 loops is 0.5 s per loop.
	if len(ms) != 3 || !ms[0].Warmup || ms[0].Value != 5e8 || ms[1].Value != 5e8 || ms[2].Value != 2.5e8 || ms[1].Loops != 4 {
		t.Errorf("version 5: %+v", ms)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write([]byte(strings.Replace(strings.Replace(v5, `"version":5`, `"version":"1.0"`, 1), "samples", "values", 1)))
	zw.Close()
	ms, err = DecodePyperf(&buf, 0)
	if err != nil || len(ms) != 3 || ms[0].Value != 2e9 {
		t.Errorf("gzip 1.0 (warmups per loop): %+v %v", ms, err)
	}
	counts, err := DecodePyperf(strings.NewReader(`{"version":6,"metadata":{"name":"n","unit":"integer"},"benchmarks":[{"runs":[{"values":[12,13]}]}]}`), 0)
	if err != nil || counts[0].Unit != "count" || !counts[0].Integer || counts[1].Value != 13 {
		t.Errorf("integer unit: %+v %v", counts, err)
	}
	for name, doc := range map[string]string{
		"version 4":    `{"version":4,"benchmarks":[{"runs":[]}]}`,
		"no version":   `{"benchmarks":[{"runs":[]}]}`,
		"not json":     `{"version":`,
		"bad warmup":   `{"version":6,"benchmarks":[{"runs":[{"warmups":[[1]]}]}]}`,
		"no benchmark": `{"version":6,"benchmarks":[]}`,
	} {
		if _, err := DecodePyperf(strings.NewReader(doc), 0); err == nil {
			t.Errorf("%s decoded", name)
		}
	}
}

func TestSamplesDocument(t *testing.T) {
	doc := `{"schema":"flameox.benchmark-samples.v1","producer":{"name":"harness","version":"2"},
"benchmarks":[{"name":"sort","unit":"ms","dimensions":{"n":1000},"loops":10,"warmup_samples":[3],"samples":[1.5,2.5],"trial":"t1","block":"b1"}]}`
	ms, producers, err := DecodeSamples(strings.NewReader(doc), 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 3 || ms[1].Value != 1.5e6 || ms[1].Unit != "ns" || ms[1].Dimensions["n"] != "1000" || ms[1].Input != 2 || producers[0] != "harness@2" {
		t.Errorf("measurements %+v producers %v", ms, producers)
	}
	// Trial and block never split a series.
	other := ms[1]
	other.Trial, other.Block = "t2", "b2"
	if other.Identity() != ms[1].Identity() {
		t.Error("trial or block changed the identity")
	}
	for name, bad := range map[string]string{
		"wrong schema":  `{"schema":"x","benchmarks":[{"name":"a","unit":"ns","samples":[1]}]}`,
		"no samples":    `{"schema":"flameox.benchmark-samples.v1","benchmarks":[{"name":"a","unit":"ns","samples":[]}]}`,
		"unknown field": `{"schema":"flameox.benchmark-samples.v1","benchmarks":[{"name":"a","unit":"ns","samples":[1],"color":"red"}]}`,
		"string value":  `{"schema":"flameox.benchmark-samples.v1","benchmarks":[{"name":"a","unit":"ns","samples":["1"]}]}`,
	} {
		_, _, err := DecodeSamples(strings.NewReader(bad), 0)
		var de *providers.DecodeError
		if !errors.As(err, &de) || de.Details["document_field_path"] == nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestGoBenchAndHyperfineAndNVBench(t *testing.T) {
	out := "goos: linux\npkg: example.com/x\nBenchmarkSort/n=100-8   \t  5000\t    2400 ns/op\t  512 B/op\t  3 allocs/op\nBenchmarkSort/n=100-8   \t  5000\t    2600 ns/op\t  512 B/op\t  3 allocs/op\nPASS\n"
	ms, err := DecodeGoBench(strings.NewReader(out), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 6 || ms[0].Benchmark != "BenchmarkSort" || ms[0].Dimensions["n"] != "100" || ms[0].Dimensions["gomaxprocs"] != "8" ||
		ms[0].Scope != "example.com/x" || ms[0].Loops != 5000 || ms[1].Unit != "bytes" || ms[3].Run != 1 {
		t.Errorf("go bench: %+v", ms)
	}
	if s := Summaries(ms); len(s) != 3 || *s[0].Mean != 2500 {
		t.Errorf("series: %+v", s)
	}
	if _, err := DecodeGoBench(strings.NewReader("PASS\nok\n"), 0); err == nil {
		t.Error("output without results decoded")
	}
	hf := `{"results":[{"command":"fast","times":[0.1,0.3],"parameters":{"n":"4"}}]}`
	ms, err = DecodeHyperfine(strings.NewReader(hf), 1)
	if err != nil || len(ms) != 2 || ms[1].Value != 3e8 || ms[0].Dimensions["n"] != "4" {
		t.Errorf("hyperfine: %+v %v", ms, err)
	}
	nv := `{"benchmarks":[{"name":"copy","states":[{"name":"T=I32","axis_values":[{"name":"T","value":"I32"}],
"summaries":[{"tag":"nv/cold/time/gpu/mean","hint":"duration","data":[{"name":"value","type":"float64","value":"0.000125"}]}]},
{"name":"skip","is_skipped":true}]}]}`
	ms, err = DecodeNVBench(strings.NewReader(nv), 0)
	if err != nil || len(ms) != 1 || ms[0].Value != 125000 || ms[0].Unit != "ns" || ms[0].Dimensions["T"] != "I32" {
		t.Errorf("nvbench: %+v %v", ms, err)
	}
}

func TestScalingFit(t *testing.T) {
	var ms []Measurement
	for _, n := range []float64{10, 20, 40, 80} {
		for rep := 0; rep < 3; rep++ {
			ms = append(ms, Measurement{Benchmark: "quad", Unit: "ns", Value: 3 * n * n, Dimensions: map[string]string{"n": formatF(n)}})
		}
	}
	ms = append(ms, Measurement{Benchmark: "quad", Unit: "ns", Value: 1, Warmup: true, Dimensions: map[string]string{"n": "5"}})
	ms = append(ms, Measurement{Benchmark: "single", Unit: "ns", Value: 7, Dimensions: map[string]string{"n": "10"}})
	fits := Scaling(ms, "n", "")
	if len(fits) != 2 {
		t.Fatalf("fits = %+v", fits)
	}
	q := fits[0]
	if q.Status != "estimated" || math.Abs(*q.Exponent-2) > 1e-9 || math.Abs(*q.Coefficient-3) > 1e-9 || math.Abs(*q.RSquared-1) > 1e-12 || q.PointCount != 4 {
		t.Errorf("quad: %+v", q)
	}
	if s := fits[1]; s.Status != "inconclusive" || *s.Reason != "fewer than two distinct positive input values" || s.Exponent != nil {
		t.Errorf("single: %+v", s)
	}
	if fits := Scaling(ms, "n", "single"); len(fits) != 1 {
		t.Errorf("metric filter: %+v", fits)
	}
}

func formatF(f float64) string {
	b, _ := json.Marshal(f)
	return string(b)
}

func TestCompare(t *testing.T) {
	ms := []Measurement{
		{Input: 0, Benchmark: "a", Unit: "ns", Value: 100}, {Input: 0, Benchmark: "a", Unit: "ns", Value: 300},
		{Input: 1, Benchmark: "a", Unit: "ns", Value: 400},
		{Input: 0, Benchmark: "only-base", Unit: "ns", Value: 1},
		{Input: 1, Benchmark: "a", Unit: "ns", Value: 1, Warmup: true},
	}
	cmps, unmatched, err := Compare(ms, 2, 0, "")
	if err != nil || len(cmps) != 1 || unmatched != 1 || *cmps[0].Ratio != 2 || cmps[0].BaselineMean != 200 || cmps[0].CandidateCount != 1 {
		t.Errorf("compare: %+v %d %v", cmps, unmatched, err)
	}
	ms = append(ms, Measurement{Input: 1, Benchmark: "a", Unit: "ns", Value: math.Inf(1)})
	var nf *NonFiniteError
	if _, _, err := Compare(ms, 2, 0, ""); !errors.As(err, &nf) || nf.Input != 1 {
		t.Errorf("non-finite: %v", err)
	}
}

// TestSuitesMatchPython summarizes and compares the 32 generated pyperf suites (161,280
// values) through the analyzers and checks every series row's figures and every ratio against
// Python's json and statistics on the same files (values are rounded to whole
// nanoseconds, hence the half-nanosecond tolerance).
func TestSuitesMatchPython(t *testing.T) {
	python := testtool.Require(t, "python3")
	paths := suites(t)
	var in []providers.Input
	for _, p := range paths {
		in = append(in, providerstest.Input(t, p, gen.FormatPyperf))
	}
	pythonFigures := func(mode string, out any) {
		b, err := exec.Command(python, append([]string{"-c", pythonSuites, mode}, paths...)...).Output()
		if err != nil {
			t.Fatalf("python: %v", err)
		}
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("summarize", func(t *testing.T) {
		var want map[string][7]float64 // count, warmups, mean, median, stdev, min, max
		pythonFigures("summarize", &want)
		a, series := seriesRows(t, in)
		if len(series) != len(want) || a.Metrics["measurement_count"] != 161280+64512 || a.Metrics["series_count"] != len(want) {
			t.Fatalf("%d series rows, %v measurements, series_count %v; Python has %d series",
				len(series), a.Metrics["measurement_count"], a.Metrics["series_count"], len(want))
		}
		for _, s := range series {
			w, ok := want[s.Benchmark]
			if !ok || len(s.InputIndices) != len(paths) || float64(s.ValueCount) != w[0] || float64(s.WarmupCount) != w[1] {
				t.Fatalf("%s: %d values, %d warmups from %d sources; Python %v", s.Benchmark, s.ValueCount, s.WarmupCount, len(s.InputIndices), w)
			}
			for i, got := range []*float64{s.Mean, s.Median, s.Stdev, s.Min, s.Max} {
				if math.Abs(*got-w[i+2]*1e9) > 0.5 {
					t.Errorf("%s figure %d: %v ns, Python %v s", s.Benchmark, i, *got, w[i+2])
				}
			}
		}
	})
	t.Run("compare", func(t *testing.T) {
		var want map[string][]float64 // ratios of suites 1..31 to suite 0
		pythonFigures("compare", &want)
		a, err := providerstest.Analyze(t, compare, &gen.CompareFields{}, in...)
		if err != nil {
			t.Fatal(err)
		}
		rows := providerstest.Decode[gen.BenchmarkComparisonRow](t, providerstest.Rows(t, a.Rows, 1000))
		if len(rows) != len(want)*(len(paths)-1) {
			t.Fatalf("%d rows, want %d", len(rows), len(want)*(len(paths)-1))
		}
		for _, r := range rows {
			// Means of values rounded to the nanosecond are each within half a nanosecond.
			w := want[r.Benchmark][r.CandidateIndex-1]
			tolerance := w * (0.5/r.BaselineMean + 0.5/r.CandidateMean)
			if r.BaselineIndex != 0 || r.Ratio == nil || math.Abs(*r.Ratio-w) > tolerance {
				t.Errorf("%s candidate %d: ratio %v, Python %v", r.Benchmark, r.CandidateIndex, *r.Ratio, w)
			}
		}
	})
}

// pyperfResult renders what a decoded suite yields: its measurements, or its failure.
func pyperfResult(doc *pyperfDoc, err error) string {
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	err = doc.emit(0, func(m *Measurement) error {
		fmt.Fprintf(&b, "%+v\n", *m)
		return nil
	})
	if err != nil {
		fmt.Fprintf(&b, "error: %v\n", err)
	}
	return b.String()
}

// TestPyperfStreamMatchesWhole checks the streaming pyperf reader against encoding/json
// (wholePyperf) on the corpus suites, a generated one, documents with nulls and unknown
// names, and every truncation and single-byte change of a small suite: where the
// streaming reader takes a document, encoding/json must read the same measurements (or
// the same failure) from it.
func TestPyperfStreamMatchesWhole(t *testing.T) {
	docs := map[string][]byte{"generated": []byte(suiteJSON(3))}
	for _, name := range []string{"pyperf__telco.json", "pyperf__track_memory.json"} {
		b, err := os.ReadFile(corpus(t, name))
		if err != nil {
			t.Fatal(err)
		}
		docs[name] = b
	}
	small := `{"benchmarks":[{"metadata":{"name":"a","loops":2,"extra":[1,{"x":2.5e3}]},"runs":[{"metadata":{"inner_loops":3},"values":[1.5,null,2e-3],"warmups":[[1,0.5],[2,1.25]]},null,{"samples":[3,4]}]},null,{"runs":null}],"metadata":{"unit":"second","name":"suite"},"version":"1.0","other":{"a":[true,false,null]}}`
	docs["nulls"] = []byte(small)
	docs["v5"] = []byte(`{"version":5,"metadata":{"name":"old","loops":4},"benchmarks":[{"runs":[{"samples":[0.5,0.25],"warmups":[[4,2.0]]}]}]}`)
	docs["null warmup"] = []byte(`{"version":6,"benchmarks":[{"runs":[{"values":[1],"warmups":[null]}]}]}`)
	for name, b := range docs {
		want := pyperfResult(wholePyperf(b))
		got, err := streamPyperf(b)
		if err != nil || pyperfResult(got, nil) != want || strings.Contains(want, "error") != (name == "null warmup") {
			t.Errorf("%s: encoding/json reads\n%s\nthe streaming reader (%v)\n%s", name, want, err, pyperfResult(got, err))
		}
	}
	good := []byte(small)
	var variants [][]byte
	for n := 0; n < len(good); n++ {
		variants = append(variants, good[:n])
	}
	for off := range good {
		for _, v := range []byte(`0 "{}[],:n\x80V`) {
			b := append([]byte(nil), good...)
			b[off] = v
			variants = append(variants, b)
		}
	}
	streamed := 0
	for _, b := range variants {
		got, err := streamPyperf(b)
		if errors.Is(err, errNotStreamed) {
			continue
		}
		streamed++
		if want := pyperfResult(wholePyperf(b)); pyperfResult(got, err) != want {
			t.Fatalf("%q: encoding/json reads\n%s\nthe streaming reader\n%s", b, want, pyperfResult(got, err))
		}
	}
	if streamed < 100 {
		t.Errorf("only %d of %d variants streamed", streamed, len(variants))
	}
}

// TestSeriesKeyMatchesIdentity checks that the interned series key tells measurements
// apart exactly as the canonical JSON identity does.
func TestSeriesKeyMatchesIdentity(t *testing.T) {
	base := Measurement{Benchmark: "b", Unit: "ns", Loops: 4, Dimensions: map[string]string{"n": "1", "m": "x"}, Scope: "s", Phase: "p", Worker: "w", Variant: "v"}
	var ms []Measurement
	for _, change := range []func(*Measurement){
		func(m *Measurement) {},
		func(m *Measurement) { m.Benchmark = "c" },
		func(m *Measurement) { m.Unit = "bytes" },
		func(m *Measurement) { m.Loops = 8 },
		func(m *Measurement) { m.AdaptiveLoops = true },
		func(m *Measurement) { m.AdaptiveLoops, m.Loops = true, 9 },
		func(m *Measurement) { m.Dimensions = map[string]string{"m": "x", "n": "1"} },
		func(m *Measurement) { m.Dimensions = map[string]string{"n": "1"} },
		func(m *Measurement) { m.Dimensions = map[string]string{"n": "1", "m": "y"} },
		func(m *Measurement) { m.Dimensions = map[string]string{"1:n": "1", "m": "x"} },
		func(m *Measurement) { m.Dimensions = nil },
		func(m *Measurement) { m.Dimensions = map[string]string{} },
		func(m *Measurement) { m.Scope = "" },
		func(m *Measurement) { m.Phase = "q" },
		func(m *Measurement) { m.Worker = "" },
		func(m *Measurement) { m.Variant = "u" },
		func(m *Measurement) { m.Trial, m.Block, m.Input, m.Value, m.Warmup = "t", "k", 3, 7, true },
	} {
		m := base
		change(&m)
		ms = append(ms, m)
	}
	h := newHeads()
	for i := range ms {
		for j := range ms {
			a, b := &ms[i], &ms[j]
			sameKey := h.series(h.of(a), a.Loops) == h.series(h.of(b), b.Loops)
			if sameID := a.Identity() == b.Identity(); sameKey != sameID {
				t.Errorf("%d, %d: same series key %v, same identity %v (%s, %s)", i, j, sameKey, sameID, a.Identity(), b.Identity())
			}
		}
	}
}
