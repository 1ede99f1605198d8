package sql

import (
	"fmt"
	"slices"

	pg "github.com/pganalyze/pg_query_go/v6"

	"sluice/plan"
)

// selectStmt binds a SELECT, VALUES or set operation. outer is the
// enclosing query's scope (for correlated subqueries), nil at top level.
func (b *binder) selectStmt(sel *pg.SelectStmt, outer *scope) (relation, error) {
	if sel.WithClause != nil {
		saved := b.ctes
		defer func() { b.ctes = saved }()
		for _, n := range sel.WithClause.Ctes {
			cte := n.GetCommonTableExpr()
			q := cte.GetCtequery().GetSelectStmt()
			if q == nil {
				return relation{}, b.errAt("bind", cte.GetLocation(), "WITH query %q must be a SELECT", cte.GetCtename())
			}
			def := &cteDef{name: cte.Ctename, query: q, aliases: stringList(cte.Aliascolnames), visible: slices.Clip(b.ctes), recursive: sel.WithClause.Recursive}
			b.ctes = append(slices.Clip(b.ctes), def)
		}
	}
	if sel.IntoClause != nil || len(sel.LockingClause) > 0 {
		return relation{}, &Error{Kind: "bind", Msg: "SELECT INTO and locking clauses are not supported"}
	}
	if len(sel.WindowClause) > 0 && (sel.Op != pg.SetOperation_SETOP_NONE || len(sel.ValuesLists) > 0) {
		return relation{}, &Error{Kind: "bind", Msg: "WINDOW is only allowed in a plain SELECT"}
	}
	switch sel.Op {
	case pg.SetOperation_SETOP_UNION:
		r, err := b.union(sel, outer)
		if err != nil {
			return relation{}, err
		}
		return b.orderLimitOutput(r, sel, outer)
	case pg.SetOperation_SETOP_INTERSECT, pg.SetOperation_SETOP_EXCEPT:
		r, err := b.intersectExcept(sel, outer)
		if err != nil {
			return relation{}, err
		}
		return b.orderLimitOutput(r, sel, outer)
	}
	if len(sel.ValuesLists) > 0 {
		r, err := b.values(sel.ValuesLists, outer)
		if err != nil {
			return relation{}, err
		}
		return b.orderLimitOutput(r, sel, outer)
	}
	return b.simpleSelect(sel, outer)
}

// item is one select-list entry.
type item struct {
	ast  *pg.Node // nil for columns expanded from *
	expr plan.Expr
	name string
	loc  int32
}

// sortSpec is one ORDER BY key, resolved either to a select item or to an
// extra expression.
type sortSpec struct {
	item       int // index into items, or -1
	expr       plan.Expr
	desc       bool
	nullsFirst bool
}

func (b *binder) simpleSelect(sel *pg.SelectStmt, outer *scope) (relation, error) {
	node, sc, err := b.from(sel.FromClause, outer)
	if err != nil {
		return relation{}, err
	}
	if sel.WhereClause != nil {
		pred, err := b.boolExpr(sel.WhereClause, ectx{sc: sc, clause: "WHERE"})
		if err != nil {
			return relation{}, err
		}
		node = &plan.Filter{Input: node, Pred: pred}
	}
	items, err := b.expandTargets(sel.TargetList, sc)
	if err != nil {
		return relation{}, err
	}
	agg := &aggState{in: node.Schema(), byKey: map[string]int{}}
	win, err := newWinState(sel.WindowClause)
	if err != nil {
		return relation{}, err
	}

	// GROUP BY: input columns first, then select-list aliases and positions.
	var groups []plan.Expr
	var sets [][]int
	if b.isGroupAll(sel.GroupClause) {
		groups, err = b.groupAll(items, sc, node.Schema(), sel.WindowClause)
	} else {
		groups, sets, err = b.groupBy(sel.GroupClause, items, sc)
	}
	if err != nil {
		return relation{}, err
	}
	agg.groups = groups
	if sets != nil {
		agg.sets = &groupingSets{sets: sets, gid: plan.Column{ID: b.ids.Next(), Name: "grouping_id", Type: plan.Int64}}
	}

	srf := &srfState{}
	ec := ectx{sc: sc, agg: agg, win: win, srf: srf, clause: "SELECT"}
	for i := range items {
		if items[i].expr != nil {
			continue
		}
		if items[i].expr, err = b.expr(items[i].ast, ec); err != nil {
			return relation{}, err
		}
	}
	var having plan.Expr
	if sel.HavingClause != nil {
		if having, err = b.boolExpr(sel.HavingClause, ectx{sc: sc, agg: agg, clause: "HAVING"}); err != nil {
			return relation{}, err
		}
	}
	orderScope, aliases := b.aliasScope(sc, items)
	sorts, err := b.sortSpecs(sel.SortClause, items, ectx{sc: orderScope, agg: agg, win: win, clause: "ORDER BY"})
	if err != nil {
		return relation{}, err
	}
	unalias := func(e plan.Expr) plan.Expr {
		if e == nil || len(aliases) == 0 {
			return e
		}
		return plan.Transform(e, func(x plan.Expr) plan.Expr {
			if r, ok := x.(*plan.ColRef); ok {
				if e, ok := aliases[r.ID]; ok {
					return e
				}
			}
			return x
		})
	}
	for i := range sorts {
		sorts[i].expr = unalias(sorts[i].expr)
	}
	// QUALIFY (DuckDB) filters on window results; like ORDER BY it may
	// name select-list aliases.
	var qualify plan.Expr
	if q := b.qualifyOf(sel); q != nil {
		if qualify, err = b.boolExpr(q.cond, ectx{sc: orderScope, agg: agg, win: win, clause: "QUALIFY"}); err != nil {
			return relation{}, err
		}
		qualify = unalias(qualify)
	}

	if len(sel.GroupClause) > 0 || len(agg.calls) > 0 || having != nil {
		node, err = b.aggregate(node, groups, agg, win, srf, items, &having, &qualify, sorts)
		if err != nil {
			return relation{}, err
		}
		if having != nil {
			node = &plan.Filter{Input: node, Pred: having}
		}
	}
	// Window functions see the rows after grouping and HAVING, and come
	// before DISTINCT, ORDER BY and LIMIT.
	node = b.windowNode(win, node)
	// unnest in the select list multiplies the rows the projection sees.
	if len(srf.args) > 0 {
		node = &plan.Unnest{Input: node, Args: srf.args, Cols: srf.cols}
	}
	// QUALIFY comes after the window functions it filters on, before
	// DISTINCT, ORDER BY and LIMIT.
	if qualify != nil {
		node = &plan.Filter{Input: node, Pred: qualify}
	}

	distinct := false
	// DISTINCT ON (e, ...) keeps the first row of each group of rows equal
	// on its expressions, in ORDER BY's order: row_number() over the
	// groups, ordered by ORDER BY, equal to 1. Its expressions resolve as
	// ORDER BY keys do (output names, positions, expressions).
	var ons []sortSpec
	if len(sel.DistinctClause) > 0 {
		if len(sel.DistinctClause) > 1 || sel.DistinctClause[0].Node != nil {
			keys := make([]*pg.Node, len(sel.DistinctClause))
			for i, n := range sel.DistinctClause {
				keys[i] = &pg.Node{Node: &pg.Node_SortBy{SortBy: &pg.SortBy{Node: n, Location: -1}}}
			}
			if ons, err = b.sortSpecs(keys, items, ectx{sc: orderScope, agg: agg, win: win, clause: "DISTINCT ON"}); err != nil {
				return relation{}, err
			}
			for i := range ons {
				ons[i].expr = unalias(ons[i].expr)
			}
		} else {
			distinct = true
		}
	}

	// The select list, plus ORDER BY expressions not in it.
	exprs := make([]plan.Expr, len(items))
	names := make([]string, len(items))
	for i, it := range items {
		exprs[i], names[i] = it.expr, it.name
	}
	for _, specs := range [][]sortSpec{sorts, ons} {
		for i := range specs {
			if specs[i].item >= 0 {
				continue
			}
			for j, e := range exprs {
				if exprKey(e) == exprKey(specs[i].expr) {
					specs[i].item = j
					break
				}
			}
			if specs[i].item < 0 {
				if distinct {
					return relation{}, &Error{Kind: "bind", Msg: "for SELECT DISTINCT, ORDER BY expressions must appear in select list"}
				}
				specs[i].item = len(exprs)
				exprs = append(exprs, specs[i].expr)
				names = append(names, "?column?")
			}
		}
	}
	if len(ons) > 0 && !distinctOnLeads(ons, sorts) {
		return relation{}, b.errAt("bind", nodeLoc(sel.DistinctClause[0]), "SELECT DISTINCT ON expressions must match initial ORDER BY expressions")
	}
	proj := b.project(node, exprs, names)
	node = proj
	if distinct {
		node = distinctOf(node)
	}
	if len(ons) > 0 {
		node = b.firstOfGroups(proj, names, ons, sorts)
	}
	if len(sorts) > 0 {
		keys := make([]plan.SortKey, len(sorts))
		for i, s := range sorts {
			keys[i] = plan.SortKey{Expr: refName(proj.Cols[s.item], names[s.item]), Desc: s.desc, NullsFirst: s.nullsFirst}
		}
		node = &plan.Sort{Input: node, Keys: keys}
	}
	if node, err = b.limit(node, sel); err != nil {
		return relation{}, err
	}
	if len(exprs) > len(items) || len(ons) > 0 {
		// Drop the ORDER BY-only (and DISTINCT ON-only) columns, and
		// DISTINCT ON's row numbers.
		keep := make([]plan.Expr, len(items))
		for i := range items {
			keep[i] = refName(proj.Cols[i], names[i])
		}
		node = &plan.Project{Input: node, Exprs: keep, Cols: slices.Clone(proj.Cols[:len(items)])}
	}
	return relation{node: node, names: names[:len(items)]}, nil
}

// distinctOnLeads checks PostgreSQL's rule for DISTINCT ON: an ORDER BY
// must begin with the DISTINCT ON expressions (in any order), so that the
// row each group keeps is the first in the order asked for. Both are
// resolved to projected columns (item) by then.
func distinctOnLeads(ons, sorts []sortSpec) bool {
	if len(sorts) == 0 {
		return true
	}
	keys := map[int]bool{}
	for _, o := range ons {
		keys[o.item] = true
	}
	if len(sorts) < len(keys) {
		return false
	}
	lead := map[int]bool{}
	for _, s := range sorts[:len(keys)] {
		lead[s.item] = true
	}
	for k := range keys {
		if !lead[k] {
			return false
		}
	}
	return true
}

// firstOfGroups keeps, of proj's rows, the first of each group equal on
// the DISTINCT ON keys ons in the order of sorts: a Window numbering the
// rows of each group, and a Filter on number 1. The caller drops the
// number with the other columns the select list does not have.
func (b *binder) firstOfGroups(proj *plan.Project, names []string, ons, sorts []sortSpec) plan.Node {
	call := &plan.WindowCall{Func: plan.WinRowNumber, Frame: plan.DefaultFrame, Typ: plan.Int64}
	for _, o := range ons {
		call.PartitionBy = append(call.PartitionBy, refName(proj.Cols[o.item], names[o.item]))
	}
	for _, s := range sorts {
		if slices.ContainsFunc(ons, func(o sortSpec) bool { return o.item == s.item }) {
			continue // one value in each group
		}
		call.OrderBy = append(call.OrderBy, plan.SortKey{Expr: refName(proj.Cols[s.item], names[s.item]), Desc: s.desc, NullsFirst: s.nullsFirst})
	}
	rn := plan.Column{ID: b.ids.Next(), Name: "row_number", Type: plan.Int64}
	w := &plan.Window{Input: proj, Calls: []*plan.WindowCall{call}, Cols: plan.Schema{rn}}
	first := &plan.Binary{Op: plan.OpEq, L: rn.Ref(), R: &plan.Literal{Typ: plan.Int64, Val: int64(1)}, Typ: plan.Bool}
	return &plan.Filter{Input: w, Pred: first}
}

// aliasScope extends sc, for ORDER BY expressions, with the select-list
// output names that name no input column: ORDER BY g DESC, CASE WHEN g = 0
// THEN x END, as TPC-DS writes (PostgreSQL allows an output name only as a
// whole ORDER BY key; DuckDB and others also inside expressions). Each
// alias is a placeholder column; the returned map gives the select item's
// expression to substitute for it once bound.
func (b *binder) aliasScope(sc *scope, items []item) (*scope, map[plan.ColumnID]plan.Expr) {
	aliases := map[plan.ColumnID]plan.Expr{}
	out := &scope{cols: slices.Clone(sc.cols), parent: sc.parent}
	taken := map[string]bool{}
	for _, it := range items {
		if it.expr == nil || it.name == "" || it.name == "?column?" || taken[it.name] {
			continue
		}
		taken[it.name] = true
		if m, _ := sc.find("", it.name); len(m) > 0 {
			continue
		}
		c := plan.Column{ID: b.ids.Next(), Name: it.name, Type: it.expr.Type(), Nullable: true}
		out.cols = append(out.cols, scopeCol{name: it.name, col: c})
		aliases[c.ID] = it.expr
	}
	// An output name given twice is ambiguous: leave it unresolved.
	for _, it := range items {
		if n := 0; it.name != "" {
			for _, o := range items {
				if o.name == it.name {
					n++
				}
			}
			if n > 1 {
				out.cols = slices.DeleteFunc(out.cols, func(c scopeCol) bool {
					_, alias := aliases[c.col.ID]
					return alias && c.name == it.name
				})
			}
		}
	}
	return out, aliases
}

// refName is a ColRef to c displayed under the output name.
func refName(c plan.Column, name string) *plan.ColRef {
	return &plan.ColRef{ID: c.ID, Name: name, Typ: c.Type}
}

// distinctOf groups by every column of node (SELECT DISTINCT, UNION).
func distinctOf(node plan.Node) plan.Node {
	cols := node.Schema()
	keys := make([]plan.Expr, len(cols))
	for i, c := range cols {
		keys[i] = refName(c, c.Name)
	}
	return &plan.Aggregate{Input: node, GroupBy: keys, Cols: slices.Clone(cols)}
}

// project builds a Project; a plain column keeps its ID unless it already
// appears earlier in the same projection (IDs stay unique per schema).
func (b *binder) project(input plan.Node, exprs []plan.Expr, names []string) *plan.Project {
	in := input.Schema()
	cols := make(plan.Schema, len(exprs))
	used := map[plan.ColumnID]bool{}
	for i, e := range exprs {
		if r, ok := e.(*plan.ColRef); ok && !used[r.ID] {
			if idx := in.IndexOf(r.ID); idx >= 0 {
				c := in[idx]
				if c.Name != names[i] {
					c.Table = ""
				}
				c.Name = names[i]
				cols[i] = c
				used[r.ID] = true
				continue
			}
		}
		cols[i] = plan.Column{ID: b.ids.Next(), Name: names[i], Type: e.Type(), Nullable: nullableIn(e, in)}
		used[cols[i].ID] = true
	}
	return &plan.Project{Input: input, Exprs: exprs, Cols: cols}
}

// expandTargets turns the select list into items, expanding * and t.*.
func (b *binder) expandTargets(targets []*pg.Node, sc *scope) ([]item, error) {
	var items []item
	for _, t := range targets {
		rt := t.GetResTarget()
		if rt == nil {
			return nil, &Error{Kind: "bind", Msg: "unexpected select-list entry"}
		}
		if cr := rt.Val.GetColumnRef(); cr != nil && len(cr.Fields) > 0 && cr.Fields[len(cr.Fields)-1].GetAStar() != nil {
			table := ""
			if len(cr.Fields) > 1 {
				parts := stringList(cr.Fields[:len(cr.Fields)-1])
				table = parts[len(parts)-1]
			}
			n := 0
			var star []item
			var tables []string
			for _, c := range sc.cols {
				if (table == "" && !c.hidden) || (table != "" && c.table == table) {
					star = append(star, item{expr: &plan.ColRef{ID: c.col.ID, Name: c.name, Typ: c.col.Type}, name: c.name, loc: rt.Location})
					tables = append(tables, c.table)
					n++
				}
			}
			star, err := b.starModifiers(cr, star, tables)
			if err != nil {
				return nil, err
			}
			items = append(items, star...)
			if table != "" && n == 0 {
				return nil, b.errAt("bind", cr.Location, "missing FROM-clause entry for table %q", table)
			}
			if table == "" && len(sc.cols) == 0 {
				return nil, b.errAt("bind", cr.Location, "SELECT * with no tables specified is not valid")
			}
			continue
		}
		name := rt.Name
		if name == "" {
			name = figureName(rt.Val)
		}
		items = append(items, item{ast: rt.Val, name: name, loc: rt.Location})
	}
	return items, nil
}

// groupExpr binds one GROUP BY entry.
func (b *binder) groupExpr(g *pg.Node, items []item, sc *scope) (plan.Expr, error) {
	ec := ectx{sc: sc, clause: "GROUP BY"}
	if k, ok := intConst(g); ok {
		if k < 1 || int(k) > len(items) {
			return nil, b.errAt("bind", nodeLoc(g), "GROUP BY position %d is not in select list", k)
		}
		it := items[k-1]
		if it.ast == nil {
			return it.expr, nil
		}
		return b.expr(it.ast, ec)
	}
	if cr := g.GetColumnRef(); cr != nil && len(cr.Fields) == 1 {
		name := stringList(cr.Fields)
		if len(name) == 1 {
			if m, _ := sc.find("", name[0]); len(m) == 0 {
				for _, it := range items {
					if it.ast != nil && it.name == name[0] {
						return b.expr(it.ast, ec)
					}
				}
			}
		}
	}
	if _, ok := g.Node.(*pg.Node_GroupingSet); ok {
		return nil, b.errAt("bind", nodeLoc(g), "grouping sets cannot be nested here")
	}
	return b.expr(g, ec)
}

// sortSpecs resolves ORDER BY: positions and output names refer to select
// items; anything else is an expression over the input.
func (b *binder) sortSpecs(clause []*pg.Node, items []item, ec ectx) ([]sortSpec, error) {
	if all, ok := b.orderAll(clause, items); ok {
		return all, nil
	}
	var out []sortSpec
	for _, n := range clause {
		sb := n.GetSortBy()
		if sb == nil {
			return nil, &Error{Kind: "bind", Msg: "unexpected ORDER BY entry"}
		}
		s, err := b.sortDir(sb)
		if err != nil {
			return nil, err
		}
		if k, ok := intConst(sb.Node); ok {
			if k < 1 || int(k) > len(items) {
				return nil, b.errAt("bind", nodeLoc(sb.Node), "ORDER BY position %d is not in select list", k)
			}
			s.item = int(k - 1)
		} else if cr := sb.Node.GetColumnRef(); cr != nil && len(cr.Fields) == 1 && cr.Fields[0].GetString_() != nil {
			name := cr.Fields[0].GetString_().Sval
			for i, it := range items {
				if it.name == name {
					s.item = i
					break
				}
			}
		}
		if s.item < 0 {
			e, err := b.expr(sb.Node, ec)
			if err != nil {
				return nil, err
			}
			s.expr = e
		}
		out = append(out, s)
	}
	return out, nil
}

// sortDir is the direction and NULLs placement of one ORDER BY key.
func (b *binder) sortDir(sb *pg.SortBy) (sortSpec, error) {
	s := sortSpec{item: -1}
	switch sb.SortbyDir {
	case pg.SortByDir_SORTBY_DESC:
		s.desc = true
	case pg.SortByDir_SORTBY_USING:
		return s, b.errAt("bind", sb.Location, "ORDER BY USING is not supported")
	}
	switch sb.SortbyNulls {
	case pg.SortByNulls_SORTBY_NULLS_FIRST:
		s.nullsFirst = true
	case pg.SortByNulls_SORTBY_NULLS_LAST:
		s.nullsFirst = false
	default:
		s.nullsFirst = s.desc // PostgreSQL: NULLs sort as larger than any value
	}
	return s, nil
}

// limit adds LIMIT/OFFSET (constant integers) above node.
func (b *binder) limit(node plan.Node, sel *pg.SelectStmt) (plan.Node, error) {
	if sel.LimitOption == pg.LimitOption_LIMIT_OPTION_WITH_TIES {
		return nil, &Error{Kind: "bind", Msg: "FETCH ... WITH TIES is not supported"}
	}
	if sel.LimitCount == nil && sel.LimitOffset == nil {
		return node, nil
	}
	count, err := b.constInt(sel.LimitCount, "LIMIT", -1)
	if err != nil {
		return nil, err
	}
	offset, err := b.constInt(sel.LimitOffset, "OFFSET", 0)
	if err != nil {
		return nil, err
	}
	return &plan.Limit{Input: node, Offset: offset, Count: count}, nil
}

// constInt evaluates a LIMIT/OFFSET argument; NULL or absent gives def.
func (b *binder) constInt(n *pg.Node, clause string, def int64) (int64, error) {
	if n == nil {
		return def, nil
	}
	e, err := b.expr(n, ectx{sc: &scope{}, clause: clause})
	if err != nil {
		return 0, err
	}
	lit, ok := e.(*plan.Literal)
	if !ok {
		return 0, b.errAt("bind", nodeLoc(n), "%s must be a constant integer", clause)
	}
	switch v := lit.Val.(type) {
	case nil:
		return def, nil
	case int64:
		if v < 0 {
			return 0, b.errAt("bind", nodeLoc(n), "%s must not be negative", clause)
		}
		return v, nil
	}
	return 0, b.errAt("bind", nodeLoc(n), "%s must be a constant integer", clause)
}

// orderLimitOutput applies ORDER BY and LIMIT of a VALUES list or set
// operation, whose keys can only name output columns.
func (b *binder) orderLimitOutput(r relation, sel *pg.SelectStmt, outer *scope) (relation, error) {
	node := r.node
	if len(sel.SortClause) > 0 {
		schema := node.Schema()
		items := make([]item, len(r.names))
		for i, c := range schema {
			items[i] = item{expr: refName(c, r.names[i]), name: r.names[i]}
		}
		sc := &scope{cols: relationScope(r, ""), parent: outer}
		specs, err := b.sortSpecs(sel.SortClause, items, ectx{sc: sc, clause: "ORDER BY"})
		if err != nil {
			return relation{}, err
		}
		keys := make([]plan.SortKey, len(specs))
		for i, s := range specs {
			e := s.expr
			if s.item >= 0 {
				e = items[s.item].expr
			} else if ref, ok := e.(*plan.ColRef); !ok || schema.IndexOf(ref.ID) < 0 {
				return relation{}, &Error{Kind: "bind", Msg: "ORDER BY of a UNION or VALUES must name output columns"}
			}
			keys[i] = plan.SortKey{Expr: e, Desc: s.desc, NullsFirst: s.nullsFirst}
		}
		node = &plan.Sort{Input: node, Keys: keys}
	}
	node, err := b.limit(node, sel)
	if err != nil {
		return relation{}, err
	}
	return relation{node: node, names: r.names}, nil
}

// union binds UNION [ALL]: inputs are cast to common column types.
func (b *binder) union(sel *pg.SelectStmt, outer *scope) (relation, error) {
	l, r, types, err := b.setOperands(sel, outer, "UNION")
	if err != nil {
		return relation{}, err
	}
	// A chain of UNION ALLs becomes one union of all its inputs (the parser
	// nests them two by two): one operator, whose inputs share the
	// partitions, instead of a ladder of unions each halving them.
	var inputs []plan.Node
	for _, side := range []relation{l, r} {
		if inner, ok := side.node.(*plan.Union); ok {
			for _, in := range inner.Inputs {
				inputs = append(inputs, b.castTo(relation{node: in, names: side.names}, types))
			}
			continue
		}
		inputs = append(inputs, b.castTo(side, types))
	}
	u := &plan.Union{Inputs: inputs, Cols: types}
	var node plan.Node = u
	if !sel.All {
		node = distinctOf(u)
	}
	return relation{node: node, names: l.names}, nil
}

// setOperands binds both sides of a set operation (op names it in errors)
// and unifies their column types: the output columns, fresh, with the
// common type of each position and the left side's names.
func (b *binder) setOperands(sel *pg.SelectStmt, outer *scope, op string) (l, r relation, types []plan.Column, err error) {
	if l, err = b.selectStmt(sel.Larg, outer); err != nil {
		return
	}
	if r, err = b.selectStmt(sel.Rarg, outer); err != nil {
		return
	}
	ls, rs := l.node.Schema(), r.node.Schema()
	if len(ls) != len(rs) {
		err = &Error{Kind: "bind", Msg: fmt.Sprintf("each %s query must have the same number of columns (%d vs %d)", op, len(ls), len(rs))}
		return
	}
	types = make([]plan.Column, len(ls))
	for i := range ls {
		t, ok := plan.CommonType(ls[i].Type, rs[i].Type)
		if !ok {
			err = &Error{Kind: "type", Msg: fmt.Sprintf("%s types %s and %s cannot be matched", op, plan.TypeName(ls[i].Type), plan.TypeName(rs[i].Type))}
			return
		}
		types[i] = plan.Column{ID: b.ids.Next(), Name: l.names[i], Type: t, Nullable: ls[i].Nullable || rs[i].Nullable}
	}
	return l, r, types, nil
}

// intersectExcept binds INTERSECT / EXCEPT [ALL]: a SetOp over both inputs
// cast to common column types. The parser already nests them by precedence
// (INTERSECT binds tighter than UNION and EXCEPT).
func (b *binder) intersectExcept(sel *pg.SelectStmt, outer *scope) (relation, error) {
	kind, op := plan.SetIntersect, "INTERSECT"
	if sel.Op == pg.SetOperation_SETOP_EXCEPT {
		kind, op = plan.SetExcept, "EXCEPT"
	}
	l, r, types, err := b.setOperands(sel, outer, op)
	if err != nil {
		return relation{}, err
	}
	n := &plan.SetOp{Kind: kind, All: sel.All, Left: b.castTo(l, types), Right: b.castTo(r, types), Cols: types}
	return relation{node: n, names: l.names}, nil
}

// castTo wraps r in a Project casting columns whose type differs from want.
func (b *binder) castTo(r relation, want []plan.Column) plan.Node {
	schema := r.node.Schema()
	need := false
	exprs := make([]plan.Expr, len(schema))
	for i, c := range schema {
		exprs[i] = refName(c, r.names[i])
		if !typeEq(c.Type, want[i].Type) {
			exprs[i] = castExpr(exprs[i], want[i].Type)
			need = true
		}
	}
	if !need {
		return r.node
	}
	return b.project(r.node, exprs, r.names)
}

// values binds a VALUES list; column types are the common type per column.
func (b *binder) values(lists []*pg.Node, outer *scope) (relation, error) {
	ec := ectx{sc: &scope{parent: outer}, clause: "VALUES"}
	var rows [][]plan.Expr
	for _, l := range lists {
		items := l.GetList().GetItems()
		if len(rows) > 0 && len(items) != len(rows[0]) {
			return relation{}, b.errAt("bind", nodeLoc(items[0]), "VALUES lists must all be the same length")
		}
		row := make([]plan.Expr, len(items))
		for i, it := range items {
			e, err := b.expr(it, ec)
			if err != nil {
				return relation{}, err
			}
			row[i] = e
		}
		rows = append(rows, row)
	}
	ncol := len(rows[0])
	cols := make(plan.Schema, ncol)
	names := make([]string, ncol)
	for c := 0; c < ncol; c++ {
		exprs := make([]plan.Expr, len(rows))
		for r := range rows {
			exprs[r] = rows[r][c]
		}
		t, err := b.commonType(exprs, "VALUES")
		if err != nil {
			return relation{}, err
		}
		nullable := false
		for r := range rows {
			rows[r][c] = coerce(rows[r][c], t)
			nullable = nullable || nullableIn(rows[r][c], nil)
		}
		names[c] = fmt.Sprintf("column%d", c+1)
		cols[c] = plan.Column{ID: b.ids.Next(), Name: names[c], Type: t, Nullable: nullable}
	}
	return relation{node: &plan.Values{Rows: rows, Cols: cols}, names: names}, nil
}
