package plan

import (
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// FoldConstants evaluates constant sub-expressions everywhere in the plan
// and simplifies boolean logic (x AND true → x, false AND x → false, ...).
// Filter(true) disappears; Filter(false or NULL) becomes an empty Values with
// the same columns. Only results the evaluator is sure of are folded: an
// overflowing or inexact computation, or a division by zero, is left for
// the executor (which reports it or computes it with its own rounding).
func FoldConstants(n Node, _ *OptContext) (Node, error) {
	return TransformUp(n, foldPlanNode), nil
}

// foldPlanNode folds one node's expressions and drops trivially true or
// false filters.
func foldPlanNode(n Node) Node {
	n = mapExprs(n, FoldExpr)
	switch x := n.(type) {
	case *Filter:
		if l, ok := x.Pred.(*Literal); ok {
			if l.Val == true {
				return x.Input
			}
			return &Values{Cols: x.Schema()}
		}
		if isEmpty(x.Input) {
			return &Values{Cols: x.Schema()}
		}
	case *Scan:
		var keep []Expr
		for _, f := range x.Filters {
			if l, ok := f.(*Literal); ok {
				if l.Val == true {
					continue
				}
				return &Values{Cols: x.Schema()}
			}
			keep = append(keep, f)
		}
		if len(keep) != len(x.Filters) {
			o := *x
			o.Filters = keep
			return &o
		}
	case *Join:
		if l, ok := x.Cond.(*Literal); ok {
			if l.Val == true {
				o := *x
				o.Cond = nil
				return &o
			}
			if x.Kind == JoinInner || x.Kind == JoinSemi {
				return &Values{Cols: x.Schema()}
			}
		}
		switch {
		case isEmpty(x.Left) && x.Kind != JoinRight && x.Kind != JoinFull,
			isEmpty(x.Right) && (x.Kind == JoinInner || x.Kind == JoinSemi || x.Kind == JoinRight):
			return &Values{Cols: x.Schema()}
		}
	case *Project, *Sort, *Limit, *Window, *Expand:
		if isEmpty(n.Children()[0]) {
			return &Values{Cols: n.Schema()}
		}
	case *Aggregate:
		// A global aggregate (or one with an empty grouping set) has a
		// row even for empty input.
		if len(x.GroupBy) > 0 && len(x.GrandTotals) == 0 && isEmpty(x.Input) {
			return &Values{Cols: x.Schema()}
		}
	case *Union:
		var keep []Node
		for _, in := range x.Inputs {
			if !isEmpty(in) {
				keep = append(keep, in)
			}
		}
		switch {
		case len(keep) == 0:
			return &Values{Cols: x.Schema()}
		case len(keep) < len(x.Inputs):
			o := *x
			o.Inputs = keep
			return &o
		}
	}
	return n
}

// isEmpty reports whether n is known to produce no rows: an empty Values,
// which is what a false filter folds to. Operators over it that would
// produce nothing from nothing fold away too, so a UNION ALL branch ruled
// out by a pushed-down constant conjunct disappears whole.
func isEmpty(n Node) bool {
	v, ok := n.(*Values)
	return ok && len(v.Rows) == 0
}

// FoldExpr folds e bottom-up.
func FoldExpr(e Expr) Expr { return Transform(e, foldNode) }

func isLit(e Expr) (*Literal, bool) { l, ok := e.(*Literal); return l, ok }

func boolLit(v any) *Literal { return &Literal{Typ: Bool, Val: v} }

// truth returns the literal's boolean value: true, false or nil (NULL);
// ok is false for a non-literal.
func truth(e Expr) (any, bool) {
	l, ok := isLit(e)
	if !ok {
		return nil, false
	}
	if l.Val == nil {
		return nil, true
	}
	b, ok := l.Val.(bool)
	if !ok {
		return nil, false
	}
	return b, true
}

func foldNode(e Expr) Expr {
	switch x := e.(type) {
	case *Binary:
		return foldBinary(x)
	case *Not:
		if v, ok := truth(x.X); ok {
			if v == nil {
				return boolLit(nil)
			}
			return boolLit(!v.(bool))
		}
		if n, ok := x.X.(*Not); ok {
			return n.X
		}
	case *Negate:
		if l, ok := isLit(x.X); ok {
			return negateLit(l, x)
		}
	case *IsNull:
		if l, ok := isLit(x.X); ok {
			return boolLit((l.Val == nil) != x.Negated)
		}
	case *DistinctFrom:
		return foldDistinctFrom(x)
	case *Cast:
		if l, ok := isLit(x.X); ok {
			if out, ok := castLit(l, x.To); ok {
				return out
			}
		}
	case *Case:
		return foldCase(x)
	case *Func:
		if x.Name == "coalesce" {
			var args []Expr
			for _, a := range x.Args {
				if l, ok := isLit(a); ok {
					if l.Val == nil {
						continue
					}
					if len(args) == 0 {
						return &Literal{Typ: x.Typ, Val: l.Val}
					}
				}
				args = append(args, a)
			}
			if len(args) == 0 {
				return &Literal{Typ: x.Typ}
			}
			if len(args) == 1 && arrow.TypeEqual(args[0].Type(), x.Typ) {
				return args[0]
			}
			if len(args) != len(x.Args) {
				return &Func{Name: x.Name, Args: args, Typ: x.Typ}
			}
		}
	case *InList:
		return foldInList(x)
	}
	return e
}

func foldBinary(b *Binary) Expr {
	switch b.Op {
	case OpAnd:
		lv, lok := truth(b.L)
		rv, rok := truth(b.R)
		if (lok && lv == false) || (rok && rv == false) {
			return boolLit(false)
		}
		if lok && lv == true {
			return b.R
		}
		if rok && rv == true {
			return b.L
		}
		if lok && rok { // both NULL
			return boolLit(nil)
		}
		return b
	case OpOr:
		lv, lok := truth(b.L)
		rv, rok := truth(b.R)
		if (lok && lv == true) || (rok && rv == true) {
			return boolLit(true)
		}
		if lok && lv == false {
			return b.R
		}
		if rok && rv == false {
			return b.L
		}
		if lok && rok {
			return boolLit(nil)
		}
		return b
	}
	l, lok := isLit(b.L)
	r, rok := isLit(b.R)
	// Every other operator is strict: NULL in, NULL out.
	if (lok && l.Val == nil) || (rok && r.Val == nil) {
		return &Literal{Typ: b.Typ}
	}
	if !lok || !rok {
		return b
	}
	if b.Op.IsComparison() {
		c, ok := compareLits(l, r)
		if !ok {
			return b
		}
		var v bool
		switch b.Op {
		case OpEq:
			v = c == 0
		case OpNotEq:
			v = c != 0
		case OpLt:
			v = c < 0
		case OpLtEq:
			v = c <= 0
		case OpGt:
			v = c > 0
		case OpGtEq:
			v = c >= 0
		}
		return boolLit(v)
	}
	if b.Op == OpConcat {
		ls, ok1 := l.Val.(string)
		rs, ok2 := r.Val.(string)
		if ok1 && ok2 {
			return &Literal{Typ: b.Typ, Val: ls + rs}
		}
		return b
	}
	if out, ok := arith(b.Op, l, r, b.Typ); ok {
		return out
	}
	return b
}

// toBig returns an exact numeric literal as an unscaled integer and scale.
func toBig(l *Literal) (*big.Int, int32, bool) {
	switch v := l.Val.(type) {
	case int32:
		if l.Typ.ID() != arrow.INT32 {
			return nil, 0, false
		}
		return big.NewInt(int64(v)), 0, true
	case int64:
		if l.Typ.ID() != arrow.INT64 {
			return nil, 0, false
		}
		return big.NewInt(v), 0, true
	case decimal128.Num:
		return v.BigInt(), l.Typ.(*arrow.Decimal128Type).Scale, true
	}
	return nil, 0, false
}

var bigTen = big.NewInt(10)

func pow10(n int32) *big.Int { return new(big.Int).Exp(bigTen, big.NewInt(int64(n)), nil) }

// rescale changes v's scale from s to t exactly; ok is false if digits
// would be lost.
func rescale(v *big.Int, s, t int32) (*big.Int, bool) {
	if t >= s {
		return new(big.Int).Mul(v, pow10(t-s)), true
	}
	q, m := new(big.Int).QuoRem(v, pow10(s-t), new(big.Int))
	return q, m.Sign() == 0
}

// fromBig builds a literal of type t from an unscaled value at scale s.
func fromBig(v *big.Int, s int32, t arrow.DataType) (*Literal, bool) {
	switch t.ID() {
	case arrow.INT32:
		if s != 0 || !v.IsInt64() || v.Int64() > math.MaxInt32 || v.Int64() < math.MinInt32 {
			return nil, false
		}
		return &Literal{Typ: t, Val: int32(v.Int64())}, true
	case arrow.INT64:
		if s != 0 || !v.IsInt64() {
			return nil, false
		}
		return &Literal{Typ: t, Val: v.Int64()}, true
	case arrow.DECIMAL128:
		d := t.(*arrow.Decimal128Type)
		u, ok := rescale(v, s, d.Scale)
		if !ok || new(big.Int).Abs(u).Cmp(pow10(d.Precision)) >= 0 {
			return nil, false
		}
		return &Literal{Typ: t, Val: decimal128.FromBigInt(u)}, true
	}
	return nil, false
}

func toFloat(l *Literal) (float64, bool) {
	switch v := l.Val.(type) {
	case float64:
		return v, true
	case int32:
		if l.Typ.ID() == arrow.INT32 {
			return float64(v), true
		}
	case int64:
		if l.Typ.ID() == arrow.INT64 {
			return float64(v), true
		}
	case decimal128.Num:
		return v.ToFloat64(l.Typ.(*arrow.Decimal128Type).Scale), true
	}
	return 0, false
}

func arith(op BinaryOp, l, r *Literal, typ arrow.DataType) (*Literal, bool) {
	// Date arithmetic.
	if l.Typ.ID() == arrow.DATE32 || r.Typ.ID() == arrow.DATE32 {
		return dateArith(op, l, r)
	}
	if typ.ID() == arrow.FLOAT64 {
		a, ok1 := toFloat(l)
		b, ok2 := toFloat(r)
		if !ok1 || !ok2 {
			return nil, false
		}
		var v float64
		switch op {
		case OpAdd:
			v = a + b
		case OpSub:
			v = a - b
		case OpMul:
			v = a * b
		case OpDiv:
			if b == 0 {
				return nil, false
			}
			v = a / b
		case OpMod:
			if b == 0 {
				return nil, false
			}
			v = math.Mod(a, b)
		default:
			return nil, false
		}
		return &Literal{Typ: Float64, Val: v}, true
	}
	a, sa, ok1 := toBig(l)
	b, sb, ok2 := toBig(r)
	if !ok1 || !ok2 {
		return nil, false
	}
	var v *big.Int
	var s int32
	switch op {
	case OpAdd, OpSub:
		s = max(sa, sb)
		a, _ = rescale(a, sa, s)
		b, _ = rescale(b, sb, s)
		if op == OpAdd {
			v = new(big.Int).Add(a, b)
		} else {
			v = new(big.Int).Sub(a, b)
		}
	case OpMul:
		v, s = new(big.Int).Mul(a, b), sa+sb
	case OpDiv, OpMod:
		if b.Sign() == 0 {
			return nil, false
		}
		if IsInteger(typ) {
			// Integer division truncates toward zero, as Go's Quo/Rem do.
			if op == OpDiv {
				v = new(big.Int).Quo(a, b)
			} else {
				v = new(big.Int).Rem(a, b)
			}
			break
		}
		d, ok := typ.(*arrow.Decimal128Type)
		if !ok || op == OpMod {
			return nil, false
		}
		// a/10^sa ÷ b/10^sb at scale d.Scale, folded only when exact.
		s = d.Scale
		num := new(big.Int).Mul(a, pow10(s+sb))
		den := new(big.Int).Mul(b, pow10(sa))
		q, m := new(big.Int).QuoRem(num, den, new(big.Int))
		if m.Sign() != 0 {
			return nil, false
		}
		v = q
	default:
		return nil, false
	}
	return fromBig(v, s, typ)
}

// AddMonths adds months to a date (days since the epoch) the SQL way: the day clamps to the end of
// the target month (Jan 31 + 1 month = Feb 28/29).
func AddMonths(days int32, months int32) int32 {
	t := time.Unix(int64(days)*86400, 0).UTC()
	y, m, d := t.Date()
	total := int(m) - 1 + int(months)
	ny := y + total/12
	nm := total % 12
	if nm < 0 {
		nm += 12
		ny--
	}
	last := time.Date(ny, time.Month(nm+2), 0, 0, 0, 0, 0, time.UTC).Day()
	d = min(d, last)
	return int32(time.Date(ny, time.Month(nm+1), d, 0, 0, 0, 0, time.UTC).Unix() / 86400)
}

func dateArith(op BinaryOp, l, r *Literal) (*Literal, bool) {
	switch {
	case l.Typ.ID() == arrow.DATE32 && r.Typ.ID() == arrow.INTERVAL_MONTH_DAY_NANO && (op == OpAdd || op == OpSub),
		l.Typ.ID() == arrow.INTERVAL_MONTH_DAY_NANO && r.Typ.ID() == arrow.DATE32 && op == OpAdd:
		d, iv := l, r
		if l.Typ.ID() != arrow.DATE32 {
			d, iv = r, l
		}
		days := d.Val.(int32)
		i := iv.Val.(arrow.MonthDayNanoInterval)
		if i.Nanoseconds != 0 {
			return nil, false
		}
		if op == OpSub {
			i.Months, i.Days = -i.Months, -i.Days
		}
		return &Literal{Typ: Date32, Val: AddMonths(days, i.Months) + i.Days}, true
	case l.Typ.ID() == arrow.DATE32 && IsInteger(r.Typ) && (op == OpAdd || op == OpSub):
		n, _, ok := toBig(r)
		if !ok || !n.IsInt64() || n.Int64() > math.MaxInt32/2 || n.Int64() < math.MinInt32/2 {
			return nil, false
		}
		k := int32(n.Int64())
		if op == OpSub {
			k = -k
		}
		return &Literal{Typ: Date32, Val: l.Val.(int32) + k}, true
	case l.Typ.ID() == arrow.DATE32 && r.Typ.ID() == arrow.DATE32 && op == OpSub:
		return &Literal{Typ: Int32, Val: l.Val.(int32) - r.Val.(int32)}, true
	}
	return nil, false
}

// compareLits compares two non-NULL literals of comparable types.
func compareLits(l, r *Literal) (int, bool) {
	switch a := l.Val.(type) {
	case bool:
		b, ok := r.Val.(bool)
		if !ok {
			return 0, false
		}
		switch {
		case a == b:
			return 0, true
		case !a:
			return -1, true
		}
		return 1, true
	case string:
		b, ok := r.Val.(string)
		if !ok {
			return 0, false
		}
		return strings.Compare(a, b), true
	case arrow.MonthDayNanoInterval:
		return 0, false
	}
	if l.Typ.ID() != r.Typ.ID() {
		// Dates and timestamps are only compared with their own kind.
		if IsTemporal(l.Typ) || IsTemporal(r.Typ) {
			return 0, false
		}
	}
	if l.Typ.ID() == arrow.FLOAT64 || r.Typ.ID() == arrow.FLOAT64 {
		a, ok1 := toFloat(l)
		b, ok2 := toFloat(r)
		if !ok1 || !ok2 || math.IsNaN(a) || math.IsNaN(b) {
			return 0, false
		}
		switch {
		case a < b:
			return -1, true
		case a > b:
			return 1, true
		}
		return 0, true
	}
	if IsTemporal(l.Typ) {
		a, b := temporalInt(l), temporalInt(r)
		switch {
		case a < b:
			return -1, true
		case a > b:
			return 1, true
		}
		return 0, true
	}
	a, sa, ok1 := toBig(l)
	b, sb, ok2 := toBig(r)
	if !ok1 || !ok2 {
		return 0, false
	}
	s := max(sa, sb)
	a, _ = rescale(a, sa, s)
	b, _ = rescale(b, sb, s)
	return a.Cmp(b), true
}

func temporalInt(l *Literal) int64 {
	switch v := l.Val.(type) {
	case int32:
		return int64(v)
	case int64:
		return v
	}
	return 0
}

func negateLit(l *Literal, orig Expr) Expr {
	switch v := l.Val.(type) {
	case float64:
		return &Literal{Typ: l.Typ, Val: -v}
	case int32, int64, decimal128.Num:
		n, s, ok := toBig(l)
		if !ok {
			return orig
		}
		if out, ok := fromBig(new(big.Int).Neg(n), s, l.Typ); ok {
			return out
		}
	}
	return orig
}

// castLit converts a literal to type to when the conversion is exact and
// unambiguous.
func castLit(l *Literal, to arrow.DataType) (*Literal, bool) {
	if l.Val == nil {
		return &Literal{Typ: to}, true
	}
	if arrow.TypeEqual(l.Typ, to) {
		return l, true
	}
	switch to.ID() {
	case arrow.DATE32:
		if s, ok := l.Val.(string); ok {
			t, err := time.Parse("2006-01-02", strings.TrimSpace(s))
			if err != nil {
				return nil, false
			}
			return &Literal{Typ: to, Val: int32(t.Unix() / 86400)}, true
		}
	case arrow.TIMESTAMP:
		if l.Typ.ID() == arrow.DATE32 {
			return &Literal{Typ: to, Val: int64(l.Val.(int32)) * 86400 * 1e6}, true
		}
	case arrow.INT32, arrow.INT64, arrow.DECIMAL128:
		if s, ok := l.Val.(string); ok {
			if to.ID() == arrow.DECIMAL128 {
				d := to.(*arrow.Decimal128Type)
				s = strings.TrimSpace(s)
				// FromString rounds; fold only strings that fit the scale.
				if dot := strings.IndexByte(s, '.'); dot >= 0 && len(s)-dot-1 > int(d.Scale) {
					return nil, false
				}
				if strings.ContainsAny(s, "eE") {
					return nil, false
				}
				n, err := decimal128.FromString(s, d.Precision, d.Scale)
				if err != nil {
					return nil, false
				}
				return &Literal{Typ: to, Val: n}, true
			}
			i, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
			if err != nil {
				return nil, false
			}
			return fromBig(big.NewInt(i), 0, to)
		}
		if n, s, ok := toBig(l); ok {
			return fromBig(n, s, to)
		}
	case arrow.FLOAT64:
		if f, ok := toFloat(l); ok {
			return &Literal{Typ: to, Val: f}, true
		}
		if s, ok := l.Val.(string); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
			if err != nil {
				return nil, false
			}
			return &Literal{Typ: to, Val: f}, true
		}
	case arrow.STRING:
		if s, ok := l.Val.(string); ok {
			return &Literal{Typ: to, Val: s}, true
		}
	}
	return nil, false
}

func foldCase(c *Case) Expr {
	var whens []When
	for _, w := range c.Whens {
		v, ok := truth(w.Cond)
		if !ok {
			whens = append(whens, w)
			continue
		}
		if v == true {
			if len(whens) == 0 {
				return w.Then
			}
			return &Case{Whens: whens, Else: w.Then, Typ: c.Typ}
		}
		// false or NULL: the arm never fires.
	}
	if len(whens) == 0 {
		if c.Else == nil {
			return &Literal{Typ: c.Typ}
		}
		return c.Else
	}
	if len(whens) == len(c.Whens) {
		return c
	}
	return &Case{Whens: whens, Else: c.Else, Typ: c.Typ}
}

func foldInList(x *InList) Expr {
	l, ok := isLit(x.X)
	if !ok {
		return x
	}
	if l.Val == nil {
		return boolLit(nil)
	}
	sawNull := false
	for _, it := range x.List {
		r, ok := isLit(it)
		if !ok {
			return x
		}
		if r.Val == nil {
			sawNull = true
			continue
		}
		c, ok := compareLits(l, r)
		if !ok {
			return x
		}
		if c == 0 {
			return boolLit(!x.Negated)
		}
	}
	if sawNull {
		return boolLit(nil)
	}
	return boolLit(x.Negated)
}
