package plan

// FactorDisjunctions rewrites every OR in Filter predicates and join
// conditions whose branches share conjuncts: (a AND b AND x) OR (a AND b AND y)
// becomes a AND b AND (x OR y). The factored conjuncts can then be pushed down
// or become join keys: TPC-H q19 joins part and lineitem only through the
// p_partkey = l_partkey repeated in each branch of an OR.
func FactorDisjunctions(n Node, _ *OptContext) (Node, error) {
	return TransformUp(n, func(n Node) Node {
		switch n := n.(type) {
		case *Filter:
			if p := factorExpr(n.Pred); p != n.Pred {
				return &Filter{Input: n.Input, Pred: p}
			}
		case *Join:
			if n.Cond != nil {
				if c := factorExpr(n.Cond); c != n.Cond {
					out := *n
					out.Cond = c
					return &out
				}
			}
		}
		return n
	}), nil
}

// factorExpr rewrites the outermost ORs of e (an OR's nested ORs are
// flattened into its branches, not rewritten on their own).
func factorExpr(e Expr) Expr {
	if b, ok := e.(*Binary); ok && b.Op == OpOr {
		return factorOr(b)
	}
	kids := e.Children()
	if len(kids) == 0 {
		return e
	}
	nk := make([]Expr, len(kids))
	changed := false
	for i, k := range kids {
		nk[i] = factorExpr(k)
		changed = changed || nk[i] != k
	}
	if !changed {
		return e
	}
	return e.WithChildren(nk)
}

// splitDisjunction flattens nested ORs into a list.
func splitDisjunction(e Expr) []Expr {
	if b, ok := e.(*Binary); ok && b.Op == OpOr {
		return append(splitDisjunction(b.L), splitDisjunction(b.R)...)
	}
	return []Expr{e}
}

func factorOr(or *Binary) Expr {
	branches := splitDisjunction(or)
	conj := make([][]Expr, len(branches))
	for i, br := range branches {
		conj[i] = SplitConjunction(br)
	}
	implied := impliedInLists(conj)
	if len(implied) == 1 && onlyPins(conj) {
		// col = a OR col = b OR ...: the IN list says it all.
		return implied[0]
	}
	out := factorCommon(or, conj)
	if len(implied) == 0 {
		return out
	}
	return Conjunction(append(implied, out))
}

// onlyPins reports whether every branch is a single conjunct.
func onlyPins(conj [][]Expr) bool {
	for _, c := range conj {
		if len(c) != 1 {
			return false
		}
	}
	return true
}

// impliedInLists derives, from an OR whose every branch pins a column to a
// constant (col = v), the implied `col IN (v1, v2, ...)`. The OR stays; the
// IN list can be pushed into the column's scan. TPC-H q7's
// (n1 = 'FRANCE' AND n2 = 'GERMANY') OR (n1 = 'GERMANY' AND n2 = 'FRANCE')
// thus filters both nation scans before any join.
func impliedInLists(conj [][]Expr) []Expr {
	pinned := func(c Expr) (*ColRef, *Literal, bool) {
		b, ok := c.(*Binary)
		if !ok || b.Op != OpEq {
			return nil, nil, false
		}
		if col, ok := b.L.(*ColRef); ok {
			if lit, ok := b.R.(*Literal); ok && lit.Val != nil {
				return col, lit, true
			}
		}
		if col, ok := b.R.(*ColRef); ok {
			if lit, ok := b.L.(*Literal); ok && lit.Val != nil {
				return col, lit, true
			}
		}
		return nil, nil, false
	}
	var out []Expr
	for _, c := range conj[0] {
		col, lit, ok := pinned(c)
		if !ok {
			continue
		}
		values := []Expr{lit}
		for _, other := range conj[1:] {
			var found *Literal
			for _, o := range other {
				if oc, ol, ok := pinned(o); ok && oc.ID == col.ID {
					found = ol
					break
				}
			}
			if found == nil {
				values = nil
				break
			}
			if !containsString(values, found.String()) {
				values = append(values, found)
			}
		}
		if len(values) > 1 {
			out = append(out, &InList{X: col, List: values})
		}
	}
	return out
}

// factorCommon pulls the conjuncts every branch shares out of the OR.
func factorCommon(or *Binary, conj [][]Expr) Expr {
	// A conjunct is common when every branch has one printing the same.
	var common []Expr
	for _, c := range conj[0] {
		key := c.String()
		inAll := true
		for _, other := range conj[1:] {
			found := false
			for _, o := range other {
				if o.String() == key {
					found = true
					break
				}
			}
			if !found {
				inAll = false
				break
			}
		}
		if inAll && !containsString(common, key) {
			common = append(common, c)
		}
	}
	if len(common) == 0 {
		return or
	}
	var rest []Expr
	for _, cs := range conj {
		var left []Expr
		for _, c := range cs {
			if !containsString(common, c.String()) {
				left = append(left, c)
			}
		}
		if len(left) == 0 {
			// This branch is exactly the common part: the OR is implied.
			return Conjunction(common)
		}
		rest = append(rest, Conjunction(left))
	}
	var disj Expr
	for _, r := range rest {
		if disj == nil {
			disj = r
		} else {
			disj = &Binary{Op: OpOr, L: disj, R: r, Typ: Bool}
		}
	}
	return Conjunction(append(common, disj))
}

func containsString(es []Expr, key string) bool {
	for _, e := range es {
		if e.String() == key {
			return true
		}
	}
	return false
}
