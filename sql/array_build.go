package sql

import (
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
