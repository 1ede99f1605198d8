package sql

import (
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	pg "github.com/pganalyze/pg_query_go/v6"

	"sluice/plan"
)

type arrowType = arrow.DataType

// constant binds a literal: integers are BIGINT, numbers with a point are
// exact DECIMAL(p, s) from their text, exponents are DOUBLE, quoted text is
// VARCHAR (converted to the other operand's type where one is needed).
func (b *binder) constant(c *pg.A_Const) (plan.Expr, error) {
	if c.Isnull {
		return &plan.Literal{Typ: plan.Null}, nil
	}
	switch v := c.Val.(type) {
	case *pg.A_Const_Ival:
		return &plan.Literal{Typ: plan.Int64, Val: int64(v.Ival.Ival)}, nil
	case *pg.A_Const_Fval:
		if lit, ok := numberLiteral(v.Fval.Fval); ok {
			return lit, nil
		}
		if decimalDigits(v.Fval.Fval) > plan.MaxDecimalPrecision {
			e := b.errAt("bind", c.Location, "numeric literal out of range: exceeds %d digits", plan.MaxDecimalPrecision)
			e.Hint = "DECIMAL holds at most 38 significant digits; write the number with an exponent (1.5e40) for an approximate DOUBLE"
			return nil, e
		}
		return nil, b.errAt("bind", c.Location, "invalid number %s", v.Fval.Fval)
	case *pg.A_Const_Sval:
		return &plan.Literal{Typ: plan.Utf8, Val: v.Sval.Sval}, nil
	case *pg.A_Const_Boolval:
		return &plan.Literal{Typ: plan.Bool, Val: v.Boolval.Boolval}, nil
	}
	return nil, b.errAt("bind", c.Location, "unsupported constant")
}

// numberLiteral parses a numeric literal's text. A number without an
// exponent whose digits do not fit a DECIMAL (38) is refused rather than
// rounded to a DOUBLE: PostgreSQL keeps it exact, so a rounded value would
// be a silently wrong answer.
func numberLiteral(s string) (*plan.Literal, bool) {
	if strings.ContainsAny(s, "eE") {
		f, err := strconv.ParseFloat(s, 64)
		return &plan.Literal{Typ: plan.Float64, Val: f}, err == nil
	}
	if !strings.Contains(s, ".") {
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return &plan.Literal{Typ: plan.Int64, Val: i}, true
		}
	}
	neg := strings.HasPrefix(s, "-")
	digits := strings.TrimLeft(s, "+-")
	intPart, frac, _ := strings.Cut(digits, ".")
	intPart = strings.TrimLeft(intPart, "0")
	scale := len(frac)
	prec := max(len(intPart)+scale, 1)
	if prec > plan.MaxDecimalPrecision {
		return nil, false
	}
	u, ok := new(big.Int).SetString("0"+intPart+frac, 10)
	if !ok {
		return nil, false
	}
	if neg {
		u.Neg(u)
	}
	return &plan.Literal{Typ: plan.Decimal(int32(prec), int32(scale)), Val: decimal128.FromBigInt(u)}, true
}

// decimalDigits counts the digits a DECIMAL needs for a literal without an
// exponent: the integer part without leading zeros plus every fraction digit.
func decimalDigits(s string) int {
	intPart, frac, _ := strings.Cut(strings.TrimLeft(s, "+-"), ".")
	return len(strings.TrimLeft(intPart, "0")) + len(frac)
}

func isStringLit(e plan.Expr) bool {
	l, ok := e.(*plan.Literal)
	return ok && l.Typ.ID() == arrow.STRING && l.Val != nil
}

// typeCast binds CAST(x AS t) and x::t; typed literals (DATE '...',
// INTERVAL '...') are evaluated here.
func (b *binder) typeCast(tc *pg.TypeCast, c ectx) (plan.Expr, error) {
	if names := stringList(tc.TypeName.Names); len(tc.TypeName.ArrayBounds) == 0 && len(names) > 0 {
		if n := strings.ToLower(names[len(names)-1]); n == "json" || n == "jsonb" {
			return b.jsonCast(tc, c)
		}
	}
	try := b.isTryCast(tc)
	to, isInterval, mods, err := b.typeName(tc.TypeName)
	if err != nil {
		return nil, err
	}
	if isInterval {
		if a := tc.Arg.GetAConst(); a != nil && a.GetIsnull() {
			return &plan.Literal{Typ: plan.Interval}, nil
		}
		s := tc.Arg.GetAConst().GetSval()
		if s == nil {
			// Text computed at run time: cast as PostgreSQL casts it.
			x, err := b.expr(tc.Arg, c)
			if err != nil {
				return nil, err
			}
			switch x.Type().ID() {
			case arrow.STRING, arrow.NULL, arrow.INTERVAL_MONTH_DAY_NANO:
				return &plan.Cast{X: x, To: plan.Interval, Try: try}, nil
			}
			return nil, b.errAt("type", nodeLoc(tc.Arg), "cannot cast %s to INTERVAL", plan.TypeName(x.Type()))
		}
		iv, err := parseInterval(s.Sval, mods)
		if err != nil && try {
			return &plan.Literal{Typ: plan.Interval}, nil
		}
		if err != nil {
			return nil, b.errAt("bind", nodeLoc(tc.Arg), "invalid interval %q: %v", s.Sval, err)
		}
		return &plan.Literal{Typ: plan.Interval, Val: iv}, nil
	}
	if ae := tc.Arg.GetAArrayExpr(); ae != nil && plan.IsArray(to) {
		return b.arrayExpr(ae, to, c)
	}
	x, err := b.expr(tc.Arg, c)
	if err != nil {
		return nil, err
	}
	if typeEq(x.Type(), to) {
		return x, nil
	}
	if try {
		// try_cast: a value that does not convert is NULL, decided per
		// row when the plan runs (the fold rule converts a literal that
		// does); types that never convert are still an error.
		if plan.IsArray(to) || plan.IsArray(x.Type()) || !castAllowed(x.Type(), to) {
			return nil, b.errAt("type", tc.Location, "cannot cast %s to %s", plan.TypeName(x.Type()), plan.TypeName(to))
		}
		if lit, ok := x.(*plan.Literal); ok {
			if v, ok := convertLiteral(lit, to); ok {
				return v, nil
			}
		}
		return &plan.Cast{X: x, To: to, Try: true}, nil
	}
	if plan.IsArray(to) && x.Type().ID() != arrow.NULL {
		e := b.errAt("type", tc.Location, "cannot cast %s to %s", plan.TypeName(x.Type()), plan.TypeName(to))
		e.Hint = "build arrays with ARRAY[...], array_agg or string_to_array; array literals ('{1,2}') are not supported"
		return nil, e
	}
	if lit, ok := x.(*plan.Literal); ok {
		if v, ok := convertLiteral(lit, to); ok {
			return v, nil
		}
		if lit.Typ.ID() == arrow.STRING {
			if why := temporalSyntax(lit, to); why != "" {
				return nil, b.errAt("type", nodeLoc(tc.Arg), "invalid input syntax for type %s: %s (%s)", plan.TypeName(to), lit.String(), why)
			}
			return nil, b.errAt("type", nodeLoc(tc.Arg), "invalid input syntax for type %s: %s", plan.TypeName(to), lit.String())
		}
	}
	if !castAllowed(x.Type(), to) {
		return nil, b.errAt("type", tc.Location, "cannot cast %s to %s", plan.TypeName(x.Type()), plan.TypeName(to))
	}
	return castExpr(x, to), nil
}

// temporalSyntax says why a string is not a DATE or TIMESTAMP ("" for
// other types).
func temporalSyntax(lit *plan.Literal, to arrowType) string {
	str, _ := lit.Val.(string)
	var err error
	switch to.ID() {
	case arrow.DATE32:
		_, err = plan.ParseDate(str)
	case arrow.TIMESTAMP:
		_, err = plan.ParseTimestamp(str)
	}
	if err != nil {
		return err.Error()
	}
	return ""
}

// typeName converts a parsed type name; interval types also return their
// field mask modifiers.
func (b *binder) typeName(t *pg.TypeName) (arrowType, bool, []int, error) {
	parts := stringList(t.Names)
	name := strings.ToLower(parts[len(parts)-1])
	var mods []int
	for _, m := range t.Typmods {
		v, ok := intConst(m)
		if !ok {
			return nil, false, nil, b.errAt("bind", t.Location, "type modifiers must be integer constants")
		}
		mods = append(mods, int(v))
	}
	if name == "interval" && len(t.ArrayBounds) == 0 {
		return plan.Interval, true, mods, nil
	}
	typ, err := typeFromName(name, mods)
	if err != nil {
		return nil, false, nil, b.errAt("type", t.Location, "%v", err)
	}
	if len(t.ArrayBounds) > 0 {
		if len(t.ArrayBounds) > 1 {
			return nil, false, nil, b.errAt("bind", t.Location, "multidimensional arrays are not supported")
		}
		return plan.ArrayOf(typ), false, mods, nil
	}
	return typ, false, mods, nil
}

// castAllowed reports whether an explicit CAST between the types is supported.
func castAllowed(from, to arrowType) bool {
	switch {
	case from.ID() == arrow.NULL, typeEq(from, to):
		return true
	case plan.IsNumeric(from) && plan.IsNumeric(to):
		return true
	case to.ID() == arrow.STRING:
		return true
	case from.ID() == arrow.STRING:
		return plan.IsNumeric(to) || plan.IsTemporal(to) || to.ID() == arrow.BOOL || to.ID() == arrow.INTERVAL_MONTH_DAY_NANO
	case plan.IsTemporal(from) && plan.IsTemporal(to):
		return true
	}
	return false
}

// castExpr wraps x in a Cast to t (no-op when already t).
func castExpr(x plan.Expr, t arrowType) plan.Expr {
	if typeEq(x.Type(), t) {
		return x
	}
	return &plan.Cast{X: x, To: t}
}

// coerce converts x to t: literals are converted at bind time when exact,
// anything else gets a Cast.
func coerce(x plan.Expr, t arrowType) plan.Expr {
	if typeEq(x.Type(), t) {
		return x
	}
	if lit, ok := x.(*plan.Literal); ok {
		if v, ok := convertLiteral(lit, t); ok {
			return v
		}
	}
	return &plan.Cast{X: x, To: t}
}

// narrowIntLit turns a BIGINT literal into an INT literal when to is INT and
// the value fits.
func narrowIntLit(e plan.Expr, to arrowType) (plan.Expr, bool) {
	lit, ok := e.(*plan.Literal)
	if !ok || to.ID() != arrow.INT32 || lit.Typ.ID() != arrow.INT64 {
		return nil, false
	}
	return convertLiteral(lit, to)
}

var pow10 = func() [39]*big.Int {
	var out [39]*big.Int
	for i := range out {
		out[i] = new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(i)), nil)
	}
	return out
}()

// adaptLiteral converts a literal to the type of the other operand of a
// comparison: like convertLiteral, but only untyped text may become text
// (so `varchar = 1` stays a type error, as in PostgreSQL).
func adaptLiteral(l *plan.Literal, to arrowType) (*plan.Literal, bool) {
	if to.ID() == arrow.STRING && l.Val != nil && l.Typ.ID() != arrow.STRING {
		return nil, false
	}
	return convertLiteral(l, to)
}

// convertLiteral converts a literal to type to when the conversion is exact
// (no rounding, no overflow, parseable text). NULL converts to anything.
func convertLiteral(l *plan.Literal, to arrowType) (*plan.Literal, bool) {
	if typeEq(l.Typ, to) {
		return l, true
	}
	if l.Val == nil {
		return &plan.Literal{Typ: to}, true
	}
	if to.ID() == arrow.NULL {
		return nil, false
	}
	switch v := l.Val.(type) {
	case int64:
		return intTo(big.NewInt(v), 0, to)
	case int32:
		if l.Typ.ID() == arrow.DATE32 {
			if to.ID() == arrow.TIMESTAMP {
				return &plan.Literal{Typ: to, Val: int64(v) * 86400 * 1e6}, true
			}
			if to.ID() == arrow.STRING {
				return &plan.Literal{Typ: to, Val: arrow.Date32(v).FormattedString()}, true
			}
			return nil, false
		}
		return intTo(big.NewInt(int64(v)), 0, to)
	case decimal128.Num:
		return intTo(v.BigInt(), l.Typ.(*arrow.Decimal128Type).Scale, to)
	case float64:
		if to.ID() == arrow.STRING {
			return &plan.Literal{Typ: to, Val: string(plan.AppendFloatText(nil, v))}, true
		}
		return nil, false
	case bool:
		if to.ID() == arrow.STRING {
			return &plan.Literal{Typ: to, Val: strconv.FormatBool(v)}, true
		}
		return nil, false
	case string:
		return stringTo(v, to)
	}
	return nil, false
}

// intTo converts the exact number u·10^-scale to type to, when exact.
func intTo(u *big.Int, scale int32, to arrowType) (*plan.Literal, bool) {
	switch to.ID() {
	case arrow.INT32, arrow.INT64:
		q, r := new(big.Int).QuoRem(u, pow10[scale], new(big.Int))
		if r.Sign() != 0 || !q.IsInt64() {
			return nil, false
		}
		i := q.Int64()
		if to.ID() == arrow.INT32 {
			if i < math.MinInt32 || i > math.MaxInt32 {
				return nil, false
			}
			return &plan.Literal{Typ: to, Val: int32(i)}, true
		}
		return &plan.Literal{Typ: to, Val: i}, true
	case arrow.DECIMAL128:
		d := to.(*arrow.Decimal128Type)
		if d.Scale < scale {
			q, r := new(big.Int).QuoRem(u, pow10[scale-d.Scale], new(big.Int))
			if r.Sign() != 0 {
				return nil, false
			}
			u = q
		} else {
			u = new(big.Int).Mul(u, pow10[d.Scale-scale])
		}
		if new(big.Int).Abs(u).Cmp(pow10[d.Precision]) >= 0 {
			return nil, false
		}
		return &plan.Literal{Typ: to, Val: decimal128.FromBigInt(u)}, true
	case arrow.FLOAT64:
		f, _ := new(big.Float).Quo(new(big.Float).SetInt(u), new(big.Float).SetInt(pow10[scale])).Float64()
		return &plan.Literal{Typ: to, Val: f}, true
	case arrow.STRING:
		if scale == 0 {
			return &plan.Literal{Typ: to, Val: u.String()}, true
		}
		return &plan.Literal{Typ: to, Val: decimal128.FromBigInt(u).ToString(scale)}, true
	}
	return nil, false
}

// stringTo parses text as a value of type to.
func stringTo(s string, to arrowType) (*plan.Literal, bool) {
	s = strings.TrimSpace(s)
	switch to.ID() {
	case arrow.DATE32:
		d, err := plan.ParseDate(s)
		if err != nil {
			return nil, false
		}
		return &plan.Literal{Typ: to, Val: d}, true
	case arrow.TIMESTAMP:
		ts, err := plan.ParseTimestamp(s)
		if err != nil {
			return nil, false
		}
		return &plan.Literal{Typ: to, Val: ts}, true
	case arrow.BOOL:
		switch strings.ToLower(s) {
		case "true", "t", "yes", "on", "1":
			return &plan.Literal{Typ: to, Val: true}, true
		case "false", "f", "no", "off", "0":
			return &plan.Literal{Typ: to, Val: false}, true
		}
		return nil, false
	case arrow.FLOAT64:
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, false
		}
		return &plan.Literal{Typ: to, Val: f}, true
	case arrow.INT32, arrow.INT64, arrow.DECIMAL128:
		n, ok := numberLiteral(s)
		if !ok || n.Typ.ID() == arrow.FLOAT64 {
			return nil, false
		}
		return convertLiteral(n, to)
	}
	return nil, false
}

// negateLiteral folds -literal.
func negateLiteral(l *plan.Literal) (*plan.Literal, bool) {
	switch v := l.Val.(type) {
	case nil:
		return l, true
	case int64:
		if v == math.MinInt64 {
			return nil, false
		}
		return &plan.Literal{Typ: l.Typ, Val: -v}, true
	case int32:
		if v == math.MinInt32 {
			return nil, false
		}
		return &plan.Literal{Typ: l.Typ, Val: -v}, true
	case float64:
		return &plan.Literal{Typ: l.Typ, Val: -v}, true
	case decimal128.Num:
		return &plan.Literal{Typ: l.Typ, Val: v.Negate()}, true
	case arrow.MonthDayNanoInterval:
		return &plan.Literal{Typ: l.Typ, Val: arrow.MonthDayNanoInterval{Months: -v.Months, Days: -v.Days, Nanoseconds: -v.Nanoseconds}}, true
	}
	return nil, false
}

// Interval field masks from PostgreSQL's datetime.h (INTERVAL_MASK).
const (
	maskMonth  = 1 << 1
	maskYear   = 1 << 2
	maskDay    = 1 << 3
	maskHour   = 1 << 10
	maskMinute = 1 << 11
	maskSecond = 1 << 12
)

// parseInterval parses '90' with a field (INTERVAL '90' DAY) or interval
// text as PostgreSQL reads it (plan.ParseInterval).
func parseInterval(s string, mods []int) (arrow.MonthDayNanoInterval, error) {
	if f := strings.Fields(s); len(f) == 1 && len(mods) > 0 && !strings.ContainsAny(s, ":-") {
		unit := ""
		switch mask := mods[0]; {
		case mask&maskYear != 0 && mask&maskMonth == 0:
			unit = "year"
		case mask&maskMonth != 0:
			unit = "month"
		case mask&maskDay != 0:
			unit = "day"
		case mask&maskHour != 0:
			unit = "hour"
		case mask&maskMinute != 0:
			unit = "minute"
		case mask&maskSecond != 0:
			unit = "second"
		default:
			return arrow.MonthDayNanoInterval{}, strconv.ErrSyntax
		}
		s = f[0] + " " + unit
	}
	return plan.ParseInterval(s)
}

// foldDateInterval evaluates DATE ± INTERVAL of two literals, so filters
// like `l_shipdate < date '1994-01-01' + interval '1' year` compare against
// a constant (usable for pruning).
func foldDateInterval(op plan.BinaryOp, l, r plan.Expr) (plan.Expr, bool) {
	ll, ok1 := l.(*plan.Literal)
	rl, ok2 := r.(*plan.Literal)
	if !ok1 || !ok2 || ll.Val == nil || rl.Val == nil {
		return nil, false
	}
	if ll.Typ.ID() == arrow.INTERVAL_MONTH_DAY_NANO && op == plan.OpAdd {
		ll, rl = rl, ll
	}
	d, ok1 := ll.Val.(int32)
	iv, ok2 := rl.Val.(arrow.MonthDayNanoInterval)
	if ll.Typ.ID() != arrow.DATE32 || !ok1 || !ok2 || iv.Nanoseconds != 0 {
		return nil, false
	}
	if op == plan.OpSub {
		iv.Months, iv.Days = -iv.Months, -iv.Days
	}
	return &plan.Literal{Typ: plan.Date32, Val: plan.AddMonths(d, iv.Months) + iv.Days}, true
}

// foldArith evaluates + - * on two numeric literals exactly (integers and
// decimals), so that expressions like `0.06 - 0.01` become constants that
// filters can compare against. ok is false when the result would not fit
// typ or the operation is not folded (division, modulo, floats).
func foldArith(op plan.BinaryOp, l, r plan.Expr, typ arrowType) (plan.Expr, bool) {
	ll, ok1 := l.(*plan.Literal)
	rl, ok2 := r.(*plan.Literal)
	if !ok1 || !ok2 || ll.Val == nil || rl.Val == nil {
		return nil, false
	}
	if op != plan.OpAdd && op != plan.OpSub && op != plan.OpMul {
		return nil, false
	}
	lu, ls, ok1 := exactNum(ll)
	ru, rs, ok2 := exactNum(rl)
	if !ok1 || !ok2 {
		return nil, false
	}
	var u *big.Int
	var scale int32
	switch op {
	case plan.OpAdd, plan.OpSub:
		scale = max(ls, rs)
		a := new(big.Int).Mul(lu, pow10[scale-ls])
		b := new(big.Int).Mul(ru, pow10[scale-rs])
		if op == plan.OpAdd {
			u = a.Add(a, b)
		} else {
			u = a.Sub(a, b)
		}
	case plan.OpMul:
		u, scale = new(big.Int).Mul(lu, ru), ls+rs
	}
	return intTo(u, scale, typ)
}

// exactNum returns an integer or decimal literal as unscaled value and scale.
func exactNum(l *plan.Literal) (*big.Int, int32, bool) {
	switch v := l.Val.(type) {
	case int64:
		return big.NewInt(v), 0, true
	case int32:
		if l.Typ.ID() == arrow.INT32 {
			return big.NewInt(int64(v)), 0, true
		}
	case decimal128.Num:
		return v.BigInt(), l.Typ.(*arrow.Decimal128Type).Scale, true
	}
	return nil, 0, false
}
