package expr

import (
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/plan"
)

// errIntervalRange is PostgreSQL's error for an interval that does not fit.
var errIntervalRange = NewDataError("interval out of range")

// intervalArith handles interval ± interval, interval × number, number ×
// interval and interval ÷ number, as PostgreSQL computes them.
func intervalArith(op plan.BinaryOp, l, r operand, rt arrow.DataType, n int, mem memory.Allocator) (arrow.Array, error) {
	lt := operandType(l)
	if op == plan.OpMul && lt.ID() != arrow.INTERVAL_MONTH_DAY_NANO {
		l, r = r, l
	}
	valid, nulls := andValidity(mem, n, l.arr, r.arr)
	fail := func(err error) (arrow.Array, error) {
		if valid != nil {
			valid.Release()
		}
		return nil, err
	}
	a, sa := intervalView(l)
	buf, out := allocValues[arrow.MonthDayNanoInterval](mem, n)
	var err error
	switch op {
	case plan.OpAdd, plan.OpSub:
		b, sb := intervalView(r)
		sign := int64(1)
		if op == plan.OpSub {
			sign = -1
		}
		for i := range out {
			var ok bool
			if out[i], ok = addIntervals(a[i*sa], b[i*sb], sign); !ok && validAt(valid, i) {
				err = errIntervalRange
				break
			}
		}
	case plan.OpMul, plan.OpDiv:
		f, sf, ferr := f64View(r)
		if ferr != nil {
			buf.Release()
			return fail(ferr)
		}
		for i := range out {
			if !validAt(valid, i) {
				continue
			}
			factor := f[i*sf]
			if op == plan.OpDiv && factor == 0 {
				err = errDivByZero
				break
			}
			var ok bool
			if out[i], ok = scaleInterval(a[i*sa], factor, op == plan.OpDiv); !ok {
				err = errIntervalRange
				break
			}
		}
	default:
		err = fmt.Errorf("cannot apply %s to %s and %s", op, plan.TypeName(lt), plan.TypeName(operandType(r)))
	}
	if err != nil {
		buf.Release()
		return fail(err)
	}
	return makeArray(rt, n, valid, nulls, buf), nil
}

// intervalView reads an interval operand (see i64View).
func intervalView(o operand) ([]arrow.MonthDayNanoInterval, int) {
	if o.isScalar() {
		v, _ := o.lit.Val.(arrow.MonthDayNanoInterval)
		return []arrow.MonthDayNanoInterval{v}, 0
	}
	return values[arrow.MonthDayNanoInterval](o.arr), 1
}

// addIntervals returns a + sign·b field by field, and false if a field
// overflows.
func addIntervals(a, b arrow.MonthDayNanoInterval, sign int64) (arrow.MonthDayNanoInterval, bool) {
	m := int64(a.Months) + sign*int64(b.Months)
	d := int64(a.Days) + sign*int64(b.Days)
	ns, ok := AddSigned(a.Nanoseconds, b.Nanoseconds, sign)
	if m != int64(int32(m)) || d != int64(int32(d)) || !ok {
		return arrow.MonthDayNanoInterval{}, false
	}
	return arrow.MonthDayNanoInterval{Months: int32(m), Days: int32(d), Nanoseconds: ns}, true
}

// AddSigned returns a + sign·b (sign is 1 or -1), and false when that
// overflows int64: the interval sums' time field (here, and in the
// aggregates' and window functions' sums).
func AddSigned(a, b, sign int64) (int64, bool) {
	if sign < 0 {
		if b == math.MinInt64 {
			return 0, false
		}
		b = -b
	}
	s := a + b
	return s, (s > a) == (b > 0) || b == 0
}

// DivideInterval divides an interval by n as PostgreSQL's interval_div
// does (avg of intervals); false when the result does not fit.
func DivideInterval(v arrow.MonthDayNanoInterval, n float64) (arrow.MonthDayNanoInterval, bool) {
	return scaleInterval(v, n, true)
}

// scaleInterval multiplies (or, with divide, divides) an interval by
// factor as PostgreSQL's interval_mul and interval_div do: months and days
// keep their whole part, and the fractions cascade down (a month is 30
// days, a day 24 hours) to days and to the time, which is rounded to
// microseconds as PostgreSQL keeps it.
func scaleInterval(v arrow.MonthDayNanoInterval, factor float64, divide bool) (arrow.MonthDayNanoInterval, bool) {
	const daysPerMonth, secsPerDay = 30, 86400
	scale := func(x float64) float64 {
		if divide {
			return x / factor
		}
		return x * factor
	}
	fits32 := func(x float64) bool { return !math.IsNaN(x) && x >= math.MinInt32 && x < math.MaxInt32+1 }
	months := scale(float64(v.Months))
	days := scale(float64(v.Days))
	if !fits32(months) || !fits32(days) {
		return arrow.MonthDayNanoInterval{}, false
	}
	out := arrow.MonthDayNanoInterval{Months: int32(months), Days: int32(days)}
	tsRound := func(x float64) float64 { return math.RoundToEven(x*1e6) / 1e6 }
	monthDays := tsRound((months - float64(out.Months)) * daysPerMonth)
	secs := tsRound((days - float64(out.Days) + monthDays - math.Trunc(monthDays)) * secsPerDay)
	extra := int64(0)
	if math.Abs(secs) >= secsPerDay {
		extra = int64(secs / secsPerDay)
		secs -= float64(extra * secsPerDay)
	}
	d := int64(out.Days) + extra + int64(monthDays)
	if d != int64(int32(d)) {
		return arrow.MonthDayNanoInterval{}, false
	}
	out.Days = int32(d)
	micros := math.RoundToEven(scale(float64(v.Nanoseconds)/1000) + secs*1e6)
	if math.IsNaN(micros) || micros < math.MinInt64/1000 || micros > math.MaxInt64/1000 {
		return arrow.MonthDayNanoInterval{}, false
	}
	out.Nanoseconds = int64(micros) * 1000
	return out, true
}

// IntervalKey is the value PostgreSQL orders intervals by: the whole span
// in nanoseconds with a month counted as 30 days and a day as 24 hours,
// so '1 mon' = '30 days' and '1 day' = '24:00:00'.
func IntervalKey(v arrow.MonthDayNanoInterval) decimal128.Num {
	days := int64(v.Months)*30 + int64(v.Days)
	return decimal128.FromI64(days).Mul(decimal128.FromI64(86400e9)).Add(decimal128.FromI64(v.Nanoseconds))
}

// CompareIntervals orders intervals as PostgreSQL does (IntervalKey).
func CompareIntervals(a, b arrow.MonthDayNanoInterval) int {
	if a == b {
		return 0
	}
	return cmp128(IntervalKey(a), IntervalKey(b))
}

// compareIntervals is compareInto for two interval operands.
func compareIntervals(op plan.BinaryOp, l, r operand, out []byte) {
	a, _ := intervalView(l)
	b, sb := intervalView(r)
	tbl := cmpTable(op)
	for i, x := range a {
		out[i>>3] |= b2u(tbl[CompareIntervals(x, b[i*sb])+1]) << (i & 7)
	}
}
