package plan

import "fmt"

// markSubquery rewrites an EXISTS or IN subquery used inside an expression
// (under OR, NOT of an expression, CASE, in a select list) as left joins
// that give every input row the columns a mark is computed from, and
// returns the mark: a boolean with SQL's three-valued semantics, negated
// for NOT EXISTS / NOT IN. The subquery's correlation must be inner =
// outer equalities, which become group keys, so each input row joins at
// most one row of each aggregate and no row is duplicated or lost:
//
//   - EXISTS: the distinct keys (uncorrelated: count(*) in one row); the
//     mark is whether the row found its key (count > 0).
//   - x IN (select y): the distinct (keys, y), joined on the keys and
//     x = y, says whether x is in the set; count(*) and count(y) per key
//     say whether the set is empty or holds a NULL. The mark is true on a
//     match, else false for an empty set, else NULL when x is NULL or the
//     set holds a NULL, else false.
func markSubquery(input Node, sq *Subquery, ctx *OptContext) (Node, Expr, error) {
	if sq.X != nil && hasSubquery(sq.X) {
		return nil, nil, fmt.Errorf("nested subquery in the left operand of IN is not supported")
	}
	sub, err := Decorrelate(sq.Plan, ctx)
	if err != nil {
		return nil, nil, err
	}
	sub, pulled, err := pullCorrelated(sub)
	if err != nil {
		return nil, nil, err
	}
	if err := checkUncorrelated(sub, pulled, input); err != nil {
		return nil, nil, err
	}
	first := sub.Schema()[0]
	sub, innerKeys, outerKeys, err := correlationGroups(pulled, sub, input, ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("%s inside an expression: %w", sq, err)
	}
	// groupJoin joins input with the rows of sub grouped by keys (plus
	// more group expressions and aggregates) on outer keys = the group
	// columns; with no keys the aggregate is one row, joined Inner.
	groupJoin := func(more []Expr, moreOuter []Expr, aggs []*AggCall) *Aggregate {
		agg := &Aggregate{Input: sub, GroupBy: append(append([]Expr(nil), innerKeys...), more...), Aggs: aggs}
		var cond []Expr
		outer := append(append([]Expr(nil), outerKeys...), moreOuter...)
		for i, g := range agg.GroupBy {
			c := Column{ID: ctx.IDs.Next(), Name: g.String(), Type: g.Type(), Nullable: true}
			agg.Cols = append(agg.Cols, c)
			cond = append(cond, &Binary{Op: OpEq, L: outer[i], R: c.Ref(), Typ: Bool})
		}
		for _, a := range aggs {
			agg.Cols = append(agg.Cols, Column{ID: ctx.IDs.Next(), Name: a.String(), Type: a.Typ, Nullable: true})
		}
		kind := JoinLeft
		if len(agg.GroupBy) == 0 {
			kind = JoinInner
		}
		input = &Join{Kind: kind, Left: input, Right: agg, Cond: Conjunction(cond)}
		return agg
	}
	countStar := func() *AggCall { return &AggCall{Func: AggCountStar, Typ: Int64} }
	zero := &Literal{Typ: Int64, Val: int64(0)}
	var mark Expr
	switch {
	case sq.Kind == SubqueryExists && len(innerKeys) == 0:
		agg := groupJoin(nil, nil, []*AggCall{countStar()})
		mark = &Binary{Op: OpGt, L: agg.Cols[0].Ref(), R: zero, Typ: Bool}
	case sq.Kind == SubqueryExists:
		agg := groupJoin(nil, nil, nil)
		mark = &IsNull{X: agg.Cols[0].Ref(), Negated: true}
	default:
		y := Expr(first.Ref())
		x := sq.X
		xc, yc := x, y
		if !equalTypes(x, y) {
			t, ok := CommonType(x.Type(), y.Type())
			if !ok {
				return nil, nil, fmt.Errorf("IN subquery: cannot compare %s with %s", TypeName(x.Type()), TypeName(y.Type()))
			}
			xc, yc = castTo(x, t), castTo(y, t)
		}
		found := groupJoin([]Expr{yc}, []Expr{xc}, nil)
		counts := groupJoin(nil, nil, []*AggCall{countStar(), {Func: AggCount, Arg: y, Typ: Int64}})
		k := len(innerKeys)
		rows, values := counts.Cols[k].Ref(), counts.Cols[k+1].Ref()
		mark = &Case{Typ: Bool, Whens: []When{
			{Cond: &IsNull{X: found.Cols[k].Ref(), Negated: true}, Then: &Literal{Typ: Bool, Val: true}},
			{Cond: &Binary{Op: OpEq, L: &Func{Name: "coalesce", Args: []Expr{rows, zero}, Typ: Int64}, R: zero, Typ: Bool}, Then: &Literal{Typ: Bool, Val: false}},
			{Cond: &Binary{Op: OpOr, Typ: Bool, L: &IsNull{X: x}, R: &Binary{Op: OpLt, L: values, R: rows, Typ: Bool}}, Then: &Literal{Typ: Bool}},
		}, Else: &Literal{Typ: Bool, Val: false}}
	}
	if sq.Negated {
		mark = &Not{X: mark}
	}
	return input, mark, nil
}
