package plan

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

// The expected texts are PostgreSQL 15's (IntervalStyle postgres).
func TestAppendIntervalText(t *testing.T) {
	h := int64(3600_000_000_000)
	for _, c := range []struct {
		iv   arrow.MonthDayNanoInterval
		want string
	}{
		{arrow.MonthDayNanoInterval{}, "00:00:00"},
		{arrow.MonthDayNanoInterval{Months: 14, Days: 3}, "1 year 2 mons 3 days"},
		{arrow.MonthDayNanoInterval{Months: 525, Days: 27}, "43 years 9 mons 27 days"},
		{arrow.MonthDayNanoInterval{Months: 1, Days: 1}, "1 mon 1 day"},
		{arrow.MonthDayNanoInterval{Days: -5}, "-5 days"},
		{arrow.MonthDayNanoInterval{Months: -12}, "-1 years"},
		{arrow.MonthDayNanoInterval{Months: -1, Days: 2}, "-1 mons +2 days"},
		{arrow.MonthDayNanoInterval{Days: -1, Nanoseconds: h}, "-1 days +01:00:00"},
		{arrow.MonthDayNanoInterval{Nanoseconds: 25*h + 500_000_000}, "25:00:00.5"},
		{arrow.MonthDayNanoInterval{Days: 1, Nanoseconds: -(4*h + 5*60_000_000_000 + 6_000_123_000)}, "1 day -04:05:06.000123"},
	} {
		if got := string(AppendIntervalText(nil, c.iv)); got != c.want {
			t.Errorf("%+v: got %q, want %q", c.iv, got, c.want)
		}
	}
}
