// Package bench decodes benchmark results (pyperf suites, Flameox benchmark-samples
// documents, NVBench JSON, hyperfine JSON exports and Go benchmark text) into one
// measurement model, and computes series summaries, log-log scaling fits and paired
// comparisons over it.
package bench

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/flameox/flameox/internal/stats"
)

// Measurement is one benchmark value.
type Measurement struct {
	Input     int
	Benchmark string
	// Unit after normalization: ns, bytes, count, or the source's own unit.
	Unit string
	// Value is the value per loop iteration in Unit; Integer reports whether it is exact.
	Value   float64
	Integer bool
	// Run and Index locate the value in its source (worker run, value within the run).
	Run, Index int
	Loops      int64
	// AdaptiveLoops marks loop counts the harness chose itself (Go's b.N): reported, but
	// not part of the identity.
	AdaptiveLoops bool
	Warmup        bool
	// Identity fields besides Benchmark and Unit.
	Dimensions map[string]string
	Scope      string
	Phase      string
	Worker     string
	Variant    string
	// Trial and Block are recorded but never part of the identity.
	Trial, Block string
}

// Identity is the series key of a measurement: benchmark, unit, dimensions, scope,
// phase, loop count, worker and variant (trial and block excluded), as canonical JSON.
// Summaries, fits and comparisons key series by an interned index of the same fields
// instead (seriesKey).
func (m Measurement) Identity() string {
	loops := m.Loops
	if m.AdaptiveLoops {
		loops = 0
	}
	dims := m.Dimensions
	if dims == nil {
		dims = map[string]string{}
	}
	b, _ := json.Marshal(struct {
		Benchmark  string            `json:"benchmark"`
		Unit       string            `json:"unit"`
		Dimensions map[string]string `json:"dimensions"`
		Scope      string            `json:"scope"`
		Phase      string            `json:"phase"`
		Loops      int64             `json:"loops"`
		Worker     string            `json:"worker"`
		Variant    string            `json:"variant"`
	}{m.Benchmark, m.Unit, dims, m.Scope, m.Phase, loops, m.Worker, m.Variant})
	return string(b)
}

// MaxMeasurements bounds the measurements of one request.
const MaxMeasurements = 5_000_000

// Series summarizes the non-warmup values of one identity.
type Series struct {
	Benchmark   string            `json:"benchmark"`
	Unit        string            `json:"unit"`
	Dimensions  map[string]string `json:"dimensions"`
	Loops       int64             `json:"loop_count"`
	Scope       string            `json:"scope"`
	Phase       string            `json:"phase"`
	Worker      string            `json:"worker"`
	Variant     string            `json:"variant"`
	Inputs      []int             `json:"input_indices"`
	ValueCount  int               `json:"value_count"`
	WarmupCount int               `json:"warmup_count"`
	Mean        *float64          `json:"mean"`
	Median      *float64          `json:"median"`
	Stdev       *float64          `json:"stdev"`
	Min         *float64          `json:"min"`
	Max         *float64          `json:"max"`
	// MedianLow and MedianHigh bound the median's 95% interval (stats.MedianInterval), nil
	// under six values; MeanLow and MeanHigh the mean's (stats.MeanInterval), nil under two.
	MedianLow  *float64 `json:"median_ci_low"`
	MedianHigh *float64 `json:"median_ci_high"`
	MeanLow    *float64 `json:"mean_ci_low"`
	MeanHigh   *float64 `json:"mean_ci_high"`
}

// Summaries groups measurements by identity in first-seen order. Warmups, whose loop
// counts vary during calibration, join the series of the same identity apart from the
// loop count; warmups of a benchmark without values form their own series.
func Summaries(ms []Measurement) []Series { return tableOf(ms).summaries() }

func (t *table) summaries() []Series {
	index := map[seriesKey]int{}
	loopless := map[int32]int{}
	var out []Series
	var values [][]float64
	add := func(h *Measurement, k seriesKey, loops int64) int {
		i, ok := index[k]
		if !ok {
			i = len(out)
			index[k] = i
			dims := h.Dimensions
			if dims == nil {
				dims = map[string]string{}
			}
			out = append(out, Series{Benchmark: h.Benchmark, Unit: h.Unit, Dimensions: dims, Loops: loops,
				Scope: h.Scope, Phase: h.Phase, Worker: h.Worker, Variant: h.Variant})
			values = append(values, nil)
		}
		s := &out[i]
		if len(s.Inputs) == 0 || s.Inputs[len(s.Inputs)-1] != h.Input {
			s.Inputs = append(s.Inputs, h.Input)
		}
		return i
	}
	for j := range t.n {
		v := t.value(j)
		if v.warmup {
			continue
		}
		i := add(&t.list[v.head], t.series(v.head, v.loops), v.loops)
		if _, ok := loopless[t.ident[v.head]]; !ok {
			loopless[t.ident[v.head]] = i
		}
		out[i].ValueCount++
		values[i] = append(values[i], v.value)
	}
	for j := range t.n {
		v := t.value(j)
		if !v.warmup {
			continue
		}
		i, ok := loopless[t.ident[v.head]]
		if !ok {
			i = add(&t.list[v.head], seriesKey{id: t.ident[v.head], warmup: true}, 0)
		}
		out[i].WarmupCount++
	}
	for i := range out {
		v := values[i]
		if len(v) == 0 {
			continue
		}
		mean, median := stats.MeanInterval(v), stats.MedianInterval(v)
		lo, hi := v[0], v[0]
		for _, x := range v {
			lo, hi = math.Min(lo, x), math.Max(hi, x)
		}
		out[i].Mean, out[i].Median, out[i].Min, out[i].Max = &mean.Estimate, &median.Estimate, &lo, &hi
		out[i].MeanLow, out[i].MeanHigh = mean.Bounds()
		out[i].MedianLow, out[i].MedianHigh = median.Bounds()
		if len(v) > 1 {
			sd := stats.Stdev(v)
			out[i].Stdev = &sd
		}
	}
	return out
}

// Fit is a log-log least-squares fit of one series against an input dimension.
type Fit struct {
	Benchmark   string            `json:"benchmark"`
	Unit        string            `json:"unit"`
	Dimensions  map[string]string `json:"dimensions"`
	Inputs      []float64         `json:"input_values"`
	Means       []float64         `json:"mean_values"`
	PointCount  int               `json:"point_count"`
	Exponent    *float64          `json:"exponent"`
	Coefficient *float64          `json:"coefficient"`
	RSquared    *float64          `json:"r_squared"`
	Status      string            `json:"status"`
	Reason      *string           `json:"reason"`
}

// Scaling fits value = coefficient * input^exponent per series (the identity without the
// input dimension and without the loop count, which calibration sets per input size):
// non-warmup values whose
// dimension parses to a finite positive number and that are finite and positive, averaged
// per distinct input, fitted by ordinary least squares on (ln input, ln mean). Fewer than
// two distinct inputs is inconclusive.
func Scaling(ms []Measurement, dimension, metric string) []Fit {
	return tableOf(ms).scaling(dimension, metric)
}

func (t *table) scaling(dimension, metric string) []Fit {
	var fits []Fit
	var points []map[float64][]float64
	// A head's input value and fit identity, found once per head.
	type headFit struct {
		x     float64
		id    int
		known bool
		ok    bool
	}
	byHead := make([]headFit, len(t.list))
	ids := map[identityKey]int{}
	var fitOf []int // by fit identity: the fit, or -1 before its first value
	for j := range t.n {
		v := t.value(j)
		h := &t.list[v.head]
		if v.warmup || metric != "" && h.Benchmark != metric {
			continue
		}
		hf := &byHead[v.head]
		if !hf.known {
			hf.known = true
			if raw, ok := h.Dimensions[dimension]; ok {
				if x, err := parsePositive(raw); err == nil {
					id := identityOf(h, dimension)
					n, seen := ids[id]
					if !seen {
						n = len(fitOf)
						ids[id] = n
						fitOf = append(fitOf, -1)
					}
					hf.x, hf.id, hf.ok = x, n, true
				}
			}
		}
		if !hf.ok || !(v.value > 0) || math.IsInf(v.value, 0) {
			continue
		}
		f := fitOf[hf.id]
		if f < 0 {
			f = len(fits)
			fitOf[hf.id] = f
			dims := map[string]string{}
			for k, val := range h.Dimensions {
				if k != dimension {
					dims[k] = val
				}
			}
			fits = append(fits, Fit{Benchmark: h.Benchmark, Unit: h.Unit, Dimensions: dims})
			points = append(points, map[float64][]float64{})
		}
		points[f][hf.x] = append(points[f][hf.x], v.value)
	}
	for i := range fits {
		var xs []float64
		for x := range points[i] {
			xs = append(xs, x)
		}
		sort.Float64s(xs)
		f := &fits[i]
		for _, x := range xs {
			f.Inputs = append(f.Inputs, x)
			f.Means = append(f.Means, stats.Mean(points[i][x]))
		}
		f.PointCount = len(xs)
		if len(xs) < 2 {
			reason := "fewer than two distinct positive input values"
			f.Status, f.Reason = "inconclusive", &reason
			continue
		}
		lx := make([]float64, len(xs))
		ly := make([]float64, len(xs))
		for j := range xs {
			lx[j], ly[j] = math.Log(f.Inputs[j]), math.Log(f.Means[j])
		}
		mx, my := stats.Mean(lx), stats.Mean(ly)
		var sxx, sxy, tss float64
		for j := range lx {
			sxx += (lx[j] - mx) * (lx[j] - mx)
			sxy += (lx[j] - mx) * (ly[j] - my)
			tss += (ly[j] - my) * (ly[j] - my)
		}
		slope := sxy / sxx
		intercept := my - slope*mx
		var rss float64
		for j := range lx {
			d := ly[j] - (intercept + slope*lx[j])
			rss += d * d
		}
		r2 := 1.0
		if tss > 0 {
			r2 = math.Max(0, 1-rss/tss)
		}
		coef := math.Exp(intercept)
		f.Exponent, f.Coefficient, f.RSquared, f.Status = &slope, &coef, &r2, "estimated"
	}
	return fits
}

func parsePositive(s string) (float64, error) {
	var x float64
	if _, err := fmt.Sscan(strings.TrimSpace(s), &x); err != nil {
		return 0, err
	}
	if !(x > 0) || math.IsInf(x, 0) {
		return 0, fmt.Errorf("not a finite positive number")
	}
	return x, nil
}

// Comparison is one series of one candidate against the baseline.
type Comparison struct {
	Benchmark      string            `json:"benchmark"`
	Unit           string            `json:"unit"`
	Dimensions     map[string]string `json:"dimensions"`
	Loops          int64             `json:"loop_count"`
	BaselineIndex  int               `json:"baseline_index"`
	CandidateIndex int               `json:"candidate_index"`
	BaselineMean   float64           `json:"baseline_mean"`
	CandidateMean  float64           `json:"candidate_mean"`
	BaselineCount  int               `json:"baseline_count"`
	CandidateCount int               `json:"candidate_count"`
	// Ratio is candidate_mean / baseline_mean; nil when the baseline mean is 0.
	Ratio *float64 `json:"ratio"`
	// The means' and medians' 95% intervals (stats.MeanInterval, stats.MedianInterval).
	BaselineMeanCI, CandidateMeanCI     stats.Interval
	BaselineMedianCI, CandidateMedianCI stats.Interval
	// MedianRatio is candidate median / baseline median; nil when the baseline median is 0.
	MedianRatio *float64
	// Test is the Mann-Whitney U test of the candidate's values against the baseline's
	// (stats.Compare).
	Test stats.Comparison
}

// NonFiniteError reports a non-finite value in a compared series.
type NonFiniteError struct {
	Input     int
	Benchmark string
}

func (e *NonFiniteError) Error() string {
	return fmt.Sprintf("source %d has a non-finite value in benchmark %q", e.Input, e.Benchmark)
}

// Compare matches series by identity across inputs (non-warmup values only, optionally
// one benchmark) and compares each candidate's mean and median with the baseline's, with
// their intervals and a Mann-Whitney U test of the values. Series not present in every
// input are counted as unmatched.
func Compare(ms []Measurement, inputs, baseline int, metric string) ([]Comparison, int, error) {
	c := newComparer(inputs, baseline, metric)
	for i := range ms {
		c.add(&ms[i])
	}
	return c.result()
}

// comparer accumulates a comparison as measurements stream by: the values of each series
// and source (8 bytes a value), which the medians and the rank test need.
type comparer struct {
	inputs, baseline int
	metric           string
	heads            *heads
	index            map[seriesKey]int
	series           []compared
	last             seriesKey
	lastAt           int
	nonFinite        *NonFiniteError
}

// compared is one series: its first measurement and its values per source.
type compared struct {
	first Measurement
	per   [][]float64
}

func newComparer(inputs, baseline int, metric string) *comparer {
	return &comparer{inputs: inputs, baseline: baseline, metric: metric, heads: newHeads(), index: map[seriesKey]int{}, lastAt: -1}
}

// add takes one measurement; the first non-finite value is kept as the result's error.
func (c *comparer) add(m *Measurement) error {
	if m.Warmup || c.metric != "" && m.Benchmark != c.metric || c.nonFinite != nil {
		return nil
	}
	if math.IsNaN(m.Value) || math.IsInf(m.Value, 0) {
		c.nonFinite = &NonFiniteError{Input: m.Input, Benchmark: m.Benchmark}
		return nil
	}
	k := c.heads.series(c.heads.of(m), m.Loops)
	i := c.lastAt
	if i < 0 || k != c.last {
		var ok bool
		if i, ok = c.index[k]; !ok {
			i = len(c.series)
			c.index[k] = i
			c.series = append(c.series, compared{first: *m, per: make([][]float64, c.inputs)})
		}
		c.last, c.lastAt = k, i
	}
	c.series[i].per[m.Input] = append(c.series[i].per[m.Input], m.Value)
	return nil
}

func (c *comparer) result() ([]Comparison, int, error) {
	if c.nonFinite != nil {
		return nil, 0, c.nonFinite
	}
	var out []Comparison
	unmatched := 0
	for _, s := range c.series {
		present := 0
		for _, p := range s.per {
			if len(p) > 0 {
				present++
			}
		}
		if present != c.inputs {
			unmatched++
			continue
		}
		m := s.first
		b := s.per[c.baseline]
		bMean, bMedian := stats.MeanInterval(b), stats.MedianInterval(b)
		bm := bMean.Estimate
		for i := 0; i < c.inputs; i++ {
			if i == c.baseline {
				continue
			}
			cand := s.per[i]
			cMean, cMedian := stats.MeanInterval(cand), stats.MedianInterval(cand)
			cm := cMean.Estimate
			dims := m.Dimensions
			if dims == nil {
				dims = map[string]string{}
			}
			cmp := Comparison{Benchmark: m.Benchmark, Unit: m.Unit, Dimensions: dims, Loops: m.Loops,
				BaselineIndex: c.baseline, CandidateIndex: i, BaselineMean: bm, CandidateMean: cm,
				BaselineCount: len(b), CandidateCount: len(cand), BaselineMeanCI: bMean, CandidateMeanCI: cMean,
				BaselineMedianCI: bMedian, CandidateMedianCI: cMedian, Test: stats.Compare(b, cand)}
			if bm != 0 {
				r := cm / bm
				cmp.Ratio = &r
			}
			if bMedian.Estimate != 0 {
				r := cMedian.Estimate / bMedian.Estimate
				cmp.MedianRatio = &r
			}
			out = append(out, cmp)
		}
	}
	return out, unmatched, nil
}
