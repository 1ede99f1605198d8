package plan

import "github.com/apache/arrow-go/v18/arrow"

// Predicates derived across join keys. When a join equates column a of one
// side with column b of the other, a conjunct that constrains a alone
// (a = 2000, a BETWEEN 1 AND 9, a IN (...)) also holds for every row of the
// other side that can match: such a row has b = a. So the same conjunct on
// b filters the other side without changing the join's result, wherever
// that side's unmatched rows are not output. TPC-DS q78 filters the store
// channel's year in its WHERE clause; the catalog and web channels, joined
// to it on the year, now aggregate that one year instead of all five.

// deriveAcross returns, for each conjunct of from that constrains a single
// column which conds equate with a column of the other side (to), the same
// conjunct over that column. Only comparisons of the column with constants
// (and AND/OR/NOT of them, IN lists, IS [NOT] NULL) are carried: they hold
// for equal values alike.
func deriveAcross(from []Expr, conds []Expr, fromCols, toCols ColumnSet) []Expr {
	pairs := map[ColumnID]*ColRef{} // column of from's side -> equal column of to's side
	for _, c := range conds {
		b, ok := c.(*Binary)
		if !ok || b.Op != OpEq {
			continue
		}
		l, lok := b.L.(*ColRef)
		r, rok := b.R.(*ColRef)
		if !lok || !rok || !arrow.TypeEqual(l.Typ, r.Typ) {
			continue
		}
		switch {
		case fromCols.Has(l.ID) && toCols.Has(r.ID):
			pairs[l.ID] = r
		case fromCols.Has(r.ID) && toCols.Has(l.ID):
			pairs[r.ID] = l
		}
	}
	if len(pairs) == 0 {
		return nil
	}
	var out []Expr
	for _, p := range from {
		cols := ColumnsOf(p)
		if len(cols) != 1 {
			continue
		}
		for id := range cols {
			to, ok := pairs[id]
			if !ok || !constantTest(p, id) {
				continue
			}
			out = append(out, substitute(p, map[ColumnID]Expr{id: to}))
		}
	}
	return out
}

// constantTest reports whether e tests column id against constants only.
func constantTest(e Expr, id ColumnID) bool {
	isCol := func(x Expr) bool { c, ok := x.(*ColRef); return ok && c.ID == id }
	isConst := func(x Expr) bool { _, ok := x.(*Literal); return ok }
	switch x := e.(type) {
	case *Binary:
		switch {
		case x.Op == OpAnd || x.Op == OpOr:
			return constantTest(x.L, id) && constantTest(x.R, id)
		case x.Op.IsComparison():
			return isCol(x.L) && isConst(x.R) || isConst(x.L) && isCol(x.R)
		}
	case *Not:
		return constantTest(x.X, id)
	case *InList:
		if !isCol(x.X) {
			return false
		}
		for _, v := range x.List {
			if !isConst(v) {
				return false
			}
		}
		return true
	case *IsNull:
		return isCol(x.X)
	}
	return false
}
