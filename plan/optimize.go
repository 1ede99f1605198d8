package plan

import (
	"fmt"
	"slices"
)

// Rule is one logical rewrite. Apply returns the rewritten plan, or an error
// when the plan has a shape the rule must handle but cannot (for example a
// correlated subquery it cannot decorrelate).
type Rule struct {
	Name  string
	Apply func(n Node, ctx *OptContext) (Node, error)
}

// OptContext is the per-query state rules share.
type OptContext struct {
	// IDs hands out fresh column IDs (the binder's generator, so new IDs
	// never collide with bound ones).
	IDs *IDGen
}

// DefaultRules returns the optimizer's rules in the order Optimize runs them.
// Decorrelation comes first so later rules never see a Subquery; folding
// precedes pushdown so constant conjuncts vanish before they are pushed;
// eager aggregation needs the join conditions pushdown places and leaves
// the join order to the reordering after it; DISTINCT aggregates are split
// after every rule that reshapes an aggregate; pruning is last because every
// earlier rule may still need any column.
func DefaultRules() []Rule {
	return []Rule{
		{Name: "decorrelate", Apply: Decorrelate},
		{Name: "fold", Apply: FoldConstants},
		{Name: "factor-or", Apply: FactorDisjunctions},
		{Name: "pushdown", Apply: PushDownPredicates},
		// Pushdown substitutes Project definitions into predicates, which
		// can expose new constants.
		{Name: "fold-again", Apply: FoldConstants},
		{Name: "semi-joins-down", Apply: PushDownSemiJoins},
		{Name: "pre-aggregate-grouping-sets", Apply: PreAggregateGroupingSets},
		{Name: "eager-aggregate", Apply: EagerAggregate},
		{Name: "merge-global-aggregates", Apply: MergeGlobalAggregates},
		{Name: "reorder-joins", Apply: ReorderJoins},
		{Name: "build-side", Apply: ChooseBuildSide},
		{Name: "reduce-aggregates", Apply: ReduceAggregates},
		{Name: "split-distinct-aggregates", Apply: SplitDistinctAggregates},
		{Name: "compute-keys-below-joins", Apply: ComputeKeysBelowJoins},
		{Name: "prune", Apply: PruneColumns},
	}
}

// Optimize runs DefaultRules over n in order. The result has the same output
// columns as n, in the same order, and contains no Subquery expressions.
func Optimize(n Node, ids *IDGen) (Node, error) {
	ctx := &OptContext{IDs: ids}
	for _, r := range DefaultRules() {
		out, err := r.Apply(n, ctx)
		if err != nil {
			return nil, fmt.Errorf("optimizer rule %s: %w", r.Name, err)
		}
		n = out
	}
	if planHasSubquery(n) {
		return nil, fmt.Errorf("optimizer: a subquery survived decorrelation")
	}
	return n, nil
}

// transformUpErr is TransformUp with a fallible rewrite.
func transformUpErr(n Node, f func(Node) (Node, error)) (Node, error) {
	kids := n.Children()
	if len(kids) > 0 {
		nk := make([]Node, len(kids))
		changed := false
		for i, k := range kids {
			c, err := transformUpErr(k, f)
			if err != nil {
				return nil, err
			}
			nk[i] = c
			changed = changed || c != k
		}
		if changed {
			n = n.WithChildren(nk)
		}
	}
	return f(n)
}

// withExprs returns a copy of n holding es in place of Exprs(n) (same order
// and count as Exprs returns them).
func withExprs(n Node, es []Expr) Node {
	switch x := n.(type) {
	case *Scan:
		o := *x
		o.Filters = append([]Expr(nil), es...)
		return &o
	case *Filter:
		o := *x
		o.Pred = es[0]
		return &o
	case *Project:
		o := *x
		o.Exprs = append([]Expr(nil), es...)
		return &o
	case *Aggregate:
		o := *x
		o.GroupBy = append([]Expr(nil), es[:len(x.GroupBy)]...)
		o.Aggs = make([]*AggCall, len(x.Aggs))
		for i := range x.Aggs {
			o.Aggs[i] = es[len(x.GroupBy)+i].(*AggCall)
		}
		return &o
	case *Expand:
		o := *x
		o.Keys = append([]Expr(nil), es...)
		return &o
	case *Join:
		o := *x
		if x.Cond != nil {
			o.Cond = es[0]
		}
		return &o
	case *Sort:
		o := *x
		o.Keys = append([]SortKey(nil), x.Keys...)
		for i := range o.Keys {
			o.Keys[i].Expr = es[i]
		}
		return &o
	case *Window:
		o := *x
		o.Calls = make([]*WindowCall, len(x.Calls))
		for i := range x.Calls {
			o.Calls[i] = es[i].(*WindowCall)
		}
		return &o
	case *Values:
		o := *x
		o.Rows = make([][]Expr, len(x.Rows))
		k := 0
		for i, r := range x.Rows {
			o.Rows[i] = append([]Expr(nil), es[k:k+len(r)]...)
			k += len(r)
		}
		return &o
	case *GenerateSeries:
		o := *x
		o.Start, o.Stop, o.Step = es[0], es[1], es[2]
		return &o
	case *Unnest:
		o := *x
		o.Args = append([]Expr(nil), es...)
		return &o
	}
	return n
}

// mapExprs applies f to every expression n holds directly.
func mapExprs(n Node, f func(Expr) Expr) Node {
	es := Exprs(n)
	if len(es) == 0 {
		return n
	}
	out := make([]Expr, len(es))
	changed := false
	for i, e := range es {
		out[i] = f(e)
		changed = changed || out[i] != e
	}
	if !changed {
		return n
	}
	return withExprs(n, out)
}

// hasSubquery reports whether e contains a Subquery.
func hasSubquery(e Expr) bool {
	found := false
	Walk(e, func(x Expr) bool {
		if _, ok := x.(*Subquery); ok {
			found = true
		}
		return !found
	})
	return found
}

// planHasSubquery reports whether any expression in the plan tree holds a
// Subquery.
func planHasSubquery(n Node) bool {
	for _, e := range Exprs(n) {
		if hasSubquery(e) {
			return true
		}
	}
	for _, c := range n.Children() {
		if planHasSubquery(c) {
			return true
		}
	}
	return false
}

// exprCols is ColumnsOf plus the columns that subquery plans inside e refer
// to from outside themselves (their correlation columns).
func exprCols(e Expr) ColumnSet {
	s := ColumnsOf(e)
	Walk(e, func(x Expr) bool {
		if sq, ok := x.(*Subquery); ok {
			for id := range outerRefs(sq.Plan) {
				s[id] = struct{}{}
			}
		}
		return true
	})
	return s
}

// planRefs collects every column referenced and every column produced
// anywhere in the plan, subquery plans included.
func planRefs(n Node, refs, produced ColumnSet) {
	for _, c := range n.Schema() {
		produced[c.ID] = struct{}{}
	}
	if a, ok := n.(*Aggregate); ok {
		for _, c := range a.Cols {
			produced[c.ID] = struct{}{}
		}
	}
	for _, e := range Exprs(n) {
		Walk(e, func(x Expr) bool {
			switch x := x.(type) {
			case *ColRef:
				refs[x.ID] = struct{}{}
			case *Subquery:
				planRefs(x.Plan, refs, produced)
			}
			return true
		})
	}
	for _, c := range n.Children() {
		planRefs(c, refs, produced)
	}
}

// producedCols returns every column ID some node in the plan produces.
func producedCols(n Node) ColumnSet {
	refs, prod := ColumnSet{}, ColumnSet{}
	planRefs(n, refs, prod)
	return prod
}

// outerRefs returns the columns the plan refers to but does not produce: its
// correlation with enclosing queries. Empty means uncorrelated.
func outerRefs(n Node) ColumnSet {
	refs, prod := ColumnSet{}, ColumnSet{}
	planRefs(n, refs, prod)
	out := ColumnSet{}
	for id := range refs {
		if !prod.Has(id) {
			out[id] = struct{}{}
		}
	}
	return out
}

// intersects reports whether s and o share a member.
func intersects(s, o ColumnSet) bool {
	for id := range s {
		if o.Has(id) {
			return true
		}
	}
	return false
}

// sameSchema reports whether a and b list the same column IDs in order.
func sameSchema(a, b Schema) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].ID != b[i].ID {
			return false
		}
	}
	return true
}

// restoreSchema wraps n in a pass-through Project producing want (a subset
// of n's columns, by ID) in want's order, unless n already produces exactly
// that. Rules use it when they change a node's column order, so positional
// parents (the root, Union) still see what they expect; PruneColumns drops
// such Projects again where the parent is indifferent to order.
func restoreSchema(n Node, want Schema) Node {
	if sameSchema(n.Schema(), want) {
		return n
	}
	return passThrough(n, want)
}

// passThrough returns a Project over in that passes cols (columns of in)
// through unchanged, in cols' order; rules append computed columns to it
// with add.
func passThrough(in Node, cols Schema) *Project {
	p := &Project{Input: in, Exprs: make([]Expr, len(cols), len(cols)+1), Cols: make(Schema, len(cols), len(cols)+1)}
	for i, c := range cols {
		p.Exprs[i], p.Cols[i] = c.Ref(), c
	}
	return p
}

// add appends column c, computed by e, to p's output.
func (p *Project) add(e Expr, c Column) {
	p.Exprs, p.Cols = append(p.Exprs, e), append(p.Cols, c)
}

// filterOver puts the conjuncts in a Filter over n; n itself if there are none.
func filterOver(n Node, conj []Expr) Node {
	if len(conj) == 0 {
		return n
	}
	return &Filter{Input: n, Pred: Conjunction(conj)}
}

// substitute replaces ColRefs whose ID is in defs by the definition.
func substitute(e Expr, defs map[ColumnID]Expr) Expr {
	return Transform(e, func(x Expr) Expr {
		if c, ok := x.(*ColRef); ok {
			if d, ok := defs[c.ID]; ok {
				return d
			}
		}
		return x
	})
}

// sortedIDs lists s in increasing order, for deterministic output.
func sortedIDs(s ColumnSet) []ColumnID {
	out := make([]ColumnID, 0, len(s))
	for id := range s {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}
