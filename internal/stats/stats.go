// Package stats holds the statistics shared by benchmark summaries, benchmark comparisons,
// experiment summaries and charts: one method for each figure, benchstat's where benchstat
// has one (golang.org/x/perf/benchmath; docs/decisions/0065-benchmark-statistics.md).
//
//   - The median with a distribution-free 95% confidence interval: benchmath.AssumeNothing,
//     the order statistics whose binomial coverage reaches 95% (at least 6 values).
//   - The mean with a Student's t 95% confidence interval: mean ± t(0.975, n-1) · s / √n,
//     with benchmath.AssumeNormal's t distribution (at least 2 values).
//   - A comparison of two samples: benchmath.AssumeNothing.Compare, the two-sided
//     Mann-Whitney U test, significant when p <= 0.05, as benchstat decides "~".
//
// The paired bootstrap of an experiment's comparisons is a different estimand (paired
// differences) and stays in the runtime.
package stats

import (
	"math"
	"slices"
	"sort"
	"sync"

	moremath "github.com/aclements/go-moremath/stats"
	"golang.org/x/perf/benchmath"
)

// Level is the confidence level of every interval: benchstat's default.
const Level = 0.95

// Alpha is the significance level of a comparison: benchstat's default
// (benchmath.DefaultThresholds).
const Alpha = 0.05

// Mean is the arithmetic mean of v (NaN for an empty slice).
func Mean(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

// Median is the middle value of v, or the mean of the two middle values, as Python's
// statistics.median; v is not modified.
func Median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return medianSorted(s)
}

func medianSorted(s []float64) float64 {
	n := len(s)
	if n == 0 {
		return math.NaN()
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// Stdev is the sample standard deviation of v (n - 1 in the denominator); NaN with fewer
// than two values.
func Stdev(v []float64) float64 {
	if len(v) < 2 {
		return math.NaN()
	}
	mean := Mean(v)
	var ss float64
	for _, x := range v {
		ss += (x - mean) * (x - mean)
	}
	return math.Sqrt(ss / float64(len(v)-1))
}

// Interval is an estimate with its two-sided confidence interval at Level.
type Interval struct {
	Estimate float64
	// Low and High bound the interval; -Inf and +Inf when the sample is too small for an
	// interval at Level (Bounded is false).
	Low, High float64
}

// Bounded reports whether the interval is finite.
func (i Interval) Bounded() bool { return !math.IsInf(i.Low, 0) && !math.IsInf(i.High, 0) }

// Bounds returns the interval's ends, or nil, nil when it is not bounded.
func (i Interval) Bounds() (low, high *float64) {
	if !i.Bounded() {
		return nil, nil
	}
	lo, hi := i.Low, i.High
	return &lo, &hi
}

// MedianInterval is the median of v (Median) with benchstat's 95% confidence interval
// (benchmath.AssumeNothing at Level): the pair of order statistics around the median whose
// binomial coverage is at least 95%, with no assumption about the distribution. With fewer
// than six values no pair covers 95% and the interval is unbounded (benchstat's "± ∞").
// v is not modified; an empty v gives NaN and an unbounded interval.
func MedianInterval(v []float64) Interval {
	if len(v) == 0 {
		return Interval{Estimate: math.NaN(), Low: math.Inf(-1), High: math.Inf(1)}
	}
	s := sortedCopy(v)
	sum := benchmath.AssumeNothing.Summary(benchmath.NewSample(s, &benchmath.DefaultThresholds), Level)
	return Interval{Estimate: medianSorted(s), Low: sum.Lo, High: sum.Hi}
}

// MeanInterval is the mean of v with its Student's t 95% confidence interval:
// mean ± TQuantile(0.975, n-1) · Stdev / √n (benchmath.AssumeNormal's interval). With
// fewer than two values the interval is unbounded.
func MeanInterval(v []float64) Interval {
	mean := Mean(v)
	if len(v) < 2 {
		return Interval{Estimate: mean, Low: math.Inf(-1), High: math.Inf(1)}
	}
	w := tCritical(len(v)-1) * Stdev(v) / math.Sqrt(float64(len(v)))
	return Interval{Estimate: mean, Low: mean - w, High: mean + w}
}

// tCache holds tCritical by degrees of freedom up to tCacheMax: the quantile is found by
// bisection on the CDF (about 60 incomplete beta functions), and requests ask for few
// distinct value counts.
var tCache sync.Map

const tCacheMax = 10_000

// tCritical is TQuantile(1 - (1-Level)/2, df), the two-sided critical value at Level.
func tCritical(df int) float64 {
	if t, ok := tCache.Load(df); ok {
		return t.(float64)
	}
	t := TQuantile(1-(1-Level)/2, float64(df))
	if df <= tCacheMax {
		tCache.Store(df, t)
	}
	return t
}

// TQuantile is the p quantile of Student's t distribution with df degrees of freedom (the
// inverse of its CDF, as benchmath.AssumeNormal computes it).
func TQuantile(p, df float64) float64 {
	return moremath.InvCDF(moremath.TDist{V: df})(p)
}

// Verdict is the outcome of a comparison of a candidate sample with a baseline sample.
type Verdict string

// The verdicts of Compare.
const (
	// Lower: significant, and the candidate's values rank below the baseline's.
	Lower Verdict = "lower"
	// Higher: significant, and the candidate's values rank above the baseline's.
	Higher Verdict = "higher"
	// NoDifference: not significant (benchstat's "~").
	NoDifference Verdict = "no significant difference"
	// TooFewSamples: not significant, and no outcome of these sample sizes could be: the
	// smallest two-sided p-value of the sizes is above Alpha.
	TooFewSamples Verdict = "too few samples"
)

// Comparison is the Mann-Whitney U test of a candidate sample against a baseline sample.
type Comparison struct {
	// P is the two-sided p-value (1 when every value of both samples is equal, as benchstat
	// reports it).
	P           float64
	Significant bool
	Verdict     Verdict
}

// Compare tests whether candidate's values differ in location from baseline's: the
// two-sided Mann-Whitney U test of benchmath.AssumeNothing.Compare (exact with up to 50
// values a side, 25 with ties; the normal approximation with tie and continuity correction
// beyond), significant when P <= Alpha as benchstat decides. The direction of a significant
// difference is the U statistic's: lower when more baseline-candidate pairs have the
// candidate below than above (ties count half). Neither slice is modified; both must be
// non-empty.
func Compare(baseline, candidate []float64) Comparison {
	b, c := sortedCopy(baseline), sortedCopy(candidate)
	th := benchmath.DefaultThresholds
	res := benchmath.AssumeNothing.Compare(benchmath.NewSample(b, &th), benchmath.NewSample(c, &th))
	out := Comparison{P: res.P, Significant: res.P <= Alpha}
	switch {
	case out.Significant && candidateBelow(b, c):
		out.Verdict = Lower
	case out.Significant:
		out.Verdict = Higher
	case minimumP(len(b), len(c)) > Alpha:
		out.Verdict = TooFewSamples
	default:
		out.Verdict = NoDifference
	}
	return out
}

// candidateBelow reports whether more (baseline, candidate) pairs of the sorted samples
// have the candidate below the baseline than above it.
func candidateBelow(b, c []float64) bool {
	// below - above = sum over candidate values x of (#b > x) - (#b < x).
	var diff int
	for _, x := range c {
		lt := sort.SearchFloat64s(b, x)                                 // baseline values < x
		le := sort.Search(len(b), func(i int) bool { return b[i] > x }) // baseline values <= x
		diff += (len(b) - le) - lt
	}
	return diff > 0
}

// minimumP is the smallest two-sided Mann-Whitney p-value of samples of n1 and n2 distinct
// values: 2 / C(n1+n2, n1), every candidate value beyond every baseline value; 0 once it
// is known to be below Alpha.
func minimumP(n1, n2 int) float64 {
	k := min(n1, n2)
	c := 1.0
	for i := 1; i <= k; i++ {
		c = c * float64(n1+n2-k+i) / float64(i)
		if c > 2/Alpha {
			return 0
		}
	}
	return math.Min(1, 2/c)
}

func sortedCopy(v []float64) []float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s
}
