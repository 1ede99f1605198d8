package plan

// ReduceAggregates narrows an aggregate that an inner join then filters by
// its group keys. In
//
//	Join(L, Project*(Aggregate(groupBy g, I)))  on L.x = g
//
// only the groups whose key matches some L.x survive the join, and a group
// is computed from its own rows only, so the aggregate may read just the
// rows of I whose g matches: I becomes SemiJoin(I, L) on g = L.x. That is
// how a decorrelated subquery stops aggregating a whole table for the few
// keys the outer query asks about (TPC-H q17: the average quantity of the
// 2,000 parts of one brand and container, not of all 200,000 parts).
//
// L is read twice, so the rule applies only when L is a filtered scan
// (scans, filters and projections only: no join or aggregate to compute
// again) estimated at most a quarter of I's rows. It runs after join
// ordering (which it leaves alone) and before pruning. The copy of L keeps
// L's column identities; it is the right side of a semi join, whose output
// has only I's columns, so they never meet above it.
func ReduceAggregates(n Node, _ *OptContext) (Node, error) {
	return TransformUp(n, reduceJoin), nil
}

func reduceJoin(n Node) Node {
	j, ok := n.(*Join)
	if !ok || j.Kind != JoinInner || j.Cond == nil {
		return n
	}
	if r, ok := reduceSide(j.Right, j.Left, j.Cond); ok {
		o := *j
		o.Right = r
		return &o
	}
	if l, ok := reduceSide(j.Left, j.Right, j.Cond); ok {
		o := *j
		o.Left = l
		return &o
	}
	return n
}

// reduceSide rewrites side (a chain of Projects over an Aggregate) when
// cond equates some of its group keys with columns of other.
func reduceSide(side, other Node, cond Expr) (Node, bool) {
	var projects []*Project
	cur := side
	for {
		p, ok := cur.(*Project)
		if !ok {
			break
		}
		projects = append(projects, p)
		cur = p.Input
	}
	agg, ok := cur.(*Aggregate)
	if !ok || len(agg.GroupBy) == 0 || !scanOnly(other) {
		return nil, false
	}
	sideIDs, otherIDs := side.Schema().IDs(), other.Schema().IDs()
	var keys []Expr
	for _, c := range SplitConjunction(cond) {
		b, ok := c.(*Binary)
		if !ok || b.Op != OpEq {
			continue
		}
		l, lok := b.L.(*ColRef)
		r, rok := b.R.(*ColRef)
		if !lok || !rok {
			continue
		}
		if otherIDs.Has(l.ID) && sideIDs.Has(r.ID) {
			l, r = r, l
		}
		if !sideIDs.Has(l.ID) || !otherIDs.Has(r.ID) {
			continue
		}
		g, ok := groupKeyOf(l.ID, projects, agg)
		if !ok {
			continue
		}
		keys = append(keys, &Binary{Op: OpEq, L: g, R: r, Typ: Bool})
	}
	if len(keys) == 0 || EstimateRows(other)*4 > EstimateRows(agg.Input) {
		return nil, false
	}
	na := *agg
	na.Input = &Join{Kind: JoinSemi, Left: agg.Input, Right: other, Cond: Conjunction(keys)}
	var out Node = &na
	for i := len(projects) - 1; i >= 0; i-- {
		p := *projects[i]
		p.Input = out
		out = &p
	}
	return out, true
}

// groupKeyOf follows column id down through pass-through project columns to
// the aggregate and returns the group expression it names.
func groupKeyOf(id ColumnID, projects []*Project, agg *Aggregate) (Expr, bool) {
	for _, p := range projects {
		found := false
		for i, c := range p.Cols {
			if c.ID != id {
				continue
			}
			ref, ok := p.Exprs[i].(*ColRef)
			if !ok {
				return nil, false
			}
			id, found = ref.ID, true
			break
		}
		if !found {
			return nil, false
		}
	}
	for i := range agg.GroupBy {
		if agg.Cols[i].ID == id {
			return agg.GroupBy[i], true
		}
	}
	return nil, false
}

// scanOnly reports whether n is made of scans, filters and projections.
func scanOnly(n Node) bool {
	switch n.(type) {
	case *Scan, *Filter, *Project:
	default:
		return false
	}
	for _, c := range n.Children() {
		if !scanOnly(c) {
			return false
		}
	}
	return true
}
