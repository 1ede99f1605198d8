package plan

// ComputeKeysBelowJoins computes an aggregate's computed group keys below
// the inner joins under it, on the build side that holds their columns,
// when that side has fewer rows than the join: GROUP BY
// substring(i_item_desc, 1, 30) over store_sales joined with item (TPC-DS
// q23) evaluates the substring once per item instead of once per sale,
// and the join carries the 30 characters instead of the whole description
// (which pruning then drops). The aggregate groups by the new column; its
// output is unchanged.
//
// Only keys that cannot fail and return the same value for the same input
// move (see computableBelow): an expression evaluated on rows the join
// would have dropped must not raise an error the query would not, and one
// evaluated once per build row must not differ from one evaluated per
// joined row. The key is computed only on the left input of an inner join,
// the one ChooseBuildSide made the smaller (the way there may lead through
// the probe sides of joins above): a joined row's column holds its input
// row's value, which an outer join's NULL-extended rows would not, and the
// probe side's scans keep their runtime filters without a Project in
// between.
func ComputeKeysBelowJoins(n Node, ctx *OptContext) (Node, error) {
	est := NewEstimates()
	return TransformUp(n, func(n Node) Node {
		agg, ok := n.(*Aggregate)
		if !ok {
			return n
		}
		input, keys := agg.Input, []Expr(nil)
		for i, g := range agg.GroupBy {
			switch g.(type) {
			case *ColRef, *Literal:
				continue
			}
			cols := ColumnsOf(g)
			if len(cols) == 0 || !computableBelow(g) {
				continue
			}
			col := Column{ID: ctx.IDs.Next(), Name: g.String(), Type: g.Type(), Nullable: true}
			in, ok := computeBelow(input, g, cols, col, est)
			if !ok {
				continue
			}
			if keys == nil {
				keys = append([]Expr(nil), agg.GroupBy...)
			}
			input, keys[i] = in, col.Ref()
		}
		if keys == nil {
			return n
		}
		o := *agg
		o.Input, o.GroupBy = input, keys
		return &o
	}), nil
}

// computeBelow returns n with e computed as col on the left input of the
// deepest inner join below n (through Filters, pass-through Projects and
// either input of further inner joins) that holds cols and has fewer rows
// than its join; false when there is none.
func computeBelow(n Node, e Expr, cols ColumnSet, col Column, est *Estimates) (Node, bool) {
	switch x := n.(type) {
	case *Filter:
		in, ok := computeBelow(x.Input, e, cols, col, est)
		if !ok {
			return n, false
		}
		return &Filter{Input: in, Pred: x.Pred}, true
	case *Project:
		for id := range cols {
			i := x.Cols.IndexOf(id)
			if i < 0 {
				return n, false
			}
			if r, ok := x.Exprs[i].(*ColRef); !ok || r.ID != id {
				return n, false
			}
		}
		in, ok := computeBelow(x.Input, e, cols, col, est)
		if !ok {
			return n, false
		}
		return &Project{
			Input: in,
			Exprs: append(append([]Expr(nil), x.Exprs...), col.Ref()),
			Cols:  append(append(Schema(nil), x.Cols...), col),
		}, true
	case *Join:
		if x.Kind != JoinInner {
			return n, false
		}
		if cols.SubsetOf(x.Right.Schema().IDs()) {
			// Through the probe side only to a build side further down.
			right, ok := computeBelow(x.Right, e, cols, col, est)
			if !ok {
				return n, false
			}
			o := *x
			o.Right = right
			return &o, true
		}
		if !cols.SubsetOf(x.Left.Schema().IDs()) || est.Rows(x.Left) >= est.Rows(x) {
			return n, false
		}
		left, ok := computeBelow(x.Left, e, cols, col, est)
		if !ok {
			p := passThrough(x.Left, x.Left.Schema())
			p.add(e, col)
			left = p
		}
		o := *x
		o.Left = left
		return &o, true
	}
	return n, false
}

// computableBelow reports whether e may be evaluated on other rows than
// the ones that reach it, and once for rows with equal inputs: column
// references, constants, and functions that are neither volatile nor able
// to fail on any input (substring only with constant bounds, which could
// otherwise be a negative length).
func computableBelow(e Expr) bool {
	switch x := e.(type) {
	case *ColRef, *Literal:
		return true
	case *Func:
		switch x.Name {
		case "upper", "lower", "length", "extract_year", "extract_quarter", "extract_month", "extract_day":
		case "substring":
			for _, a := range x.Args[1:] {
				if _, ok := a.(*Literal); !ok {
					return false
				}
			}
			if len(x.Args) == 3 {
				if n, ok := intLiteral(x.Args[2].(*Literal)); !ok || n < 0 {
					return false
				}
			}
		default:
			return false
		}
		for _, a := range x.Args {
			if !computableBelow(a) {
				return false
			}
		}
		return true
	}
	return false
}
