package ncu

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	gen "github.com/flameox/flameox/generated/contracts"
)

// maxLaunchRules bounds the rule results one launch summary keeps (ncu's full set gives
// about a dozen).
const maxLaunchRules = 64

// summaryField is one figure of a launch summary.
type summaryField uint8

const (
	sumDuration summaryField = iota
	sumCompute
	sumMemory
	sumAchieved
	sumTheoretical
	sumRegisters
	sumFields
)

// summaryMetrics name each figure on the details page (section, metric name) and on the
// raw page (metric id): the same measurement, as ncu's sections print it and by the
// metric the section reads.
var summaryMetrics = map[[2]string]summaryField{
	{"GPU Speed Of Light Throughput", "Duration"}:                            sumDuration,
	{"GPU Speed Of Light Throughput", "Compute (SM) Throughput"}:             sumCompute,
	{"GPU Speed Of Light Throughput", "Memory Throughput"}:                   sumMemory,
	{"Occupancy", "Achieved Occupancy"}:                                      sumAchieved,
	{"Occupancy", "Theoretical Occupancy"}:                                   sumTheoretical,
	{"Launch Statistics", "Registers Per Thread"}:                            sumRegisters,
	{"", "gpu__time_duration.sum"}:                                           sumDuration,
	{"", "sm__throughput.avg.pct_of_peak_sustained_elapsed"}:                 sumCompute,
	{"", "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"}: sumMemory,
	{"", "sm__warps_active.avg.pct_of_peak_sustained_active"}:                sumAchieved,
	{"", "sm__maximum_warps_per_active_cycle_pct"}:                           sumTheoretical,
	{"", "launch__registers_per_thread"}:                                     sumRegisters,
}

// launchSummary is what one launch's row of the launches view holds.
type launchSummary struct {
	figures [sumFields]string // JSON numbers; "" when absent
	rules   []entry
	// dropped counts rule results past maxLaunchRules.
	dropped int
}

// summarize takes one measurement or rule result of launch li into its summary.
func (r *report) summarize(li int32, e *entry) {
	for int(li) >= len(r.summaries) {
		r.summaries = append(r.summaries, launchSummary{})
	}
	s := &r.summaries[li]
	if e.observation {
		if len(s.rules) < maxLaunchRules {
			s.rules = append(s.rules, *e)
		} else {
			s.dropped++
		}
		return
	}
	f, ok := summaryMetrics[[2]string{e.section, e.metric}]
	if !ok || !e.numeric {
		return
	}
	v := e.value
	if f == sumDuration {
		if v, ok = nanoseconds(e.value, e.unit); !ok {
			return
		}
	}
	if s.figures[f] == "" {
		s.figures[f] = v
	}
}

// durationScale is the power of ten from a duration unit to nanoseconds, as ncu prints
// units (us, usecond, ...).
var durationScale = map[string]int{"ns": 0, "nsecond": 0, "us": 3, "usecond": 3, "ms": 6, "msecond": 6, "s": 9, "second": 9}

// nanoseconds converts a printed duration to nanoseconds exactly, by moving the decimal
// point of its text.
func nanoseconds(v, unit string) (string, bool) {
	k, ok := durationScale[strings.ToLower(strings.TrimSpace(unit))]
	if !ok || strings.ContainsAny(v, "eE") {
		return "", false
	}
	neg := strings.HasPrefix(v, "-")
	v = strings.TrimPrefix(v, "-")
	whole, frac, _ := strings.Cut(v, ".")
	for len(frac) < k {
		frac += "0"
	}
	whole, frac = whole+frac[:k], frac[k:]
	whole = strings.TrimLeft(whole, "0")
	if whole == "" {
		whole = "0"
	}
	if frac = strings.TrimRight(frac, "0"); frac != "" {
		whole += "." + frac
	}
	if neg && whole != "0" {
		whole = "-" + whole
	}
	return whole, true
}

// byEstimatedSpeedup orders rule results largest estimated speedup first; those without
// an estimate follow in the report's order.
func byEstimatedSpeedup(a, b entry) int {
	switch {
	case a.hasSpeedup && b.hasSpeedup:
		return cmp.Compare(b.speedup, a.speedup)
	case a.hasSpeedup != b.hasSpeedup:
		if a.hasSpeedup {
			return -1
		}
		return 1
	}
	return 0
}

// launchRow is a launch's row: the generated row with its rules typed, so that each
// rule's fields keep the catalog's order (#GpuKernelRule; the generated row carries
// nested objects as maps, which encode in alphabetical order).
type launchRow struct {
	gen.GpuKernelLaunchRow
	Rules          []rule `json:"rules"`
	RulesNotListed *int64 `json:"rules_not_listed,omitempty"`
}

// rule is #GpuKernelRule.
type rule struct {
	Rule                 string   `json:"rule"`
	RuleType             *string  `json:"rule_type"`
	Section              *string  `json:"section"`
	EstimatedSpeedupType *string  `json:"estimated_speedup_type"`
	EstimatedSpeedup     *float64 `json:"estimated_speedup"`
	Description          *string  `json:"description"`
}

// launchRow is launch i's row of the launches view.
func (r *report) launchRow(i int) launchRow {
	l := &r.launches[i]
	row := launchRow{GpuKernelLaunchRow: gen.GpuKernelLaunchRow{LaunchID: l.id, Kernel: l.kernel,
		Device: nullable(l.device), Stream: nullable(l.stream), BlockSize: nullable(l.block), GridSize: nullable(l.grid)},
		Rules: []rule{}}
	var s launchSummary
	if i < len(r.summaries) {
		s = r.summaries[i]
	}
	num := func(f summaryField) *float64 {
		if s.figures[f] == "" {
			return nil
		}
		v, err := strconv.ParseFloat(s.figures[f], 64)
		if err != nil {
			return nil
		}
		return &v
	}
	g := &row.GpuKernelLaunchRow
	g.DurationNS, g.ComputeThroughputPct, g.MemoryThroughputPct = num(sumDuration), num(sumCompute), num(sumMemory)
	g.AchievedOccupancyPct, g.TheoreticalOccupancyPct, g.RegistersPerThread = num(sumAchieved), num(sumTheoretical), num(sumRegisters)
	rules := slices.Clone(s.rules)
	slices.SortStableFunc(rules, byEstimatedSpeedup)
	for _, e := range rules {
		x := rule{Rule: e.rule, RuleType: nullable(e.ruleType), Section: nullable(e.section),
			EstimatedSpeedupType: nullable(e.speedupType), Description: nullable(e.desc)}
		if e.hasSpeedup {
			sp := e.speedup
			x.EstimatedSpeedup = &sp
		}
		row.Rules = append(row.Rules, x)
	}
	if s.dropped > 0 {
		n := int64(s.dropped)
		row.RulesNotListed = &n
	}
	return row
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// launchIDs is the set of launch ids a request keeps (nil: all).
func launchIDs(ids []int64) map[int64]bool {
	if len(ids) == 0 {
		return nil
	}
	m := make(map[int64]bool, len(ids))
	for _, id := range ids {
		m[id] = true
	}
	return m
}
