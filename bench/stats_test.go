package bench

import (
	"math"
	"testing"
)

func TestStats(t *testing.T) {
	tests := []struct {
		name                 string
		xs                   []float64
		median, p99, p50, gm float64
	}{
		{"empty", nil, 0, 0, 0, 0},
		{"one", []float64{4}, 4, 4, 4, 4},
		{"odd unsorted", []float64{9, 1, 3}, 3, 9, 3, 3},
		{"even", []float64{1, 2, 4, 8}, 3, 8, 2, math.Sqrt(8)},
		{"non-positive skipped by geomean", []float64{0, 2, 8}, 2, 8, 2, 4},
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Median(tc.xs); !near(got, tc.median) {
				t.Errorf("Median = %v, want %v", got, tc.median)
			}
			if got := Percentile(tc.xs, 99); !near(got, tc.p99) {
				t.Errorf("p99 = %v, want %v", got, tc.p99)
			}
			if got := Percentile(tc.xs, 50); !near(got, tc.p50) {
				t.Errorf("p50 = %v, want %v", got, tc.p50)
			}
			if got := GeoMean(tc.xs); !near(got, tc.gm) {
				t.Errorf("GeoMean = %v, want %v", got, tc.gm)
			}
		})
	}
}

func TestPercentileOf200(t *testing.T) {
	xs := make([]float64, 200)
	for i := range xs {
		xs[i] = float64(200 - i)
	}
	if got := Percentile(xs, 99); got != 198 {
		t.Errorf("p99 of 1..200 = %v, want 198", got)
	}
}
