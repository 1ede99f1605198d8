package plan

import (
	"math"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
)

// EagerAggregate groups the rows an aggregate reads before the joins that
// only bring in its grouping columns ("eager aggregation", Yan and Larson).
// In
//
//	Aggregate(groupBy g, f(x))  over  inner joins of S... and C...
//
// where the inputs C are whole tables that no argument x reads, S are the
// other inputs, and S meets C only in column equalities S.k = C.j, the
// joined rows of S are first grouped by the S columns the rest of the query
// reads (the join keys k and the S columns in g), each f applied per such
// group; the joins with C then see one row per group instead of every row
// of S, and the aggregate on top combines the partial results by g: sums
// and counts add, minima and maxima take the minimum and maximum. Each
// group of g is the union of the S groups that join it, however often C
// repeats a key, so the result is the same.
//
// An argument that reads C only in a CASE condition, as a pivot of days
// into columns does (TPC-DS q2 and q59: sum(CASE WHEN d_day_name =
// 'Sunday' THEN sales_price END) by week over sales ⋈ date_dim), is split
// too: for SUM, MIN and MAX of CASE WHEN p THEN x END (no ELSE) with x
// reading S only, the S groups, which the S columns p reads are keys of,
// aggregate x, and the aggregate on top applies f to CASE WHEN p THEN
// f(x) END, since p is the same for every row of an S group joined to one
// C row. The pivot's seven sums of one x share one partial sum below.
//
// TPC-H q10 groups lineitem ⋈ orders (115,000 rows in its quarter) by seven
// customer columns; grouped by o_custkey first, 38,000 rows carry the
// customer columns through the joins and into the wide-keyed aggregate.
//
// It applies only where it cannot cost much. C being unfiltered tables,
// the joins with C are lookups that keep S's rows (a selective C, as in
// q3's customers of one segment, is better joined first, and an input
// with a filter or a semi join stays in S); S's distinct keys must be
// estimated at most EagerMaxGroups of its rows (otherwise grouping first is
// an extra pass); the aggregate has group keys (a global SUM of per-group
// counts over no rows would be NULL where COUNT is 0); every function is
// SUM, COUNT, COUNT(*), MIN, MAX or AVG without DISTINCT, and some argument reads
// a column. Run it after predicate pushdown, which puts WHERE equalities
// into the joins and filters into the scans, and before join ordering,
// which then orders S's inputs under the new aggregate and C's around it.
func EagerAggregate(n Node, ctx *OptContext) (Node, error) {
	return TransformUp(n, func(n Node) Node { return eager(n, ctx) }), nil
}

// EagerMaxGroups is the largest share of S's estimated rows its estimated
// groups may be for EagerAggregate to apply. The estimate errs high: a
// column's distinct count is taken as max-min+1 from the footers, an upper
// bound, and rows that repeat a key (the line items of one order) are
// counted as independent draws. TPC-DS q4's web sales of one year were
// estimated 0.87 groups per row and hold 0.23. Tests vary it: correctness
// never depends on it.
var EagerMaxGroups = 0.9

func eager(n Node, ctx *OptContext) Node {
	a, ok := n.(*Aggregate)
	if !ok || len(a.GroupBy) == 0 {
		return n
	}
	if _, ok := a.Input.(*Expand); ok {
		// Grouping sets: the keys are the Expand's columns, which no
		// join below it has.
		return n
	}
	argCols := ColumnSet{}
	pivots := make([]*When, len(a.Aggs))
	for i, f := range a.Aggs {
		switch f.Func {
		case AggSum, AggCount, AggCountStar, AggMin, AggMax, AggAvg:
		default:
			return n
		}
		if f.Distinct {
			return n
		}
		if f.Arg == nil {
			continue // count(*)
		}
		if w := pivotOf(f); w != nil {
			pivots[i] = w
			argCols = union(argCols, ColumnsOf(w.Then))
			continue
		}
		argCols = union(argCols, ColumnsOf(f.Arg))
	}
	var leaves []Node
	var conds []Expr
	flattenInner(a.Input, &leaves, &conds)
	if len(leaves) < 2 || len(argCols) == 0 {
		return n
	}
	// C: the inputs that are whole tables the arguments do not read; S:
	// the rest.
	var sLeaves, cLeaves []Node
	sCols, cCols := ColumnSet{}, ColumnSet{}
	for _, l := range leaves {
		ids := l.Schema().IDs()
		reads := false
		for id := range argCols {
			reads = reads || ids.Has(id)
		}
		if scan, ok := l.(*Scan); ok && len(scan.Filters) == 0 && !reads {
			cLeaves, cCols = append(cLeaves, l), union(cCols, ids)
		} else {
			sLeaves, sCols = append(sLeaves, l), union(sCols, ids)
		}
	}
	if len(cLeaves) == 0 || !argCols.SubsetOf(sCols) {
		return n
	}
	// Conditions: within S, within C, or links S.k = C.j.
	var sConds, cConds, links []Expr
	keys := ColumnSet{} // S columns needed above S
	for _, c := range conds {
		cols := ColumnsOf(c)
		switch {
		case cols.SubsetOf(sCols):
			sConds = append(sConds, c)
		case cols.SubsetOf(cCols):
			cConds = append(cConds, c)
		default:
			s, ok := linkColumn(c, sCols, cCols)
			if !ok {
				return n
			}
			links = append(links, c)
			keys[s] = struct{}{}
		}
	}
	if len(links) == 0 || !connectedBy(sLeaves, sConds) {
		return n
	}
	// The S columns of the group keys and of the pivots' conditions are
	// keys of the S groups.
	for _, g := range append(slices.Clone(a.GroupBy), condExprs(pivots)...) {
		for id := range ColumnsOf(g) {
			switch {
			case sCols.Has(id):
				keys[id] = struct{}{}
			case !cCols.Has(id):
				return n
			}
		}
	}
	sTree := innerJoinOf(sLeaves, sConds)
	// Estimated as join ordering will build it: with every condition on
	// the top join, the joins below would count as cross products.
	sRows := EstimateRows(reorder(sTree))
	keyIDs := sortedIDs(keys)
	if g := estimateGroups(sTree, keyIDs, sRows); g < 0 || g > EagerMaxGroups*sRows {
		return n
	}

	inner := &Aggregate{Input: sTree}
	defs := map[ColumnID]Expr{}
	sSchema := sTree.Schema()
	for _, id := range keyIDs {
		col := sSchema[sSchema.IndexOf(id)]
		out := Column{ID: ctx.IDs.Next(), Name: col.Name, Type: col.Type, Nullable: col.Nullable}
		inner.GroupBy = append(inner.GroupBy, col.Ref())
		inner.Cols = append(inner.Cols, out)
		defs[id] = out.Ref()
	}
	top := &Aggregate{Cols: a.Cols}
	for _, g := range a.GroupBy {
		top.GroupBy = append(top.GroupBy, substitute(g, defs))
	}
	pivotParts := map[string]Column{} // f(x) of the pivots, by its text
	for i, f := range a.Aggs {
		if w := pivots[i]; w != nil {
			part := &AggCall{Func: f.Func, Arg: w.Then, Typ: w.Then.Type()}
			if f.Func == AggSum {
				part.Typ = SumType(part.Typ)
			}
			out, ok := pivotParts[part.String()]
			if !ok {
				out = Column{ID: ctx.IDs.Next(), Name: part.String(), Type: part.Typ, Nullable: true}
				pivotParts[part.String()] = out
				inner.Aggs = append(inner.Aggs, part)
				inner.Cols = append(inner.Cols, out)
			}
			arg := &Case{Whens: []When{{Cond: substitute(w.Cond, defs), Then: out.Ref()}}, Typ: out.Type}
			combine := &AggCall{Func: f.Func, Arg: arg, Typ: out.Type}
			if f.Func == AggSum {
				combine.Typ = SumType(out.Type)
			}
			if !arrow.TypeEqual(combine.Typ, f.Typ) {
				return n
			}
			top.Aggs = append(top.Aggs, combine)
			continue
		}
		parts, outs, combine, ok := splitAgg(f, ctx)
		if !ok {
			return n
		}
		inner.Aggs = append(inner.Aggs, parts...)
		inner.Cols = append(inner.Cols, outs...)
		top.Aggs = append(top.Aggs, combine)
	}
	for _, l := range links {
		cConds = append(cConds, substitute(l, defs))
	}
	top.Input = innerJoinOf(append(cLeaves, inner), cConds)
	return top
}

// pivotOf returns the one branch of f's argument when f is SUM, MIN or MAX
// of CASE WHEN p THEN x END, without ELSE (or ELSE NULL), the branch of the
// CASE's own type; else nil.
func pivotOf(f *AggCall) *When {
	switch f.Func {
	case AggSum, AggMin, AggMax:
	default:
		return nil
	}
	c, ok := f.Arg.(*Case)
	if !ok || len(c.Whens) != 1 || f.Arg2 != nil || len(f.OrderBy) > 0 {
		return nil
	}
	if c.Else != nil {
		if l, ok := c.Else.(*Literal); !ok || l.Val != nil {
			return nil
		}
	}
	w := &c.Whens[0]
	if !arrow.TypeEqual(w.Then.Type(), c.Typ) || len(ColumnsOf(w.Then)) == 0 {
		return nil
	}
	return w
}

// condExprs returns the conditions of the pivots that are not nil.
func condExprs(pivots []*When) []Expr {
	var out []Expr
	for _, w := range pivots {
		if w != nil {
			out = append(out, w.Cond)
		}
	}
	return out
}

// splitAgg splits f (SUM, COUNT, COUNT(*), MIN, MAX or AVG) into the
// partial calls computed per group below, their output columns, and the
// call that combines the partial results above: sums and counts add,
// minima and maxima take the minimum and maximum, an average divides the
// summed sums by the summed counts (AggAvgMerge). ok is false when the
// combined result would not have f's type.
func splitAgg(f *AggCall, ctx *OptContext) (parts []*AggCall, outs []Column, combine *AggCall, ok bool) {
	part := func(fn AggFunc, typ arrow.DataType) Column {
		c := &AggCall{Func: fn, Arg: f.Arg, Typ: typ}
		out := Column{ID: ctx.IDs.Next(), Name: c.String(), Type: typ, Nullable: true}
		parts, outs = append(parts, c), append(outs, out)
		return out
	}
	if f.Func == AggAvg {
		s := part(AggSum, SumType(f.Arg.Type()))
		c := part(AggCount, Int64)
		return parts, outs, &AggCall{Func: AggAvgMerge, Arg: s.Ref(), Arg2: c.Ref(), Typ: f.Typ}, arrow.TypeEqual(AvgType(s.Type), f.Typ)
	}
	out := part(f.Func, f.Typ)
	combine = &AggCall{Func: f.Func, Arg: out.Ref(), Typ: f.Typ}
	if f.Func == AggCount || f.Func == AggCountStar || f.Func == AggSum {
		combine.Func, combine.Typ = AggSum, SumType(out.Type)
	}
	return parts, outs, combine, arrow.TypeEqual(combine.Typ, f.Typ)
}

// linkColumn returns the S column of c when c is an equality of an S
// column and a C column.
func linkColumn(c Expr, sCols, cCols ColumnSet) (ColumnID, bool) {
	b, ok := c.(*Binary)
	if !ok || b.Op != OpEq {
		return 0, false
	}
	l, lok := b.L.(*ColRef)
	r, rok := b.R.(*ColRef)
	if !lok || !rok {
		return 0, false
	}
	if sCols.Has(r.ID) {
		l, r = r, l
	}
	if !sCols.Has(l.ID) || !cCols.Has(r.ID) {
		return 0, false
	}
	return l.ID, true
}

// connectedBy reports whether the equalities among conds connect all of
// leaves (one leaf is connected).
func connectedBy(leaves []Node, conds []Expr) bool {
	cols := make([]ColumnSet, len(leaves))
	for i, l := range leaves {
		cols[i] = l.Schema().IDs()
	}
	reached := make([]bool, len(leaves))
	reached[0] = true
	for grew := true; grew; {
		grew = false
		for i := range leaves {
			for k := range leaves {
				if !reached[i] || reached[k] {
					continue
				}
				for _, c := range conds {
					if isEquiBetween(c, cols[i], cols[k]) {
						reached[k], grew = true, true
						break
					}
				}
			}
		}
	}
	for _, r := range reached {
		if !r {
			return false
		}
	}
	return true
}

// innerJoinOf joins leaves with inner joins, every condition on the top
// one (join ordering places them); a single leaf gets them as a Filter.
func innerJoinOf(leaves []Node, conds []Expr) Node {
	if len(leaves) == 1 {
		// The one leaf may itself be a join (an outer join is a leaf of
		// the inner joins above it): its own condition stays.
		return filterOver(leaves[0], conds)
	}
	j := &Join{Kind: JoinInner, Left: leaves[0], Right: leaves[1]}
	for _, l := range leaves[2:] {
		j = &Join{Kind: JoinInner, Left: j, Right: l}
	}
	j.Cond = Conjunction(conds)
	return j
}

// estimateGroups estimates the distinct combinations of cols among rows
// rows of n: the product of each column's estimated distinct values among
// them, at most rows. -1 when a column's distinct count is unknown.
//
// A column whose table holds t rows and d distinct values has each value
// about t/d times; rows that take a share f of the table (at most all of
// it) miss a value with probability (1-f)^(t/d), so they hold
// d·(1-(1-f)^(t/d)) values: all d for the whole table, each row its own
// for a unique column.
//
// Over a UNION ALL the groups are at most the sum of each branch's groups
// of the same columns (TPC-DS q2's web and catalog sales by date).
func estimateGroups(n Node, cols []ColumnID, rows float64) float64 {
	if u, ok := n.(*Union); ok {
		total := 0.0
		for _, in := range u.Inputs {
			schema := in.Schema()
			ids := make([]ColumnID, len(cols))
			for i, id := range cols {
				j := u.Cols.IndexOf(id)
				if j < 0 || j >= len(schema) {
					return -1
				}
				ids[i] = schema[j].ID
			}
			g := estimateGroups(in, ids, EstimateRows(in))
			if g < 0 {
				return -1
			}
			total += g
		}
		return math.Min(total, rows)
	}
	if p, ok := n.(*Project); ok {
		// A renamed column (ws_sold_date_sk AS sold_date_sk) has a new ID:
		// look for the one it renames.
		ids := make([]ColumnID, len(cols))
		for i, id := range cols {
			j := p.Cols.IndexOf(id)
			if j < 0 {
				ids[i] = id
				continue
			}
			c, ok := p.Exprs[j].(*ColRef)
			if !ok {
				return -1
			}
			ids[i] = c.ID
		}
		return estimateGroups(p.Input, ids, rows)
	}
	g := 1.0
	for _, id := range cols {
		d := ColumnNDV(n, id)
		s, _ := columnScan(n, id)
		if d <= 0 || s == nil {
			return -1
		}
		// A column its scan's filters pin down (d_year = 2001) has as
		// many values as they keep.
		if _, kept := scanSelectivity(s); kept[id] > 0 {
			d = math.Max(1, d*kept[id])
		}
		// The rows hold at most as many of the column's own rows as its
		// scan keeps (a quarter's orders, however many line items each).
		t := math.Max(tableRows(s), d)
		scanRows := EstimateRows(s)
		f := math.Min(1, math.Min(rows, scanRows)/t)
		g *= d * -math.Expm1(t/d*math.Log1p(-f))
	}
	return math.Min(g, rows)
}
