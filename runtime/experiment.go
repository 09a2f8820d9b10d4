package runtime

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/failure"
	"github.com/flameox/flameox/internal/stats"
)

// bootstrapResamples is the number of paired bootstrap resamples of an interval.
const bootstrapResamples = 1999

// shuffle permutes order with a PCG generator seeded by (seed, stream): the documented,
// reproducible case order of one block (not Python's Mersenne Twister order).
func shuffle(seed, stream int64, order []int) {
	r := rand.New(rand.NewPCG(uint64(seed), uint64(stream)))
	r.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
}

func estimate(estimand string, xs []float64) float64 {
	if estimand == "mean_difference" {
		return stats.Mean(xs)
	}
	return stats.Median(xs)
}

// comparison is one candidate-against-baseline row of an experiment.
type comparison = gen.ExperimentComparisonRow

// caseInterval is the 95% confidence interval of one case's median wall time.
type caseInterval struct {
	Low  float64 `json:"low"`
	High float64 `json:"high"`
}

// compare computes one comparison from paired differences (candidate - baseline).
func compare(e *gen.Experiment, base, cand string, index int, diffs []float64) comparison {
	c := comparison{BaselineCase: base, CandidateCase: cand, Metric: "wall_time_ns", Unit: "ns",
		Estimand: e.Estimand, PracticalThreshold: e.PracticalThreshold, PairedBlocks: int64(len(diffs)),
		DeclaredBlocks: e.Blocks, ExcludedBlocks: e.Blocks - int64(len(diffs)),
		Method: "descriptive." + e.Estimand + ".v1", PointEstimateClassification: "inconclusive"}
	if len(diffs) == 0 {
		return c
	}
	est := estimate(e.Estimand, diffs)
	c.Estimate = &est
	switch {
	case math.Abs(est) <= e.PracticalThreshold:
		c.PointEstimateClassification = "within_threshold"
	case est < -e.PracticalThreshold:
		c.PointEstimateClassification = "practically_improved"
	default:
		c.PointEstimateClassification = "practically_regressed"
	}
	if len(diffs) < 3 {
		return c
	}
	level := 0.95
	c.ConfidenceLevel = &level
	constant := true
	for _, d := range diffs {
		constant = constant && d == diffs[0]
	}
	if constant {
		lo, hi := diffs[0], diffs[0]
		c.ConfidenceLow, c.ConfidenceHigh = &lo, &hi
		c.Method = "analytic.constant." + e.Estimand + ".v1"
		return c
	}
	r := rand.New(rand.NewPCG(uint64(e.Seed), uint64(index)))
	stats := make([]float64, bootstrapResamples)
	sample := make([]float64, len(diffs))
	for i := range stats {
		for j := range sample {
			sample[j] = diffs[r.IntN(len(diffs))]
		}
		stats[i] = estimate(e.Estimand, sample)
	}
	sort.Float64s(stats)
	lo := stats[int(math.Round((bootstrapResamples-1)*0.025))]
	hi := stats[int(math.Round((bootstrapResamples-1)*0.975))]
	c.ConfidenceLow, c.ConfidenceHigh = &lo, &hi
	c.Method = "bootstrap.percentile.paired." + e.Estimand + ".v1"
	return c
}

// appendExperiment appends the experiment metrics and comparison table to a capture
// result, after the operation's own blocks, with a limitation per excluded block count.
func (rt *Runtime) appendExperiment(cr *captureRequest, runs []*execution, out *CaptureResult) {
	e := cr.experiment
	type key struct{ c, b int }
	wall := map[key]float64{}
	for _, ex := range runs {
		if ex.ok && ex.wall != nil {
			ci := 0
			for i, c := range cr.cases {
				if c.name == ex.record.Case {
					ci = i
				}
			}
			wall[key{ci, int(ex.record.Block)}] = float64(*ex.wall)
		}
	}
	base := cr.cases[0].name
	medians, intervals := map[string]any{}, map[string]any{}
	walls := func(ci int) []float64 {
		var xs []float64
		for b := 1; b <= int(e.Blocks); b++ {
			if w, ok := wall[key{ci, b}]; ok {
				xs = append(xs, w)
			}
		}
		return xs
	}
	median := func(ci int) *float64 {
		xs := walls(ci)
		if len(xs) == 0 {
			return nil
		}
		m := stats.Median(xs)
		return &m
	}
	for i, c := range cr.cases {
		medians[c.name] = median(i)
		// Each case's median over its blocks with benchstat's 95% interval (decision 0065);
		// null under six eligible blocks, where no pair of order statistics covers 95%.
		var interval *caseInterval
		if lo, hi := stats.MedianInterval(walls(i)).Bounds(); lo != nil {
			interval = &caseInterval{Low: *lo, High: *hi}
		}
		intervals[c.name] = interval
	}
	var rows []comparison
	for i := 1; i < len(cr.cases); i++ {
		var diffs []float64
		for b := 1; b <= int(e.Blocks); b++ {
			bw, ok1 := wall[key{0, b}]
			cw, ok2 := wall[key{i, b}]
			if ok1 && ok2 {
				diffs = append(diffs, cw-bw)
			}
		}
		c := compare(e, base, cr.cases[i].name, i, diffs)
		if c.ExcludedBlocks > 0 {
			out.Limitations = append(out.Limitations, fmt.Sprintf(
				"Experiment comparison %s vs %s excluded %d failed or oracle-invalid blocks.", c.CandidateCase, base, c.ExcludedBlocks))
		}
		if len(diffs) < 3 {
			out.Limitations = append(out.Limitations, fmt.Sprintf(
				"Experiment comparison %s vs %s has fewer than three eligible blocks; no confidence interval is reported.", c.CandidateCase, base))
		}
		c.BaselineMedianNS, c.CandidateMedianNS = median(0), median(i)
		if c.BaselineMedianNS != nil && c.CandidateMedianNS != nil && *c.BaselineMedianNS > 0 {
			r := *c.CandidateMedianNS / *c.BaselineMedianNS
			c.MedianRatio = &r
		}
		rows = append(rows, c)
	}
	out.Limitations = append(out.Limitations,
		"The experiment classification is a descriptive point estimate against the practical threshold, not an equivalence test; wall_time_ns includes process start-up.")
	// The experiment summary leads the result; the analysis's paged table stays last.
	summary := MetricsBlock{Type: "metrics", Values: map[string]any{"experiment_metric": "wall_time_ns",
		"experiment_estimand": e.Estimand, "decision_basis": "descriptive_point_estimate",
		"baseline_case": base, "comparison_count": len(cr.cases) - 1, "case_median_wall_time_ns": medians,
		"case_median_wall_time_ns_ci": intervals, "comparisons": rows}}
	out.Blocks = append([]any{summary}, out.Blocks...)
}

// sourceCount checks, before anything is bound, the sources a capture will produce
// against the tool's cap: cases x blocks x artifacts per execution must stay within
// min(32, the operation's max_sources) (catalog 4.4 and 8.1: "Total sources (cases x
// blocks x provider artifacts) must stay <=32"). The schema allows blocks 1-100, as the
// seed says; more sources than fit is LIMIT_EXCEEDED with the arithmetic, at
// experiment.blocks, naming the largest blocks value that fits (or, when one block of
// these cases is already too many, at experiment.cases with the most cases that fit).
func sourceCount(op gen.OperationDecl, perExecution int, e *gen.Experiment) *failure.Failure {
	maxSources := min(maxCaptureSources, op.MaxSources)
	cases, blocks := 1, 1
	if e != nil {
		cases, blocks = len(e.Cases), int(e.Blocks)
	}
	executions := cases * blocks
	sources := executions * perExecution
	if sources <= maxSources {
		return nil
	}
	f := failure.New(gen.FailureCodeLimitExceeded,
		"the capture would produce %d sources (%d cases x %d blocks x %d artifacts per run); at most %d are allowed",
		sources, cases, blocks, perExecution, maxSources).
		With("source_count", sources).With("maximum_sources", maxSources).With("case_count", cases).
		With("block_count", blocks).With("artifacts_per_execution", perExecution).With("execution_count", executions)
	if e == nil {
		// Not reachable with the released providers (at most 2 artifacts, 32 sources).
		return f.Field(failure.Path("provider", "kind"), nil)
	}
	fit := maxSources / (cases * perExecution)
	if fit >= 1 {
		f.Field(failure.Path("experiment", "blocks"), nil).With("max_blocks", fit)
		f.NextAction = &gen.NextAction{AdjustRequest: &gen.AdjustRequest{Kind: "adjust_request",
			FieldPath: failure.Path("experiment", "blocks"),
			Message: fmt.Sprintf("Retry with experiment.blocks=%d: %d cases x %d blocks x %d artifacts per run = %d sources, within %d (or run fewer cases for more blocks).",
				fit, cases, fit, perExecution, cases*fit*perExecution, maxSources)}}
		return f
	}
	most := maxSources / perExecution
	f.Field(failure.Path("experiment", "cases"), nil).With("max_cases", most)
	f.NextAction = &gen.NextAction{AdjustRequest: &gen.AdjustRequest{Kind: "adjust_request",
		FieldPath: failure.Path("experiment", "cases"),
		Message: fmt.Sprintf("Retry with at most %d experiment cases and experiment.blocks=1: %d artifacts per run allow %d sources.",
			most, perExecution, maxSources)}}
	return f
}
