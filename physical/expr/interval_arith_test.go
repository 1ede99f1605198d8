package expr

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

// PostgreSQL's answers for interval * factor.
func TestScaleInterval(t *testing.T) {
	const h = int64(3600e9)
	iv := func(m, d int32, ns int64) arrow.MonthDayNanoInterval {
		return arrow.MonthDayNanoInterval{Months: m, Days: d, Nanoseconds: ns}
	}
	tests := []struct {
		in     arrow.MonthDayNanoInterval
		factor float64
		want   arrow.MonthDayNanoInterval
	}{
		{iv(0, 1, 0), 3, iv(0, 3, 0)},
		{iv(1, 0, 0), 1.5, iv(1, 15, 0)},
		{iv(0, 1, 10*h), 2.5, iv(0, 2, 37*h)},
		{iv(14, 0, 0), 0.2, iv(2, 24, 0)},
		{iv(0, 1, 0), 1.0 / 3, iv(0, 0, 8*h)},
		{iv(1, 1, h), -0.5, iv(0, -15, -12*h-h/2)},
		{iv(0, 0, 1000), 0.5, iv(0, 0, 0)}, // a microsecond's half rounds to even
	}
	for _, tc := range tests {
		got, ok := scaleInterval(tc.in, tc.factor, false)
		if !ok || got != tc.want {
			t.Errorf("%+v * %v = %+v (%v), want %+v", tc.in, tc.factor, got, ok, tc.want)
		}
	}
	if got, ok := DivideInterval(iv(14, 0, 0), 5); !ok || got != iv(2, 24, 0) {
		t.Errorf("'1 year 2 mons' / 5 = %+v, want 2 mons 24 days", got)
	}
	if _, ok := scaleInterval(iv(1<<30, 0, 0), 4, false); ok {
		t.Error("months overflowing int32 were accepted")
	}
	if _, ok := addIntervals(iv(0, 1<<31-1, 0), iv(0, 1, 0), 1); ok {
		t.Error("days overflowing int32 were accepted")
	}
	if CompareIntervals(iv(1, 0, 0), iv(0, 30, 0)) != 0 || CompareIntervals(iv(0, 1, 0), iv(0, 0, 24*h-1)) <= 0 ||
		CompareIntervals(iv(0, -1, 0), iv(0, 0, 1)) >= 0 {
		t.Error("intervals do not compare by their span")
	}
}
