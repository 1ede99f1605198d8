package expr

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/plan"
)

// More date and time functions: the EXTRACT fields with fractions (second,
// epoch, ...), date_diff, make_date, make_timestamp, last_day,
// to_timestamp, and formatting with to_char and strftime. The binder casts
// DATE arguments to TIMESTAMP where a function takes either, except for
// the extract fields, which see a DATE as its midnight.

// dateArity lists these functions with their argument counts.
var dateArity = map[string][2]int{
	"extract_second": {1, 1}, "extract_millisecond": {1, 1}, "extract_microsecond": {1, 1},
	"extract_epoch": {1, 1}, "extract_isoyear": {1, 1}, "extract_decade": {1, 1},
	"extract_century": {1, 1}, "extract_millennium": {1, 1},
	"date_diff": {3, 3}, "make_date": {3, 3}, "make_timestamp": {6, 6}, "last_day": {1, 1},
	"to_timestamp": {1, 2}, "to_char": {2, 2}, "strftime": {2, 2},
}

func init() {
	for name, ar := range dateArity {
		funcArity[name] = ar
		if strings.HasPrefix(name, "extract_") {
			opFuncs[name] = extractMore
		}
	}
	opFuncs["date_diff"] = dateDiff
	opFuncs["make_date"] = makeDate
	opFuncs["make_timestamp"] = makeTimestamp
	opFuncs["last_day"] = lastDay
	opFuncs["to_char"] = formatTimestamp
	opFuncs["strftime"] = formatTimestamp
}

// tsView reads a DATE or TIMESTAMP operand as microseconds since the epoch.
func tsView(o operand) ([]int64, int, error) {
	v, s, err := i64View(o)
	if err != nil || operandType(o).ID() != arrow.DATE32 {
		return v, s, err
	}
	out := make([]int64, len(v))
	for i, d := range v {
		out[i] = d * microsPerDay
	}
	return out, s, nil
}

// extractMore computes the EXTRACT fields the integer kernel (extract)
// does not: second and millisecond with their fraction, microsecond,
// epoch, isoyear, decade, century and millennium. Each is computed in its
// natural type and cast to the declared one (DECIMAL for EXTRACT, DOUBLE
// for date_part).
func extractMore(e *Func, ops []operand, n int, mem memory.Allocator) (arrow.Array, error) {
	if operandType(ops[0]).ID() == arrow.INTERVAL_MONTH_DAY_NANO {
		return intervalEpoch(e, ops, n, mem)
	}
	ts, s, err := tsView(ops[0])
	if err != nil {
		return nil, err
	}
	field := strings.TrimPrefix(e.Name, "extract_")
	var out arrow.Array
	switch field {
	case "second", "millisecond", "epoch":
		// Microseconds, read at scale 6 as seconds or at scale 3 as
		// milliseconds.
		dt := plan.Decimal(8, 6)
		switch field {
		case "millisecond":
			dt = plan.Decimal(8, 3)
		case "epoch":
			dt = plan.Decimal(20, 6)
		}
		out, err = fixedRows(dt, ops, n, mem, func(i int) (decimal128.Num, error) {
			t := ts[i*s]
			if field == "epoch" {
				return decimal128.FromI64(t), nil
			}
			return decimal128.FromI64(t - floorDiv(t, 60e6)*60e6), nil
		})
	default:
		out, err = fixedRows(plan.Int64, ops, n, mem, func(i int) (int64, error) {
			t := ts[i*s]
			days := floorDiv(t, microsPerDay)
			y, _, _ := civilFromDays(days)
			switch field {
			case "microsecond":
				return t - floorDiv(t, 60e6)*60e6, nil
			case "isoyear":
				// The ISO year is the year of the week's Thursday.
				ty, _, _ := civilFromDays(days - isoWeekday(days) + 4)
				return ty, nil
			case "decade":
				return floorDiv(y, 10), nil
			case "century":
				if y > 0 {
					return (y + 99) / 100, nil
				}
				return -((99 - (y - 1)) / 100), nil
			case "millennium":
				if y > 0 {
					return (y + 999) / 1000, nil
				}
				return -((999 - (y - 1)) / 1000), nil
			}
			return 0, fmt.Errorf("internal: unknown field %s", field)
		})
	}
	if err != nil {
		return nil, err
	}
	return castResult(out, e.Type, mem)
}

// intervalEpoch is extract(epoch from interval): its microseconds, read
// at scale 6 as seconds, a month counted as 30 days as PostgreSQL does.
func intervalEpoch(e *Func, ops []operand, n int, mem memory.Allocator) (arrow.Array, error) {
	var iv []arrow.MonthDayNanoInterval
	si := 0
	if ops[0].isScalar() {
		iv = []arrow.MonthDayNanoInterval{ops[0].lit.Val.(arrow.MonthDayNanoInterval)}
	} else {
		iv, si = values[arrow.MonthDayNanoInterval](ops[0].arr), 1
	}
	dt := plan.Decimal(38, 6)
	out, err := fixedRows(dt, ops, n, mem, func(i int) (decimal128.Num, error) {
		x := iv[i*si]
		days := decimal128.FromI64(int64(x.Months)*30 + int64(x.Days))
		return days.Mul(decimal128.FromI64(microsPerDay)).Add(decimal128.FromI64(x.Nanoseconds / 1000)), nil
	})
	if err != nil {
		return nil, err
	}
	return castResult(out, e.Type, mem)
}

// dateDiff is DuckDB's date_diff(part, start, end): how many boundaries of
// part lie between start and end (negative when end is earlier):
// date_diff('year', '2020-12-31', '2021-01-01') is 1.
func dateDiff(e *Func, ops []operand, n int, mem memory.Allocator) (arrow.Array, error) {
	units, err := strsOf(ops[0])
	if err != nil {
		return nil, err
	}
	a, as, err := tsView(ops[1])
	if err != nil {
		return nil, err
	}
	b, bs, err := tsView(ops[2])
	if err != nil {
		return nil, err
	}
	return fixedRows(plan.Int64, ops, n, mem, func(i int) (int64, error) {
		unit, ok := plan.DiffUnit(strings.ToLower(string(units.at(i))))
		if !ok {
			return 0, dataErrorf("date_diff: unit %q not recognized", units.at(i))
		}
		return diffUnits(unit, a[i*as], b[i*bs]), nil
	})
}

// diffUnits counts the boundaries of unit between timestamps x and y.
func diffUnits(unit string, x, y int64) int64 {
	months := func(t int64) int64 {
		yy, m, _ := civilFromDays(floorDiv(t, microsPerDay))
		return yy*12 + int64(m) - 1
	}
	switch unit {
	case "year":
		return floorDiv(months(y), 12) - floorDiv(months(x), 12)
	case "quarter":
		return floorDiv(months(y), 3) - floorDiv(months(x), 3)
	case "month":
		return months(y) - months(x)
	case "week":
		return (truncTimestamp("week", y) - truncTimestamp("week", x)) / (7 * microsPerDay)
	case "day":
		return floorDiv(y, microsPerDay) - floorDiv(x, microsPerDay)
	case "hour":
		return floorDiv(y, 3600e6) - floorDiv(x, 3600e6)
	case "minute":
		return floorDiv(y, 60e6) - floorDiv(x, 60e6)
	case "second":
		return floorDiv(y, 1e6) - floorDiv(x, 1e6)
	case "millisecond":
		return floorDiv(y, 1000) - floorDiv(x, 1000)
	}
	return y - x
}

// checkDate validates a calendar date given as year, month, day, with
// PostgreSQL's error; a negative year is BC (there is no year 0), stored
// as the proleptic year y+1.
func checkDate(y, m, d int64) (int64, error) {
	bad := func() (int64, error) {
		return 0, dataErrorf("date field value out of range: %d-%02d-%02d", y, m, d)
	}
	if y == 0 || m < 1 || m > 12 || d < 1 || y > 294276 || y < -4713 {
		return bad()
	}
	py := y
	if py < 0 {
		py++
	}
	if d > int64(daysInMonth(py, int(m))) {
		return bad()
	}
	return daysFromCivil(py, int(m), int(d)), nil
}

// makeDate is make_date(year, month, day).
func makeDate(e *Func, ops []operand, n int, mem memory.Allocator) (arrow.Array, error) {
	v, s, err := intViews(ops)
	if err != nil {
		return nil, err
	}
	return fixedRows(plan.Date32, ops, n, mem, func(i int) (int32, error) {
		days, err := checkDate(v[0][i*s[0]], v[1][i*s[1]], v[2][i*s[2]])
		return int32(days), err
	})
}

// intViews views every operand as int64 (make_date's, and make_timestamp's
// first five).
func intViews(ops []operand) ([][]int64, []int, error) {
	vs := make([][]int64, len(ops))
	ss := make([]int, len(ops))
	for k, o := range ops {
		var err error
		if vs[k], ss[k], err = i64View(o); err != nil {
			return nil, nil, err
		}
	}
	return vs, ss, nil
}

// makeTimestamp is make_timestamp(year, month, day, hour, min, sec), sec
// a DOUBLE with its fraction, rounded to the microsecond.
func makeTimestamp(e *Func, ops []operand, n int, mem memory.Allocator) (arrow.Array, error) {
	v, s, err := intViews(ops[:5])
	if err != nil {
		return nil, err
	}
	sec, ss, err := f64View(ops[5])
	if err != nil {
		return nil, err
	}
	return fixedRows(plan.Timestamp, ops, n, mem, func(i int) (int64, error) {
		days, err := checkDate(v[0][i*s[0]], v[1][i*s[1]], v[2][i*s[2]])
		if err != nil {
			return 0, err
		}
		h, mi, sc := v[3][i*s[3]], v[4][i*s[4]], sec[i*ss]
		// PostgreSQL's bounds: 24:00:00 and a leap second 60 pass, and
		// roll over.
		if h < 0 || mi < 0 || mi > 59 || !(sc >= 0 && sc <= 60) || h > 24 || (h == 24 && (mi > 0 || sc > 0)) {
			return 0, dataErrorf("time field value out of range: %d:%02d:%02g", h, mi, sc)
		}
		return days*microsPerDay + h*3600e6 + mi*60e6 + int64(math.Round(sc*1e6)), nil
	})
}

// lastDay is DuckDB's last_day(x): the last day of x's month.
func lastDay(e *Func, ops []operand, n int, mem memory.Allocator) (arrow.Array, error) {
	ts, s, err := tsView(ops[0])
	if err != nil {
		return nil, err
	}
	return fixedRows(plan.Date32, ops, n, mem, func(i int) (int32, error) {
		y, m, _ := civilFromDays(floorDiv(ts[i*s], microsPerDay))
		return int32(daysFromCivil(y, m, daysInMonth(y, m))), nil
	})
}

// toTimestamp is to_timestamp(seconds): the timestamp that many seconds
// after 1970-01-01 00:00:00 UTC, rounded to the microsecond.
func toTimestamp(e *Func, ops []operand, n int, mem memory.Allocator) (arrow.Array, error) {
	x, s, err := f64View(ops[0])
	if err != nil {
		return nil, err
	}
	return fixedRows(plan.Timestamp, ops, n, mem, func(i int) (int64, error) {
		v := x[i*s]
		switch {
		case math.IsNaN(v):
			return 0, NewDataError("timestamp cannot be NaN")
		case !(math.Abs(v) < 9.2e12):
			return 0, dataErrorf("timestamp out of range: \"%g\"", v)
		}
		return int64(math.Round(v * 1e6)), nil
	})
}

// formatTimestamp is to_char(ts, format) and strftime(ts, format).
func formatTimestamp(e *Func, ops []operand, n int, mem memory.Allocator) (arrow.Array, error) {
	ts, s, err := tsView(ops[0])
	if err != nil {
		return nil, err
	}
	formats, err := strsOf(ops[1])
	if err != nil {
		return nil, err
	}
	var v validity
	arrs := []arrow.Array{ops[0].arr, ops[1].arr}
	valid, _ := andValidity(mem, n, arrs...)
	if valid != nil {
		v.bits = valid.Bytes()
		defer valid.Release()
	}
	format := appendToChar
	if e.Name == "strftime" {
		format = appendStrftime
	}
	b := newStringBuilder(mem, n, 0)
	var tmp []byte
	for i := 0; i < n; i++ {
		if !v.valid(i) {
			b.b.AppendNull()
			continue
		}
		tmp, err = format(tmp[:0], civilOf(ts[i*s]), string(formats.at(i)))
		if err != nil {
			b.b.Release()
			return nil, err
		}
		b.b.BinaryBuilder.Append(tmp)
	}
	return b.finish(), nil
}

// civil is a timestamp broken into its fields.
type civil struct {
	y                      int64
	mon, d                 int
	h, mi, sec, us, doy    int64
	isoDow, isoWk, isoYear int64
}

func civilOf(ts int64) civil {
	days := floorDiv(ts, microsPerDay)
	tod := ts - days*microsPerDay
	y, m, d := civilFromDays(days)
	c := civil{y: y, mon: m, d: d, h: tod / 3600e6, mi: tod / 60e6 % 60, sec: tod / 1e6 % 60, us: tod % 1e6,
		doy: days - daysFromCivil(y, 1, 1) + 1, isoDow: isoWeekday(days), isoWk: isoWeek(days)}
	c.isoYear, _, _ = civilFromDays(days - c.isoDow + 4)
	return c
}

var (
	monthNames = [...]string{"January", "February", "March", "April", "May", "June", "July",
		"August", "September", "October", "November", "December"}
	dayNames = [...]string{"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"}
)

func pad(dst []byte, v int64, width int) []byte {
	if v < 0 {
		dst = append(dst, '-')
		v = -v
	}
	s := strconv.FormatInt(v, 10)
	for k := len(s); k < width; k++ {
		dst = append(dst, '0')
	}
	return append(dst, s...)
}

func hour12(h int64) int64 {
	if h%12 == 0 {
		return 12
	}
	return h % 12
}

// toCharPatterns are the to_char template patterns supported, longest
// first so that a prefix never shadows a longer pattern.
var toCharPatterns = []string{
	"MONTH", "Month", "month", "HH24", "HH12", "YYYY", "IYYY", "DAY", "Day", "day",
	"MON", "Mon", "mon", "DDD", "IDDD", "YYY", "AM", "PM", "am", "pm", "HH", "MI", "SS", "MS", "US",
	"MM", "DD", "DY", "Dy", "dy", "YY", "IW", "WW", "ID", "D", "Q", "Y",
}

// appendToChar formats c with a PostgreSQL to_char template. Text in
// double quotes is copied as is; characters that are no pattern are
// copied too. Fill-mode (FM) prefixes drop the padding of the next
// pattern.
func appendToChar(dst []byte, c civil, f string) ([]byte, error) {
	fm := false
	for i := 0; i < len(f); {
		if f[i] == '"' {
			j := strings.IndexByte(f[i+1:], '"')
			if j < 0 {
				j = len(f) - i - 1
			}
			dst = append(dst, f[i+1:i+1+j]...)
			i += j + 2
			continue
		}
		if strings.HasPrefix(f[i:], "FM") || strings.HasPrefix(f[i:], "fm") {
			fm = true
			i += 2
			continue
		}
		if f[i] == '\\' && i+1 < len(f) {
			dst = append(dst, f[i+1])
			i += 2
			continue
		}
		p := ""
		for _, cand := range toCharPatterns {
			if strings.HasPrefix(f[i:], cand) {
				p = cand
				break
			}
		}
		if p == "" {
			dst = append(dst, f[i])
			i++
			continue
		}
		w := func(width int) int {
			if fm {
				return 0
			}
			return width
		}
		name := func(s string, width int, upper, lower bool) {
			switch {
			case upper:
				s = strings.ToUpper(s)
			case lower:
				s = strings.ToLower(s)
			}
			dst = append(dst, s...)
			for k := len(s); k < w(width); k++ {
				dst = append(dst, ' ')
			}
		}
		switch p {
		case "YYYY":
			dst = pad(dst, c.y, w(4))
		case "IYYY":
			dst = pad(dst, c.isoYear, w(4))
		case "YYY":
			dst = pad(dst, c.y%1000, w(3))
		case "YY":
			dst = pad(dst, c.y%100, w(2))
		case "Y":
			dst = pad(dst, c.y%10, 0)
		case "MM":
			dst = pad(dst, int64(c.mon), w(2))
		case "DD":
			dst = pad(dst, int64(c.d), w(2))
		case "DDD":
			dst = pad(dst, c.doy, w(3))
		case "IDDD":
			dst = pad(dst, (c.isoWk-1)*7+c.isoDow, w(3))
		case "HH24":
			dst = pad(dst, c.h, w(2))
		case "HH", "HH12":
			dst = pad(dst, hour12(c.h), w(2))
		case "MI":
			dst = pad(dst, c.mi, w(2))
		case "SS":
			dst = pad(dst, c.sec, w(2))
		case "MS":
			dst = pad(dst, c.us/1000, w(3))
		case "US":
			dst = pad(dst, c.us, w(6))
		case "AM", "PM", "am", "pm":
			s := "AM"
			if c.h >= 12 {
				s = "PM"
			}
			if p == "am" || p == "pm" {
				s = strings.ToLower(s)
			}
			dst = append(dst, s...)
		case "MONTH", "Month", "month":
			name(monthNames[c.mon-1], 9, p == "MONTH", p == "month")
		case "MON", "Mon", "mon":
			name(monthNames[c.mon-1][:3], 0, p == "MON", p == "mon")
		case "DAY", "Day", "day":
			name(dayNames[c.isoDow%7], 9, p == "DAY", p == "day")
		case "DY", "Dy", "dy":
			name(dayNames[c.isoDow%7][:3], 0, p == "DY", p == "dy")
		case "D":
			dst = pad(dst, c.isoDow%7+1, 0)
		case "ID":
			dst = pad(dst, c.isoDow, 0)
		case "IW":
			dst = pad(dst, c.isoWk, w(2))
		case "WW":
			dst = pad(dst, (c.doy-1)/7+1, w(2))
		case "Q":
			dst = pad(dst, int64((c.mon-1)/3+1), 0)
		}
		fm = false
		i += len(p)
	}
	return dst, nil
}

// appendStrftime formats c with a C/DuckDB strftime format.
func appendStrftime(dst []byte, c civil, f string) ([]byte, error) {
	for i := 0; i < len(f); i++ {
		if f[i] != '%' {
			dst = append(dst, f[i])
			continue
		}
		i++
		if i == len(f) {
			return nil, NewDataError("strftime: format ends with a lone %")
		}
		switch f[i] {
		case 'Y':
			dst = pad(dst, c.y, 4)
		case 'y':
			dst = pad(dst, c.y%100, 2)
		case 'G':
			dst = pad(dst, c.isoYear, 4)
		case 'm':
			dst = pad(dst, int64(c.mon), 2)
		case '-':
			// %-m, %-d, %-H, ...: without padding.
			if i+1 == len(f) {
				return nil, NewDataError("strftime: format ends with %-")
			}
			i++
			var v int64
			switch f[i] {
			case 'm':
				v = int64(c.mon)
			case 'd':
				v = int64(c.d)
			case 'H':
				v = c.h
			case 'I':
				v = hour12(c.h)
			case 'M':
				v = c.mi
			case 'S':
				v = c.sec
			case 'j':
				v = c.doy
			default:
				return nil, dataErrorf("strftime: unsupported format %%-%c", f[i])
			}
			dst = pad(dst, v, 0)
		case 'd':
			dst = pad(dst, int64(c.d), 2)
		case 'e':
			if c.d < 10 {
				dst = append(dst, ' ')
			}
			dst = pad(dst, int64(c.d), 0)
		case 'H':
			dst = pad(dst, c.h, 2)
		case 'I':
			dst = pad(dst, hour12(c.h), 2)
		case 'M':
			dst = pad(dst, c.mi, 2)
		case 'S':
			dst = pad(dst, c.sec, 2)
		case 'f':
			dst = pad(dst, c.us, 6)
		case 'g':
			dst = pad(dst, c.us/1000, 3)
		case 'p':
			if c.h >= 12 {
				dst = append(dst, "PM"...)
			} else {
				dst = append(dst, "AM"...)
			}
		case 'j':
			dst = pad(dst, c.doy, 3)
		case 'a':
			dst = append(dst, dayNames[c.isoDow%7][:3]...)
		case 'A':
			dst = append(dst, dayNames[c.isoDow%7]...)
		case 'b', 'h':
			dst = append(dst, monthNames[c.mon-1][:3]...)
		case 'B':
			dst = append(dst, monthNames[c.mon-1]...)
		case 'w':
			dst = pad(dst, c.isoDow%7, 0)
		case 'u':
			dst = pad(dst, c.isoDow, 0)
		case 'V':
			dst = pad(dst, c.isoWk, 2)
		case 'F':
			dst = pad(append(pad(append(pad(dst, c.y, 4), '-'), int64(c.mon), 2), '-'), int64(c.d), 2)
		case 'T':
			dst = pad(append(pad(append(pad(dst, c.h, 2), ':'), c.mi, 2), ':'), c.sec, 2)
		case '%':
			dst = append(dst, '%')
		default:
			return nil, dataErrorf("strftime: unsupported format %%%c", f[i])
		}
	}
	return dst, nil
}
