package plan

// PushDownPredicates moves filter conjuncts as close to the scans as their
// columns allow:
//
//   - through Project (substituting column definitions when they are cheap:
//     column references, literals, casts of those), Sort, and Aggregate (only
//     conjuncts on group columns);
//   - into inner join sides, and conjuncts spanning both sides into the join
//     condition — which is how comma joins (cross joins under a WHERE
//     equality) become inner equi-joins;
//   - into the left side of Left/Semi/Anti joins; a WHERE conjunct that
//     rejects NULLs of a Left join's right side turns the join Inner first;
//   - finally into Scan.Filters (the scan applies them exactly).
//
// Below an Expand (grouping sets) nothing moves: conjuncts above its
// aggregate name the expanded key columns, which the Expand creates.
// Conjuncts over an INTERSECT or EXCEPT filter both of its inputs.
//
// Conjuncts over a UNION ALL go into each input. Nothing moves below a
// Limit (that would change which rows are kept) or past a Right/Full join.
// Conjuncts containing subqueries stay where they are.
func PushDownPredicates(n Node, _ *OptContext) (Node, error) {
	return push(n, nil), nil
}

// push returns n with preds (conjuncts over n's columns) applied, as low as
// possible.
func push(n Node, preds []Expr) Node {
	switch x := n.(type) {
	case *Filter:
		var down, stay []Expr
		for _, c := range SplitConjunction(x.Pred) {
			if hasSubquery(c) {
				stay = append(stay, c)
			} else {
				down = append(down, c)
			}
		}
		all := append(append([]Expr(nil), preds...), down...)
		if len(stay) > 0 {
			// Keep the subquery conjuncts above the pushable ones; the
			// decorrelator expects them in a Filter.
			return filterOver(push(x.Input, all), stay)
		}
		return push(x.Input, all)
	case *Project:
		defs := map[ColumnID]Expr{}
		for i, e := range x.Exprs {
			if cheap(e) {
				defs[x.Cols[i].ID] = e
			}
		}
		down, stay := splitSubstitutable(preds, defs)
		out := &Project{Input: push(x.Input, down), Exprs: x.Exprs, Cols: x.Cols}
		return filterOver(out, stay)
	case *Aggregate:
		defs := map[ColumnID]Expr{}
		for i, g := range x.GroupBy {
			defs[x.Cols[i].ID] = g
		}
		var down, stay []Expr
		if len(x.GroupBy) > 0 && len(x.GrandTotals) == 0 {
			down, stay = splitSubstitutable(preds, defs)
		} else {
			// A global aggregate yields a row even for empty input (and
			// so does a grouping-sets aggregate with an empty set), so a
			// filter must stay above it.
			stay = preds
		}
		o := *x
		o.Input = push(x.Input, down)
		return filterOver(&o, stay)
	case *Sort:
		o := *x
		o.Input = push(x.Input, preds)
		return &o
	case *Window:
		// A conjunct on columns every call partitions by keeps or drops
		// whole partitions, so it may run first; any other conjunct would
		// change the rows the window functions see.
		keys := partitionKeyCols(x)
		var down, stay []Expr
		for _, p := range preds {
			if cols := ColumnsOf(p); len(cols) > 0 && cols.SubsetOf(keys) && !hasSubquery(p) {
				down = append(down, p)
			} else {
				stay = append(stay, p)
			}
		}
		o := *x
		o.Input = push(x.Input, down)
		return filterOver(&o, stay)
	case *Join:
		return pushJoin(x, preds)
	case *SetOp:
		// Rows are compared whole, so a row and its equal on the other
		// side pass or fail a (deterministic) predicate alike: filtering
		// both inputs keeps the same matches and the same counts.
		ldefs, rdefs := map[ColumnID]Expr{}, map[ColumnID]Expr{}
		ls, rs := x.Left.Schema(), x.Right.Schema()
		for i, c := range x.Cols {
			ldefs[c.ID], rdefs[c.ID] = ls[i].Ref(), rs[i].Ref()
		}
		lp, stay := splitSubstitutable(preds, ldefs)
		rp, _ := splitSubstitutable(preds, rdefs)
		o := *x
		o.Left, o.Right = push(x.Left, lp), push(x.Right, rp)
		return filterOver(&o, stay)
	case *Union:
		// Each input gets the conjuncts, rewritten to its own columns. A
		// conjunct on a column an input fills with a constant (the sale
		// type of a CTE's branch) folds to true or false there, and a
		// false input is dropped by the folding that follows.
		o := *x
		o.Inputs = make([]Node, len(x.Inputs))
		var stay []Expr
		for i, in := range x.Inputs {
			defs := map[ColumnID]Expr{}
			s := in.Schema()
			for j, c := range x.Cols {
				defs[c.ID] = s[j].Ref()
			}
			down, st := splitSubstitutable(preds, defs)
			if i == 0 {
				stay = st
			}
			o.Inputs[i] = push(in, down)
		}
		return filterOver(&o, stay)
	case *Scan:
		cols := x.Cols.IDs()
		var in, stay []Expr
		for _, p := range preds {
			if ColumnsOf(p).SubsetOf(cols) && !hasSubquery(p) {
				in = append(in, p)
			} else {
				stay = append(stay, p)
			}
		}
		if len(in) == 0 {
			return filterOver(x, stay)
		}
		o := *x
		o.Filters = append(append([]Expr(nil), x.Filters...), in...)
		return filterOver(&o, stay)
	}
	// Limit, Values and anything else: a barrier. Recurse with no
	// predicates so pushdown still happens inside.
	kids := n.Children()
	if len(kids) > 0 {
		nk := make([]Node, len(kids))
		for i, k := range kids {
			nk[i] = push(k, nil)
		}
		n = n.WithChildren(nk)
	}
	return filterOver(n, preds)
}

// cheap reports whether an expression is cheap enough to duplicate into a
// pushed-down predicate.
func cheap(e Expr) bool {
	switch x := e.(type) {
	case *ColRef, *Literal:
		return true
	case *Cast:
		return cheap(x.X)
	}
	return false
}

// splitSubstitutable separates predicates whose columns all have
// definitions (rewritten in terms of them) from the rest.
func splitSubstitutable(preds []Expr, defs map[ColumnID]Expr) (down, stay []Expr) {
	for _, p := range preds {
		ok := !hasSubquery(p)
		for id := range ColumnsOf(p) {
			if _, has := defs[id]; !has {
				ok = false
			}
		}
		if ok {
			down = append(down, substitute(p, defs))
		} else {
			stay = append(stay, p)
		}
	}
	return down, stay
}

func pushJoin(j *Join, preds []Expr) Node {
	L, R := j.Left.Schema().IDs(), j.Right.Schema().IDs()
	var lp, rp, cond, stay []Expr
	switch j.Kind {
	case JoinInner:
		for _, c := range append(append([]Expr(nil), preds...), SplitConjunction(j.Cond)...) {
			cols := ColumnsOf(c)
			switch {
			case hasSubquery(c):
				stay = append(stay, c)
			case cols.SubsetOf(L):
				lp = append(lp, c)
			case cols.SubsetOf(R):
				rp = append(rp, c)
			default:
				cond = append(cond, c)
			}
		}
	case JoinLeft:
		for _, p := range preds {
			rc := ColumnSet{}
			for id := range ColumnsOf(p) {
				if R.Has(id) {
					rc[id] = struct{}{}
				}
			}
			if len(rc) > 0 && !hasSubquery(p) && rejectsNulls(p, rc) {
				// The conjunct drops the NULL-padded rows, so the outer
				// join is an inner join.
				o := *j
				o.Kind = JoinInner
				return pushJoin(&o, preds)
			}
		}
		for _, p := range preds {
			if ColumnsOf(p).SubsetOf(L) && !hasSubquery(p) {
				lp = append(lp, p)
			} else {
				stay = append(stay, p)
			}
		}
		for _, c := range SplitConjunction(j.Cond) {
			// An ON conjunct on the right side only narrows the matches;
			// one on the left side only cannot filter preserved rows.
			if ColumnsOf(c).SubsetOf(R) && !hasSubquery(c) {
				rp = append(rp, c)
			} else {
				cond = append(cond, c)
			}
		}
	case JoinSemi, JoinAnti:
		for _, p := range preds {
			if ColumnsOf(p).SubsetOf(L) && !hasSubquery(p) {
				lp = append(lp, p)
			} else {
				stay = append(stay, p)
			}
		}
		for _, c := range SplitConjunction(j.Cond) {
			cols := ColumnsOf(c)
			switch {
			case hasSubquery(c):
				cond = append(cond, c)
			case cols.SubsetOf(R) && len(cols) > 0:
				rp = append(rp, c)
			case j.Kind == JoinSemi && cols.SubsetOf(L) && len(cols) > 0:
				// A row with a false left-only conjunct has no match.
				lp = append(lp, c)
			default:
				cond = append(cond, c)
			}
		}
	default:
		o := *j
		o.Left, o.Right = push(j.Left, nil), push(j.Right, nil)
		return filterOver(&o, preds)
	}
	if j.Kind == JoinInner {
		// A condition over both sides that rejects NULLs of a left join's
		// right side below (TPC-DS q93: store_sales LEFT JOIN
		// store_returns, then sr_reason_sk = r_reason_sk) drops the rows
		// that join pads: it is an inner join, which may be reordered.
		for _, c := range cond {
			if !hasSubquery(c) {
				j = &Join{Kind: j.Kind, Left: innerIfRejected(j.Left, c), Right: innerIfRejected(j.Right, c), Cond: j.Cond, NullAware: j.NullAware}
			}
		}
	}
	// Conjuncts on a join key hold for the matching rows of the other
	// side too (rule_pushdown_derive.go): both ways for inner and semi
	// joins; only into the right side of left and anti joins, whose
	// unmatched left rows are output (and not at all for NOT IN, where a
	// NULL on the right matters).
	switch j.Kind {
	case JoinInner, JoinSemi:
		toR := deriveAcross(lp, cond, L, R)
		lp = append(lp, deriveAcross(rp, cond, R, L)...)
		rp = append(rp, toR...)
	case JoinLeft:
		rp = append(rp, deriveAcross(append(leftOnly(cond, L), lp...), cond, L, R)...)
	case JoinAnti:
		if !j.NullAware {
			rp = append(rp, deriveAcross(lp, cond, L, R)...)
		}
	}
	o := *j
	o.Left = push(j.Left, lp)
	o.Right = push(j.Right, rp)
	o.Cond = Conjunction(cond)
	return filterOver(&o, stay)
}

// innerIfRejected turns into inner joins the left joins in n whose
// NULL-padded rows conjunct c (evaluated above n) rejects. It looks through
// projections (a column keeps its ID through them), filters, the preserved
// side of left joins and both sides of inner joins.
func innerIfRejected(n Node, c Expr) Node {
	switch x := n.(type) {
	case *Project:
		o := *x
		o.Input = innerIfRejected(x.Input, c)
		return &o
	case *Filter:
		o := *x
		o.Input = innerIfRejected(x.Input, c)
		return &o
	case *Join:
		o := *x
		switch x.Kind {
		case JoinInner:
			o.Left, o.Right = innerIfRejected(x.Left, c), innerIfRejected(x.Right, c)
		case JoinLeft:
			R := x.Right.Schema().IDs()
			rc := ColumnSet{}
			for id := range ColumnsOf(c) {
				if R.Has(id) {
					rc[id] = struct{}{}
				}
			}
			if len(rc) > 0 && rejectsNulls(c, rc) {
				o.Kind = JoinInner
				o.Left, o.Right = innerIfRejected(x.Left, c), innerIfRejected(x.Right, c)
			} else {
				o.Left = innerIfRejected(x.Left, c)
			}
		default:
			return n
		}
		return &o
	}
	return n
}

// leftOnly returns the conjuncts of conds over columns of L only.
func leftOnly(conds []Expr, L ColumnSet) []Expr {
	var out []Expr
	for _, c := range conds {
		if cols := ColumnsOf(c); len(cols) > 0 && cols.SubsetOf(L) && !hasSubquery(c) {
			out = append(out, c)
		}
	}
	return out
}

// rejectsNulls reports whether p is certainly false or NULL when every
// column in cols is NULL: it substitutes NULLs and folds.
func rejectsNulls(p Expr, cols ColumnSet) bool {
	// NULL AND x is NULL or false, so one rejecting conjunct suffices; an OR
	// needs both sides. Folding alone cannot see this when x is unknown.
	if b, ok := p.(*Binary); ok && b.Op == OpAnd {
		return rejectsNulls(b.L, cols) || rejectsNulls(b.R, cols)
	}
	if b, ok := p.(*Binary); ok && b.Op == OpOr {
		return rejectsNulls(b.L, cols) && rejectsNulls(b.R, cols)
	}
	e := Transform(p, func(x Expr) Expr {
		if c, ok := x.(*ColRef); ok && cols.Has(c.ID) {
			return &Literal{Typ: c.Typ}
		}
		return x
	})
	v, ok := truth(FoldExpr(e))
	return ok && v != true
}
