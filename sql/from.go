package sql

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"

	"sluice/plan"
)

// from binds a FROM list; comma-separated items become cross joins (the
// optimizer turns cross joins plus WHERE equalities into equi-joins). With
// no FROM the input is a Values of one empty row.
func (b *binder) from(items []*pg.Node, outer *scope) (plan.Node, *scope, error) {
	if len(items) == 0 {
		return &plan.Values{Rows: [][]plan.Expr{{}}}, &scope{parent: outer}, nil
	}
	var node plan.Node
	var cols []scopeCol
	for _, it := range items {
		n, c, err := b.fromItem(it, outer, cols)
		if err != nil {
			return nil, nil, err
		}
		if node == nil {
			node, cols = n, c
			continue
		}
		node = &plan.Join{Kind: plan.JoinInner, Left: node, Right: n}
		cols = append(cols, c...)
	}
	return node, &scope{cols: cols, parent: outer}, nil
}

// fromItem binds one FROM item. left are the columns of the items before
// it, which a LATERAL derived table may refer to (as correlated columns,
// which the optimizer's decorrelation turns into a join condition).
func (b *binder) fromItem(n *pg.Node, outer *scope, left []scopeCol) (plan.Node, []scopeCol, error) {
	switch n := n.Node.(type) {
	case *pg.Node_RangeVar:
		return b.rangeVar(n.RangeVar)
	case *pg.Node_RangeSubselect:
		rs := n.RangeSubselect
		sel := rs.Subquery.GetSelectStmt()
		if sel == nil {
			return nil, nil, &Error{Kind: "bind", Msg: "unsupported derived table"}
		}
		sc := outer
		if rs.Lateral && len(left) > 0 {
			sc = &scope{cols: left, parent: outer}
		}
		r, err := b.selectStmt(sel, sc)
		if err != nil {
			return nil, nil, err
		}
		qual := ""
		if rs.Alias != nil {
			qual = rs.Alias.Aliasname
			if r, err = renameColumns(r, stringList(rs.Alias.Colnames), qual); err != nil {
				return nil, nil, err
			}
		}
		return r.node, relationScope(r, qual), nil
	case *pg.Node_JoinExpr:
		return b.join(n.JoinExpr, outer, left)
	case *pg.Node_RangeFunction:
		return b.rangeFunction(n.RangeFunction)
	case *pg.Node_RangeTableSample:
		return b.tableSample(n.RangeTableSample, outer, left)
	}
	return nil, nil, &Error{Kind: "bind", Msg: fmt.Sprintf("unsupported FROM item %T", n.Node)}
}

// tableSample binds t TABLESAMPLE BERNOULLI (p) and SYSTEM (p): each row
// of t is kept with probability p percent, independently (a Filter on
// random()). PostgreSQL's SYSTEM samples pages instead; rows kept one by
// one are a sample of the same expected size. REPEATABLE is refused: the
// sample is new on every run.
func (b *binder) tableSample(ts *pg.RangeTableSample, outer *scope, left []scopeCol) (plan.Node, []scopeCol, error) {
	method := ""
	if names := stringList(ts.Method); len(names) > 0 {
		method = strings.ToLower(names[len(names)-1])
	}
	if method != "bernoulli" && method != "system" {
		return nil, nil, b.errAt("bind", ts.Location, "tablesample method %q does not exist (use BERNOULLI or SYSTEM)", method)
	}
	if ts.Repeatable != nil {
		return nil, nil, b.errAt("bind", nodeLoc(ts.Repeatable), "TABLESAMPLE ... REPEATABLE is not supported: each run draws a new sample")
	}
	if len(ts.Args) != 1 {
		return nil, nil, b.errAt("bind", ts.Location, "TABLESAMPLE %s takes one argument, the percentage of rows to keep", strings.ToUpper(method))
	}
	pe, err := b.expr(ts.Args[0], ectx{sc: &scope{}, clause: "TABLESAMPLE"})
	if err != nil {
		return nil, nil, err
	}
	var pct float64
	lit, ok := coerce(pe, plan.Float64).(*plan.Literal)
	if ok {
		pct, ok = lit.Val.(float64)
	}
	if !ok || pct < 0 || pct > 100 {
		return nil, nil, b.errAt("bind", nodeLoc(ts.Args[0]), "sample percentage must be a constant between 0 and 100")
	}
	node, cols, err := b.fromItem(ts.Relation, outer, left)
	if err != nil {
		return nil, nil, err
	}
	keep := &plan.Binary{Op: plan.OpLt, L: &plan.Func{Name: "random", Typ: plan.Float64},
		R: &plan.Literal{Typ: plan.Float64, Val: pct / 100}, Typ: plan.Bool}
	return &plan.Filter{Input: node, Pred: keep}, cols, nil
}

// renameColumns applies column aliases (t(a, b, ...)) to a relation.
func renameColumns(r relation, aliases []string, what string) (relation, error) {
	if len(aliases) == 0 {
		return r, nil
	}
	if len(aliases) > len(r.names) {
		return r, &Error{Kind: "bind", Msg: fmt.Sprintf("%s has %d columns available but %d columns specified", what, len(r.names), len(aliases))}
	}
	names := slices.Clone(r.names)
	copy(names, aliases)
	return relation{node: r.node, names: names}, nil
}

// rangeVar binds a named FROM item: a CTE, a table or a view.
func (b *binder) rangeVar(rv *pg.RangeVar) (plan.Node, []scopeCol, error) {
	name := rv.Relname
	qual := name
	var aliases []string
	if rv.Alias != nil {
		qual = rv.Alias.Aliasname
		aliases = stringList(rv.Alias.Colnames)
	}
	if strings.EqualFold(rv.Schemaname, "information_schema") {
		return b.infoSchema(rv, qual, aliases)
	}
	if rv.Schemaname == "" {
		for i := len(b.ctes) - 1; i >= 0; i-- {
			def := b.ctes[i]
			if def.name != name {
				continue
			}
			if def.recursive {
				return b.recursiveRef(def, rv, qual, aliases)
			}
			saved := b.ctes
			b.ctes = def.visible
			r, err := b.selectStmt(def.query, nil)
			b.ctes = saved
			if err != nil {
				return nil, nil, err
			}
			return b.finishCTERef(r, def, qual, aliases)
		}
	}
	if t, ok := b.cat.Table(name); ok {
		fields := t.Schema().Fields()
		scan := &plan.Scan{TableName: name, Table: t, Projection: make([]int, len(fields)), Cols: make(plan.Schema, len(fields))}
		names := make([]string, len(fields))
		for i, f := range fields {
			scan.Projection[i] = i
			scan.Cols[i] = plan.Column{ID: b.ids.Next(), Name: f.Name, Table: qual, Type: f.Type, Nullable: f.Nullable}
			names[i] = f.Name
		}
		r, err := renameColumns(relation{node: scan, names: names}, aliases, qual)
		if err != nil {
			return nil, nil, err
		}
		return scan, relationScope(r, qual), nil
	}
	if v, ok := b.cat.View(name); ok {
		r, err := b.view(v.Name, v.SQL)
		if err != nil {
			return nil, nil, err
		}
		if r, err = renameColumns(r, v.Columns, name); err != nil {
			return nil, nil, err
		}
		if r, err = renameColumns(r, aliases, qual); err != nil {
			return nil, nil, err
		}
		return r.node, relationScope(r, qual), nil
	}
	e := b.errAt("bind", rv.Location, "table %q does not exist", name)
	cands := b.cat.Names()
	for _, d := range b.ctes {
		cands = append(cands, d.name)
	}
	if c := closest(name, cands); c != "" {
		e.Hint = fmt.Sprintf("did you mean %q?", c)
	}
	return nil, nil, e
}

// view binds a view's stored SQL with fresh column IDs from this query.
func (b *binder) view(name, text string) (relation, error) {
	if b.viewDepth >= maxViewDepth {
		return relation{}, &Error{Kind: "bind", Msg: fmt.Sprintf("view %q: views nested too deeply (recursive definition?)", name)}
	}
	if b.views != nil {
		if *b.views++; *b.views > maxViewExpansions {
			return relation{}, &Error{Kind: "bind", Msg: fmt.Sprintf("view %q: the statement expands views more than %d times (views that read a view more than once multiply)", name, maxViewExpansions)}
		}
	}
	stmts, err := Parse(text)
	if err != nil {
		return relation{}, viewError(name, err)
	}
	if len(stmts) != 1 || stmts[0].tree == nil || stmts[0].tree.GetSelectStmt() == nil {
		return relation{}, &Error{Kind: "bind", Msg: fmt.Sprintf("view %q: stored SQL is not a single query", name)}
	}
	child := &binder{cat: b.cat, ids: b.ids, text: stmts[0].text, orig: stmts[0].SQL, ins: stmts[0].ins, duck: stmts[0].duck, pos: stmts[0].pos, viewDepth: b.viewDepth + 1, clock: b.clock, views: b.views}
	r, err := child.selectStmt(stmts[0].tree.GetSelectStmt(), nil)
	if err == nil {
		err = child.dialectApplied()
	}
	if err != nil {
		return relation{}, viewError(name, err)
	}
	return r, nil
}

// viewError re-labels an error inside a view's text: its position refers
// to the view's SQL, not to the user's statement.
func viewError(name string, err error) error {
	var e *Error
	if errors.As(err, &e) {
		c := *e
		c.Msg = fmt.Sprintf("in view %q: %s", name, e.Msg)
		c.Line, c.Column = 0, 0
		return &c
	}
	return fmt.Errorf("in view %q: %w", name, err)
}

// join binds a JOIN expression.
func (b *binder) join(j *pg.JoinExpr, outer *scope, left []scopeCol) (plan.Node, []scopeCol, error) {
	l, lcols, err := b.fromItem(j.Larg, outer, left)
	if err != nil {
		return nil, nil, err
	}
	r, rcols, err := b.fromItem(j.Rarg, outer, append(slices.Clip(left), lcols...))
	if err != nil {
		return nil, nil, err
	}
	var kind plan.JoinKind
	switch j.Jointype {
	case pg.JoinType_JOIN_INNER:
		kind = plan.JoinInner
	case pg.JoinType_JOIN_LEFT:
		kind = plan.JoinLeft
	case pg.JoinType_JOIN_RIGHT:
		kind = plan.JoinRight
	case pg.JoinType_JOIN_FULL:
		kind = plan.JoinFull
	default:
		return nil, nil, &Error{Kind: "bind", Msg: fmt.Sprintf("unsupported join type %s", j.Jointype)}
	}
	// Outer joins make the other side's columns nullable.
	for i := range lcols {
		if kind == plan.JoinRight || kind == plan.JoinFull {
			lcols[i].col.Nullable = true
		}
	}
	for i := range rcols {
		if kind == plan.JoinLeft || kind == plan.JoinFull {
			rcols[i].col.Nullable = true
		}
	}
	cols := append(slices.Clip(lcols), rcols...)
	sc := &scope{cols: cols, parent: outer}
	var cond plan.Expr
	using := stringList(j.UsingClause)
	if j.IsNatural {
		for _, lc := range lcols {
			if lc.hidden {
				continue
			}
			for _, rc := range rcols {
				if !rc.hidden && rc.name == lc.name && !slices.Contains(using, lc.name) {
					using = append(using, lc.name)
				}
			}
		}
	}
	// A FULL JOIN's merged USING columns are COALESCE(left, right),
	// projected above the join (PostgreSQL's rule): either side may be
	// the one present.
	var merged []plan.Expr
	var mergedNames []string
	if len(using) > 0 {
		var conds []plan.Expr
		for _, name := range using {
			li, err := usingSide(cols[:len(lcols)], name, "left")
			if err != nil {
				return nil, nil, err
			}
			ri, err := usingSide(cols[len(lcols):], name, "right")
			if err != nil {
				return nil, nil, err
			}
			ri += len(lcols)
			lc, rc := cols[li].col, cols[ri].col
			eq, err := b.compare(plan.OpEq, &plan.ColRef{ID: lc.ID, Name: qualName(cols[li]), Typ: lc.Type},
				&plan.ColRef{ID: rc.ID, Name: qualName(cols[ri]), Typ: rc.Type}, -1)
			if err != nil {
				return nil, nil, err
			}
			conds = append(conds, eq)
			// The merged column is the left one, except for RIGHT JOIN
			// where only the right side is guaranteed to be present, and
			// FULL JOIN, where it is the first present of the two.
			switch kind {
			case plan.JoinRight:
				cols[li].hidden = true
			case plan.JoinFull:
				t, ok := plan.CommonType(lc.Type, rc.Type)
				if !ok {
					return nil, nil, &Error{Kind: "bind", Msg: fmt.Sprintf("JOIN/USING types %s and %s of column %q cannot be matched", plan.TypeName(lc.Type), plan.TypeName(rc.Type), name)}
				}
				args := []plan.Expr{coerce(lc.Ref(), t), coerce(rc.Ref(), t)}
				merged = append(merged, &plan.Func{Name: "coalesce", Args: args, Typ: t})
				mergedNames = append(mergedNames, name)
				cols[li].hidden, cols[ri].hidden = true, true
			default:
				cols[ri].hidden = true
			}
		}
		cond = plan.Conjunction(conds)
		// As in PostgreSQL, SELECT * lists the merged columns first.
		var first, rest []scopeCol
		if len(merged) > 0 {
			first = make([]scopeCol, len(merged)) // set once projected, below
		}
		for _, c := range cols {
			if !c.hidden && slices.Contains(using, c.name) {
				first = append(first, c)
			} else {
				rest = append(rest, c)
			}
		}
		cols = append(first, rest...)
	} else if j.Quals != nil {
		cond, err = b.boolExpr(j.Quals, ectx{sc: sc, clause: "JOIN conditions"})
		if err != nil {
			return nil, nil, err
		}
	} else if kind != plan.JoinInner {
		return nil, nil, &Error{Kind: "bind", Msg: "outer join needs an ON or USING condition"}
	}
	if j.Alias != nil {
		if len(j.Alias.Colnames) > 0 {
			return nil, nil, &Error{Kind: "bind", Msg: "column aliases on a JOIN are not supported"}
		}
		// The alias names the join's visible columns; the ones USING
		// merged away are no longer reachable, by any name.
		for i := range cols {
			cols[i].table = j.Alias.Aliasname
			if cols[i].hidden {
				cols[i].table = ""
			}
		}
	}
	var node plan.Node = &plan.Join{Kind: kind, Left: l, Right: r, Cond: cond}
	if len(merged) > 0 {
		in := node.Schema()
		exprs := make([]plan.Expr, 0, len(in)+len(merged))
		names := make([]string, 0, len(in)+len(merged))
		for _, c := range in {
			exprs, names = append(exprs, c.Ref()), append(names, c.Name)
		}
		exprs, names = append(exprs, merged...), append(names, mergedNames...)
		p := b.project(node, exprs, names)
		table := ""
		if j.Alias != nil {
			table = j.Alias.Aliasname
		}
		for i := range merged {
			cols[i] = scopeCol{table: table, name: mergedNames[i], col: p.Cols[len(in)+i]}
		}
		node = p
	}
	return node, cols, nil
}

// usingSide finds the single visible column name on one side of a USING join.
func usingSide(cols []scopeCol, name, side string) (int, error) {
	found := -1
	for i, c := range cols {
		if c.hidden || c.name != name {
			continue
		}
		if found >= 0 {
			return 0, &Error{Kind: "bind", Msg: fmt.Sprintf("common column name %q appears more than once in %s table", name, side)}
		}
		found = i
	}
	if found < 0 {
		return 0, &Error{Kind: "bind", Msg: fmt.Sprintf("column %q specified in USING clause does not exist in %s table", name, side)}
	}
	return found, nil
}

func qualName(c scopeCol) string {
	if c.table == "" {
		return c.name
	}
	return c.table + "." + c.name
}
