package plan

import (
	"slices"
	"strings"
)

// MergeGlobalAggregates computes global aggregates (no GROUP BY) that read
// the same tables, joined the same way and differing only in their scans'
// filters, as one aggregate over one read of those tables, as Spark's
// MergeScalarSubqueries does. TPC-DS q9 reads store_sales fifteen times,
// once per scalar subquery (a count and two averages over each of five
// quantity ranges); q88 joins store_sales to the same three dimensions
// eight times, for eight half hours of the day. Merged, the scans keep a
// row that any of the aggregates' filters keep (their OR), and each
// aggregate reads its argument only where its own filters hold:
//
//	count(*)       over Scan(t, p)   and   avg(x) over Scan(t, q)
//	  →  count(CASE WHEN p THEN 1 END), avg(CASE WHEN q THEN x END)  over Scan(t, p OR q)
//
// A grouped aggregate merges too when each one's own filters read only
// columns that pass unchanged into its group keys (through projections,
// joins and aggregates below it): a CTE grouped by quarter read once per
// quarter (q31), or by year once per year (q4, q11, q64). The merged groups
// are then filtered by each reader's own filters, on the group keys, since
// every row of a group agrees on them.
//
// Every aggregate that was there is replaced by a projection of the merged
// aggregate's columns for it. The merged aggregate is built afresh (new
// column IDs) in each place, so the plan's IDs stay unique, and is the
// same subtree in each, so the physical planners compute it once (shared
// subtrees in process, one shared stage on a cluster); copies of a global
// one that meet in the same inner joins become one (oneRowOnce).
//
// It applies to COUNT, COUNT(*), SUM, AVG, MIN and MAX without DISTINCT or
// ORDER BY, whose results ignore the rows a NULL argument stands for (COUNT
// of a CASE counts only where it holds, and is 0 over no such row, as
// COUNT(*) over no row is); the aggregates' inputs are inner joins, filters,
// projections and aggregates over scans, the same but for the scans'
// filters. DISTINCT stays out: q28's six counts of distinct prices over one
// read took ten times as long (one copy of every row per argument). Run it
// after predicate pushdown, which puts the filters into the scans and the
// join conditions into the joins, and after eager aggregation, which would
// no longer find the merged scans' groups few enough.
func MergeGlobalAggregates(n Node, ctx *OptContext) (Node, error) {
	groups := map[string][]*Aggregate{}
	var order []string
	var collect func(Node)
	collect = func(n Node) {
		if a, ok := n.(*Aggregate); ok {
			if key, ok := mergeKey(a); ok {
				if _, seen := groups[key]; !seen {
					order = append(order, key)
				}
				groups[key] = append(groups[key], a)
				return
			}
		}
		for _, c := range n.Children() {
			collect(c)
		}
	}
	collect(n)
	replace := map[*Aggregate]Node{}
	copies := map[*Aggregate]int{} // a merged global aggregate's group
	for g, key := range order {
		as := mergeable(groups[key], ctx)
		if len(as) < 2 {
			continue
		}
		for _, a := range as {
			r := mergedFor(as, a, ctx)
			replace[a] = r
			if p, ok := r.(*Project); ok {
				if m, ok := p.Input.(*Aggregate); ok && len(m.GroupBy) == 0 {
					copies[m] = g
				}
			}
		}
	}
	if len(replace) == 0 {
		return n, nil
	}
	n = TransformUp(n, func(n Node) Node {
		if a, ok := n.(*Aggregate); ok {
			if r, ok := replace[a]; ok {
				return r
			}
		}
		return n
	})
	if len(copies) == 0 {
		return n, nil
	}
	return oneRowOnce(n, copies), nil
}

// projectionOf returns a chain of projections over an aggregate as one
// projection of it (nil when n is not such a chain).
func projectionOf(n Node) (*Project, *Aggregate) {
	p, ok := n.(*Project)
	if !ok {
		return nil, nil
	}
	switch in := p.Input.(type) {
	case *Aggregate:
		return p, in
	case *Project:
		inner, a := projectionOf(in)
		if inner == nil {
			return nil, nil
		}
		defs := map[ColumnID]Expr{}
		for i, c := range inner.Cols {
			defs[c.ID] = inner.Exprs[i]
		}
		out := &Project{Input: a, Cols: p.Cols}
		for _, e := range p.Exprs {
			out.Exprs = append(out.Exprs, substitute(e, defs))
		}
		return out, a
	}
	return nil, nil
}

// oneRowOnce joins each merged global aggregate once per inner join: its
// copies there (q9's fifteen subqueries, cross joined) each output the
// same single row, so one projection of one copy outputs all their
// columns. Without it each copy is a join of its own, on a cluster a
// stage each, one after the other.
func oneRowOnce(n Node, copies map[*Aggregate]int) Node {
	j, ok := n.(*Join)
	if !ok || j.Kind != JoinInner {
		return mapChildren(n, func(c Node) Node { return oneRowOnce(c, copies) })
	}
	var leaves []Node
	var conds []Expr
	flattenInner(j, &leaves, &conds)
	var out []Node
	first := map[int]int{} // group -> its projection's index in out
	for _, l := range leaves {
		l = oneRowOnce(l, copies)
		p, a := projectionOf(l)
		g, ok := copies[a]
		if p == nil || !ok {
			out = append(out, l)
			continue
		}
		k, seen := first[g]
		if !seen {
			first[g] = len(out)
			out = append(out, p)
			continue
		}
		// Read p's columns from the first copy's aggregate: the copies
		// are alike, column for column.
		into := out[k].(*Project)
		base := into.Input.(*Aggregate)
		defs := map[ColumnID]Expr{}
		for i, c := range a.Cols {
			defs[c.ID] = base.Cols[i].Ref()
		}
		merged := &Project{Input: base, Exprs: slices.Clone(into.Exprs), Cols: slices.Clone(into.Cols)}
		for i, e := range p.Exprs {
			merged.Exprs = append(merged.Exprs, substitute(e, defs))
			merged.Cols = append(merged.Cols, p.Cols[i])
		}
		out[k] = merged
	}
	if len(out) == len(leaves) {
		// Nothing combined: keep the join as it was, with its leaves'
		// own rewrites.
		nk := []Node{oneRowOnce(j.Left, copies), oneRowOnce(j.Right, copies)}
		if nk[0] == j.Left && nk[1] == j.Right {
			return j
		}
		return j.WithChildren(nk)
	}
	// The join's columns, in its order, over the combined leaves (join
	// ordering rebuilds the tree and places the conditions).
	joined := innerJoinOf(out, conds)
	return passThrough(joined, j.Schema())
}

// mergeable returns the aggregates of as (one shape) that merge: all of
// them but the grouped ones whose own filters are not on their group keys,
// and none when no filters differ (the planners already compute equal
// subtrees once) or fewer than two are left.
func mergeable(as []*Aggregate, ctx *OptContext) []*Aggregate {
	var uniq []*Aggregate
	for _, a := range as {
		if !slices.Contains(uniq, a) {
			uniq = append(uniq, a)
		}
	}
	for len(uniq) >= 2 {
		m, _, ok := newMerger(uniq, ctx)
		if !ok {
			return nil
		}
		var keep []*Aggregate
		differ := false
		for i, x := range uniq {
			cond := Conjunction(m.conds[i])
			differ = differ || cond != nil
			if cond != nil && len(x.GroupBy) > 0 && !readsOnly(cond, keyIDs(x.GroupBy, m.maps[i])) {
				continue
			}
			keep = append(keep, x)
		}
		if !differ && sameCalls(uniq, m) {
			return nil
		}
		if len(keep) == len(uniq) {
			return keep
		}
		uniq = keep
	}
	return nil
}

// sameCalls reports whether every one of as computes the same calls over
// the merged input: with the same filters, they are then equal subtrees.
func sameCalls(as []*Aggregate, m *merger) bool {
	text := func(i int) string {
		var b strings.Builder
		for _, f := range as[i].Aggs {
			b.WriteString(substitute(f, m.maps[i]).String() + ";")
		}
		return b.String()
	}
	for i := range as[1:] {
		if text(i+1) != text(0) {
			return false
		}
	}
	return true
}

// mergeKey is the shape of a's input with the scans' filters and columns
// left out: aggregates with the same key can be merged. ok is false for an
// aggregate the rule does not take.
func mergeKey(a *Aggregate) (string, bool) {
	if len(a.GrandTotals) > 0 || (len(a.GroupBy) == 0 && len(a.Aggs) == 0) {
		return "", false
	}
	for _, f := range a.Aggs {
		switch f.Func {
		case AggCount, AggCountStar, AggSum, AggAvg, AggMin, AggMax:
		default:
			return "", false
		}
		if f.Distinct || f.Arg2 != nil || len(f.OrderBy) > 0 {
			return "", false
		}
	}
	var b strings.Builder
	b.WriteString("groupBy(" + exprList(a.GroupBy) + ") ")
	if !writeShape(&b, a.Input) {
		return "", false
	}
	return b.String(), true
}

// writeShape writes n's shape: inner joins with their conditions (by
// column names) over scans, by table. It reports false for any other node.
func writeShape(b *strings.Builder, n Node) bool {
	switch n := n.(type) {
	case *Scan:
		b.WriteString("scan(" + n.TableName + ")")
		return true
	case *Join:
		if n.Kind != JoinInner {
			return false
		}
		b.WriteString("join(")
		if n.Cond != nil {
			b.WriteString(n.Cond.String())
		}
		b.WriteString(", ")
		if !writeShape(b, n.Left) {
			return false
		}
		b.WriteString(", ")
		if !writeShape(b, n.Right) {
			return false
		}
		b.WriteString(")")
		return true
	case *Project:
		b.WriteString("project(" + exprList(n.Exprs) + ", ")
		if !writeShape(b, n.Input) {
			return false
		}
		b.WriteString(")")
		return true
	case *Filter:
		b.WriteString("filter(" + n.Pred.String() + ", ")
		if !writeShape(b, n.Input) {
			return false
		}
		b.WriteString(")")
		return true
	case *Aggregate:
		if len(n.GrandTotals) > 0 {
			return false
		}
		aggs := make([]Expr, len(n.Aggs))
		for i, a := range n.Aggs {
			aggs[i] = a
		}
		b.WriteString("aggregate(" + exprList(n.GroupBy) + "; " + exprList(aggs) + ", ")
		if !writeShape(b, n.Input) {
			return false
		}
		b.WriteString(")")
		return true
	}
	return false
}

// mergedFor builds the merged aggregate of as, with fresh column IDs, and
// the node that stands for a: a projection of its columns for a, over a
// filter by a's own conditions for a grouped aggregate. It returns a
// unchanged when the inputs turn out not to line up (same names, other
// tables or conditions) or a grouped aggregate's conditions are not on its
// group keys.
func mergedFor(as []*Aggregate, a *Aggregate, ctx *OptContext) Node {
	m, in, ok := newMerger(as, ctx)
	if !ok {
		return a
	}
	agg := &Aggregate{Input: in, Whole: true}
	grouped := len(a.GroupBy) > 0
	nodes := make([]Node, len(as))
	for i, x := range as {
		nodes[i] = x
	}
	for k := range as[0].GroupBy {
		mg, ok := m.same(nodes, func(n Node) Expr { return n.(*Aggregate).GroupBy[k] })
		if !ok {
			return a
		}
		agg.GroupBy = append(agg.GroupBy, mg)
		agg.Cols = append(agg.Cols, Column{ID: m.ids.Next(), Name: as[0].Cols[k].Name, Table: as[0].Cols[k].Table, Type: as[0].Cols[k].Type, Nullable: true})
	}
	ng := len(agg.GroupBy)
	byText := map[string]Column{}
	var mine []Column
	for i, x := range as {
		cond := Conjunction(m.conds[i])
		for j, f := range x.Aggs {
			g := &AggCall{Func: f.Func, Typ: f.Typ}
			if f.Arg != nil {
				g.Arg = substitute(f.Arg, m.maps[i])
			}
			if cond != nil && !grouped {
				if g.Func == AggCountStar {
					g.Func, g.Arg = AggCount, &Literal{Typ: Int64, Val: int64(1)}
				}
				g.Arg = &Case{Whens: []When{{Cond: cond, Then: g.Arg}}, Typ: g.Arg.Type()}
			}
			out, ok := byText[g.String()]
			if !ok {
				out = Column{ID: m.ids.Next(), Name: x.Cols[len(x.GroupBy)+j].Name, Type: f.Typ, Nullable: true}
				byText[g.String()] = out
				agg.Aggs = append(agg.Aggs, g)
				agg.Cols = append(agg.Cols, out)
			}
			if x == a {
				mine = append(mine, out)
			}
		}
	}
	var top Node = agg
	if grouped {
		// a's groups are those of the merged ones its conditions keep:
		// those are on its group keys, the same in every row of a group.
		ai := slices.Index(as, a)
		if cond := Conjunction(m.conds[ai]); cond != nil {
			lifted, ok := liftThrough(cond, keyIDs(agg.GroupBy, nil), agg.Cols[:ng])
			if !ok {
				return a
			}
			top = &Filter{Input: agg, Pred: lifted}
		}
		mine = append(slices.Clone(agg.Cols[:ng]), mine...)
	}
	p := &Project{Input: top, Cols: slices.Clone(a.Cols)}
	for _, c := range mine {
		p.Exprs = append(p.Exprs, c.Ref())
	}
	return p
}

// liftThrough rewrites cond, on a node's input columns, onto its outputs:
// ins[k] (0 for none) is the input column output k passes through as it is.
// ok is false when cond reads an input column no output passes through.
func liftThrough(cond Expr, ins []ColumnID, outs Schema) (Expr, bool) {
	if !readsOnly(cond, ins) {
		return nil, false
	}
	defs := map[ColumnID]Expr{}
	for k, id := range ins {
		if _, dup := defs[id]; id != 0 && !dup {
			defs[id] = outs[k].Ref()
		}
	}
	return substitute(cond, defs), true
}

// readsOnly reports whether cond reads only columns among ids.
func readsOnly(cond Expr, ids []ColumnID) bool {
	for id := range ColumnsOf(cond) {
		if !slices.Contains(ids, id) {
			return false
		}
	}
	return true
}

// keyIDs returns the columns the group keys are, through mapping (nil:
// as they are), 0 for a computed key.
func keyIDs(groupBy []Expr, mapping map[ColumnID]Expr) []ColumnID {
	ids := make([]ColumnID, len(groupBy))
	for k, g := range groupBy {
		if mapping != nil {
			g = substitute(g, mapping)
		}
		if c, ok := g.(*ColRef); ok {
			ids[k] = c.ID
		}
	}
	return ids
}

// newMerger merges the inputs of as, returning the merger holding each
// one's columns and own filters and the merged input.
func newMerger(as []*Aggregate, ctx *OptContext) (*merger, Node, bool) {
	m := &merger{ids: ctx.IDs, maps: make([]map[ColumnID]Expr, len(as)), conds: make([][]Expr, len(as))}
	inputs := make([]Node, len(as))
	for i, x := range as {
		m.maps[i] = map[ColumnID]Expr{}
		inputs[i] = x.Input
	}
	in, ok := m.merge(inputs)
	return m, in, ok
}

// merger merges inputs of the same shape: maps[i] takes input i's columns
// to the merged ones, conds[i] holds the filters only input i has, on the
// merged node's columns.
type merger struct {
	ids   *IDGen
	maps  []map[ColumnID]Expr
	conds [][]Expr
}

func (m *merger) merge(ns []Node) (Node, bool) {
	switch first := ns[0].(type) {
	case *Scan:
		scans := make([]*Scan, len(ns))
		for i, n := range ns {
			s, ok := n.(*Scan)
			if !ok || s.Table != first.Table || s.TableName != first.TableName {
				return nil, false
			}
			scans[i] = s
		}
		return m.scan(scans), true
	case *Join:
		lefts, rights := make([]Node, len(ns)), make([]Node, len(ns))
		for i, n := range ns {
			j, ok := n.(*Join)
			if !ok || j.Kind != first.Kind {
				return nil, false
			}
			lefts[i], rights[i] = j.Left, j.Right
		}
		l, ok := m.merge(lefts)
		if !ok {
			return nil, false
		}
		r, ok := m.merge(rights)
		if !ok {
			return nil, false
		}
		cond, ok := m.same(ns, func(n Node) Expr { return n.(*Join).Cond })
		if !ok {
			return nil, false
		}
		return &Join{Kind: first.Kind, Left: l, Right: r, Cond: cond}, true
	case *Filter:
		in, ok := m.mergeInputs(ns, func(n Node) (Node, bool) {
			if f, ok := n.(*Filter); ok {
				return f.Input, true
			}
			return nil, false
		})
		if !ok {
			return nil, false
		}
		pred, ok := m.same(ns, func(n Node) Expr { return n.(*Filter).Pred })
		if !ok {
			return nil, false
		}
		return &Filter{Input: in, Pred: pred}, true
	case *Project:
		in, ok := m.mergeInputs(ns, func(n Node) (Node, bool) {
			if p, ok := n.(*Project); ok && len(p.Exprs) == len(first.Exprs) {
				return p.Input, true
			}
			return nil, false
		})
		if !ok {
			return nil, false
		}
		out := &Project{Input: in}
		passes := make([]ColumnID, len(first.Exprs))
		for k := range first.Exprs {
			e, ok := m.same(ns, func(n Node) Expr { return n.(*Project).Exprs[k] })
			if !ok {
				return nil, false
			}
			if c, ok := e.(*ColRef); ok {
				passes[k] = c.ID
			}
			col := first.Cols[k]
			col.ID = m.ids.Next()
			out.Exprs, out.Cols = append(out.Exprs, e), append(out.Cols, col)
		}
		return out, m.lift(ns, func(n Node) Schema { return n.(*Project).Cols }, passes, out.Cols)
	case *Aggregate:
		in, ok := m.mergeInputs(ns, func(n Node) (Node, bool) {
			if a, ok := n.(*Aggregate); ok && len(a.GroupBy) == len(first.GroupBy) && len(a.Aggs) == len(first.Aggs) && len(a.GrandTotals) == 0 {
				return a.Input, true
			}
			return nil, false
		})
		if !ok {
			return nil, false
		}
		out := &Aggregate{Input: in}
		passes := make([]ColumnID, len(first.Cols))
		for k := range first.GroupBy {
			e, ok := m.same(ns, func(n Node) Expr { return n.(*Aggregate).GroupBy[k] })
			if !ok {
				return nil, false
			}
			if c, ok := e.(*ColRef); ok {
				passes[k] = c.ID
			}
			out.GroupBy = append(out.GroupBy, e)
		}
		for k, f := range first.Aggs {
			if _, ok := m.same(ns, func(n Node) Expr { return n.(*Aggregate).Aggs[k] }); !ok {
				return nil, false
			}
			g := *f
			if f.Arg != nil {
				g.Arg = substitute(f.Arg, m.maps[0])
			}
			if f.Arg2 != nil {
				g.Arg2 = substitute(f.Arg2, m.maps[0])
			}
			if len(f.OrderBy) > 0 {
				return nil, false
			}
			out.Aggs = append(out.Aggs, &g)
		}
		for _, c := range first.Cols {
			c.ID = m.ids.Next()
			out.Cols = append(out.Cols, c)
		}
		return out, m.lift(ns, func(n Node) Schema { return n.(*Aggregate).Cols }, passes, out.Cols)
	}
	return nil, false
}

// mergeInputs merges the inputs of ns, nodes of one kind with one input,
// which input gives, with false for a node that does not line up.
func (m *merger) mergeInputs(ns []Node, input func(Node) (Node, bool)) (Node, bool) {
	ins := make([]Node, len(ns))
	for i, n := range ns {
		in, ok := input(n)
		if !ok {
			return nil, false
		}
		ins[i] = in
	}
	return m.merge(ins)
}

// same returns the expression get gives of each of ns, in merged columns,
// when it is the same for all (nil when get gives nil).
func (m *merger) same(ns []Node, get func(Node) Expr) (Expr, bool) {
	var first Expr
	for i, n := range ns {
		e := get(n)
		if e != nil {
			e = substitute(e, m.maps[i])
		}
		if i == 0 {
			first = e
		} else if exprText(e) != exprText(first) {
			return nil, false
		}
	}
	return first, true
}

// lift maps each input's output columns (cols of it) to the merged node's
// outs, and rewrites the conditions collected below onto outs: passes[k]
// is the merged input column output k passes through (0 for a computed
// one). It reports false when a condition reads a column the node drops.
func (m *merger) lift(ns []Node, cols func(Node) Schema, passes []ColumnID, outs Schema) bool {
	for i, n := range ns {
		for k, c := range cols(n) {
			m.maps[i][c.ID] = outs[k].Ref()
		}
		for k, c := range m.conds[i] {
			lifted, ok := liftThrough(c, passes, outs)
			if !ok {
				return false
			}
			m.conds[i][k] = lifted
		}
	}
	return true
}

// scan merges scans of one table: the union of their columns, and their
// filters, or when these differ, the OR of each scan's, each scan's own
// then conditioning its aggregates.
func (m *merger) scan(scans []*Scan) *Scan {
	var proj []int
	for _, s := range scans {
		for _, p := range s.Projection {
			if !slices.Contains(proj, p) {
				proj = append(proj, p)
			}
		}
	}
	slices.Sort(proj)
	out := &Scan{TableName: scans[0].TableName, Table: scans[0].Table, Projection: proj}
	for _, p := range proj {
		var col Column
		for _, s := range scans {
			if k := slices.Index(s.Projection, p); k >= 0 {
				col = s.Cols[k]
				break
			}
		}
		col.ID = m.ids.Next()
		out.Cols = append(out.Cols, col)
	}
	for i, s := range scans {
		for k, p := range s.Projection {
			m.maps[i][s.Cols[k].ID] = out.Cols[slices.Index(proj, p)].Ref()
		}
	}
	filters := make([]Expr, len(scans))
	same := true
	for i, s := range scans {
		fs := make([]Expr, len(s.Filters))
		for k, f := range s.Filters {
			fs[k] = substitute(f, m.maps[i])
		}
		filters[i] = Conjunction(fs)
		same = same && exprText(filters[i]) == exprText(filters[0])
	}
	if same {
		if filters[0] != nil {
			out.Filters = SplitConjunction(filters[0])
		}
		return out
	}
	// Each scan's own filters condition its aggregates. A scan without
	// filters keeps every row, and so then does the merged one.
	keepAll := false
	for i, f := range filters {
		if f == nil {
			keepAll = true
			continue
		}
		m.conds[i] = append(m.conds[i], f)
	}
	if keepAll {
		return out
	}
	var anyOf Expr
	seen := map[string]bool{}
	for _, f := range filters {
		if seen[exprText(f)] {
			continue
		}
		seen[exprText(f)] = true
		if anyOf == nil {
			anyOf = f
		} else {
			anyOf = &Binary{Op: OpOr, L: anyOf, R: f, Typ: Bool}
		}
	}
	out.Filters = []Expr{anyOf}
	return out
}

// exprText is e's text, "" for nil.
func exprText(e Expr) string {
	if e == nil {
		return ""
	}
	return e.String()
}
