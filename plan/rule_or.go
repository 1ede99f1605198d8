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

func factorExpr(e Expr) Expr {
	return Transform(e, func(x Expr) Expr {
		b, ok := x.(*Binary)
		if !ok || b.Op != OpOr {
			return x
		}
		return factorOr(b)
	})
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
