package plan

// PruneColumns removes columns no ancestor needs: Scans read only the
// columns referenced above them (plus those their Filters use), Projects
// drop unused expressions, Aggregates drop unused aggregate calls. It also
// removes pass-through Projects (every expression a ColRef keeping its ID)
// whose parent refers to columns by ID only; Projects feeding the root or a
// Union are kept since those consume columns by position. The root's output
// columns are unchanged, in order.
func PruneColumns(n Node, _ *OptContext) (Node, error) {
	return prune(n, n.Schema().IDs(), true), nil
}

// prune rewrites n keeping at least the columns in req. When exact, n's
// output schema must stay exactly as it is (its consumer is positional).
func prune(n Node, req ColumnSet, exact bool) Node {
	switch x := n.(type) {
	case *Project:
		if !exact && isPassThrough(x) {
			return prune(x.Input, req, false)
		}
		out := &Project{}
		for i, e := range x.Exprs {
			if exact || req.Has(x.Cols[i].ID) {
				out.Exprs = append(out.Exprs, e)
				out.Cols = append(out.Cols, x.Cols[i])
			}
		}
		if len(out.Exprs) == 0 && len(x.Exprs) > 0 {
			// Keep one column so the row count survives (e.g. count(*)).
			// A Project with no expressions at all (SELECT FROM t) has
			// nothing to keep: its batches carry only a row count.
			out.Exprs, out.Cols = x.Exprs[:1], x.Cols[:1]
		}
		childReq := ColumnSet{}
		for _, e := range out.Exprs {
			addAll(childReq, exprCols(e))
		}
		out.Input = prune(x.Input, childReq, false)
		return out
	case *Filter:
		childReq := withAll(req, n, exact)
		addAll(childReq, exprCols(x.Pred))
		return &Filter{Input: prune(x.Input, childReq, exact), Pred: x.Pred}
	case *Sort:
		childReq := withAll(req, n, exact)
		for _, k := range x.Keys {
			addAll(childReq, exprCols(k.Expr))
		}
		o := *x
		o.Input = prune(x.Input, childReq, exact)
		return &o
	case *Limit:
		o := *x
		o.Input = prune(x.Input, withAll(req, n, exact), exact)
		return &o
	case *Aggregate:
		o := *x
		ng := len(x.GroupBy)
		if !exact && !x.Whole {
			o.Aggs, o.Cols = nil, append(Schema(nil), x.Cols[:ng]...)
			for i, a := range x.Aggs {
				if req.Has(x.Cols[ng+i].ID) {
					o.Aggs = append(o.Aggs, a)
					o.Cols = append(o.Cols, x.Cols[ng+i])
				}
			}
			if len(o.Cols) == 0 && len(x.Aggs) > 0 {
				// A global aggregate with no output would have no columns.
				o.Aggs, o.Cols = x.Aggs[:1], x.Cols[:1]
			}
		}
		childReq := ColumnSet{}
		for _, g := range x.GroupBy {
			addAll(childReq, exprCols(g))
		}
		for _, a := range o.Aggs {
			addAll(childReq, exprCols(a))
		}
		o.Input = prune(x.Input, childReq, false)
		return &o
	case *Expand:
		// The aggregate above reads the expanded columns by ID, so the
		// pass-through input columns can shrink to those required above.
		need := ColumnSet{}
		for _, c := range x.Input.Schema() {
			if req.Has(c.ID) || exact {
				need[c.ID] = struct{}{}
			}
		}
		for _, k := range x.Keys {
			addAll(need, exprCols(k))
		}
		o := *x
		o.Input = prune(x.Input, need, exact)
		if !exact {
			o.Input = dropUnneeded(o.Input, need)
		}
		return &o
	case *Unnest:
		// Every array stays: each one decides how many rows there are.
		childReq := withAll(req, x.Input, exact)
		for _, a := range x.Args {
			addAll(childReq, exprCols(a))
		}
		o := *x
		o.Input = prune(x.Input, childReq, exact)
		if !exact {
			o.Drop = ColumnSet{}
			for _, c := range o.Input.Schema() {
				if !req.Has(c.ID) {
					o.Drop[c.ID] = struct{}{}
				}
			}
		}
		return &o
	case *Window:
		o := *x
		if !exact {
			o.Calls, o.Cols = nil, nil
			for i, c := range x.Calls {
				if req.Has(x.Cols[i].ID) {
					o.Calls = append(o.Calls, c)
					o.Cols = append(o.Cols, x.Cols[i])
				}
			}
		}
		childReq := withAll(req, x.Input, exact)
		for _, c := range o.Calls {
			addAll(childReq, exprCols(c))
		}
		o.Input = prune(x.Input, childReq, exact)
		if len(o.Calls) == 0 {
			// No window result is needed: the window only forwards its input.
			return o.Input
		}
		return &o
	case *Join:
		need := withAll(req, n, exact)
		if x.Cond != nil {
			addAll(need, exprCols(x.Cond))
		}
		o := *x
		o.Left = prune(x.Left, need, exact)
		rightExact := exact && x.Kind != JoinSemi && x.Kind != JoinAnti
		o.Right = prune(x.Right, need, rightExact)
		if !exact {
			o.Left = dropUnneeded(o.Left, need)
		}
		if !rightExact {
			o.Right = dropUnneeded(o.Right, need)
		}
		return &o
	case *Scan:
		if exact {
			return n
		}
		need := copySet(req)
		for _, f := range x.Filters {
			addAll(need, exprCols(f))
		}
		o := *x
		o.Projection, o.Cols = nil, nil
		for i, c := range x.Cols {
			if need.Has(c.ID) {
				o.Projection = append(o.Projection, x.Projection[i])
				o.Cols = append(o.Cols, c)
			}
		}
		if len(o.Cols) == 0 && len(x.Cols) > 0 {
			// Keep one column so the row count survives (e.g. count(*)).
			o.Projection, o.Cols = x.Projection[:1], x.Cols[:1]
		}
		return &o
	case *Union:
		o := *x
		o.Inputs = make([]Node, len(x.Inputs))
		for i, in := range x.Inputs {
			o.Inputs[i] = prune(in, in.Schema().IDs(), true)
		}
		return &o
	case *RecursiveCTE:
		// Base and Recursive feed the output by position, and the working
		// table holds every column for the next iteration.
		o := *x
		o.Base = prune(x.Base, x.Base.Schema().IDs(), true)
		o.Recursive = prune(x.Recursive, x.Recursive.Schema().IDs(), true)
		return &o
	case *SetOp:
		// Every column takes part in the comparison, and the inputs are
		// matched by position.
		o := *x
		o.Left = prune(x.Left, x.Left.Schema().IDs(), true)
		o.Right = prune(x.Right, x.Right.Schema().IDs(), true)
		return &o
	}
	return n
}

// isPassThrough reports whether p only forwards input columns by ID.
func isPassThrough(p *Project) bool {
	for i, e := range p.Exprs {
		c, ok := e.(*ColRef)
		if !ok || c.ID != p.Cols[i].ID {
			return false
		}
	}
	return true
}

// withAll is a copy of req, plus all of n's columns when n must keep its
// exact schema.
func withAll(req ColumnSet, n Node, exact bool) ColumnSet {
	out := copySet(req)
	if exact {
		addAll(out, n.Schema().IDs())
	}
	return out
}

func copySet(s ColumnSet) ColumnSet {
	out := make(ColumnSet, len(s))
	addAll(out, s)
	return out
}

func addAll(dst, src ColumnSet) {
	for id := range src {
		dst[id] = struct{}{}
	}
}

// dropUnneeded puts a pass-through Project over a join input whose output
// has columns the join does not need (a scan's filter-only columns, such as
// TPC-H q13's o_comment), so that the join does not gather them into its
// output, nor an exchange ship them.
func dropUnneeded(n Node, need ColumnSet) Node {
	p := &Project{Input: n}
	schema := n.Schema()
	for _, c := range schema {
		if need.Has(c.ID) {
			p.Exprs = append(p.Exprs, c.Ref())
			p.Cols = append(p.Cols, c)
		}
	}
	if len(p.Cols) == 0 || len(p.Cols) == len(schema) {
		return n
	}
	return p
}
