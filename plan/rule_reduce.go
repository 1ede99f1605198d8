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
// An aggregate that occurs more than once in the plan (a CTE or view used
// twice: TPC-DS q2, q59) is left whole: narrowed for one reference only,
// it would no longer be the same computation as the others, and computing
// it once for all of them (the physical planners share it) saves more than
// narrowing saves, since the narrowed copy still reads all of I.
//
// L is read twice, so the rule applies only when L is a filtered scan
// (scans, filters and projections only: no join or aggregate to compute
// again), or when one of the join's L columns draws its values from such a
// scan through a semi join inside L (keySource); that scan is then the one
// read again. Either way it must be estimated at most a quarter of I's
// rows. It runs after join
// ordering (which it leaves alone) and before pruning. The copy of L keeps
// L's column identities; it is the right side of a semi join, whose output
// has only I's columns, so they never meet above it.
func ReduceAggregates(n Node, _ *OptContext) (Node, error) {
	keys := NewSubtreeKeys()
	occurs := map[string]int{}
	keys.CountAggregates(n, occurs)
	return TransformUp(n, func(n Node) Node { return reduceJoin(n, keys, occurs) }), nil
}

func reduceJoin(n Node, keys *SubtreeKeys, occurs map[string]int) Node {
	j, ok := n.(*Join)
	if !ok || j.Kind != JoinInner || j.Cond == nil {
		return n
	}
	if r, ok := reduceSide(j.Right, j.Left, j.Cond, keys, occurs); ok {
		o := *j
		o.Right = r
		return &o
	}
	if l, ok := reduceSide(j.Left, j.Right, j.Cond, keys, occurs); ok {
		o := *j
		o.Left = l
		return &o
	}
	return n
}

// reduceSide rewrites side (a chain of Projects over an Aggregate) when
// cond equates some of its group keys with columns of other.
func reduceSide(side, other Node, cond Expr, subtrees *SubtreeKeys, occurs map[string]int) (Node, bool) {
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
	if !ok || len(agg.GroupBy) == 0 || occurs[subtrees.Key(agg)] > 1 {
		return nil, false
	}
	sideIDs, otherIDs := side.Schema().IDs(), other.Schema().IDs()
	type pair struct {
		g Expr    // group expression over I
		r *ColRef // the column of other it must equal
	}
	var pairs []pair
	for _, e := range columnEqualities(cond, otherIDs) {
		if !sideIDs.Has(e[0].ID) {
			continue
		}
		if g, ok := groupKeyOf(e[0].ID, projects, agg); ok {
			pairs = append(pairs, pair{g, e[1]})
		}
	}
	// What I is semi-joined with: other itself when it is cheap to read
	// again, else a filtered scan one of its key columns draws its values
	// from (TPC-H q20: partsupp rows of the 'forest' parts are read through
	// the semi join with those parts, and l_partkey is narrowed by the
	// parts alone).
	var src Node
	var keys []Expr
	if scanOnly(other) {
		src = other
		for _, p := range pairs {
			keys = append(keys, &Binary{Op: OpEq, L: p.g, R: p.r, Typ: Bool})
		}
	} else {
		for _, p := range pairs {
			if rs, rid, ok := keySource(other, p.r.ID); ok {
				src, keys = rs, []Expr{&Binary{Op: OpEq, L: p.g, R: rid, Typ: Bool}}
				break
			}
		}
	}
	if src == nil || len(keys) == 0 || !filtered(src) || EstimateRows(src)*4 > EstimateRows(agg.Input) {
		return nil, false
	}
	na := *agg
	na.Input = &Join{Kind: JoinSemi, Left: agg.Input, Right: src, Cond: Conjunction(keys)}
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

// keySource finds, below n, a filtered scan that every value of n's column
// id comes from: n itself when it is one, else through pass-through
// projections, down the side of an inner join that produces id, and down
// the left side of a semi join or, when the semi join equates id with a
// column of a filtered scan on its right, to that scan. It returns the scan
// and a reference to its column.
func keySource(n Node, id ColumnID) (Node, *ColRef, bool) {
	if scanOnly(n) {
		for _, c := range n.Schema() {
			if c.ID == id {
				return n, c.Ref(), true
			}
		}
		return nil, nil, false
	}
	switch x := n.(type) {
	case *Project:
		for i, c := range x.Cols {
			if c.ID == id {
				if ref, ok := x.Exprs[i].(*ColRef); ok {
					return keySource(x.Input, ref.ID)
				}
				return nil, nil, false
			}
		}
	case *Join:
		switch x.Kind {
		case JoinSemi:
			if x.Cond != nil && scanOnly(x.Right) {
				for _, e := range columnEqualities(x.Cond, x.Right.Schema().IDs()) {
					if e[0].ID == id {
						return x.Right, e[1], true
					}
				}
			}
			return keySource(x.Left, id)
		case JoinInner:
			if x.Left.Schema().IDs().Has(id) {
				return keySource(x.Left, id)
			}
			return keySource(x.Right, id)
		}
	}
	return nil, nil, false
}

// filtered reports whether a scan-only tree filters its rows (an
// unfiltered table would narrow nothing).
func filtered(n Node) bool {
	switch x := n.(type) {
	case *Filter:
		return true
	case *Scan:
		return len(x.Filters) > 0
	}
	for _, c := range n.Children() {
		if filtered(c) {
			return true
		}
	}
	return false
}

// columnEqualities returns the conjuncts of cond of the form a = b between
// two column references with exactly one of them in of, as {other, in of}.
func columnEqualities(cond Expr, of ColumnSet) [][2]*ColRef {
	var out [][2]*ColRef
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
		if of.Has(l.ID) {
			l, r = r, l
		}
		if !of.Has(l.ID) && of.Has(r.ID) {
			out = append(out, [2]*ColRef{l, r})
		}
	}
	return out
}
