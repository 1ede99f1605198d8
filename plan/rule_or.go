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
	// A bound every branch shares is factored out already.
	for _, r := range impliedRanges(conj) {
		if !containsString(SplitConjunction(out), r.String()) {
			implied = append(implied, r)
		}
	}
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

// impliedRanges derives, from an OR whose every branch bounds a column by
// constants (col >= lo, col > lo, col <= hi, col < hi; BETWEEN arrives as
// a pair of these), the bounds the OR implies: col >= the least of the
// branches' lower bounds when every branch has one, col <= the greatest of
// their upper bounds when every branch has one. The OR stays; the bounds
// can be pushed into the column's scan, where Parquet statistics and the
// row filter use them. TPC-DS q48's
// (cd_... AND ss_sales_price BETWEEN 100 AND 150) OR (... BETWEEN 50 AND
// 100) OR (... BETWEEN 150 AND 200) thus reads store_sales with
// ss_sales_price between 50 and 200 before any join.
//
// The conjunction of the bounds and the OR is exactly as true as the OR,
// in three-valued logic too: where the OR is true a branch holds, so its
// column lies within the bounds; where it is NULL no branch is false, so
// the column lies within one branch's bounds or is NULL, and the bounds
// are true or NULL; where it is false the conjunction is false. So the
// rewrite is safe under NOT as well as in a filter.
func impliedRanges(conj [][]Expr) []Expr {
	type bounds struct {
		col    *ColRef
		lo, hi *Literal // tightest in the branch; nil: none
	}
	branchBounds := func(cs []Expr) map[ColumnID]*bounds {
		m := map[ColumnID]*bounds{}
		for _, c := range cs {
			col, op, lit, ok := constantBound(c)
			if !ok {
				continue
			}
			b := m[col.ID]
			if b == nil {
				b = &bounds{col: col}
				m[col.ID] = b
			}
			switch op {
			case OpGt, OpGtEq:
				if b.lo == nil {
					b.lo = lit
				} else if cmp, ok := compareLits(lit, b.lo); ok && cmp > 0 {
					b.lo = lit
				}
			case OpLt, OpLtEq:
				if b.hi == nil {
					b.hi = lit
				} else if cmp, ok := compareLits(lit, b.hi); ok && cmp < 0 {
					b.hi = lit
				}
			}
		}
		return m
	}
	first := branchBounds(conj[0])
	if len(first) == 0 {
		return nil
	}
	rest := make([]map[ColumnID]*bounds, len(conj)-1)
	for i, cs := range conj[1:] {
		rest[i] = branchBounds(cs)
	}
	var out []Expr
	// In the order the first branch names its columns, so the result does
	// not depend on map order.
	seen := ColumnSet{}
	for _, c := range conj[0] {
		col, _, _, ok := constantBound(c)
		if !ok || seen.Has(col.ID) {
			continue
		}
		seen[col.ID] = struct{}{}
		lo, hi := first[col.ID].lo, first[col.ID].hi
		for _, m := range rest {
			b := m[col.ID]
			if b == nil {
				lo, hi = nil, nil
				break
			}
			lo = looser(lo, b.lo, -1)
			hi = looser(hi, b.hi, 1)
		}
		if lo != nil {
			out = append(out, &Binary{Op: OpGtEq, L: col, R: lo, Typ: Bool})
		}
		if hi != nil {
			out = append(out, &Binary{Op: OpLtEq, L: col, R: hi, Typ: Bool})
		}
	}
	return out
}

// constantBound reads c as col OP literal with OP one of < <= > >= (the
// literal on either side, not NULL).
func constantBound(c Expr) (*ColRef, BinaryOp, *Literal, bool) {
	col, op, lit, ok := columnVersusLiteral(c)
	if !ok || op == OpEq || lit.Val == nil {
		return nil, 0, nil, false
	}
	return col, op, lit, true
}

// looser returns the looser of two bounds: the smaller (dir -1) or the
// larger (dir 1); nil when either is missing or they do not compare.
func looser(a, b *Literal, dir int) *Literal {
	if a == nil || b == nil {
		return nil
	}
	cmp, ok := compareLits(a, b)
	if !ok {
		return nil
	}
	if cmp*dir >= 0 {
		return a
	}
	return b
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
