// Package stats holds the descriptive statistics shared by benchmark summaries and
// experiment estimands.
package stats

import "sort"

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
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
