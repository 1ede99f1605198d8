package expr

import (
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/plan"
)

// Date and timestamp arithmetic. Dates are days since 1970-01-01,
// timestamps microseconds since the epoch (UTC, no zones).

const (
	microsPerDay = int64(86400) * 1e6
)

// civilFromDays converts days since the epoch to a proleptic Gregorian
// date (Howard Hinnant's algorithm; exact for the whole int32 range).
func civilFromDays(z int64) (y int64, m, d int) {
	z += 719468
	era := z / 146097
	if z < 0 && z%146097 != 0 {
		era = (z - 146096) / 146097
	}
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	y = yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d = int(doy - (153*mp+2)/5 + 1)
	if mp < 10 {
		m = int(mp + 3)
	} else {
		m = int(mp - 9)
	}
	if m <= 2 {
		y++
	}
	return y, m, d
}

// daysFromCivil is the inverse of civilFromDays.
func daysFromCivil(y int64, m, d int) int64 { return plan.DaysFromCivil(y, m, d) }

func isLeap(y int64) bool { return plan.IsLeapYear(y) }

func daysInMonth(y int64, m int) int { return plan.DaysInMonth(y, m) }

// addMonths adds months to a day number, clamping the day of month to the
// target month's length (2020-01-31 + 1 month = 2020-02-29).
func addMonths(days, months int64) int64 {
	if months == 0 {
		return days
	}
	y, m, d := civilFromDays(days)
	t := y*12 + int64(m-1) + months
	ny := t / 12
	nm := t % 12
	if nm < 0 {
		nm += 12
		ny--
	}
	month := int(nm) + 1
	d = min(d, daysInMonth(ny, month))
	return daysFromCivil(ny, month, d)
}

// temporalArith handles date/timestamp ± interval, date ± integer days and
// date - date.
func temporalArith(op plan.BinaryOp, l, r operand, rt arrow.DataType, n int, mem memory.Allocator) (arrow.Array, error) {
	lt, rtp := operandType(l), operandType(r)
	if rt.ID() == arrow.INTERVAL_MONTH_DAY_NANO && lt.ID() != arrow.TIMESTAMP {
		return intervalArith(op, l, r, rt, n, mem)
	}
	if lt.ID() == arrow.INTERVAL_MONTH_DAY_NANO && op == plan.OpAdd {
		l, r = r, l
		lt, rtp = rtp, lt
	}
	valid, nulls := andValidity(mem, n, l.arr, r.arr)
	fail := func(err error) (arrow.Array, error) {
		if valid != nil {
			valid.Release()
		}
		return nil, err
	}
	sign := int64(1)
	switch op {
	case plan.OpAdd:
	case plan.OpSub:
		sign = -1
	default:
		return fail(fmt.Errorf("cannot apply %s to %s and %s", op, plan.TypeName(lt), plan.TypeName(rtp)))
	}
	switch {
	case lt.ID() == arrow.DATE32 && rtp.ID() == arrow.DATE32 && op == plan.OpSub && rt.ID() == arrow.INT32:
		a, sa, err := i32View(l)
		if err != nil {
			return fail(err)
		}
		b, sb, err := i32View(r)
		if err != nil {
			return fail(err)
		}
		buf, out := allocValues[int32](mem, n)
		for i := range out {
			d := int64(a[i*sa]) - int64(b[i*sb])
			if d != int64(int32(d)) && validAt(valid, i) {
				buf.Release()
				return fail(errIntOverflow)
			}
			out[i] = int32(d)
		}
		return makeArray(rt, n, valid, nulls, buf), nil
	case lt.ID() == arrow.TIMESTAMP && rtp.ID() == arrow.TIMESTAMP && op == plan.OpSub && rt.ID() == arrow.INTERVAL_MONTH_DAY_NANO:
		// PostgreSQL's timestamp - timestamp: whole days, then the rest
		// as time, both with the difference's sign ('1 day 01:30:00').
		a, sa, err := i64View(l)
		if err != nil {
			return fail(err)
		}
		b, sb, err := i64View(r)
		if err != nil {
			return fail(err)
		}
		buf, out := allocValues[arrow.MonthDayNanoInterval](mem, n)
		for i := range out {
			x, y := a[i*sa], b[i*sb]
			d := x - y
			if (y < 0 && d < x || y > 0 && d > x) && validAt(valid, i) {
				buf.Release()
				return fail(NewDataError("interval out of range"))
			}
			out[i] = arrow.MonthDayNanoInterval{Days: int32(d / microsPerDay), Nanoseconds: d % microsPerDay * 1000}
		}
		return makeArray(rt, n, valid, nulls, buf), nil
	case lt.ID() == arrow.DATE32 && plan.IsInteger(rtp) && rt.ID() == arrow.DATE32:
		a, sa, err := i32View(l)
		if err != nil {
			return fail(err)
		}
		b, sb, err := i64View(r)
		if err != nil {
			return fail(err)
		}
		buf, out := allocValues[int32](mem, n)
		for i := range out {
			d := int64(a[i*sa]) + sign*b[i*sb]
			if (d != int64(int32(d)) || (sign < 0 && b[i*sb] == math.MinInt64)) && validAt(valid, i) {
				buf.Release()
				return fail(errDateRange)
			}
			out[i] = int32(d)
		}
		return makeArray(rt, n, valid, nulls, buf), nil
	case (lt.ID() == arrow.DATE32 || lt.ID() == arrow.TIMESTAMP) && rtp.ID() == arrow.INTERVAL_MONTH_DAY_NANO &&
		rt.ID() == lt.ID():
		var iv []arrow.MonthDayNanoInterval
		si := 0
		if r.isScalar() {
			iv = []arrow.MonthDayNanoInterval{r.lit.Val.(arrow.MonthDayNanoInterval)}
		} else {
			iv, si = values[arrow.MonthDayNanoInterval](r.arr), 1
		}
		if lt.ID() == arrow.DATE32 {
			a, sa, err := i32View(l)
			if err != nil {
				return fail(err)
			}
			buf, out := allocValues[int32](mem, n)
			for i := range out {
				x := iv[i*si]
				d := addMonths(int64(a[i*sa]), sign*int64(x.Months))
				d += sign * (int64(x.Days) + x.Nanoseconds/(microsPerDay*1000))
				if d != int64(int32(d)) && validAt(valid, i) {
					buf.Release()
					return fail(errDateRange)
				}
				out[i] = int32(d)
			}
			return makeArray(rt, n, valid, nulls, buf), nil
		}
		a, sa, err := i64View(l)
		if err != nil {
			return fail(err)
		}
		buf, out := allocValues[int64](mem, n)
		for i := range out {
			ts, ok := shiftTimestamp(a[i*sa], iv[i*si], sign)
			if !ok && validAt(valid, i) {
				buf.Release()
				return fail(errTimestampRange)
			}
			out[i] = ts
		}
		return makeArray(rt, n, valid, nulls, buf), nil
	}
	return fail(fmt.Errorf("internal: cannot apply %s to %s and %s giving %s", op, plan.TypeName(lt),
		plan.TypeName(rtp), plan.TypeName(rt)))
}

// floorDiv is integer division rounding toward negative infinity.
func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// AddInterval adds an interval to a timestamp (microseconds since the
// epoch) as timestamp + interval does: months first, clamping the day of
// month, then days and the time part. It reports false when the result
// does not fit a timestamp.
func AddInterval(ts int64, iv arrow.MonthDayNanoInterval) (int64, bool) {
	return shiftTimestamp(ts, iv, 1)
}

// maxTimestampDays bounds the days of a timestamp that int64 microseconds
// hold, with room for the time of day.
const maxTimestampDays = math.MaxInt64/microsPerDay - 1

var (
	errDateRange      = NewDataError("date out of range")
	errTimestampRange = NewDataError("timestamp out of range")
)

// shiftTimestamp returns ts + sign*iv, or false when that leaves the range
// of a timestamp: computed in int64 microseconds directly, a large
// interval wrapped around to a date hundreds of thousands of years BC.
func shiftTimestamp(ts int64, iv arrow.MonthDayNanoInterval, sign int64) (int64, bool) {
	days := floorDiv(ts, microsPerDay)
	tod := ts - days*microsPerDay
	days = addMonths(days, sign*int64(iv.Months)) + sign*int64(iv.Days)
	tod += sign * (iv.Nanoseconds / 1000)
	carry := floorDiv(tod, microsPerDay)
	days, tod = days+carry, tod-carry*microsPerDay
	if days > maxTimestampDays || days < -maxTimestampDays {
		return 0, false
	}
	return days*microsPerDay + tod, true
}

// validAt reports whether row i is not NULL under valid (nil: none is).
func validAt(valid *memory.Buffer, i int) bool {
	return valid == nil || bitutil.BitIsSet(valid.Bytes(), i)
}
