package stats

import (
	"math"
	"slices"
	"testing"

	"golang.org/x/perf/benchmath"
)

func TestMeanMedian(t *testing.T) {
	tests := []struct {
		in           []float64
		mean, median float64
	}{
		{[]float64{3}, 3, 3},
		{[]float64{3, 1, 2}, 2, 2},
		{[]float64{4, 1, 3, 2}, 2.5, 2.5},
		{[]float64{1, 1, 10}, 4, 1},
	}
	for _, tt := range tests {
		in := append([]float64(nil), tt.in...)
		if m := Mean(in); m != tt.mean {
			t.Errorf("Mean(%v) = %v", tt.in, m)
		}
		if m := Median(in); m != tt.median {
			t.Errorf("Median(%v) = %v", tt.in, m)
		}
		for i := range in {
			if in[i] != tt.in[i] {
				t.Errorf("Median reordered its input")
			}
		}
	}
}

// tTable is the published table of Student's t critical values (NIST/SEMATECH e-Handbook
// of Statistical Methods, section 1.3.6.7.2, "Critical Values of the Student's t
// Distribution"), to its three decimals: the upper-tail probabilities 0.05, 0.025 and 0.005
// are the 0.95, 0.975 and 0.995 quantiles.
var tTable = map[float64]map[float64]float64{
	0.95: {1: 6.314, 2: 2.920, 3: 2.353, 4: 2.132, 5: 2.015, 6: 1.943, 7: 1.895, 8: 1.860, 9: 1.833, 10: 1.812,
		20: 1.725, 30: 1.697, 60: 1.671, 120: 1.658},
	0.975: {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228,
		11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131, 16: 2.120, 17: 2.110, 18: 2.101, 19: 2.093, 20: 2.086,
		21: 2.080, 22: 2.074, 23: 2.069, 24: 2.064, 25: 2.060, 26: 2.056, 27: 2.052, 28: 2.048, 29: 2.045, 30: 2.042,
		40: 2.021, 60: 2.000, 120: 1.980},
	0.995: {1: 63.657, 2: 9.925, 3: 5.841, 4: 4.604, 5: 4.032, 6: 3.707, 7: 3.499, 8: 3.355, 9: 3.250, 10: 3.169,
		20: 2.845, 30: 2.750, 60: 2.660, 120: 2.617},
}

func TestTQuantileMatchesPublishedTable(t *testing.T) {
	for p, row := range tTable {
		for df, want := range row {
			if got := TQuantile(p, df); math.Abs(got-want) > 0.0005+1e-12 {
				t.Errorf("t(%v, df=%v) = %.6f, the table has %.3f", p, df, got, want)
			}
		}
	}
	// Closed forms: df 1 is the Cauchy distribution, tan(pi (p - 1/2)); df 2 has
	// t = (2p - 1) / sqrt(2 p (1 - p)).
	for _, p := range []float64{0.9, 0.95, 0.975, 0.995} {
		if got, want := TQuantile(p, 1), math.Tan(math.Pi*(p-0.5)); math.Abs(got/want-1) > 1e-12 {
			t.Errorf("t(%v, df=1) = %v, tan gives %v", p, got, want)
		}
		if got, want := TQuantile(p, 2), (2*p-1)/math.Sqrt(2*p*(1-p)); math.Abs(got/want-1) > 1e-12 {
			t.Errorf("t(%v, df=2) = %v, the closed form gives %v", p, got, want)
		}
	}
}

// TestMeanIntervalIsStudentT: n = 5 uses t(0.975, 4) = 2.776 from the table, not 1.96, and
// the interval is benchmath.AssumeNormal's.
func TestMeanIntervalIsStudentT(t *testing.T) {
	v := []float64{102, 98, 101, 97, 104}
	iv := MeanInterval(v)
	var ss float64
	for _, x := range v {
		ss += (x - 100.4) * (x - 100.4)
	}
	half := 2.776 * math.Sqrt(ss/4) / math.Sqrt(5)
	if iv.Estimate != 100.4 || math.Abs(iv.High-100.4-half) > 0.0005*math.Sqrt(ss/4)/math.Sqrt(5) ||
		math.Abs((iv.High-iv.Estimate)-(iv.Estimate-iv.Low)) > 1e-12 {
		t.Errorf("MeanInterval(%v) = %+v, want 100.4 ± %v", v, iv, half)
	}
	for _, v := range [][]float64{v, {1, 2}, {5, 5, 5}, {1e9, 1.1e9, 0.9e9, 1.05e9, 0.95e9, 1e9, 1.2e9}} {
		iv := MeanInterval(v)
		s := benchmath.AssumeNormal.Summary(benchmath.NewSample(slices.Clone(v), &benchmath.DefaultThresholds), Level)
		for _, pair := range [][2]float64{{iv.Estimate, s.Center}, {iv.Low, s.Lo}, {iv.High, s.Hi}} {
			if math.Abs(pair[0]-pair[1]) > 1e-12*math.Abs(pair[1]) {
				t.Errorf("MeanInterval(%v) = %+v, benchmath.AssumeNormal %+v", v, iv, s)
			}
		}
	}
	if iv := MeanInterval([]float64{3}); iv.Bounded() || iv.Estimate != 3 {
		t.Errorf("one value: %+v", iv)
	}
	if lo, hi := MeanInterval([]float64{3}).Bounds(); lo != nil || hi != nil {
		t.Errorf("one value has bounds")
	}
}

// binomialBelow is P(B <= k) for B ~ Binomial(n, 1/2), summed exactly.
func binomialBelow(n, k int) float64 {
	var s, c float64 = 0, 1
	for i := 0; i <= k; i++ {
		if i > 0 {
			c = c * float64(n-i+1) / float64(i)
		}
		s += c
	}
	return s / math.Pow(2, float64(n))
}

// TestMedianInterval: the interval is a pair of order statistics [X(l), X(h)] covering the
// population median with probability P(l <= B < h) >= 0.95 (B ~ Binomial(n, 1/2)); the
// published ranks for n = 10 and 20 are 2-9 and 6-15; under six values nothing covers 95%.
func TestMedianInterval(t *testing.T) {
	order := func(n int) []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = float64(n - i) // descending: MedianInterval sorts a copy
		}
		return v
	}
	for n := 1; n <= 5; n++ {
		if iv := MedianInterval(order(n)); iv.Bounded() || iv.Estimate != float64(n+1)/2 {
			t.Errorf("n=%d: %+v, want the median and no bounded interval", n, iv)
		}
	}
	for n, want := range map[int][2]float64{6: {1, 6}, 10: {2, 9}, 20: {6, 15}} {
		v := order(n)
		iv := MedianInterval(v)
		if iv.Low != want[0] || iv.High != want[1] || iv.Estimate != float64(n+1)/2 || v[0] != float64(n) {
			t.Errorf("n=%d: %+v, want ranks %v", n, iv, want)
		}
	}
	for n := 6; n <= 30; n++ {
		iv := MedianInterval(order(n))
		l, h := int(iv.Low), int(iv.High) // ranks, as the values are 1..n
		if cover := binomialBelow(n, h-1) - binomialBelow(n, l-1); cover < Level {
			t.Errorf("n=%d: ranks %d-%d cover %v", n, l, h, cover)
		}
		if l+1 <= h-1 {
			narrower := math.Max(binomialBelow(n, h-2)-binomialBelow(n, l-1), binomialBelow(n, h-1)-binomialBelow(n, l))
			if narrower >= Level {
				t.Errorf("n=%d: ranks %d-%d are not the narrowest (one less covers %v)", n, l, h, narrower)
			}
		}
	}
	if iv := MedianInterval(nil); iv.Bounded() || !math.IsNaN(iv.Estimate) {
		t.Errorf("empty: %+v", iv)
	}
}

// exactP is the two-sided Mann-Whitney p-value of samples without ties, by enumerating
// every assignment of the pooled ranks to the first sample.
func exactP(a, b []float64) float64 {
	pooled := append(slices.Clone(a), b...)
	slices.Sort(pooled)
	rank := func(x float64) int { return slices.Index(pooled, x) + 1 }
	var r1 int
	for _, x := range a {
		r1 += rank(x)
	}
	n1, n := len(a), len(pooled)
	u := float64(r1 - n1*(n1+1)/2)
	mean := float64(n1*len(b)) / 2
	var extreme, total int
	var walk func(next, left, sum int)
	walk = func(next, left, sum int) {
		if left == 0 {
			total++
			if math.Abs(float64(sum-n1*(n1+1)/2)-mean) >= math.Abs(u-mean)-1e-9 {
				extreme++
			}
			return
		}
		for r := next; r <= n-left+1; r++ {
			walk(r+1, left-1, sum+r)
		}
	}
	walk(1, n1, 0)
	return math.Min(1, float64(extreme)/float64(total))
}

func TestCompare(t *testing.T) {
	tests := []struct {
		name       string
		base, cand []float64
		p          float64 // NaN: check against exactP
		verdict    Verdict
	}{
		{"separated, faster", []float64{10, 11, 12, 13, 14}, []float64{5, 6, 7, 8, 9}, 2.0 / 252, Lower},
		{"separated, slower", []float64{5, 6, 7, 8, 9}, []float64{10, 11, 12, 13, 14}, 2.0 / 252, Higher},
		{"interleaved", []float64{1, 3, 5, 7, 9}, []float64{2, 4, 6, 8, 10}, math.NaN(), NoDifference},
		{"three each", []float64{1, 2, 3}, []float64{4, 5, 6}, 0.1, TooFewSamples},
		{"one against ten", []float64{100}, []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 2.0 / 11, TooFewSamples},
		{"four each separated", []float64{1, 2, 3, 4}, []float64{5, 6, 7, 8}, 2.0 / 70, Higher},
		{"all equal", []float64{7, 7, 7}, []float64{7, 7, 7, 7}, 1, TooFewSamples},
		{"all equal, enough", []float64{7, 7, 7, 7, 7}, []float64{7, 7, 7, 7, 7}, 1, NoDifference},
		{"overlap, not significant", []float64{20, 21, 22, 23, 24, 25}, []float64{15, 16, 17, 18, 19, 20.5, 30}, math.NaN(), NoDifference},
		{"overlap, significant", []float64{20, 21, 22, 23, 24, 25}, []float64{15, 16, 17, 18, 19, 20.5, 21.5}, math.NaN(), Lower},
	}
	for _, tt := range tests {
		b, c := slices.Clone(tt.base), slices.Clone(tt.cand)
		got := Compare(b, c)
		want := tt.p
		if math.IsNaN(want) {
			want = exactP(tt.base, tt.cand)
		}
		if math.Abs(got.P-want) > 1e-12 || got.Verdict != tt.verdict || got.Significant != (want <= Alpha) {
			t.Errorf("%s: %+v, want p=%v %s", tt.name, got, want, tt.verdict)
		}
		if !slices.Equal(b, tt.base) || !slices.Equal(c, tt.cand) {
			t.Errorf("%s: Compare modified its input", tt.name)
		}
	}
}

func TestMinimumP(t *testing.T) {
	for _, tt := range []struct {
		n1, n2 int
		p      float64
	}{{1, 1, 1}, {2, 2, 1.0 / 3}, {3, 3, 0.1}, {4, 4, 2.0 / 70}, {1, 10, 2.0 / 11}, {2, 5, 2.0 / 21}} {
		if got := minimumP(tt.n1, tt.n2); math.Abs(got-tt.p) > 1e-15 && !(tt.p <= Alpha && got <= Alpha) {
			t.Errorf("minimumP(%d, %d) = %v, want %v", tt.n1, tt.n2, got, tt.p)
		}
	}
}
