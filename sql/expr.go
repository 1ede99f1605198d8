package sql

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	pg "github.com/pganalyze/pg_query_go/v6"

	"sluice/plan"
)

// ectx is the context an expression is bound in.
type ectx struct {
	sc     *scope
	agg    *aggState // where aggregate calls go; nil where they are not allowed
	win    *winState // where window function calls go; nil where they are not allowed
	srf    *srfState // where unnest calls go; nil where they are not allowed
	clause string    // for errors: "WHERE", "GROUP BY", ...
}

// boolExpr binds an expression that must be boolean.
func (b *binder) boolExpr(n *pg.Node, c ectx) (plan.Expr, error) {
	e, err := b.expr(n, c)
	if err != nil {
		return nil, err
	}
	return b.asBool(e, n, c.clause)
}

func (b *binder) asBool(e plan.Expr, n *pg.Node, what string) (plan.Expr, error) {
	switch e.Type().ID() {
	case plan.Bool.ID():
		return e, nil
	case plan.Null.ID():
		return coerce(e, plan.Bool), nil
	}
	return nil, b.errAt("type", nodeLoc(n), "argument of %s must be type BOOLEAN, not type %s", what, plan.TypeName(e.Type()))
}

// expr binds one expression.
func (b *binder) expr(n *pg.Node, c ectx) (plan.Expr, error) {
	if n == nil {
		return nil, &Error{Kind: "bind", Msg: "missing expression"}
	}
	switch x := n.Node.(type) {
	case *pg.Node_ColumnRef:
		parts := make([]string, 0, len(x.ColumnRef.Fields))
		for _, f := range x.ColumnRef.Fields {
			s := f.GetString_()
			if s == nil {
				return nil, b.errAt("bind", x.ColumnRef.Location, "* is not allowed here")
			}
			parts = append(parts, s.Sval)
		}
		return b.lookup(c.sc, parts, x.ColumnRef.Location)
	case *pg.Node_AConst:
		return b.constant(x.AConst)
	case *pg.Node_TypeCast:
		return b.typeCast(x.TypeCast, c)
	case *pg.Node_AExpr:
		return b.aExpr(x.AExpr, c)
	case *pg.Node_BoolExpr:
		return b.boolOp(x.BoolExpr, c)
	case *pg.Node_NullTest:
		arg, err := b.expr(x.NullTest.Arg, c)
		if err != nil {
			return nil, err
		}
		return &plan.IsNull{X: arg, Negated: x.NullTest.Nulltesttype == pg.NullTestType_IS_NOT_NULL}, nil
	case *pg.Node_BooleanTest:
		return b.booleanTest(x.BooleanTest, c)
	case *pg.Node_CaseExpr:
		return b.caseExpr(x.CaseExpr, c)
	case *pg.Node_CoalesceExpr:
		args, err := b.exprs(x.CoalesceExpr.Args, c)
		if err != nil {
			return nil, err
		}
		t, err := b.commonTypeAt(args, "COALESCE", x.CoalesceExpr.Location)
		if err != nil {
			return nil, err
		}
		for i := range args {
			args[i] = coerce(args[i], t)
		}
		return &plan.Func{Name: "coalesce", Args: args, Typ: t}, nil
	case *pg.Node_FuncCall:
		return b.funcCall(x.FuncCall, c)
	case *pg.Node_GroupingFunc:
		return b.groupingFunc(x.GroupingFunc, c)
	case *pg.Node_SubLink:
		return b.subLink(x.SubLink, c, false)
	case *pg.Node_MinMaxExpr:
		args, err := b.exprs(x.MinMaxExpr.Args, c)
		if err != nil {
			return nil, err
		}
		locs := make([]int32, len(x.MinMaxExpr.Args))
		for i, a := range x.MinMaxExpr.Args {
			locs[i] = nodeLoc(a)
		}
		name := "greatest"
		if x.MinMaxExpr.Op == pg.MinMaxOp_IS_LEAST {
			name = "least"
		}
		return b.builtinCall(name, args, locs, x.MinMaxExpr.Location)
	case *pg.Node_AIndirection:
		return b.subscript(x.AIndirection, c)
	case *pg.Node_AArrayExpr:
		return b.arrayExpr(x.AArrayExpr, nil, c)
	case *pg.Node_SqlvalueFunction:
		v := x.SqlvalueFunction
		switch v.Op {
		case pg.SQLValueFunctionOp_SVFOP_CURRENT_DATE:
			return b.builtinCall("current_date", nil, nil, v.Location)
		case pg.SQLValueFunctionOp_SVFOP_CURRENT_TIMESTAMP, pg.SQLValueFunctionOp_SVFOP_LOCALTIMESTAMP:
			return b.builtinCall("current_timestamp", nil, nil, v.Location)
		case pg.SQLValueFunctionOp_SVFOP_CURRENT_CATALOG:
			return &plan.Literal{Typ: plan.Utf8, Val: infoCatalog}, nil
		case pg.SQLValueFunctionOp_SVFOP_CURRENT_SCHEMA:
			return &plan.Literal{Typ: plan.Utf8, Val: infoSchema}, nil
		}
		return nil, b.errAt("bind", v.Location, "%s is not supported", strings.TrimPrefix(v.Op.String(), "SVFOP_"))
	}
	return nil, b.errAt("bind", nodeLoc(n), "unsupported expression (%s)", strings.TrimPrefix(fmt.Sprintf("%T", n.Node), "*pg_query.Node_"))
}

// subscript binds a[i] (and a[i][j]... fails: arrays have one dimension).
// As in PostgreSQL, indexes start at 1 and an index out of range is NULL.
func (b *binder) subscript(x *pg.A_Indirection, c ectx) (plan.Expr, error) {
	arr, err := b.expr(x.Arg, c)
	if err != nil {
		return nil, err
	}
	for _, ind := range x.Indirection {
		ai := ind.GetAIndices()
		if ai == nil {
			return nil, b.errAt("bind", nodeLoc(x.Arg), "field selection is not supported (sluice has no composite types)")
		}
		if ai.IsSlice {
			return nil, b.errAt("bind", nodeLoc(x.Arg), "array slices are not supported")
		}
		if !plan.IsArray(arr.Type()) {
			if arr.Type().ID() == plan.Null.ID() {
				arr = coerce(arr, plan.TextArray)
			} else {
				e := b.errAt("type", nodeLoc(x.Arg), "cannot subscript type %s because it is not an array", plan.TypeName(arr.Type()))
				return nil, e
			}
		}
		idx, err := b.expr(ai.Uidx, c)
		if err != nil {
			return nil, err
		}
		if !plan.IsInteger(idx.Type()) && idx.Type().ID() != plan.Null.ID() {
			return nil, b.errAt("type", nodeLoc(ai.Uidx), "array subscript must have type integer, not %s", plan.TypeName(idx.Type()))
		}
		elem := arr.Type().(*arrow.ListType).Elem()
		arr = &plan.Func{Name: "array_element", Args: []plan.Expr{arr, coerce(idx, plan.Int64)}, Typ: elem}
	}
	return arr, nil
}

func (b *binder) exprs(ns []*pg.Node, c ectx) ([]plan.Expr, error) {
	out := make([]plan.Expr, len(ns))
	for i, n := range ns {
		e, err := b.expr(n, c)
		if err != nil {
			return nil, err
		}
		out[i] = e
	}
	return out, nil
}

// booleanTest binds x IS [NOT] TRUE | FALSE | UNKNOWN, which is never
// NULL: IS TRUE is CASE WHEN x THEN true ELSE false END, and so on.
func (b *binder) booleanTest(x *pg.BooleanTest, c ectx) (plan.Expr, error) {
	what := map[pg.BoolTestType]string{
		pg.BoolTestType_IS_TRUE: "IS TRUE", pg.BoolTestType_IS_NOT_TRUE: "IS NOT TRUE",
		pg.BoolTestType_IS_FALSE: "IS FALSE", pg.BoolTestType_IS_NOT_FALSE: "IS NOT FALSE",
		pg.BoolTestType_IS_UNKNOWN: "IS UNKNOWN", pg.BoolTestType_IS_NOT_UNKNOWN: "IS NOT UNKNOWN",
	}[x.Booltesttype]
	if what == "" {
		return nil, b.errAt("bind", x.Location, "unsupported boolean test %s", x.Booltesttype)
	}
	if x.Location < 0 {
		// DELETE's and UPDATE's mark (rewrite.go) tests the WHERE clause.
		what = "WHERE"
	}
	arg, err := b.boolExpr(x.Arg, ectx{sc: c.sc, agg: c.agg, win: c.win, clause: what})
	if err != nil {
		return nil, err
	}
	lit := func(v bool) plan.Expr { return &plan.Literal{Typ: plan.Bool, Val: v} }
	switch x.Booltesttype {
	case pg.BoolTestType_IS_UNKNOWN, pg.BoolTestType_IS_NOT_UNKNOWN:
		return &plan.IsNull{X: arg, Negated: x.Booltesttype == pg.BoolTestType_IS_NOT_UNKNOWN}, nil
	case pg.BoolTestType_IS_FALSE, pg.BoolTestType_IS_NOT_FALSE:
		arg = &plan.Not{X: arg}
	}
	// The arm holds for TRUE (IS TRUE) or FALSE (IS FALSE) only; NULL
	// falls to ELSE.
	positive := x.Booltesttype == pg.BoolTestType_IS_TRUE || x.Booltesttype == pg.BoolTestType_IS_FALSE
	return &plan.Case{Whens: []plan.When{{Cond: arg, Then: lit(positive)}}, Else: lit(!positive), Typ: plan.Bool}, nil
}

func (b *binder) boolOp(x *pg.BoolExpr, c ectx) (plan.Expr, error) {
	if x.Boolop == pg.BoolExprType_NOT_EXPR {
		// NOT EXISTS / NOT IN (subquery) become negated subqueries so the
		// optimizer sees anti-join shapes directly.
		if sl := x.Args[0].GetSubLink(); sl != nil && (sl.SubLinkType == pg.SubLinkType_EXISTS_SUBLINK || sl.SubLinkType == pg.SubLinkType_ANY_SUBLINK) {
			return b.subLink(sl, c, true)
		}
		e, err := b.boolExpr(x.Args[0], ectx{sc: c.sc, agg: c.agg, win: c.win, clause: "NOT"})
		if err != nil {
			return nil, err
		}
		return &plan.Not{X: e}, nil
	}
	op, what := plan.OpAnd, "AND"
	if x.Boolop == pg.BoolExprType_OR_EXPR {
		op, what = plan.OpOr, "OR"
	}
	var out plan.Expr
	for _, a := range x.Args {
		e, err := b.boolExpr(a, ectx{sc: c.sc, agg: c.agg, win: c.win, clause: what})
		if err != nil {
			return nil, err
		}
		if out == nil {
			out = e
		} else {
			out = &plan.Binary{Op: op, L: out, R: e, Typ: plan.Bool}
		}
	}
	return out, nil
}

var compareOps = map[string]plan.BinaryOp{
	"=": plan.OpEq, "<>": plan.OpNotEq, "!=": plan.OpNotEq, "<": plan.OpLt,
	"<=": plan.OpLtEq, ">": plan.OpGt, ">=": plan.OpGtEq,
}

var arithOps = map[string]plan.BinaryOp{
	"+": plan.OpAdd, "-": plan.OpSub, "*": plan.OpMul, "/": plan.OpDiv, "%": plan.OpMod,
}

func (b *binder) aExpr(x *pg.A_Expr, c ectx) (plan.Expr, error) {
	opName := ""
	if names := stringList(x.Name); len(names) > 0 {
		opName = names[len(names)-1]
	}
	switch x.Kind {
	case pg.A_Expr_Kind_AEXPR_OP:
		if x.Lexpr == nil {
			r, err := b.expr(x.Rexpr, c)
			if err != nil {
				return nil, err
			}
			switch opName {
			case "+":
				if !plan.IsNumeric(r.Type()) {
					return nil, b.errAt("type", x.Location, "cannot apply unary + to %s", plan.TypeName(r.Type()))
				}
				return r, nil
			case "-":
				return b.negate(r, x.Location)
			}
			return nil, b.errAt("bind", x.Location, "unsupported prefix operator %s", opName)
		}
		l, err := b.expr(x.Lexpr, c)
		if err != nil {
			return nil, err
		}
		r, err := b.expr(x.Rexpr, c)
		if err != nil {
			return nil, err
		}
		if op, ok := compareOps[opName]; ok {
			return b.compare(op, l, r, x.Location)
		}
		if op, ok := arithOps[opName]; ok {
			return b.arith(op, l, r, x.Location)
		}
		if opName == "||" {
			if plan.IsArray(l.Type()) || plan.IsArray(r.Type()) {
				return b.arrayConcat(l, r, x.Location)
			}
			return &plan.Binary{Op: plan.OpConcat, L: coerce(l, plan.Utf8), R: coerce(r, plan.Utf8), Typ: plan.Utf8}, nil
		}
		switch opName {
		case "~", "~*", "!~", "!~*":
			return b.regexOp(opName, l, r, x.Location)
		case "->", "->>":
			return b.jsonArrow(opName, l, r, x.Location)
		case "^":
			// Exponentiation, in DOUBLE as PostgreSQL's float8 ^ (and
			// DuckDB's): power().
			for _, e := range []plan.Expr{l, r} {
				if t := e.Type(); !plan.IsNumeric(t) && t.ID() != plan.Null.ID() {
					return nil, b.errAt("type", x.Location, "cannot apply ^ to %s", plan.TypeName(t))
				}
			}
			return &plan.Func{Name: "power", Args: []plan.Expr{coerce(l, plan.Float64), coerce(r, plan.Float64)}, Typ: plan.Float64}, nil
		}
		return nil, b.errAt("bind", x.Location, "unsupported operator %s", opName)
	case pg.A_Expr_Kind_AEXPR_LIKE, pg.A_Expr_Kind_AEXPR_ILIKE:
		l, err := b.expr(x.Lexpr, c)
		if err != nil {
			return nil, err
		}
		r, err := b.expr(x.Rexpr, c)
		if err != nil {
			return nil, err
		}
		for _, e := range []plan.Expr{l, r} {
			if id := e.Type().ID(); id != plan.Utf8.ID() && id != plan.Null.ID() {
				what := "LIKE"
				if x.Kind == pg.A_Expr_Kind_AEXPR_ILIKE {
					what = "ILIKE"
				}
				return nil, b.errAt("type", x.Location, "%s needs VARCHAR operands, not %s", what, plan.TypeName(e.Type()))
			}
		}
		l, r = coerce(l, plan.Utf8), coerce(r, plan.Utf8)
		if x.Kind == pg.A_Expr_Kind_AEXPR_ILIKE {
			// ILIKE is LIKE of both sides in lower case: the wildcards and
			// the escape are unaffected by case.
			l = &plan.Func{Name: "lower", Args: []plan.Expr{l}, Typ: plan.Utf8}
			r = &plan.Func{Name: "lower", Args: []plan.Expr{r}, Typ: plan.Utf8}
			return &plan.Like{X: l, Pattern: r, Negated: opName == "!~~*"}, nil
		}
		return &plan.Like{X: l, Pattern: r, Negated: opName == "!~~"}, nil
	case pg.A_Expr_Kind_AEXPR_IN:
		l, err := b.expr(x.Lexpr, c)
		if err != nil {
			return nil, err
		}
		list, err := b.exprs(x.Rexpr.GetList().GetItems(), c)
		if err != nil {
			return nil, err
		}
		// Literals adapt to the tested expression's type when exact.
		for i, e := range list {
			if lit, ok := e.(*plan.Literal); ok {
				if v, ok := adaptLiteral(lit, l.Type()); ok {
					list[i] = v
				}
			}
		}
		t, err := b.commonTypeAt(append([]plan.Expr{l}, list...), "IN", x.Location)
		if err != nil {
			return nil, err
		}
		if plan.IsArray(t) {
			return nil, b.arrayCompareErr(t, x.Location)
		}
		for i := range list {
			list[i] = coerce(list[i], t)
		}
		return &plan.InList{X: coerce(l, t), List: list, Negated: opName == "<>"}, nil
	case pg.A_Expr_Kind_AEXPR_BETWEEN, pg.A_Expr_Kind_AEXPR_NOT_BETWEEN:
		v, err := b.expr(x.Lexpr, c)
		if err != nil {
			return nil, err
		}
		bounds := x.Rexpr.GetList().GetItems()
		lo, err := b.expr(bounds[0], c)
		if err != nil {
			return nil, err
		}
		hi, err := b.expr(bounds[1], c)
		if err != nil {
			return nil, err
		}
		if x.Kind == pg.A_Expr_Kind_AEXPR_BETWEEN {
			ge, err := b.compare(plan.OpGtEq, v, lo, x.Location)
			if err != nil {
				return nil, err
			}
			le, err := b.compare(plan.OpLtEq, v, hi, x.Location)
			if err != nil {
				return nil, err
			}
			return &plan.Binary{Op: plan.OpAnd, L: ge, R: le, Typ: plan.Bool}, nil
		}
		lt, err := b.compare(plan.OpLt, v, lo, x.Location)
		if err != nil {
			return nil, err
		}
		gt, err := b.compare(plan.OpGt, v, hi, x.Location)
		if err != nil {
			return nil, err
		}
		return &plan.Binary{Op: plan.OpOr, L: lt, R: gt, Typ: plan.Bool}, nil
	case pg.A_Expr_Kind_AEXPR_OP_ANY, pg.A_Expr_Kind_AEXPR_OP_ALL:
		return b.quantified(x, opName, c)
	case pg.A_Expr_Kind_AEXPR_SIMILAR:
		return b.similar(x, c)
	case pg.A_Expr_Kind_AEXPR_DISTINCT, pg.A_Expr_Kind_AEXPR_NOT_DISTINCT:
		return b.distinctFrom(x, c)
	case pg.A_Expr_Kind_AEXPR_NULLIF:
		l, err := b.expr(x.Lexpr, c)
		if err != nil {
			return nil, err
		}
		r, err := b.expr(x.Rexpr, c)
		if err != nil {
			return nil, err
		}
		t, err := b.commonTypeAt([]plan.Expr{l, r}, "NULLIF", x.Location)
		if err != nil {
			return nil, err
		}
		return &plan.Func{Name: "nullif", Args: []plan.Expr{coerce(l, t), coerce(r, t)}, Typ: t}, nil
	}
	return nil, b.errAt("bind", x.Location, "unsupported operator (%s)", strings.TrimPrefix(x.Kind.String(), "AEXPR_"))
}

// negate is unary minus; literals are folded.
func (b *binder) negate(e plan.Expr, loc int32) (plan.Expr, error) {
	if !plan.IsNumeric(e.Type()) && e.Type().ID() != plan.Interval.ID() {
		return nil, b.errAt("type", loc, "cannot negate %s", plan.TypeName(e.Type()))
	}
	if lit, ok := e.(*plan.Literal); ok {
		if v, ok := negateLiteral(lit); ok {
			return v, nil
		}
	}
	return &plan.Negate{X: e}, nil
}

// compare builds l op r with both sides cast to their common type. A
// literal on one side is first converted to the other side's type when
// that is exact, so `int32col = 1` compares int32s and `datecol < '1995-01-01'`
// compares dates.
func (b *binder) compare(op plan.BinaryOp, l, r plan.Expr, loc int32) (plan.Expr, error) {
	if !typeEq(l.Type(), r.Type()) {
		if lit, ok := r.(*plan.Literal); ok {
			if v, ok := adaptLiteral(lit, l.Type()); ok {
				r = v
			}
		}
	}
	if !typeEq(l.Type(), r.Type()) {
		if lit, ok := l.(*plan.Literal); ok {
			if v, ok := adaptLiteral(lit, r.Type()); ok {
				l = v
			}
		}
	}
	t, ok := plan.CommonType(l.Type(), r.Type())
	if !ok {
		return nil, b.errAt("type", loc, "cannot compare %s with %s", plan.TypeName(l.Type()), plan.TypeName(r.Type()))
	}
	if plan.IsArray(t) {
		return nil, b.arrayCompareErr(t, loc)
	}
	return &plan.Binary{Op: op, L: coerce(l, t), R: coerce(r, t), Typ: plan.Bool}, nil
}

// arith builds l op r for + - * / %, casting operands to the types
// plan.ArithmeticType assumes: mixed integers widen to BIGINT, integers
// meeting decimals become decimals (plan.AsDecimal), anything meeting a
// DOUBLE becomes DOUBLE. Date ± interval of literals is folded.
func (b *binder) arith(op plan.BinaryOp, l, r plan.Expr, loc int32) (plan.Expr, error) {
	// Untyped strings next to dates and intervals are dates.
	if isStringLit(l) && (r.Type().ID() == plan.Interval.ID() || r.Type().ID() == plan.Date32.ID()) {
		if v, ok := convertLiteral(l.(*plan.Literal), plan.Date32); ok {
			l = v
		}
	}
	if isStringLit(r) && l.Type().ID() == plan.Date32.ID() {
		if v, ok := convertLiteral(r.(*plan.Literal), plan.Date32); ok {
			r = v
		}
	}
	// An untyped string next to a number is a number too, as PostgreSQL
	// resolves an unknown literal by the other operand: an integer beside
	// integers, a double beside doubles, a decimal of its own digits
	// beside decimals.
	if isStringLit(l) && plan.IsNumeric(r.Type()) {
		var err error
		if l, err = b.numericText(l.(*plan.Literal), r.Type(), loc); err != nil {
			return nil, err
		}
	}
	if isStringLit(r) && plan.IsNumeric(l.Type()) {
		var err error
		if r, err = b.numericText(r.(*plan.Literal), l.Type(), loc); err != nil {
			return nil, err
		}
	}
	lt, rt := l.Type(), r.Type()
	if lt.ID() == plan.Null.ID() {
		l, lt = coerce(l, rt), rt
	}
	if rt.ID() == plan.Null.ID() {
		r, rt = coerce(r, lt), lt
	}
	if plan.IsNumeric(lt) && plan.IsNumeric(rt) && !typeEq(lt, rt) {
		switch {
		case lt.ID() == plan.Float64.ID() || rt.ID() == plan.Float64.ID():
			l, r = coerce(l, plan.Float64), coerce(r, plan.Float64)
		case lt.ID() == plan.Decimal(1, 0).ID() && plan.IsInteger(rt):
			d, _ := plan.AsDecimal(rt)
			r = coerce(r, d)
		case rt.ID() == plan.Decimal(1, 0).ID() && plan.IsInteger(lt):
			d, _ := plan.AsDecimal(lt)
			l = coerce(l, d)
		case plan.IsInteger(lt) && plan.IsInteger(rt):
			// A small integer literal keeps INT arithmetic INT.
			if v, ok := narrowIntLit(r, lt); ok {
				r = v
			} else if v, ok := narrowIntLit(l, rt); ok {
				l = v
			} else {
				l, r = coerce(l, plan.Int64), coerce(r, plan.Int64)
			}
		}
	}
	if op == plan.OpAdd && (r.Type().ID() == plan.Date32.ID() && plan.IsInteger(l.Type()) ||
		l.Type().ID() == plan.Interval.ID() && (r.Type().ID() == plan.Date32.ID() || r.Type().ID() == plan.Timestamp.ID())) {
		l, r = r, l // int + date is date + int, interval + date is date + interval
	}
	// PostgreSQL makes date ± interval a timestamp. It stays a date here
	// when the interval is a constant of whole months and days (a
	// midnight moved by them is a midnight, and a date compares with date
	// columns, and their files' statistics, as a date); any other
	// interval moves the date's midnight as a timestamp, so that its time
	// of day is kept.
	if (op == plan.OpAdd || op == plan.OpSub) && l.Type().ID() == plan.Date32.ID() && r.Type().ID() == plan.Interval.ID() && mayHoldTime(r) {
		l = coerce(l, plan.Timestamp)
	}
	typ, err := plan.ArithmeticType(op, l.Type(), r.Type())
	if err != nil {
		return nil, b.errAt("type", loc, "%v", err)
	}
	if v, ok := foldDateInterval(op, l, r); ok {
		return v, nil
	}
	if v, ok := foldArith(op, l, r, typ); ok {
		return v, nil
	}
	return &plan.Binary{Op: op, L: l, R: r, Typ: typ}, nil
}

// numericText reads the untyped string literal lit as a number beside an
// operand of type other (see arith), or fails as PostgreSQL does.
func (b *binder) numericText(lit *plan.Literal, other arrowType, loc int32) (plan.Expr, error) {
	s := lit.Val.(string)
	var v *plan.Literal
	ok := false
	switch {
	case plan.IsInteger(other), other.ID() == plan.Float64.ID():
		v, ok = stringTo(s, other)
	default:
		v, ok = numberLiteral(strings.TrimSpace(s))
		ok = ok && v.Typ.ID() != plan.Float64.ID()
	}
	if !ok {
		return nil, b.errAt("type", loc, "invalid input syntax for type %s: %q", plan.TypeName(other), s)
	}
	return v, nil
}

// mayHoldTime reports whether interval expression e may hold a time of
// day: anything but a constant of whole months and days (or NULL).
func mayHoldTime(e plan.Expr) bool {
	lit, ok := e.(*plan.Literal)
	if !ok {
		return true
	}
	iv, ok := lit.Val.(arrow.MonthDayNanoInterval)
	return ok && iv.Nanoseconds != 0
}

// commonTypeAt is commonType with an error position.
func (b *binder) commonTypeAt(es []plan.Expr, what string, loc int32) (arrowType, error) {
	t, err := b.commonType(es, what)
	if err != nil {
		e := b.errAt("type", loc, "%s", err.(*Error).Msg)
		return nil, e
	}
	return t, nil
}

// commonType folds plan.CommonType over the expressions' types; an
// all-NULL list is VARCHAR. Literals that convert exactly to the type of the
// other expressions do not widen it (CASE ... THEN decimalcol ELSE 0 stays
// DECIMAL(15,2)).
func (b *binder) commonType(es []plan.Expr, what string) (arrowType, error) {
	t := plan.Null
	var lits []plan.Expr
	for _, e := range es {
		if _, ok := e.(*plan.Literal); ok {
			lits = append(lits, e)
			continue
		}
		nt, ok := plan.CommonType(t, e.Type())
		if !ok {
			return nil, &Error{Kind: "type", Msg: fmt.Sprintf("%s types %s and %s cannot be matched", what, plan.TypeName(t), plan.TypeName(e.Type()))}
		}
		t = nt
	}
	for _, e := range lits {
		if t.ID() != plan.Null.ID() {
			if _, ok := adaptLiteral(e.(*plan.Literal), t); ok {
				continue
			}
		}
		nt, ok := plan.CommonType(t, e.Type())
		if !ok {
			return nil, &Error{Kind: "type", Msg: fmt.Sprintf("%s types %s and %s cannot be matched", what, plan.TypeName(t), plan.TypeName(e.Type()))}
		}
		t = nt
	}
	if t.ID() == plan.Null.ID() {
		t = plan.Utf8
	}
	return t, nil
}

func (b *binder) caseExpr(x *pg.CaseExpr, c ectx) (plan.Expr, error) {
	var arg plan.Expr
	var err error
	if x.Arg != nil {
		if arg, err = b.expr(x.Arg, c); err != nil {
			return nil, err
		}
	}
	out := &plan.Case{}
	var results []plan.Expr
	for _, w := range x.Args {
		cw := w.GetCaseWhen()
		var cond plan.Expr
		if arg != nil {
			v, err := b.expr(cw.Expr, c)
			if err != nil {
				return nil, err
			}
			if cond, err = b.compare(plan.OpEq, arg, v, cw.Location); err != nil {
				return nil, err
			}
		} else if cond, err = b.boolExpr(cw.Expr, ectx{sc: c.sc, agg: c.agg, win: c.win, clause: "CASE/WHEN"}); err != nil {
			return nil, err
		}
		then, err := b.expr(cw.Result, c)
		if err != nil {
			return nil, err
		}
		out.Whens = append(out.Whens, plan.When{Cond: cond, Then: then})
		results = append(results, then)
	}
	if x.Defresult != nil {
		if out.Else, err = b.expr(x.Defresult, c); err != nil {
			return nil, err
		}
		results = append(results, out.Else)
	}
	if out.Typ, err = b.commonTypeAt(results, "CASE", x.Location); err != nil {
		return nil, err
	}
	for i := range out.Whens {
		out.Whens[i].Then = coerce(out.Whens[i].Then, out.Typ)
	}
	if out.Else != nil {
		out.Else = coerce(out.Else, out.Typ)
	}
	return out, nil
}

// subLink binds a subquery expression; negated is set for NOT EXISTS and
// NOT IN.
func (b *binder) subLink(x *pg.SubLink, c ectx, negated bool) (plan.Expr, error) {
	sel := x.Subselect.GetSelectStmt()
	if sel == nil {
		return nil, b.errAt("bind", x.Location, "unsupported subquery")
	}
	r, err := b.selectStmt(sel, c.sc)
	if err != nil {
		return nil, err
	}
	schema := r.node.Schema()
	switch x.SubLinkType {
	case pg.SubLinkType_EXISTS_SUBLINK:
		return &plan.Subquery{Kind: plan.SubqueryExists, Plan: r.node, Negated: negated, Typ: plan.Bool}, nil
	case pg.SubLinkType_EXPR_SUBLINK:
		if len(schema) != 1 {
			return nil, b.errAt("bind", x.Location, "subquery must return only one column")
		}
		return &plan.Subquery{Kind: plan.SubqueryScalar, Plan: r.node, Typ: schema[0].Type}, nil
	case pg.SubLinkType_ANY_SUBLINK:
		if ops := stringList(x.OperName); len(ops) > 0 && ops[len(ops)-1] != "=" {
			return nil, b.errAt("bind", x.Location, "only = ANY (IN) subqueries are supported")
		}
		if x.Testexpr.GetRowExpr() != nil {
			return nil, b.errAt("bind", x.Location, "row-valued IN subqueries are not supported")
		}
		if len(schema) != 1 {
			return nil, b.errAt("bind", x.Location, "subquery has too many columns")
		}
		l, err := b.expr(x.Testexpr, c)
		if err != nil {
			return nil, err
		}
		if lit, ok := l.(*plan.Literal); ok {
			if v, ok := adaptLiteral(lit, schema[0].Type); ok {
				l = v
			}
		}
		t, ok := plan.CommonType(l.Type(), schema[0].Type)
		if !ok {
			return nil, b.errAt("type", x.Location, "cannot compare %s with %s", plan.TypeName(l.Type()), plan.TypeName(schema[0].Type))
		}
		node := b.castTo(r, []plan.Column{{Type: t}})
		return &plan.Subquery{Kind: plan.SubqueryIn, Plan: node, X: coerce(l, t), Negated: negated, Typ: plan.Bool}, nil
	}
	if negated {
		return nil, b.errAt("bind", x.Location, "unsupported subquery form")
	}
	return nil, b.errAt("bind", x.Location, "unsupported subquery form (ALL/ANY with operators)")
}

// figureName names a select-list expression as PostgreSQL does.
func figureName(n *pg.Node) string {
	switch x := n.Node.(type) {
	case *pg.Node_ColumnRef:
		if parts := stringList(x.ColumnRef.Fields); len(parts) == len(x.ColumnRef.Fields) && len(parts) > 0 {
			return parts[len(parts)-1]
		}
	case *pg.Node_FuncCall:
		if parts := stringList(x.FuncCall.Funcname); len(parts) > 0 {
			return parts[len(parts)-1]
		}
	case *pg.Node_TypeCast:
		if name := figureName(x.TypeCast.Arg); name != "?column?" {
			return name
		}
		if parts := stringList(x.TypeCast.TypeName.GetNames()); len(parts) > 0 {
			return parts[len(parts)-1]
		}
	case *pg.Node_AIndirection:
		// a[1] is named after a, as in PostgreSQL.
		return figureName(x.AIndirection.Arg)
	case *pg.Node_AArrayExpr:
		return "array"
	case *pg.Node_CaseExpr:
		return "case"
	case *pg.Node_GroupingFunc:
		return "grouping"
	case *pg.Node_CoalesceExpr:
		return "coalesce"
	case *pg.Node_MinMaxExpr:
		if x.MinMaxExpr.Op == pg.MinMaxOp_IS_LEAST {
			return "least"
		}
		return "greatest"
	case *pg.Node_SqlvalueFunction:
		switch x.SqlvalueFunction.Op {
		case pg.SQLValueFunctionOp_SVFOP_CURRENT_DATE:
			return "current_date"
		case pg.SQLValueFunctionOp_SVFOP_LOCALTIMESTAMP:
			return "localtimestamp"
		case pg.SQLValueFunctionOp_SVFOP_CURRENT_CATALOG:
			return "current_catalog"
		case pg.SQLValueFunctionOp_SVFOP_CURRENT_SCHEMA:
			return "current_schema"
		}
		return "current_timestamp"
	case *pg.Node_AExpr:
		if x.AExpr.Kind == pg.A_Expr_Kind_AEXPR_NULLIF {
			return "nullif"
		}
	case *pg.Node_SubLink:
		switch x.SubLink.SubLinkType {
		case pg.SubLinkType_EXISTS_SUBLINK:
			return "exists"
		case pg.SubLinkType_EXPR_SUBLINK:
			if sel := x.SubLink.Subselect.GetSelectStmt(); sel != nil && len(sel.TargetList) > 0 {
				if rt := sel.TargetList[0].GetResTarget(); rt != nil {
					if rt.Name != "" {
						return rt.Name
					}
					return figureName(rt.Val)
				}
			}
		}
	}
	return "?column?"
}

// nodeLoc is the byte offset of a parse node in the statement, or -1.
func nodeLoc(n *pg.Node) int32 {
	if n == nil {
		return -1
	}
	switch x := n.Node.(type) {
	case *pg.Node_ColumnRef:
		return x.ColumnRef.Location
	case *pg.Node_AConst:
		return x.AConst.Location
	case *pg.Node_AExpr:
		return x.AExpr.Location
	case *pg.Node_FuncCall:
		return x.FuncCall.Location
	case *pg.Node_TypeCast:
		if x.TypeCast.Location >= 0 {
			return x.TypeCast.Location
		}
		return nodeLoc(x.TypeCast.Arg)
	case *pg.Node_SubLink:
		return x.SubLink.Location
	case *pg.Node_BoolExpr:
		return x.BoolExpr.Location
	case *pg.Node_NullTest:
		return x.NullTest.Location
	case *pg.Node_BooleanTest:
		return x.BooleanTest.Location
	case *pg.Node_CaseExpr:
		return x.CaseExpr.Location
	case *pg.Node_CoalesceExpr:
		return x.CoalesceExpr.Location
	case *pg.Node_ResTarget:
		return x.ResTarget.Location
	case *pg.Node_MinMaxExpr:
		return x.MinMaxExpr.Location
	case *pg.Node_SqlvalueFunction:
		return x.SqlvalueFunction.Location
	case *pg.Node_GroupingSet:
		return x.GroupingSet.Location
	case *pg.Node_GroupingFunc:
		return x.GroupingFunc.Location
	}
	return -1
}

// intConst returns the value of an integer constant node.
func intConst(n *pg.Node) (int64, bool) {
	if c := n.GetAConst(); c != nil {
		if v, ok := c.Val.(*pg.A_Const_Ival); ok {
			return int64(v.Ival.Ival), true
		}
	}
	return 0, false
}
