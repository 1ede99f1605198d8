package plan

import "fmt"

// correlationKeys splits predicates pulled out of a subquery body into
// inner = outer equality keys; any other predicate is an error.
func correlationKeys(pulled []Expr, body, input Node) (inner, outer []Expr, err error) {
	bodyCols := body.Schema().IDs()
	outerAvail := input.Schema().IDs()
	for _, p := range pulled {
		b, ok := p.(*Binary)
		if !ok || b.Op != OpEq {
			return nil, nil, fmt.Errorf("correlated predicate %s is not supported here (only inner = outer equalities)", p)
		}
		l, r := ColumnsOf(b.L), ColumnsOf(b.R)
		switch {
		case l.SubsetOf(bodyCols) && r.SubsetOf(outerAvail) && len(l) > 0:
			inner, outer = append(inner, b.L), append(outer, b.R)
		case r.SubsetOf(bodyCols) && l.SubsetOf(outerAvail) && len(r) > 0:
			inner, outer = append(inner, b.R), append(outer, b.L)
		default:
			return nil, nil, fmt.Errorf("correlated predicate %s is not supported here (only inner = outer equalities)", p)
		}
	}
	return inner, outer, nil
}

// correlationGroups turns the predicates pulled out of a subquery body
// into grouping keys: the body to group, its key expressions and the outer
// expressions they must equal. Inner = outer equalities group the body by
// their inner sides; any other correlation goes through the domain of the
// outer values (correlationDomain).
func correlationGroups(pulled []Expr, body, input Node, ctx *OptContext) (Node, []Expr, []Expr, error) {
	inner, outer, err := correlationKeys(pulled, body, input)
	if err == nil {
		return body, inner, outer, nil
	}
	return correlationDomain(pulled, body, input, ctx)
}

// correlationDomain handles correlation other than equalities (such as
// inner.x < outer.y): the subquery is evaluated for each distinct
// combination of the outer columns the predicates read (the domain, a
// DISTINCT over the input), by joining the domain with the body on the
// predicates, the domain's columns standing in for the outer ones; they are
// the keys, equal to the outer columns. An outer row with a NULL in those
// columns finds no group, which is what the subquery gives it only when the
// predicates then cannot hold: each outer column must be a strict operand
// of a comparison among them.
func correlationDomain(pulled []Expr, body, input Node, ctx *OptContext) (Node, []Expr, []Expr, error) {
	in := input.Schema()
	bodyCols := body.Schema().IDs()
	outerIDs := ColumnSet{}
	for _, p := range pulled {
		for id := range ColumnsOf(p) {
			switch {
			case in.IndexOf(id) >= 0:
				outerIDs[id] = struct{}{}
			case !bodyCols.Has(id):
				return nil, nil, nil, fmt.Errorf("correlated predicate %s refers to a column that is not available where the subquery is used (a query more than one level out, or a column not grouped)", p)
			}
		}
	}
	dom := &Aggregate{Input: input}
	remap := map[ColumnID]Expr{}
	var inner, outer []Expr
	for _, id := range sortedIDs(outerIDs) {
		c := in[in.IndexOf(id)]
		if !nullRejectedBy(pulled, id) {
			return nil, nil, nil, fmt.Errorf("correlated predicates %s are not supported: %s may be NULL without making them fail", exprList(pulled), c.Ref())
		}
		dc := Column{ID: ctx.IDs.Next(), Name: c.Name, Table: "domain", Type: c.Type, Nullable: true}
		dom.GroupBy = append(dom.GroupBy, c.Ref())
		dom.Cols = append(dom.Cols, dc)
		remap[id] = dc.Ref()
		inner, outer = append(inner, dc.Ref()), append(outer, c.Ref())
	}
	cond := make([]Expr, len(pulled))
	for i, p := range pulled {
		cond[i] = substitute(p, remap)
	}
	return &Join{Kind: JoinInner, Left: dom, Right: body, Cond: Conjunction(cond)}, inner, outer, nil
}

// nullRejectedBy reports whether some conjunct in preds is a comparison
// that is NULL whenever column id is (id inside a strict operand).
func nullRejectedBy(preds []Expr, id ColumnID) bool {
	for _, p := range preds {
		if b, ok := p.(*Binary); ok && b.Op.IsComparison() && (strictCol(b.L, id) || strictCol(b.R, id)) {
			return true
		}
	}
	return false
}

// strictCol reports whether e is NULL whenever column id is: id reached
// through arithmetic, negation and casts only.
func strictCol(e Expr, id ColumnID) bool {
	switch x := e.(type) {
	case *ColRef:
		return x.ID == id
	case *Binary:
		if x.Op.IsComparison() || x.Op == OpAnd || x.Op == OpOr {
			return false
		}
		return strictCol(x.L, id) || strictCol(x.R, id)
	case *Negate:
		return strictCol(x.X, id)
	case *Cast:
		return strictCol(x.X, id)
	}
	return false
}
