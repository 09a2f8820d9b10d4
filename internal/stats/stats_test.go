package stats

import "testing"

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
