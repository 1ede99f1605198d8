package plan

import (
	"fmt"
	"strings"
)

// decorrelateLateral rewrites a join whose right side refers to columns of
// its left side (a LATERAL derived table) as a plain join:
//
//   - right side [Project] over an aggregate without GROUP BY: one row per
//     left row, so the aggregate is grouped by its correlation equalities'
//     inner sides and left-joined on them; counts of left rows without a
//     group are 0, not NULL (coalesce), and a Project above computes the
//     subquery's select list, which may refer to the left columns too;
//   - otherwise the correlated conjuncts are pulled out of the right side
//     (through Filter, Project, Sort and joins) into the join condition.
//
// Only inner and left joins are rewritten; a left join over an aggregate
// only with no ON condition (ON true).
func decorrelateLateral(j *Join, ctx *OptContext) (Node, error) {
	if j.Kind != JoinInner && j.Kind != JoinLeft {
		return nil, fmt.Errorf("LATERAL in a %s join is not supported", strings.ToLower(j.Kind.String()))
	}
	if out, ok := lateralRow(j); ok {
		return out, nil
	}
	var proj *Project
	top := j.Right
	if p, ok := top.(*Project); ok {
		proj, top = p, p.Input
	}
	if agg, ok := top.(*Aggregate); ok && len(agg.GroupBy) == 0 {
		return lateralAggregate(j, proj, agg, ctx)
	}
	sub, pulled, err := pullCorrelated(j.Right)
	if err != nil {
		return nil, err
	}
	if refs := outerRefs(sub); intersects(refs, j.Left.Schema().IDs()) {
		return nil, fmt.Errorf("LATERAL subquery shape is not supported: the left side's columns %s are referenced below a node the decorrelator cannot pull predicates through (only Filter, Project, Sort, joins and GROUP BY for inner = outer equalities; or one aggregate without GROUP BY at the top)", refNames(sub, refs))
	}
	if err := checkUncorrelated(sub, pulled, j.Left); err != nil {
		return nil, err
	}
	cond := append(SplitConjunction(j.Cond), pulled...)
	out := &Join{Kind: j.Kind, Left: j.Left, Right: sub, Cond: Conjunction(cond)}
	return restoreSchema(out, j.Schema()), nil
}

// lateralAggregate is decorrelateLateral's aggregate case.
func lateralAggregate(j *Join, proj *Project, agg *Aggregate, ctx *OptContext) (Node, error) {
	if j.Kind == JoinLeft && j.Cond != nil {
		if l, ok := j.Cond.(*Literal); !ok || l.Val != true {
			return nil, fmt.Errorf("LEFT JOIN LATERAL over an aggregate is only supported with ON true")
		}
	}
	body, pulled, err := pullCorrelated(agg.Input)
	if err != nil {
		return nil, err
	}
	if refs := outerRefs(body); intersects(refs, j.Left.Schema().IDs()) {
		return nil, fmt.Errorf("LATERAL subquery shape is not supported: the left side's columns %s cannot be pulled up out of the aggregate's input", refNames(body, refs))
	}
	body, innerKeys, outerKeys, err := correlationGroups(pulled, body, j.Left, ctx)
	if err != nil {
		return nil, fmt.Errorf("LATERAL aggregate: %w", err)
	}
	newAgg := &Aggregate{Input: body, GroupBy: innerKeys, Aggs: agg.Aggs}
	var cond []Expr
	for i, k := range innerKeys {
		c := Column{ID: ctx.IDs.Next(), Name: k.String(), Type: k.Type(), Nullable: true}
		newAgg.Cols = append(newAgg.Cols, c)
		cond = append(cond, &Binary{Op: OpEq, L: outerKeys[i], R: c.Ref(), Typ: Bool})
	}
	// Above the join, a Project restores the aggregate's columns: counts
	// come out of the join under fresh IDs and are coalesced to 0 under
	// their own.
	fix := passThrough(nil, j.Left.Schema())
	for i, a := range agg.Aggs {
		c := agg.Cols[i]
		if a.Func == AggCountStar || a.Func == AggCount {
			raw := c
			raw.ID = ctx.IDs.Next()
			newAgg.Cols = append(newAgg.Cols, raw)
			fix.add(&Func{Name: "coalesce", Args: []Expr{raw.Ref(), zeroOf(raw.Ref())}, Typ: c.Type}, c)
		} else {
			newAgg.Cols = append(newAgg.Cols, c)
			fix.add(c.Ref(), c)
		}
	}
	fix.Input = &Join{Kind: JoinLeft, Left: j.Left, Right: newAgg, Cond: Conjunction(cond)}
	var out Node = fix
	if proj != nil {
		p := passThrough(fix, j.Left.Schema())
		p.Exprs, p.Cols = append(p.Exprs, proj.Exprs...), append(p.Cols, proj.Cols...)
		out = p
	}
	if j.Kind == JoinInner && j.Cond != nil {
		out = &Filter{Input: out, Pred: j.Cond}
	}
	return restoreSchema(out, j.Schema()), nil
}

// lateralRow rewrites a join whose right side is a query without FROM
// (Projects and Filters over one row of Values), as in
// CROSS JOIN LATERAL (SELECT t.a + 1 AS b): that one row is computed from
// each left row, so the right side is grafted onto the left one, its
// Values becoming a Project over the left side and its Projects passing
// the left columns through; the join condition filters above. A LEFT
// join qualifies only when nothing can drop the row (no Filter, ON true),
// so it never needs NULLs.
func lateralRow(j *Join) (Node, bool) {
	left := j.Left.Schema()
	filtered := false
	var graft func(n Node) (Node, bool)
	graft = func(n Node) (Node, bool) {
		switch x := n.(type) {
		case *Values:
			if len(x.Rows) != 1 {
				return nil, false
			}
			p := passThrough(j.Left, left)
			for i, c := range x.Cols {
				p.add(x.Rows[0][i], c)
			}
			return p, true
		case *Project:
			in, ok := graft(x.Input)
			if !ok {
				return nil, false
			}
			p := &Project{Input: in, Exprs: append([]Expr(nil), x.Exprs...), Cols: append(Schema(nil), x.Cols...)}
			for _, c := range left {
				if p.Cols.IndexOf(c.ID) < 0 {
					p.add(c.Ref(), c)
				}
			}
			return p, true
		case *Filter:
			in, ok := graft(x.Input)
			if !ok {
				return nil, false
			}
			filtered = true
			return &Filter{Input: in, Pred: x.Pred}, true
		}
		return nil, false
	}
	top, ok := graft(j.Right)
	if !ok {
		return nil, false
	}
	cond := SplitConjunction(j.Cond)
	if l, isLit := j.Cond.(*Literal); isLit && l.Val == true {
		cond = nil
	}
	if j.Kind == JoinLeft && (filtered || len(cond) > 0) {
		return nil, false
	}
	return filterOver(restoreSchema(top, j.Schema()), cond), true
}
