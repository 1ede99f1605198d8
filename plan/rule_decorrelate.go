package plan

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
)

// Decorrelate removes every Subquery expression from the plan, turning it
// into a join:
//
//   - a WHERE conjunct EXISTS(q) / NOT EXISTS(q) becomes a Semi / Anti join
//     of the Filter's input with q, whose correlated conjuncts (any
//     comparison, e.g. TPC-H q21's l3.l_suppkey <> l1.l_suppkey) are pulled
//     out of q's Filters into the join condition;
//   - x IN (q) becomes a Semi join on x = q's column (plus pulled-up
//     predicates); x NOT IN (q) a null-aware Anti join;
//   - EXISTS / IN inside an expression (under OR, NOT, CASE, in a select
//     list) becomes left joins with grouped subqueries and a three-valued
//     mark expression (markSubquery);
//   - an uncorrelated scalar subquery becomes a join with no condition
//     with q, which is made one row by a single_value aggregate unless it
//     is one already: NULL when q is empty, a run-time error when q has
//     more than one row;
//   - a correlated scalar subquery over an aggregate without GROUP BY
//     (TPC-H q2, q17, q20) is grouped by its inner correlation columns and
//     joined on the correlation equalities (Inner when the use is
//     null-rejecting, else Left). count(...) results come back as
//     coalesce(count, 0) over a Left join, because an empty group must
//     count 0. Any other correlated scalar subquery is grouped the same
//     way under single_value, which fails when an outer row has more than
//     one row;
//   - a join whose right side refers to its left side's columns (LATERAL)
//     has the correlation pulled into its condition (decorrelateLateral).
//
// Correlated conjuncts may sit in an OR whose branches all hold them (TPC-DS
// q41): the common conjuncts are factored out first. Unsupported shapes
// (subqueries outside Filter/Project, correlation the rule cannot pull up,
// non-equality correlation where grouping keys are needed) are errors.
func Decorrelate(n Node, ctx *OptContext) (Node, error) {
	return transformUpErr(n, func(n Node) (Node, error) {
		switch x := n.(type) {
		case *Filter:
			if hasSubquery(x.Pred) {
				return decorrelateFilter(x, ctx)
			}
		case *Project:
			for _, e := range x.Exprs {
				if hasSubquery(e) {
					return decorrelateProject(x, ctx)
				}
			}
		case *Join:
			if x.Cond != nil && hasSubquery(x.Cond) {
				return decorrelateJoinCond(x, ctx)
			}
			if intersects(outerRefs(x.Right), x.Left.Schema().IDs()) {
				return decorrelateLateral(x, ctx)
			}
		case *Aggregate:
			for _, e := range Exprs(x) {
				if hasSubquery(e) {
					return decorrelateAggregate(x, ctx)
				}
			}
		default:
			for _, e := range Exprs(n) {
				if hasSubquery(e) {
					return nil, fmt.Errorf("subquery in %s is not supported", firstWord(n.String()))
				}
			}
		}
		return n, nil
	})
}

func firstWord(s string) string {
	for i, r := range s {
		if r == ':' || r == ' ' {
			return s[:i]
		}
	}
	return s
}

// topSubquery recognizes a conjunct that is itself an EXISTS or IN subquery,
// possibly under NOT, and returns it with its effective negation.
func topSubquery(e Expr) (*Subquery, bool, bool) {
	neg := false
	if n, ok := e.(*Not); ok {
		neg = true
		e = n.X
	}
	sq, ok := e.(*Subquery)
	if !ok || sq.Kind == SubqueryScalar {
		return nil, false, false
	}
	return sq, sq.Negated != neg, true
}

func decorrelateFilter(f *Filter, ctx *OptContext) (Node, error) {
	input := f.Input
	var keep []Expr
	for _, c := range SplitConjunction(f.Pred) {
		// A correlated NOT IN is a mark: the null-aware anti join decides
		// by NULLs anywhere in the subquery, not in each outer row's set.
		if sq, neg, ok := topSubquery(c); ok && !(neg && sq.Kind == SubqueryIn && len(outerRefs(sq.Plan)) > 0) {
			var err error
			input, err = semiJoin(input, sq, neg, ctx)
			if err != nil {
				return nil, err
			}
			continue
		}
		if !hasSubquery(c) {
			keep = append(keep, c)
			continue
		}
		var err error
		var c2 Expr
		input, c2, err = replaceScalars(input, c, true, ctx)
		if err != nil {
			return nil, err
		}
		keep = append(keep, c2)
	}
	return restoreSchema(filterOver(input, keep), f.Schema()), nil
}

func decorrelateProject(p *Project, ctx *OptContext) (Node, error) {
	input := p.Input
	out := &Project{Exprs: make([]Expr, len(p.Exprs)), Cols: p.Cols}
	for i, e := range p.Exprs {
		if !hasSubquery(e) {
			out.Exprs[i] = e
			continue
		}
		var err error
		input, out.Exprs[i], err = replaceScalars(input, e, false, ctx)
		if err != nil {
			return nil, err
		}
	}
	out.Input = input
	return out, nil
}

// decorrelateJoinCond handles subqueries in a join's ON condition: an inner
// join's condition is a filter over the cross product, and a left join's
// conjuncts that read only its right side filter that side before the
// join. A subquery conjunct of an outer join that reads the left side is
// an error.
func decorrelateJoinCond(j *Join, ctx *OptContext) (Node, error) {
	if j.Kind == JoinInner {
		if intersects(outerRefs(j.Right), j.Left.Schema().IDs()) {
			return nil, fmt.Errorf("subquery in the ON condition of a LATERAL join is not supported")
		}
		o := *j
		o.Cond = nil
		return decorrelateFilter(&Filter{Input: &o, Pred: j.Cond}, ctx)
	}
	if j.Kind != JoinLeft {
		return nil, fmt.Errorf("subquery in the ON condition of a %s join is not supported", strings.ToLower(j.Kind.String()))
	}
	right := j.Right.Schema().IDs()
	var keep, push []Expr
	for _, c := range SplitConjunction(j.Cond) {
		if !hasSubquery(c) {
			keep = append(keep, c)
			continue
		}
		if !exprCols(c).SubsetOf(right) {
			return nil, fmt.Errorf("subquery in the ON condition of a left join reading the left side is not supported: %s", c)
		}
		push = append(push, c)
	}
	r, err := decorrelateFilter(&Filter{Input: j.Right, Pred: Conjunction(push)}, ctx)
	if err != nil {
		return nil, err
	}
	o := *j
	o.Right, o.Cond = r, Conjunction(keep)
	return &o, nil
}

// decorrelateAggregate handles subqueries in group keys and aggregate
// arguments: a Project below the aggregate computes each such expression
// as a column of its own (decorrelateProject rewrites its subqueries), and
// the aggregate reads that column.
func decorrelateAggregate(a *Aggregate, ctx *OptContext) (Node, error) {
	p := passThrough(a.Input, a.Input.Schema())
	lift := func(e Expr) Expr {
		if e == nil || !hasSubquery(e) {
			return e
		}
		c := Column{ID: ctx.IDs.Next(), Name: e.String(), Type: e.Type(), Nullable: true}
		p.add(e, c)
		return c.Ref()
	}
	o := *a
	o.GroupBy = make([]Expr, len(a.GroupBy))
	for i, g := range a.GroupBy {
		o.GroupBy[i] = lift(g)
	}
	o.Aggs = make([]*AggCall, len(a.Aggs))
	for i, c := range a.Aggs {
		cc := *c
		cc.Arg = lift(c.Arg)
		o.Aggs[i] = &cc
	}
	in, err := decorrelateProject(p, ctx)
	if err != nil {
		return nil, err
	}
	o.Input = in
	return &o, nil
}

// semiJoin rewrites an EXISTS / IN subquery conjunct as a Semi or Anti join
// of input with the subquery plan.
func semiJoin(input Node, sq *Subquery, neg bool, ctx *OptContext) (Node, error) {
	if sq.X != nil && hasSubquery(sq.X) {
		return nil, fmt.Errorf("nested subquery in the left operand of IN is not supported")
	}
	sub, err := Decorrelate(sq.Plan, ctx)
	if err != nil {
		return nil, err
	}
	sub, pulled, err := pullCorrelated(sub)
	if err != nil {
		return nil, err
	}
	if err := checkUncorrelated(sub, pulled, input); err != nil {
		return nil, err
	}
	var cond []Expr
	if sq.Kind == SubqueryIn {
		y := sub.Schema()[0].Ref()
		x := Expr(sq.X)
		var yx Expr = y
		if !equalTypes(x, y) {
			t, ok := CommonType(x.Type(), y.Type())
			if !ok {
				return nil, fmt.Errorf("IN subquery: cannot compare %s with %s", TypeName(x.Type()), TypeName(y.Type()))
			}
			x, yx = castTo(x, t), castTo(y, t)
		}
		cond = append(cond, &Binary{Op: OpEq, L: x, R: yx, Typ: Bool})
	}
	cond = append(cond, pulled...)
	j := &Join{Kind: JoinSemi, Left: input, Right: sub, Cond: Conjunction(cond)}
	if neg {
		j.Kind = JoinAnti
		// NOT IN is false/NULL, not true, when the set holds a NULL.
		j.NullAware = sq.Kind == SubqueryIn
	}
	return j, nil
}

func equalTypes(a, b Expr) bool {
	return a.Type().ID() == b.Type().ID() && a.Type().String() == b.Type().String()
}

func castTo(e Expr, t arrow.DataType) Expr {
	if e.Type().String() == t.String() {
		return e
	}
	return &Cast{X: e, To: t}
}

// checkUncorrelated verifies that after pulling, the subquery plan no longer
// refers to outer columns and the pulled predicates only use columns of the
// subquery or of input (one level of correlation).
func checkUncorrelated(sub Node, pulled []Expr, input Node) error {
	if refs := outerRefs(sub); len(refs) > 0 {
		return fmt.Errorf("correlated subquery shape is not supported: outer columns %s are referenced below a node the decorrelator cannot pull predicates through (only Filter, Project, Sort, joins, and GROUP BY for inner = outer equalities)", refNames(sub, refs))
	}
	avail := input.Schema().IDs()
	for id := range sub.Schema().IDs() {
		avail[id] = struct{}{}
	}
	for _, p := range pulled {
		if !ColumnsOf(p).SubsetOf(avail) {
			return fmt.Errorf("correlated predicate %s refers to a column of a query more than one level out, which is not supported", p)
		}
	}
	return nil
}

// refNames lists the display names of the columns in ids that the plan
// refers to, for error messages.
func refNames(n Node, ids ColumnSet) string {
	names := map[ColumnID]string{}
	var rec func(n Node)
	rec = func(n Node) {
		for _, e := range Exprs(n) {
			Walk(e, func(x Expr) bool {
				switch x := x.(type) {
				case *ColRef:
					if ids.Has(x.ID) {
						names[x.ID] = x.Name
					}
				case *Subquery:
					rec(x.Plan)
				}
				return true
			})
		}
		for _, c := range n.Children() {
			rec(c)
		}
	}
	rec(n)
	var out []string
	for _, id := range sortedIDs(ids) {
		out = append(out, names[id])
	}
	return strings.Join(out, ", ")
}

// pullCorrelated removes correlated conjuncts (those referring to columns the
// subquery does not produce) from the Filters reachable from n through
// Filter, Project, Sort, joins (inner join conditions too; only the left
// input of Left/Semi/Anti joins), windows (conjuncts on their partition
// keys only) and grouped aggregates (inner column = outer equalities only,
// the column becoming a group key), and returns them. Projects on the way
// are widened to pass through the inner columns the pulled predicates use.
func pullCorrelated(n Node) (Node, []Expr, error) {
	return pullFrom(n, producedCols(n))
}

func pullFrom(n Node, produced ColumnSet) (Node, []Expr, error) {
	switch x := n.(type) {
	case *Filter:
		var keep, pulled []Expr
		// Factoring an OR's common conjuncts out first lets a correlation
		// equality repeated in every branch (TPC-DS q41) be pulled alone,
		// leaving the uncorrelated rest of the OR in the subquery.
		for _, c := range SplitConjunction(factorExpr(x.Pred)) {
			if hasSubquery(c) {
				keep = append(keep, c)
				continue
			}
			if ColumnsOf(c).SubsetOf(produced) {
				keep = append(keep, c)
			} else {
				pulled = append(pulled, c)
			}
		}
		in, more, err := pullFrom(x.Input, produced)
		if err != nil {
			return nil, nil, err
		}
		return filterOver(in, keep), append(pulled, more...), nil
	case *Join:
		// Conjuncts of an inner join's condition, and filters inside the
		// inputs whose rows every output row depends on in the same way
		// (both sides of an inner join, the preserved/probing left side of
		// Left, Semi and Anti joins), commute with the join.
		o := *x
		var pulled []Expr
		if x.Kind == JoinInner {
			var keep []Expr
			for _, c := range SplitConjunction(x.Cond) {
				if !hasSubquery(c) && !ColumnsOf(c).SubsetOf(produced) {
					pulled = append(pulled, c)
				} else {
					keep = append(keep, c)
				}
			}
			o.Cond = Conjunction(keep)
			r, more, err := pullFrom(x.Right, produced)
			if err != nil {
				return nil, nil, err
			}
			o.Right, pulled = r, append(pulled, more...)
		}
		switch x.Kind {
		case JoinInner, JoinLeft, JoinSemi, JoinAnti:
			l, more, err := pullFrom(x.Left, produced)
			if err != nil {
				return nil, nil, err
			}
			o.Left, pulled = l, append(pulled, more...)
		}
		return &o, pulled, nil
	case *Sort:
		in, pulled, err := pullFrom(x.Input, produced)
		if err != nil {
			return nil, nil, err
		}
		return x.WithChildren([]Node{in}), pulled, nil
	case *Window:
		// A correlated conjunct rises above a window only when the inner
		// columns it reads are partition keys of every call: then it keeps
		// or drops whole partitions, and the rows that different outer rows
		// see fall in different partitions, so the window computes for each
		// what it would have computed for it alone.
		in, pulled, err := pullFrom(x.Input, produced)
		if err != nil {
			return nil, nil, err
		}
		keys := partitionKeyCols(x)
		for _, p := range pulled {
			for id := range ColumnsOf(p) {
				if produced.Has(id) && !keys.Has(id) {
					return nil, nil, fmt.Errorf("correlated subquery shape is not supported: the correlated predicate %s is below a window function that does not partition by its inner columns", p)
				}
			}
		}
		return x.WithChildren([]Node{in}), pulled, nil
	case *Aggregate:
		return pullThroughAggregate(x, produced)
	case *Project:
		in, pulled, err := pullFrom(x.Input, produced)
		if err != nil {
			return nil, nil, err
		}
		out := &Project{Input: in, Exprs: append([]Expr(nil), x.Exprs...), Cols: append(Schema(nil), x.Cols...)}
		have := out.Cols.IDs()
		inSchema := in.Schema()
		for _, p := range pulled {
			for _, id := range sortedIDs(ColumnsOf(p)) {
				i := inSchema.IndexOf(id)
				if i < 0 || have.Has(id) {
					continue
				}
				out.Exprs = append(out.Exprs, inSchema[i].Ref())
				out.Cols = append(out.Cols, inSchema[i])
				have[id] = struct{}{}
			}
		}
		return out, pulled, nil
	}
	return n, nil, nil
}

// pullThroughAggregate pulls correlation equalities out of a grouped
// aggregate's input: inner column = outer value restricts each evaluation
// to rows where that column has one value, so grouping by it as well
// splits no group, and the equality can then be applied to the groups.
// The aggregate's columns keep their order, the added keys follow (a
// Project when keys were added). A global aggregate (no GROUP BY) yields a
// row even for no input, so nothing is pulled through it; nor through an
// aggregate when a pulled predicate is not such an equality (the outer
// references then stay and the caller reports the shape).
func pullThroughAggregate(x *Aggregate, produced ColumnSet) (Node, []Expr, error) {
	if len(x.GroupBy) == 0 {
		return x, nil, nil
	}
	in, pulled, err := pullFrom(x.Input, produced)
	if err != nil || len(pulled) == 0 {
		return x, nil, err
	}
	inSchema := in.Schema()
	o := *x
	o.Input = in
	o.GroupBy = append([]Expr(nil), x.GroupBy...)
	ng := len(x.GroupBy)
	keys := append(Schema(nil), x.Cols[:ng]...)
	have := keys.IDs()
	for _, p := range pulled {
		b, ok := p.(*Binary)
		if !ok || b.Op != OpEq {
			return x, nil, nil
		}
		inner, isCol := b.L.(*ColRef)
		if !isCol || inSchema.IndexOf(inner.ID) < 0 {
			inner, isCol = b.R.(*ColRef)
		}
		if !isCol || inSchema.IndexOf(inner.ID) < 0 {
			return x, nil, nil
		}
		if !have.Has(inner.ID) {
			keys = append(keys, inSchema[inSchema.IndexOf(inner.ID)])
			o.GroupBy = append(o.GroupBy, inner)
			have[inner.ID] = struct{}{}
		}
	}
	o.Cols = append(keys, x.Cols[ng:]...)
	if len(keys) == ng {
		return &o, pulled, nil
	}
	return passThrough(&o, append(append(Schema(nil), x.Cols...), keys[ng:]...)), pulled, nil
}

// oneRow reports whether n certainly produces exactly one row.
func oneRow(n Node) bool {
	switch x := n.(type) {
	case *Project:
		return oneRow(x.Input)
	case *Aggregate:
		return len(x.GroupBy) == 0
	case *Values:
		return len(x.Rows) == 1
	}
	return false
}

// strictIn reports whether e is NULL whenever target is: target reached
// through arithmetic, negation and casts only.
func strictIn(e, target Expr) bool {
	if e == target {
		return true
	}
	switch x := e.(type) {
	case *Binary:
		if x.Op.IsComparison() || x.Op == OpAnd || x.Op == OpOr {
			return false
		}
		return strictIn(x.L, target) || strictIn(x.R, target)
	case *Negate:
		return strictIn(x.X, target)
	case *Cast:
		return strictIn(x.X, target)
	}
	return false
}

// nullRejectingUse reports whether conjunct c is false or NULL whenever sq
// is NULL (c is a comparison with sq inside a strict operand).
func nullRejectingUse(c Expr, sq *Subquery) bool {
	b, ok := c.(*Binary)
	if !ok || !b.Op.IsComparison() {
		return false
	}
	return strictIn(b.L, sq) || strictIn(b.R, sq)
}

// replaceScalars rewrites every scalar subquery in e as a join onto input
// and returns the widened input and e referring to the joined columns.
// whereConj says e is a WHERE conjunct (so null-rejecting uses may join Inner).
func replaceScalars(input Node, e Expr, whereConj bool, ctx *OptContext) (Node, Expr, error) {
	var sqs []*Subquery
	Walk(e, func(x Expr) bool {
		if sq, ok := x.(*Subquery); ok {
			sqs = append(sqs, sq)
			return false
		}
		return true
	})
	repl := map[*Subquery]Expr{}
	for _, sq := range sqs {
		var err error
		var r Expr
		if sq.Kind == SubqueryScalar {
			nullRej := whereConj && nullRejectingUse(e, sq)
			input, r, err = joinScalar(input, sq, nullRej, ctx)
		} else {
			input, r, err = markSubquery(input, sq, ctx)
		}
		if err != nil {
			return nil, nil, err
		}
		repl[sq] = r
	}
	out := Transform(e, func(x Expr) Expr {
		if sq, ok := x.(*Subquery); ok {
			if r, ok := repl[sq]; ok {
				return r
			}
		}
		return x
	})
	return input, out, nil
}

func joinScalar(input Node, sq *Subquery, nullRej bool, ctx *OptContext) (Node, Expr, error) {
	sub, err := Decorrelate(sq.Plan, ctx)
	if err != nil {
		return nil, nil, err
	}
	if len(sub.Schema()) != 1 {
		return nil, nil, fmt.Errorf("scalar subquery must return one column, got %d", len(sub.Schema()))
	}
	if len(outerRefs(sub)) == 0 {
		if !oneRow(sub) {
			// At most one row, or the query fails: single_value checks.
			sub = singleValue(sub, sub.Schema()[0], nil, ctx)
		}
		return &Join{Kind: JoinInner, Left: input, Right: sub}, sub.Schema()[0].Ref(), nil
	}
	// Correlated: [Project] over Aggregate without GROUP BY.
	var proj *Project
	top := sub
	if p, ok := top.(*Project); ok {
		proj, top = p, p.Input
	}
	agg, ok := top.(*Aggregate)
	if !ok || len(agg.GroupBy) > 0 {
		return joinCorrelatedRow(input, sub, nullRej, ctx)
	}
	body, pulled, err := pullCorrelated(agg.Input)
	if err != nil {
		return nil, nil, err
	}
	if refs := outerRefs(body); len(refs) > 0 {
		return nil, nil, fmt.Errorf("correlated scalar subquery shape is not supported: outer columns %s cannot be pulled up", refNames(body, refs))
	}
	body, innerKeys, outerKeys, err := correlationGroups(pulled, body, input, ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("scalar subquery: %w", err)
	}
	newAgg := &Aggregate{Input: body, GroupBy: innerKeys, Aggs: agg.Aggs}
	var cond []Expr
	for i, k := range innerKeys {
		c := Column{ID: ctx.IDs.Next(), Name: k.String(), Type: k.Type(), Nullable: true}
		newAgg.Cols = append(newAgg.Cols, c)
		cond = append(cond, &Binary{Op: OpEq, L: outerKeys[i], R: c.Ref(), Typ: Bool})
	}
	newAgg.Cols = append(newAgg.Cols, agg.Cols...)
	var right Node = newAgg
	value := agg.Cols[0]
	if proj != nil {
		np := &Project{Input: newAgg, Exprs: append([]Expr(nil), proj.Exprs...), Cols: append(Schema(nil), proj.Cols...)}
		for _, c := range newAgg.Cols[:len(innerKeys)] {
			np.Exprs = append(np.Exprs, c.Ref())
			np.Cols = append(np.Cols, c)
		}
		right = np
		value = proj.Cols[0]
	}
	if len(outerRefs(right)) > 0 {
		return nil, nil, fmt.Errorf("correlated scalar subquery refers to outer columns outside its WHERE clause, which is not supported")
	}
	// count over an empty group is 0, but the join yields NULL for outer rows
	// with no group: fix it up with coalesce where the value is the count
	// itself, and refuse expressions over it.
	countIDs := ColumnSet{}
	for i, a := range agg.Aggs {
		if a.Func == AggCountStar || a.Func == AggCount {
			countIDs[agg.Cols[i].ID] = struct{}{}
		}
	}
	var valueExpr Expr = value.Ref()
	kind := JoinLeft
	if nullRej {
		kind = JoinInner
	}
	var valDef Expr = value.Ref()
	if proj != nil {
		valDef = proj.Exprs[0]
	}
	if intersects(ColumnsOf(valDef), countIDs) {
		c, ok := valDef.(*ColRef)
		if !ok {
			return nil, nil, fmt.Errorf("correlated scalar subquery computing an expression over count(...) is not supported: %s", valDef)
		}
		kind = JoinLeft
		valueExpr = &Func{Name: "coalesce", Args: []Expr{value.Ref(), zeroOf(c)}, Typ: value.Type}
	}
	return &Join{Kind: kind, Left: input, Right: right, Cond: Conjunction(cond)}, valueExpr, nil
}

// singleValue aggregates n's column v with single_value, grouped by
// keys: one row per group holding the group's one value, NULL when the
// group is empty (no groups: always one row), and a run-time error when a
// group has more than one row. The output is the group keys, then the
// value.
func singleValue(n Node, v Column, keys []Expr, ctx *OptContext) *Aggregate {
	agg := &Aggregate{Input: n, GroupBy: keys, Aggs: []*AggCall{{Func: AggSingleValue, Arg: v.Ref(), Typ: v.Type}}}
	for _, k := range keys {
		agg.Cols = append(agg.Cols, Column{ID: ctx.IDs.Next(), Name: k.String(), Type: k.Type(), Nullable: true})
	}
	agg.Cols = append(agg.Cols, Column{ID: ctx.IDs.Next(), Name: v.Name, Table: v.Table, Type: v.Type, Nullable: true})
	return agg
}

// joinCorrelatedRow decorrelates a scalar subquery that is not an
// aggregate (select x from t where t.k = outer.k): its correlation
// equalities become group keys of a single_value aggregate, which yields
// the one row per key or fails the query when a key has more, and the
// outer rows join it on those keys (Left, so a key without rows gives
// NULL; Inner when the use rejects NULLs anyway).
func joinCorrelatedRow(input, sub Node, nullRej bool, ctx *OptContext) (Node, Expr, error) {
	body, pulled, err := pullCorrelated(sub)
	if err != nil {
		return nil, nil, err
	}
	if refs := outerRefs(body); len(refs) > 0 {
		return nil, nil, fmt.Errorf("correlated scalar subquery shape is not supported: outer columns %s are referenced below a node the decorrelator cannot pull predicates through (only Filter, Project, Sort, joins, and GROUP BY for inner = outer equalities)", refNames(body, refs))
	}
	value := body.Schema()[0]
	body, innerKeys, outerKeys, err := correlationGroups(pulled, body, input, ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("scalar subquery: %w", err)
	}
	agg := singleValue(body, value, innerKeys, ctx)
	var cond []Expr
	for i := range innerKeys {
		cond = append(cond, &Binary{Op: OpEq, L: outerKeys[i], R: agg.Cols[i].Ref(), Typ: Bool})
	}
	kind := JoinLeft
	if nullRej {
		kind = JoinInner
	}
	return &Join{Kind: kind, Left: input, Right: agg, Cond: Conjunction(cond)}, agg.Cols[len(innerKeys)].Ref(), nil
}

// zeroOf is a 0 literal of e's (count) type.
func zeroOf(e Expr) Expr {
	if e.Type().ID() == arrow.INT32 {
		return &Literal{Typ: Int32, Val: int32(0)}
	}
	return &Literal{Typ: Int64, Val: int64(0)}
}
