package bench

import gen "github.com/flameox/flameox/generated/contracts"

// comparisonRow is compare_benchmarks's row for one comparison (decision 0065).
func comparisonRow(c Comparison) gen.BenchmarkComparisonRow {
	r := gen.BenchmarkComparisonRow{Benchmark: c.Benchmark, Unit: c.Unit, Dimensions: dimensions(c.Dimensions),
		LoopCount: c.Loops, BaselineIndex: int64(c.BaselineIndex), CandidateIndex: int64(c.CandidateIndex),
		BaselineMean: c.BaselineMean, CandidateMean: c.CandidateMean, BaselineCount: int64(c.BaselineCount),
		CandidateCount: int64(c.CandidateCount), Ratio: c.Ratio,
		BaselineMedian: c.BaselineMedianCI.Estimate, CandidateMedian: c.CandidateMedianCI.Estimate, MedianRatio: c.MedianRatio,
		PValue: c.Test.P, Significant: c.Test.Significant, Verdict: string(c.Test.Verdict)}
	r.BaselineMeanCiLow, r.BaselineMeanCiHigh = c.BaselineMeanCI.Bounds()
	r.CandidateMeanCiLow, r.CandidateMeanCiHigh = c.CandidateMeanCI.Bounds()
	r.BaselineMedianCiLow, r.BaselineMedianCiHigh = c.BaselineMedianCI.Bounds()
	r.CandidateMedianCiLow, r.CandidateMedianCiHigh = c.CandidateMedianCI.Bounds()
	return r
}
