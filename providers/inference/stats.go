package inference

import (
	"math"
	"sort"
)

// series accumulates one per-request metric: a count and sum always (what a comparison
// needs), and the values themselves when percentiles are wanted, 8 bytes per request.
type series struct {
	n      int
	sum    float64
	keep   bool
	values []float64
}

func (s *series) add(v float64) {
	s.n++
	s.sum += v
	if s.keep {
		s.values = append(s.values, v)
	}
}

func (s *series) mean() float64 { return s.sum / float64(s.n) }

// percentileRanks are the ranks AIPerf reports, so that the figures line up with its
// aggregate export.
var percentileRanks = []struct {
	name string
	q    float64
}{{"p1", 0.01}, {"p5", 0.05}, {"p10", 0.10}, {"p25", 0.25}, {"p50", 0.50}, {"p75", 0.75}, {"p90", 0.90}, {"p95", 0.95}, {"p99", 0.99}}

// quantile is the q-quantile of sorted values by linear interpolation between the
// closest ranks, computed as numpy.percentile's default method computes it (AIPerf and
// vLLM use numpy), so that both agree to the last bit.
func quantile(sorted []float64, q float64) float64 {
	h := float64(len(sorted)-1) * q
	lo := int(math.Floor(h))
	hi := min(lo+1, len(sorted)-1)
	a, b, t := sorted[lo], sorted[hi], h-float64(lo)
	if t >= 0.5 {
		return b - (b-a)*(1-t)
	}
	return a + (b-a)*t
}

// summary sorts the kept values and reports count, mean, population standard deviation
// (numpy.std, as AIPerf), min, the percentiles and max; only count when there are none.
func (s *series) summary() map[string]any {
	out := map[string]any{"count": s.n}
	if s.n == 0 || len(s.values) != s.n {
		return out
	}
	sort.Float64s(s.values)
	mean := s.mean()
	var ss float64
	for _, v := range s.values {
		ss += (v - mean) * (v - mean)
	}
	out["mean"], out["std"] = mean, math.Sqrt(ss/float64(s.n))
	out["min"], out["max"] = s.values[0], s.values[s.n-1]
	for _, r := range percentileRanks {
		out[r.name] = quantile(s.values, r.q)
	}
	return out
}

// at returns the q-quantile after summary has sorted the values, or nil when empty.
func (s *series) at(q float64) any {
	if s.n == 0 || len(s.values) != s.n {
		return nil
	}
	return quantile(s.values, q)
}
