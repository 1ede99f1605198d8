package plan

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

// PostgreSQL's answers for interval input ('...'::interval).
func TestParseInterval(t *testing.T) {
	const h, m, s = 3600e9, 60e9, 1e9
	iv := func(months, days int32, ns float64) arrow.MonthDayNanoInterval {
		return arrow.MonthDayNanoInterval{Months: months, Days: days, Nanoseconds: int64(ns)}
	}
	tests := []struct {
		text string
		want arrow.MonthDayNanoInterval
	}{
		{"1 day 10:00:00", iv(0, 1, 10*h)},
		{"10:00", iv(0, 0, 10*h)},
		{"-1:30:15.5", iv(0, 0, -(h + 30*m + 15.5*s))},
		{"1.5 hours", iv(0, 0, 1.5*h)},
		{"1.5 months", iv(1, 15, 0)},
		{"1.5 years", iv(18, 0, 0)},
		{"1.5 days", iv(0, 1, 12*h)},
		{"1.5 weeks", iv(0, 10, 12*h)},
		{"-1.5 days", iv(0, -1, -12*h)},
		{"3d", iv(0, 3, 0)},
		{"1 year 2 mons 3 days 04:05:06.789", iv(14, 3, 4*h+5*m+6.789*s)},
		{"@ 1 day ago", iv(0, -1, 0)},
		{"2 hours 30 minutes ago", iv(0, 0, -2.5*h)},
		{"P1Y2M3DT4H5M6S", iv(14, 3, 4*h+5*m+6*s)},
		{"PT1.5H", iv(0, 0, 1.5*h)},
		{"P2W", iv(0, 14, 0)},
		{"90", iv(0, 0, 90*s)},
		{"1-2", iv(14, 0, 0)},
		{"1 10:00", iv(0, 1, 10*h)},
		{"100 ms", iv(0, 0, 0.1*s)},
		{"1 decade", iv(120, 0, 0)},
		{"-1 day +2 hours", iv(0, -1, 2*h)},
		{"1 Day, 2 Hours", iv(0, 1, 2*h)},
		{"1e2 seconds", iv(0, 0, 100*s)},
	}
	for _, tc := range tests {
		got, err := ParseInterval(tc.text)
		if err != nil || got != tc.want {
			t.Errorf("ParseInterval(%q) = %+v, %v; want %+v", tc.text, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "soon", "1 parsec", "1:60", "1 2", "P", "P1", "PT1Y", "1-12", "day", "1:2:3:4", "nan seconds", "3000000000 days"} {
		if got, err := ParseInterval(bad); err == nil {
			t.Errorf("ParseInterval(%q) = %+v, want an error", bad, got)
		}
	}
}
