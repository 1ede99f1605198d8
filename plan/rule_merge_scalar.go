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
// Every aggregate that was there is replaced by a projection of the merged
// aggregate's columns for it. The merged aggregate is built afresh (new
// column IDs) in each place, so the plan's IDs stay unique, and is the
// same subtree in each, so the physical planners compute it once (shared
// subtrees in process, one shared stage on a cluster).
//
// It applies to COUNT, COUNT(*), SUM, AVG, MIN and MAX without DISTINCT or
// ORDER BY, whose results ignore the rows a NULL argument stands for (COUNT
// of a CASE counts only where it holds, and is 0 over no such row, as
// COUNT(*) over no row is); the aggregates' inputs are inner joins of scans
// only. Run it after predicate pushdown, which puts the filters into the
// scans and the join conditions into the joins.
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
	for _, key := range order {
		as := groups[key]
		if len(as) < 2 {
			continue
		}
		for _, a := range as {
			replace[a] = mergedFor(as, a, ctx)
		}
	}
	if len(replace) == 0 {
		return n, nil
	}
	return TransformUp(n, func(n Node) Node {
		if a, ok := n.(*Aggregate); ok {
			if r, ok := replace[a]; ok {
				return r
			}
		}
		return n
	}), nil
}

// mergeKey is the shape of a's input with the scans' filters and columns
// left out: aggregates with the same key can be merged. ok is false for an
// aggregate the rule does not take.
func mergeKey(a *Aggregate) (string, bool) {
	if len(a.GroupBy) > 0 || len(a.GrandTotals) > 0 || len(a.Aggs) == 0 {
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
	}
	return false
}

// mergedFor builds the merged aggregate of as, with fresh column IDs, and
// the projection of it that stands for a. It returns a unchanged when the
// inputs turn out not to line up (same names, different tables or
// conditions).
func mergedFor(as []*Aggregate, a *Aggregate, ctx *OptContext) Node {
	m := &merger{ids: ctx.IDs, maps: make([]map[ColumnID]Expr, len(as)), conds: make([][]Expr, len(as))}
	for i := range as {
		m.maps[i] = map[ColumnID]Expr{}
	}
	inputs := make([]Node, len(as))
	for i, x := range as {
		inputs[i] = x.Input
	}
	in, ok := m.merge(inputs)
	if !ok {
		return a
	}
	agg := &Aggregate{Input: in, Whole: true}
	byText := map[string]Column{}
	var mine []Column
	for i, x := range as {
		cond := Conjunction(m.conds[i])
		for j, f := range x.Aggs {
			g := &AggCall{Func: f.Func, Typ: f.Typ}
			if f.Arg != nil {
				g.Arg = substitute(f.Arg, m.maps[i])
			}
			if cond != nil {
				if g.Func == AggCountStar {
					g.Func, g.Arg = AggCount, &Literal{Typ: Int64, Val: int64(1)}
				}
				g.Arg = &Case{Whens: []When{{Cond: cond, Then: g.Arg}}, Typ: g.Arg.Type()}
			}
			out, ok := byText[g.String()]
			if !ok {
				out = Column{ID: m.ids.Next(), Name: x.Cols[j].Name, Type: f.Typ, Nullable: true}
				byText[g.String()] = out
				agg.Aggs = append(agg.Aggs, g)
				agg.Cols = append(agg.Cols, out)
			}
			if x == a {
				mine = append(mine, out)
			}
		}
	}
	p := &Project{Input: agg, Cols: slices.Clone(a.Cols)}
	for _, c := range mine {
		p.Exprs = append(p.Exprs, c.Ref())
	}
	return p
}

// merger merges inputs of the same shape: maps[i] takes input i's columns
// to the merged ones, conds[i] collects the filters only input i has.
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
		var cond Expr
		for i, n := range ns {
			c := n.(*Join).Cond
			if c != nil {
				c = substitute(c, m.maps[i])
			}
			if i == 0 {
				cond = c
			} else if exprText(c) != exprText(cond) {
				return nil, false
			}
		}
		return &Join{Kind: first.Kind, Left: l, Right: r, Cond: cond}, true
	}
	return nil, false
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
