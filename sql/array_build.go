package sql

import (
	"fmt"

	pg "github.com/pganalyze/pg_query_go/v6"

	"sluice/plan"
)

// arrayExpr binds the constructor ARRAY[a, b, ...]: the elements are cast
// to their common type (text when all are NULL, as in PostgreSQL), and the
// array is make_array(a, b, ...). to, when not nil, is the array type of
// an enclosing cast (ARRAY[]::INT[]), which an empty constructor needs.
func (b *binder) arrayExpr(x *pg.A_ArrayExpr, to arrowType, c ectx) (plan.Expr, error) {
	elems, err := b.exprs(x.Elements, c)
	if err != nil {
		return nil, err
	}
	if len(elems) == 0 {
		if to == nil {
			e := b.errAt("type", x.Location, "cannot determine type of empty array")
			e.Hint = "Explicitly cast to the desired type, for example ARRAY[]::integer[]."
			return nil, e
		}
		return &plan.Func{Name: "make_array", Typ: to}, nil
	}
	for i, e := range elems {
		if plan.IsArray(e.Type()) {
			return nil, b.errAt("type", nodeLoc(x.Elements[i]), "multidimensional arrays are not supported")
		}
	}
	t, err := b.commonTypeAt(elems, "ARRAY", x.Location)
	if err != nil {
		return nil, err
	}
	if t.ID() == plan.Null.ID() {
		t = plan.Utf8
	}
	if to != nil {
		// ARRAY[...]::T[] casts the elements, as PostgreSQL does.
		t = to.(interface{ Elem() arrowType }).Elem()
		for i, e := range elems {
			if !castAllowed(e.Type(), t) {
				return nil, b.errAt("type", nodeLoc(x.Elements[i]), "cannot cast %s to %s", plan.TypeName(e.Type()), plan.TypeName(t))
			}
			elems[i] = castExpr(e, t)
		}
	}
	for i := range elems {
		elems[i] = coerce(elems[i], t)
	}
	return &plan.Func{Name: "make_array", Args: elems, Typ: plan.ArrayOf(t)}, nil
}

// bindStringToArray binds string_to_array(s, sep[, null_string]).
func bindStringToArray(c *fcall) (plan.Expr, error) {
	if err := c.nargs(2, 3); err != nil {
		return nil, err
	}
	if err := c.kinds("s"); err != nil {
		return nil, err
	}
	return c.fn("string_to_array", plan.TextArray), nil
}

// quantified binds x op ANY (array) and x op ALL (array) for the
// comparison operators: array_any / array_all(x, array, op). x is cast to
// the elements' type (a literal adapts to it, an integer widens); an
// array whose elements would have to change type is refused.
func (b *binder) quantified(x *pg.A_Expr, opName string, c ectx) (plan.Expr, error) {
	word := "ANY"
	if x.Kind == pg.A_Expr_Kind_AEXPR_OP_ALL {
		word = "ALL"
	}
	if kind, ok := likeOps[opName]; ok {
		if arr := x.Rexpr.GetAArrayExpr(); arr != nil {
			return b.quantifiedLike(x, kind, arr, c)
		}
		e := b.errAt("bind", x.Location, "%s %s needs an ARRAY[...] of patterns", likeNames[opName], word)
		e.Hint = "x LIKE ANY (ARRAY['a%', 'b%'])"
		return nil, e
	}
	if _, ok := compareOps[opName]; !ok {
		return nil, b.errAt("bind", x.Location, "operator %s %s (array) is not supported", opName, word)
	}
	if opName == "!=" {
		opName = "<>"
	}
	l, err := b.expr(x.Lexpr, c)
	if err != nil {
		return nil, err
	}
	r, err := b.expr(x.Rexpr, c)
	if err != nil {
		return nil, err
	}
	if r.Type().ID() == plan.Null.ID() {
		r = coerce(r, plan.ArrayOf(l.Type()))
		if l.Type().ID() == plan.Null.ID() {
			r = coerce(r, plan.TextArray)
		}
	}
	if !plan.IsArray(r.Type()) {
		e := b.errAt("type", x.Location, "op %s (...) needs an array on the right, not %s", word, plan.TypeName(r.Type()))
		e.Hint = "write x IN (a, b) for a list of values, or x = ANY(ARRAY[a, b])"
		return nil, e
	}
	elem := r.Type().(interface{ Elem() arrowType }).Elem()
	if lit, ok := l.(*plan.Literal); ok {
		if v, ok := adaptLiteral(lit, elem); ok {
			l = v
		}
	}
	t, ok := plan.CommonType(l.Type(), elem)
	if !ok || !typeEq(t, elem) || plan.IsArray(t) {
		e := b.errAt("type", x.Location, "cannot compare %s with the elements of %s", plan.TypeName(l.Type()), plan.TypeName(r.Type()))
		e.Hint = "cast the value to the array's element type"
		return nil, e
	}
	name := "array_any"
	if word == "ALL" {
		name = "array_all"
	}
	return &plan.Func{Name: name, Args: []plan.Expr{coerce(l, t), r, &plan.Literal{Typ: plan.Utf8, Val: opName}}, Typ: plan.Bool}, nil
}

// likeOps are the operator names of [NOT] [I]LIKE and the kinds of
// their expressions; likeNames their SQL.
var (
	likeOps = map[string]pg.A_Expr_Kind{
		"~~": pg.A_Expr_Kind_AEXPR_LIKE, "!~~": pg.A_Expr_Kind_AEXPR_LIKE,
		"~~*": pg.A_Expr_Kind_AEXPR_ILIKE, "!~~*": pg.A_Expr_Kind_AEXPR_ILIKE,
	}
	likeNames = map[string]string{"~~": "LIKE", "!~~": "NOT LIKE", "~~*": "ILIKE", "!~~*": "NOT ILIKE"}
)

// quantifiedLike binds x [NOT] [I]LIKE ANY | ALL (ARRAY[p1, p2, ...]) as
// x LIKE p1 OR x LIKE p2 ... (AND for ALL), which has PostgreSQL's answer
// with NULLs too; an empty array is false for ANY, true for ALL.
func (b *binder) quantifiedLike(x *pg.A_Expr, kind pg.A_Expr_Kind, arr *pg.A_ArrayExpr, c ectx) (plan.Expr, error) {
	all := x.Kind == pg.A_Expr_Kind_AEXPR_OP_ALL
	if len(arr.Elements) == 0 {
		return &plan.Literal{Typ: plan.Bool, Val: all}, nil
	}
	op := pg.BoolExprType_OR_EXPR
	if all {
		op = pg.BoolExprType_AND_EXPR
	}
	parts := make([]*pg.Node, len(arr.Elements))
	for i, p := range arr.Elements {
		parts[i] = &pg.Node{Node: &pg.Node_AExpr{AExpr: &pg.A_Expr{Kind: kind, Name: x.Name, Lexpr: x.Lexpr, Rexpr: p, Location: x.Location}}}
	}
	if len(parts) == 1 {
		return b.expr(parts[0], c)
	}
	return b.expr(pg.MakeBoolExprNode(op, parts, x.Location), c)
}

// arrayConcat binds l || r where one side is an array: array || array
// concatenates (array_cat), array || element appends (array_append),
// element || array prepends (array_prepend). An untyped NULL takes the
// other side's array type.
func (b *binder) arrayConcat(l, r plan.Expr, loc int32) (plan.Expr, error) {
	la, ra := plan.IsArray(l.Type()), plan.IsArray(r.Type())
	switch {
	case la && r.Type().ID() == plan.Null.ID():
		r, ra = coerce(r, l.Type()), true
	case ra && l.Type().ID() == plan.Null.ID():
		l, la = coerce(l, r.Type()), true
	}
	arrayT := l.Type()
	if !la {
		arrayT = r.Type()
	}
	elem := arrayT.(interface{ Elem() arrowType }).Elem()
	bad := func(what plan.Expr) error {
		e := b.errAt("type", loc, "operator does not exist: %s || %s", plan.TypeName(l.Type()), plan.TypeName(r.Type()))
		e.Hint = fmt.Sprintf("%s does not match the array's elements (%s): cast it", what, plan.TypeName(elem))
		return e
	}
	adapt := func(x plan.Expr) (plan.Expr, bool) {
		if lit, ok := x.(*plan.Literal); ok {
			if v, ok := adaptLiteral(lit, elem); ok {
				x = v
			}
		}
		t, ok := plan.CommonType(x.Type(), elem)
		if !ok || !typeEq(t, elem) {
			return nil, false
		}
		return coerce(x, elem), true
	}
	switch {
	case la && ra:
		if !typeEq(l.Type(), r.Type()) {
			e := b.errAt("type", loc, "operator does not exist: %s || %s", plan.TypeName(l.Type()), plan.TypeName(r.Type()))
			e.Hint = "the arrays' elements must have the same type (an integer constant is BIGINT: ARRAY[1::int] is INT[])"
			return nil, e
		}
		return &plan.Func{Name: "array_cat", Args: []plan.Expr{l, r}, Typ: arrayT}, nil
	case la:
		x, ok := adapt(r)
		if !ok {
			return nil, bad(r)
		}
		return &plan.Func{Name: "array_append", Args: []plan.Expr{l, x}, Typ: arrayT}, nil
	default:
		x, ok := adapt(l)
		if !ok {
			return nil, bad(l)
		}
		return &plan.Func{Name: "array_prepend", Args: []plan.Expr{x, r}, Typ: arrayT}, nil
	}
}
