package expr

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/plan"
)

// Cast converts X to To. Numeric narrowing checks range, decimals round
// half away from zero, and string parsing reports the offending value.
// With Try (DuckDB's try_cast) a value that does not convert becomes NULL.
type Cast struct {
	X   Expr
	To  arrow.DataType
	Try bool
}

// DataType implements Expr.
func (e *Cast) DataType() arrow.DataType { return e.To }

func (e *Cast) String() string {
	if e.Try {
		return "TRY_CAST(" + e.X.String() + " AS " + plan.TypeName(e.To) + ")"
	}
	return "CAST(" + e.X.String() + " AS " + plan.TypeName(e.To) + ")"
}

// Eval implements Expr.
func (e *Cast) Eval(batch arrow.RecordBatch, mem memory.Allocator) (arrow.Array, error) {
	a, err := e.X.Eval(batch, mem)
	if err != nil {
		return nil, err
	}
	defer a.Release()
	if e.Try {
		return tryCastArray(a, e.To, mem)
	}
	out, err := castArray(a, e.To, mem)
	if err != nil {
		return nil, inExpr(e, err)
	}
	return out, nil
}

// tryCastArray is castArray with NULL for each value that does not
// convert. The whole array is tried first; when it fails, each half is
// tried on its own, down to single values, so a batch with k bad values
// costs O(k log n) conversions and a clean batch one.
func tryCastArray(a arrow.Array, to arrow.DataType, mem memory.Allocator) (arrow.Array, error) {
	out, err := castArray(a, to, mem)
	if err == nil {
		return out, nil
	}
	n := a.Len()
	if n <= 1 {
		return nullArray(to, n, mem), nil
	}
	lo := array.NewSlice(a, 0, int64(n/2))
	defer lo.Release()
	hi := array.NewSlice(a, int64(n/2), int64(n))
	defer hi.Release()
	l, err := tryCastArray(lo, to, mem)
	if err != nil {
		return nil, err
	}
	defer l.Release()
	h, err := tryCastArray(hi, to, mem)
	if err != nil {
		return nil, err
	}
	defer h.Release()
	return array.Concatenate([]arrow.Array{l, h}, mem)
}

// castSupported reports whether a cast from → to is implemented.
func castSupported(from, to arrow.DataType) bool {
	if arrow.TypeEqual(from, to) || from.ID() == arrow.NULL || to.ID() == arrow.STRING {
		return true
	}
	switch {
	case plan.IsNumeric(from) && plan.IsNumeric(to):
		return true
	case from.ID() == arrow.STRING:
		switch to.ID() {
		case arrow.INT32, arrow.INT64, arrow.FLOAT64, arrow.DECIMAL128, arrow.DATE32, arrow.TIMESTAMP, arrow.BOOL,
			arrow.INTERVAL_MONTH_DAY_NANO:
			return true
		}
	case plan.IsTemporal(from) && plan.IsTemporal(to):
		return true
	}
	return false
}

// CastArray converts a to type to as CAST does: a value that does not
// convert is a data error (the caller owns the result).
func CastArray(a arrow.Array, to arrow.DataType, mem memory.Allocator) (arrow.Array, error) {
	return castArray(a, to, mem)
}

// castArray converts a to type to.
func castArray(a arrow.Array, to arrow.DataType, mem memory.Allocator) (arrow.Array, error) {
	from := a.DataType()
	n := a.Len()
	if arrow.TypeEqual(from, to) {
		a.Retain()
		return a, nil
	}
	if from.ID() == arrow.NULL || a.NullN() == n {
		return nullArray(to, n, mem), nil
	}
	if !castSupported(from, to) {
		return nil, fmt.Errorf("cannot cast %s to %s", plan.TypeName(from), plan.TypeName(to))
	}
	if to.ID() == arrow.STRING && from.ID() == arrow.LIST {
		return castListToString(a, mem)
	}
	if to.ID() == arrow.STRING {
		return castToString(a, mem)
	}
	if from.ID() == arrow.STRING {
		return castFromString(a, to, mem)
	}
	valid, nulls := andValidity(mem, n, a)
	v := validity{}
	if valid != nil {
		v.bits = valid.Bytes()
	}
	var (
		buf *memory.Buffer
		err error
	)
	switch to.ID() {
	case arrow.INT32:
		var out []int32
		buf, out = allocValues[int32](mem, n)
		err = castToInt(a, out, v, math.MinInt32, math.MaxInt32)
	case arrow.INT64:
		var out []int64
		buf, out = allocValues[int64](mem, n)
		err = castToInt(a, out, v, math.MinInt64, math.MaxInt64)
	case arrow.FLOAT64:
		var out []float64
		buf, out = allocValues[float64](mem, n)
		var vals []float64
		if vals, _, err = f64View(operand{arr: a}); err == nil {
			copy(out, vals)
		}
	case arrow.DECIMAL128:
		var out []decimal128.Num
		buf, out = allocValues[decimal128.Num](mem, n)
		err = castToDecimal(a, to.(*arrow.Decimal128Type), out, v)
	case arrow.DATE32:
		var out []int32
		buf, out = allocValues[int32](mem, n)
		for i, x := range values[int64](a) {
			out[i] = int32(floorDiv(x, microsPerDay))
		}
	case arrow.TIMESTAMP:
		var out []int64
		buf, out = allocValues[int64](mem, n)
		for i, x := range values[int32](a) {
			out[i] = int64(x) * microsPerDay
		}
	default:
		err = fmt.Errorf("cannot cast %s to %s", plan.TypeName(from), plan.TypeName(to))
	}
	if err != nil {
		releaseBuf(buf)
		releaseBuf(valid)
		return nil, err
	}
	return makeArray(to, n, valid, nulls, buf), nil
}

// castToInt converts a numeric array into out, checking [lo, hi].
func castToInt[T int32 | int64](a arrow.Array, out []T, v validity, lo, hi int64) error {
	rangeErr := func(s string) error {
		return dataErrorf("value %s out of range for %s", s, plan.TypeName(arrow.GetDataType[T]()))
	}
	switch a.DataType().ID() {
	case arrow.INT32, arrow.INT64:
		vals, _, err := i64View(operand{arr: a})
		if err != nil {
			return err
		}
		for i, x := range vals {
			if (x < lo || x > hi) && v.valid(i) {
				return rangeErr(strconv.FormatInt(x, 10))
			}
			out[i] = T(x)
		}
	case arrow.FLOAT64:
		for i, x := range values[float64](a) {
			// PostgreSQL rounds a double to an integer half to even
			// (rint): 2.5 gives 2, 3.5 gives 4.
			r := math.RoundToEven(x)
			if !(r >= float64(lo) && r < -float64(lo)) || r > float64(hi) {
				if v.valid(i) {
					return rangeErr(strconv.FormatFloat(x, 'g', -1, 64))
				}
				continue
			}
			out[i] = T(r)
		}
	case arrow.DECIMAL128:
		s := a.DataType().(*arrow.Decimal128Type).Scale
		for i, x := range values[decimal128.Num](a) {
			r, _ := rescale(x, s, 0)
			if !fitsInt64(r) || int64(r.LowBits()) < lo || int64(r.LowBits()) > hi {
				if v.valid(i) {
					return rangeErr(x.ToString(s))
				}
				continue
			}
			out[i] = T(int64(r.LowBits()))
		}
	default:
		return fmt.Errorf("cannot cast %s to an integer", plan.TypeName(a.DataType()))
	}
	return nil
}

// castToDecimal converts a numeric array to decimal dt.
func castToDecimal(a arrow.Array, dt *arrow.Decimal128Type, out []decimal128.Num, v validity) error {
	p, s := dt.Precision, dt.Scale
	check := func(i int, r decimal128.Num, ok bool) error {
		if (!ok || !fitsPrecision(r, p)) && v.valid(i) {
			return dataErrorf("%s: value does not fit %s", errDecimalOverflow, plan.TypeName(dt))
		}
		out[i] = r
		return nil
	}
	switch a.DataType().ID() {
	case arrow.INT32, arrow.INT64, arrow.DECIMAL128:
		vals, _, from, err := decView(operand{arr: a})
		if err != nil {
			return err
		}
		for i, x := range vals {
			r, ok := rescale(x, from, s)
			if err := check(i, r, ok); err != nil {
				return err
			}
		}
	case arrow.FLOAT64:
		for i, x := range values[float64](a) {
			if !v.valid(i) {
				continue
			}
			r, err := floatToDecimal(x, s)
			if err != nil || !fitsPrecision(r, p) {
				return dataErrorf("%s: value %v does not fit %s", errDecimalOverflow, x, plan.TypeName(dt))
			}
			out[i] = r
		}
	default:
		return fmt.Errorf("cannot cast %s to a decimal", plan.TypeName(a.DataType()))
	}
	return nil
}

// floatToDecimal converts via the shortest decimal representation of x so
// that 0.1 becomes exactly 0.1, then rounds to scale.
func floatToDecimal(x float64, scale int32) (decimal128.Num, error) {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return decimal128.Num{}, fmt.Errorf("cannot convert %v to decimal", x)
	}
	return parseDecimal(strconv.FormatFloat(x, 'f', -1, 64), scale)
}

// parseDecimal parses [+-]digits[.digits][e[+-]digits] exactly, rounding
// half away from zero to scale.
func parseDecimal(s string, scale int32) (decimal128.Num, error) {
	t := strings.TrimSpace(s)
	exp := 0
	if k := strings.IndexAny(t, "eE"); k >= 0 {
		e, err := strconv.Atoi(t[k+1:])
		if err != nil {
			return decimal128.Num{}, fmt.Errorf("invalid decimal %q", s)
		}
		exp, t = e, t[:k]
	}
	neg := false
	if t != "" && (t[0] == '+' || t[0] == '-') {
		neg, t = t[0] == '-', t[1:]
	}
	intPart, frac, _ := strings.Cut(t, ".")
	if intPart == "" && frac == "" {
		return decimal128.Num{}, fmt.Errorf("invalid decimal %q", s)
	}
	digits := intPart + frac
	for _, c := range digits {
		if c < '0' || c > '9' {
			return decimal128.Num{}, fmt.Errorf("invalid decimal %q", s)
		}
	}
	// value = digits × 10^(exp - len(frac)); want it × 10^scale.
	shift := int(scale) + exp - len(frac)
	var z big.Int
	z.SetString("0"+digits, 10)
	if shift >= 0 {
		z.Mul(&z, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(shift)), nil))
	} else {
		d := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(-shift)), nil)
		q, r := new(big.Int).QuoRem(&z, d, new(big.Int))
		if r.Lsh(r, 1).Cmp(d) >= 0 {
			q.Add(q, big.NewInt(1))
		}
		z.Set(q)
	}
	if z.BitLen() > 127 {
		return decimal128.Num{}, errDecimalOverflow
	}
	if neg {
		z.Neg(&z)
	}
	return decimal128.FromBigInt(&z), nil
}

// castFromString parses every non-NULL value.
func castFromString(a arrow.Array, to arrow.DataType, mem memory.Allocator) (arrow.Array, error) {
	s, err := strsOf(operand{arr: a})
	if err != nil {
		return nil, err
	}
	n := a.Len()
	valid, nulls := andValidity(mem, n, a)
	v := validity{}
	if valid != nil {
		v.bits = valid.Bytes()
	}
	bad := func(i int, err error) (arrow.Array, error) {
		releaseBuf(valid)
		if errors.Is(err, strconv.ErrRange) {
			return nil, dataErrorf("value %q is out of range for type %s", s.at(i), plan.TypeName(to))
		}
		var ne *strconv.NumError
		if errors.As(err, &ne) {
			// strconv's own words add nothing to PostgreSQL's.
			return nil, dataErrorf("invalid input syntax for type %s: %q", plan.TypeName(to), s.at(i))
		}
		return nil, dataErrorf("invalid input syntax for type %s: %q (%v)", plan.TypeName(to), s.at(i), err)
	}
	switch to.ID() {
	case arrow.INT32, arrow.INT64:
		bitSize := 64
		if to.ID() == arrow.INT32 {
			bitSize = 32
		}
		buf, out64 := allocValues[int64](mem, n)
		for i := 0; i < n; i++ {
			if !v.valid(i) {
				continue
			}
			x, err := strconv.ParseInt(strings.TrimSpace(string(s.at(i))), 10, bitSize)
			if err != nil {
				buf.Release()
				return bad(i, err)
			}
			out64[i] = x
		}
		if bitSize == 64 {
			return makeArray(to, n, valid, nulls, buf), nil
		}
		buf32, out32 := allocValues[int32](mem, n)
		for i, x := range out64 {
			out32[i] = int32(x)
		}
		buf.Release()
		return makeArray(to, n, valid, nulls, buf32), nil
	case arrow.FLOAT64:
		buf, out := allocValues[float64](mem, n)
		for i := 0; i < n; i++ {
			if !v.valid(i) {
				continue
			}
			x, err := strconv.ParseFloat(strings.TrimSpace(string(s.at(i))), 64)
			if err != nil {
				buf.Release()
				return bad(i, err)
			}
			out[i] = x
		}
		return makeArray(to, n, valid, nulls, buf), nil
	case arrow.DECIMAL128:
		dt := to.(*arrow.Decimal128Type)
		buf, out := allocValues[decimal128.Num](mem, n)
		for i := 0; i < n; i++ {
			if !v.valid(i) {
				continue
			}
			x, err := parseDecimal(string(s.at(i)), dt.Scale)
			if err == nil && !fitsPrecision(x, dt.Precision) {
				err = errDecimalOverflow
			}
			if err != nil {
				buf.Release()
				return bad(i, err)
			}
			out[i] = x
		}
		return makeArray(to, n, valid, nulls, buf), nil
	case arrow.DATE32:
		buf, out := allocValues[int32](mem, n)
		for i := 0; i < n; i++ {
			if !v.valid(i) {
				continue
			}
			d, err := parseDate(string(s.at(i)))
			if err != nil {
				buf.Release()
				return bad(i, err)
			}
			out[i] = d
		}
		return makeArray(to, n, valid, nulls, buf), nil
	case arrow.TIMESTAMP:
		buf, out := allocValues[int64](mem, n)
		for i := 0; i < n; i++ {
			if !v.valid(i) {
				continue
			}
			t, err := parseTimestamp(string(s.at(i)))
			if err != nil {
				buf.Release()
				return bad(i, err)
			}
			out[i] = t
		}
		return makeArray(to, n, valid, nulls, buf), nil
	case arrow.BOOL:
		buf, out := allocBitmap(mem, n)
		for i := 0; i < n; i++ {
			if !v.valid(i) {
				continue
			}
			switch strings.ToLower(strings.TrimSpace(string(s.at(i)))) {
			case "t", "true", "y", "yes", "on", "1":
				bitutil.SetBit(out, i)
			case "f", "false", "n", "no", "off", "0":
			default:
				buf.Release()
				return bad(i, fmt.Errorf("not a boolean"))
			}
		}
		return makeArray(to, n, valid, nulls, buf), nil
	case arrow.INTERVAL_MONTH_DAY_NANO:
		buf, out := allocValues[arrow.MonthDayNanoInterval](mem, n)
		for i := 0; i < n; i++ {
			if !v.valid(i) {
				continue
			}
			iv, err := plan.ParseInterval(string(s.at(i)))
			if err != nil {
				buf.Release()
				return bad(i, err)
			}
			out[i] = iv
		}
		return makeArray(to, n, valid, nulls, buf), nil
	}
	releaseBuf(valid)
	return nil, fmt.Errorf("cannot cast VARCHAR to %s", plan.TypeName(to))
}

// parseDate parses a date the way the binder does (plan.ParseDate).
func parseDate(s string) (int32, error) { return plan.ParseDate(s) }

// parseTimestamp parses a timestamp the way the binder does
// (plan.ParseTimestamp).
func parseTimestamp(s string) (int64, error) { return plan.ParseTimestamp(s) }

// castToString renders every non-NULL value as text.
func castToString(a arrow.Array, mem memory.Allocator) (arrow.Array, error) {
	if a.DataType().ID() == arrow.STRING {
		a.Retain()
		return a, nil
	}
	n := a.Len()
	v := validityOf(a)
	b := newStringBuilder(mem, n, 0)
	var tmp []byte
	var f func(i int) []byte
	switch a.DataType().ID() {
	case arrow.INT32:
		vals := values[int32](a)
		f = func(i int) []byte { return strconv.AppendInt(tmp[:0], int64(vals[i]), 10) }
	case arrow.INT64:
		vals := values[int64](a)
		f = func(i int) []byte { return strconv.AppendInt(tmp[:0], vals[i], 10) }
	case arrow.FLOAT64:
		vals := values[float64](a)
		f = func(i int) []byte { return plan.AppendFloatText(tmp[:0], vals[i]) }
	case arrow.DECIMAL128:
		vals := values[decimal128.Num](a)
		s := a.DataType().(*arrow.Decimal128Type).Scale
		f = func(i int) []byte { return append(tmp[:0], vals[i].ToString(s)...) }
	case arrow.DATE32:
		vals := values[int32](a)
		f = func(i int) []byte { return appendDate(tmp[:0], vals[i]) }
	case arrow.TIMESTAMP:
		vals := values[int64](a)
		f = func(i int) []byte { return appendTimestamp(tmp[:0], vals[i]) }
	case arrow.BOOL:
		ba := a.(*array.Boolean)
		f = func(i int) []byte { return strconv.AppendBool(tmp[:0], ba.Value(i)) }
	case arrow.INTERVAL_MONTH_DAY_NANO:
		vals := values[arrow.MonthDayNanoInterval](a)
		f = func(i int) []byte { return plan.AppendIntervalText(tmp[:0], vals[i]) }
	default:
		b.b.Release()
		return nil, fmt.Errorf("cannot cast %s to VARCHAR", plan.TypeName(a.DataType()))
	}
	for i := 0; i < n; i++ {
		if !v.valid(i) {
			b.b.AppendNull()
			continue
		}
		tmp = f(i)
		b.b.BinaryBuilder.Append(tmp)
	}
	return b.finish(), nil
}

func appendDate(dst []byte, d int32) []byte {
	y, m, day := civilFromDays(int64(d))
	return fmt.Appendf(dst, "%04d-%02d-%02d", y, m, day)
}

func appendTimestamp(dst []byte, ts int64) []byte {
	days := floorDiv(ts, microsPerDay)
	us := ts - days*microsPerDay
	dst = appendDate(dst, int32(days))
	sec := us / 1e6
	dst = fmt.Appendf(dst, " %02d:%02d:%02d", sec/3600, sec/60%60, sec%60)
	if frac := us % 1e6; frac != 0 {
		dst = fmt.Appendf(dst, ".%06d", frac)
	}
	return dst
}
