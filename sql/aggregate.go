package sql

import (
	"fmt"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"sluice/plan"
)

// aggState collects the aggregate calls of one query level while its
// select list, HAVING and ORDER BY are bound. Each distinct call gets one
// output column; the bound expression refers to it with a ColRef.
type aggState struct {
	in    plan.Schema // the Aggregate's input columns
	calls []*plan.AggCall
	cols  []plan.Column
	byKey map[string]int
	// groups are the GROUP BY expressions, sets the grouping sets over
	// them (nil for a plain GROUP BY); grouping() reads both.
	groups []plan.Expr
	sets   *groupingSets
}

// add registers call (deduplicated) and returns a reference to its output.
func (a *aggState) add(ids *plan.IDGen, call *plan.AggCall, name string) *plan.ColRef {
	k := exprKey(call)
	i, ok := a.byKey[k]
	if !ok {
		i = len(a.calls)
		a.byKey[k] = i
		a.calls = append(a.calls, call)
		a.cols = append(a.cols, plan.Column{ID: ids.Next(), Name: name, Type: call.Typ,
			Nullable: aggNullable(call.Func)})
	}
	return &plan.ColRef{ID: a.cols[i].ID, Name: call.String(), Typ: call.Typ}
}

// aggregate builds the Aggregate node and rewrites the select items,
// HAVING, QUALIFY and ORDER BY expressions to refer to its outputs. A group key that
// is a plain column keeps its ID; computed keys get fresh ones.
//
// With grouping sets the aggregate reads an Expand of the input: every key
// gets a fresh column (NULL in the sets without it), and the grouping id is
// the last group key.
func (b *binder) aggregate(input plan.Node, groups []plan.Expr, agg *aggState, win *winState, srf *srfState, items []item, having, qualify *plan.Expr, sorts []sortSpec) (plan.Node, error) {
	in := input.Schema()
	cols := make(plan.Schema, 0, len(groups)+1+len(agg.calls))
	repl := map[string]plan.Expr{}
	allowed := plan.ColumnSet{}
	var expand *plan.Expand
	if agg.sets != nil {
		expand = &plan.Expand{Input: input, Keys: groups, Sets: agg.sets.sets}
	}
	for i, g := range groups {
		var c plan.Column
		if r, ok := g.(*plan.ColRef); ok && in.IndexOf(r.ID) >= 0 {
			c = in[in.IndexOf(r.ID)]
		} else {
			c = plan.Column{ID: b.ids.Next(), Name: "?column?", Type: g.Type(), Nullable: nullableIn(g, in)}
		}
		if expand != nil {
			c.ID = b.ids.Next()
			c.Nullable = c.Nullable || !inEverySet(agg.sets.sets, i)
			expand.Cols = append(expand.Cols, c)
		}
		cols = append(cols, c)
		allowed[c.ID] = struct{}{}
		repl[exprKey(g)] = &plan.ColRef{ID: c.ID, Name: g.String(), Typ: c.Type}
	}
	groupBy := groups
	var grandTotals []int64
	if expand != nil {
		expand.Cols = append(expand.Cols, agg.sets.gid)
		cols = append(cols, agg.sets.gid)
		allowed[agg.sets.gid.ID] = struct{}{}
		groupBy = make([]plan.Expr, len(cols))
		for i, c := range cols {
			groupBy[i] = c.Ref()
		}
		for id, s := range agg.sets.sets {
			if len(s) == 0 {
				grandTotals = append(grandTotals, int64(id))
			}
		}
		input = expand
	}
	for _, c := range agg.cols {
		cols = append(cols, c)
		allowed[c.ID] = struct{}{}
	}
	inIDs := in.IDs()
	fix := func(e plan.Expr, what string) (plan.Expr, error) {
		e = replaceKeys(e, repl)
		var bad *plan.ColRef
		plan.Walk(e, func(x plan.Expr) bool {
			if r, ok := x.(*plan.ColRef); ok && bad == nil && inIDs.Has(r.ID) && !allowed.Has(r.ID) {
				bad = r
			}
			return bad == nil
		})
		if bad != nil {
			return nil, &Error{Kind: "bind", Msg: fmt.Sprintf("column %q must appear in the GROUP BY clause or be used in an aggregate function", bad.Name), Near: bad.Name,
				Hint: "in " + what}
		}
		return e, nil
	}
	var err error
	for i := range items {
		if items[i].expr, err = fix(items[i].expr, "the select list"); err != nil {
			if e, ok := err.(*Error); ok && items[i].ast != nil {
				e.Line, e.Column, _ = b.at(items[i].loc)
			}
			return nil, err
		}
	}
	if *having != nil {
		if *having, err = fix(*having, "HAVING"); err != nil {
			return nil, err
		}
	}
	if *qualify != nil {
		if *qualify, err = fix(*qualify, "QUALIFY"); err != nil {
			return nil, err
		}
	}
	for i := range sorts {
		if sorts[i].expr != nil {
			if sorts[i].expr, err = fix(sorts[i].expr, "ORDER BY"); err != nil {
				return nil, err
			}
		}
	}
	for i, a := range srf.args {
		if srf.args[i], err = fix(a, "unnest"); err != nil {
			return nil, err
		}
	}
	for i, c := range win.calls {
		e, err := fix(c, "a window function")
		if err != nil {
			return nil, err
		}
		win.calls[i] = e.(*plan.WindowCall)
	}
	return &plan.Aggregate{Input: input, GroupBy: groupBy, Aggs: agg.calls, Cols: cols, GrandTotals: grandTotals}, nil
}

// inEverySet reports whether key k is grouped in every set.
func inEverySet(sets [][]int, k int) bool {
	for _, s := range sets {
		if !slices.Contains(s, k) {
			return false
		}
	}
	return true
}

// aggNullable reports whether an aggregate's result may be NULL (only the
// counts never are).
func aggNullable(f plan.AggFunc) bool {
	return f != plan.AggCount && f != plan.AggCountStar
}

// replaceKeys rewrites e top-down, replacing any subtree equal to a group
// key by a reference to the key's output column.
func replaceKeys(e plan.Expr, repl map[string]plan.Expr) plan.Expr {
	if r, ok := repl[exprKey(e)]; ok {
		return r
	}
	kids := e.Children()
	if len(kids) == 0 {
		return e
	}
	nk := make([]plan.Expr, len(kids))
	changed := false
	for i, k := range kids {
		nk[i] = replaceKeys(k, repl)
		changed = changed || nk[i] != k
	}
	if !changed {
		return e
	}
	return e.WithChildren(nk)
}

// exprKey is a structural identity for expressions: equal keys mean the
// same computation over the same column IDs.
func exprKey(e plan.Expr) string {
	var b strings.Builder
	var rec func(e plan.Expr)
	rec = func(e plan.Expr) {
		switch x := e.(type) {
		case *plan.ColRef:
			fmt.Fprintf(&b, "#%d", x.ID)
			return
		case *plan.Literal:
			fmt.Fprintf(&b, "lit(%s:%s)", plan.TypeName(x.Typ), x.String())
			return
		case *plan.Binary:
			fmt.Fprintf(&b, "bin%d", x.Op)
		case *plan.Cast:
			fmt.Fprintf(&b, "cast:%s:%v", plan.TypeName(x.To), x.Try)
		case *plan.Func:
			fmt.Fprintf(&b, "fn:%s", x.Name)
		case *plan.Like:
			fmt.Fprintf(&b, "like:%v", x.Negated)
		case *plan.InList:
			fmt.Fprintf(&b, "in:%v", x.Negated)
		case *plan.IsNull:
			fmt.Fprintf(&b, "isnull:%v", x.Negated)
		case *plan.DistinctFrom:
			fmt.Fprintf(&b, "distinct:%v", x.Negated)
		case *plan.Case:
			fmt.Fprintf(&b, "case:%d:%v", len(x.Whens), x.Else != nil)
		case *plan.AggCall:
			fmt.Fprintf(&b, "agg:%d:%v", x.Func, x.Distinct)
			for _, k := range x.OrderBy {
				fmt.Fprintf(&b, ":%v/%v", k.Desc, k.NullsFirst)
			}
		case *plan.WindowCall:
			fmt.Fprintf(&b, "win:%d:%d:%d:%d:%s:", x.Func, x.Agg, len(x.Args), len(x.PartitionBy), x.Frame)
			for _, k := range x.OrderBy {
				fmt.Fprintf(&b, "%v%v", k.Desc, k.NullsFirst)
			}
		case *plan.Subquery:
			fmt.Fprintf(&b, "subq:%p", x.Plan)
		default:
			fmt.Fprintf(&b, "%T", e)
		}
		b.WriteByte('(')
		for _, c := range e.Children() {
			rec(c)
			b.WriteByte(',')
		}
		b.WriteByte(')')
	}
	rec(e)
	return b.String()
}

// nullableIn reports whether e may be NULL given its input schema.
// Columns not in the schema (outer references) count as nullable.
func nullableIn(e plan.Expr, in plan.Schema) bool {
	switch x := e.(type) {
	case *plan.ColRef:
		i := in.IndexOf(x.ID)
		return i < 0 || in[i].Nullable
	case *plan.Literal:
		return x.Val == nil
	case *plan.IsNull, *plan.DistinctFrom:
		return false
	case *plan.AggCall:
		return aggNullable(x.Func)
	case *plan.Subquery:
		return x.Kind == plan.SubqueryScalar || x.Kind == plan.SubqueryIn
	case *plan.Case:
		if x.Else == nil {
			return true
		}
	case *plan.Func:
		switch x.Name {
		case "nullif":
			return true
		case "coalesce":
			for _, a := range x.Args {
				if !nullableIn(a, in) {
					return false
				}
			}
			return true
		}
	case *plan.Binary:
		if x.Op == plan.OpDiv || x.Op == plan.OpMod {
			return true // conservative: a zero divisor may yield NULL at run time
		}
	}
	for _, c := range e.Children() {
		if nullableIn(c, in) {
			return true
		}
	}
	return false
}

// typeEq reports whether two types are identical.
func typeEq(a, b arrow.DataType) bool { return arrow.TypeEqual(a, b) }
