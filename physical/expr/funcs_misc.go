package expr

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/plan"
)

// greatestLeast is greatest/least(a, b, ...): the largest (smallest)
// non-NULL argument, NULL only when all are. The binder has cast every
// argument to the result type, so the comparison kernels do the work and
// choose picks each row's winner.
func (e *Func) greatestLeast(ops []operand, n int, mem memory.Allocator) (arrow.Array, error) {
	op := plan.OpGt
	if e.Name == "least" {
		op = plan.OpLt
	}
	var cur arrow.Array
	defer func() {
		if cur != nil {
			cur.Release()
		}
	}()
	for _, o := range ops {
		if o.allNull() {
			continue
		}
		a, err := o.materialize(n, mem)
		if err != nil {
			return nil, err
		}
		if cur == nil {
			cur = a
			continue
		}
		better, err := compare(op, operand{arr: a}, operand{arr: cur}, n, mem)
		if err != nil {
			a.Release()
			return nil, err
		}
		av, cv := validityOf(a), validityOf(cur)
		bits, off := boolBits(better)
		bv := validityOf(better)
		choice := make([]int32, n)
		for i := range choice {
			switch {
			case !av.valid(i) && !cv.valid(i):
				choice[i] = -1
			case !cv.valid(i):
				choice[i] = 1
			case av.valid(i) && bv.valid(i) && bitIsSet(bits, off+i):
				choice[i] = 1
			}
		}
		better.Release()
		next, err := choose(e.Type, choice, []arrow.Array{cur, a}, []bool{false, false}, mem)
		a.Release()
		if err != nil {
			return nil, err
		}
		cur.Release()
		cur = next
	}
	if cur == nil {
		return nullArray(e.Type, n, mem), nil
	}
	out := cur
	cur = nil
	return out, nil
}

func bitIsSet(b []byte, i int) bool { return b[i>>3]&(1<<(i&7)) != 0 }

// dateTrunc is date_trunc(unit, ts) on timestamps (the binder casts dates).
func (e *Func) dateTrunc(ops []operand, n int, mem memory.Allocator) (arrow.Array, error) {
	units, err := strsOf(ops[0])
	if err != nil {
		return nil, err
	}
	x, err := ops[1].materialize(n, mem)
	if err != nil {
		return nil, err
	}
	defer x.Release()
	if x.DataType().ID() != arrow.TIMESTAMP {
		return nil, fmt.Errorf("internal: date_trunc of %s", plan.TypeName(x.DataType()))
	}
	var uv validity
	if ops[0].arr != nil {
		uv = validityOf(ops[0].arr)
	}
	valid, nulls := andValidity(mem, n, x, ops[0].arr)
	buf, out := allocValues[int64](mem, n)
	xv := validityOf(x)
	for i, ts := range values[int64](x) {
		if !xv.valid(i) || !uv.valid(i) {
			continue
		}
		unit := strings.ToLower(string(units.at(i)))
		if err := plan.CheckTruncUnit(unit); err != nil {
			buf.Release()
			releaseBuf(valid)
			return nil, err
		}
		out[i] = truncTimestamp(unit, ts)
	}
	return makeArray(e.Type, n, valid, nulls, buf), nil
}

// truncTimestamp truncates microseconds since the epoch to unit.
func truncTimestamp(unit string, ts int64) int64 {
	days := floorDiv(ts, microsPerDay)
	tod := ts - days*microsPerDay
	floorTo := func(step int64) int64 { return days*microsPerDay + tod/step*step }
	y, m, _ := civilFromDays(days)
	switch unit {
	case "microseconds":
		return ts
	case "milliseconds":
		return floorTo(1000)
	case "second":
		return floorTo(1e6)
	case "minute":
		return floorTo(60e6)
	case "hour":
		return floorTo(3600e6)
	case "day":
		return days * microsPerDay
	case "week":
		// ISO weeks start on Monday; 1970-01-01 was a Thursday.
		return (days - isoWeekday(days) + 1) * microsPerDay
	case "month":
		return daysFromCivil(y, m, 1) * microsPerDay
	case "quarter":
		return daysFromCivil(y, (m-1)/3*3+1, 1) * microsPerDay
	case "year":
		return daysFromCivil(y, 1, 1) * microsPerDay
	case "decade":
		return daysFromCivil(floorDiv(y, 10)*10, 1, 1) * microsPerDay
	case "century":
		return daysFromCivil(floorDiv(y-1, 100)*100+1, 1, 1) * microsPerDay
	case "millennium":
		return daysFromCivil(floorDiv(y-1, 1000)*1000+1, 1, 1) * microsPerDay
	}
	return ts
}

// isoWeekday is 1 (Monday) to 7 (Sunday).
func isoWeekday(days int64) int64 {
	w := (days + 3) % 7
	if w < 0 {
		w += 7
	}
	return w + 1
}

// isoWeek is the ISO 8601 week number of a day.
func isoWeek(days int64) int64 {
	y, _, _ := civilFromDays(days)
	doy := days - daysFromCivil(y, 1, 1) + 1
	w := (doy - isoWeekday(days) + 10) / 7
	if w < 1 {
		return isoWeeksIn(y - 1)
	}
	if w > isoWeeksIn(y) {
		return 1
	}
	return w
}

// isoWeeksIn is 53 for years whose first day is a Thursday (or a Wednesday
// in leap years), 52 otherwise.
func isoWeeksIn(y int64) int64 {
	wd := isoWeekday(daysFromCivil(y, 1, 1))
	if wd == 4 || (wd == 3 && isLeap(y)) {
		return 53
	}
	return 52
}

// regexCache compiles each distinct pattern of a batch once.
type regexCache map[[2]string]regexEntry

type regexEntry struct {
	re     *regexp.Regexp
	global bool
}

func (c regexCache) compile(pat, flags string) (*regexp.Regexp, bool, error) {
	k := [2]string{pat, flags}
	if e, ok := c[k]; ok {
		return e.re, e.global, nil
	}
	re, global, err := plan.CompileRegex(pat, flags)
	if err != nil {
		// A pattern from the data is the query's error, not the task's.
		return nil, false, NewDataError(err.Error())
	}
	c[k] = regexEntry{re, global}
	return re, global, nil
}

// regexpReplace is regexp_replace(s, pattern, replacement[, flags]).
// In the replacement \1 to \9 stand for the groups, \& for the whole
// match and \\ for a backslash.
func regexpReplace(args []rowArg, n int, mem memory.Allocator) (arrow.Array, error) {
	cache := regexCache{}
	return textRows(n, args, true, mem, func(i int, dst []byte) ([]byte, error) {
		flags := ""
		if len(args) > 3 {
			flags = string(args[3].str(i))
		}
		re, global, err := cache.compile(string(args[1].str(i)), flags)
		if err != nil {
			return nil, err
		}
		s, repl := args[0].str(i), args[2].str(i)
		last, limit := 0, 1
		if global {
			limit = -1
		}
		for _, m := range re.FindAllSubmatchIndex(s, limit) {
			dst = append(dst, s[last:m[0]]...)
			dst = expandReplacement(dst, repl, s, m)
			last = m[1]
		}
		return append(dst, s[last:]...), nil
	})
}

func expandReplacement(dst, repl, s []byte, m []int) []byte {
	for k := 0; k < len(repl); k++ {
		c := repl[k]
		if c != '\\' || k+1 == len(repl) {
			dst = append(dst, c)
			continue
		}
		d := repl[k+1]
		switch {
		case d >= '1' && d <= '9':
			if g := int(d - '0'); 2*g+1 < len(m) && m[2*g] >= 0 {
				dst = append(dst, s[m[2*g]:m[2*g+1]]...)
			}
			k++
		case d == '&':
			dst = append(dst, s[m[0]:m[1]]...)
			k++
		case d == '\\':
			dst = append(dst, '\\')
			k++
		default:
			dst = append(dst, c)
		}
	}
	return dst
}

// substringRegex is substring(s FROM pattern): the text of the first match,
// or of the first parenthesized group when the pattern has one; NULL when
// nothing matches (or the group took no part in the match).
func substringRegex(args []rowArg, n int, mem memory.Allocator) (arrow.Array, error) {
	cache := regexCache{}
	b := newStringBuilder(mem, n, 0)
	for i := 0; i < n; i++ {
		if !allValid(args, i) {
			b.b.AppendNull()
			continue
		}
		re, _, err := cache.compile(string(args[1].str(i)), "")
		if err != nil {
			b.b.Release()
			return nil, err
		}
		s := args[0].str(i)
		m := re.FindSubmatchIndex(s)
		g := 0
		if re.NumSubexp() > 0 {
			g = 1
		}
		if m == nil || m[2*g] < 0 {
			b.b.AppendNull()
			continue
		}
		b.b.BinaryBuilder.Append(s[m[2*g]:m[2*g+1]])
	}
	return b.finish(), nil
}
