package sql

import (
	"fmt"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"sluice/catalog"
)

// DELETE and UPDATE rewrite the table: the statement becomes a query of
// every row of the table as it will be, plus a boolean column marking the
// rows the statement deletes or changes, written back to the table's
// directory (package physical/datasource/write, Spec.Mark). A deleted
// row is not written; the statement counts the marked rows. Once the new
// files are committed, the files the query read are removed, so the
// table holds the rewritten rows only.
//
//	DELETE FROM t WHERE cond
//	  SELECT c1, ..., cn, (cond) IS TRUE FROM t
//	UPDATE t SET c2 = e WHERE cond
//	  SELECT c1, CASE WHEN m THEN e ELSE c2 END, ..., m
//	  FROM (SELECT c1, ..., cn, (cond) IS TRUE AS m FROM t) AS t
//
// DELETE ... USING s and UPDATE ... FROM s read the other tables in
// subqueries: the condition becomes EXISTS (SELECT FROM s WHERE cond),
// and each column of s a SET value reads (SELECT s.x FROM s WHERE cond)
// (fromColumns).
//
// The inner query of an UPDATE takes the table's name (or alias), so SET
// expressions name its columns as they would the table's.

// deleteStmt binds DELETE FROM table [AS alias] [WHERE cond].
func (b *binder) deleteStmt(d *pg.DeleteStmt) (Bound, error) {
	if len(d.ReturningList) > 0 {
		return nil, &Error{Kind: "bind", Msg: "DELETE ... RETURNING is not supported"}
	}
	if err := readOnly(d.Relation, WriteDelete); err != nil {
		return nil, err
	}
	w, t, err := b.targetTable(d.Relation.GetRelname(), WriteDelete)
	if err != nil {
		return nil, err
	}
	if err := b.checkWithNames(d.WithClause, w.Table); err != nil {
		return nil, err
	}
	where := d.WhereClause
	if len(d.UsingClause) > 0 {
		// DELETE FROM t USING s WHERE cond deletes the rows of t some row
		// of s meets cond with: WHERE EXISTS (SELECT FROM s WHERE cond).
		where = existsIn(d.UsingClause, where)
	}
	names := columnNames(t)
	targets := columnTargets(names)
	targets = append(targets, pg.MakeResTargetNodeWithNameAndVal(markName(names), markOf(where), -1))
	sel := &pg.SelectStmt{TargetList: targets, FromClause: []*pg.Node{{Node: &pg.Node_RangeVar{RangeVar: d.Relation}}},
		WithClause: d.WithClause}
	return b.rewriteRows(w, t, sel)
}

// updateStmt binds UPDATE table [AS alias] SET col = expr, ... [WHERE
// cond].
func (b *binder) updateStmt(u *pg.UpdateStmt) (Bound, error) {
	if len(u.ReturningList) > 0 {
		return nil, &Error{Kind: "bind", Msg: "UPDATE ... RETURNING is not supported"}
	}
	if err := readOnly(u.Relation, WriteUpdate); err != nil {
		return nil, err
	}
	name := u.Relation.GetRelname()
	w, t, err := b.targetTable(name, WriteUpdate)
	if err != nil {
		return nil, err
	}
	if err := b.checkWithNames(u.WithClause, name); err != nil {
		return nil, err
	}
	names := columnNames(t)
	set := map[int]*pg.Node{}
	for _, n := range u.TargetList {
		rt := n.GetResTarget()
		if rt == nil {
			return nil, &Error{Kind: "bind", Msg: "UPDATE: unsupported SET item"}
		}
		if _, multi := rt.Val.GetNode().(*pg.Node_MultiAssignRef); multi {
			return nil, b.errAt("bind", rt.Location, "UPDATE ... SET (a, b) = ... is not supported: assign each column")
		}
		if len(rt.Indirection) > 0 {
			return nil, b.errAt("bind", rt.Location, "UPDATE cannot assign to a part of column %q", rt.Name)
		}
		idx := -1
		for i, c := range names {
			if strings.EqualFold(c, rt.Name) {
				idx = i
				break
			}
		}
		if idx < 0 {
			e := b.errAt("bind", rt.Location, "column %q of table %q does not exist", rt.Name, name)
			if c := closest(rt.Name, names); c != "" {
				e.Hint = "did you mean " + quoteIdent(c) + "?"
			}
			return nil, e
		}
		if set[idx] != nil {
			return nil, b.errAt("bind", rt.Location, "multiple assignments to the same column %q", rt.Name)
		}
		set[idx] = rt.Val
		if len(u.FromClause) > 0 {
			set[idx] = b.fromColumns(rt.Val, u, names)
		}
	}
	if len(u.FromClause) > 0 {
		// Only the rows some row of s meets cond with change.
		u.WhereClause = existsIn(u.FromClause, u.WhereClause)
	}
	mark := markName(names)
	from := &pg.Node{Node: &pg.Node_RangeVar{RangeVar: u.Relation}}
	var targets []*pg.Node
	if u.WhereClause == nil {
		// Every row changes: the SET expressions read the table itself.
		for i, c := range names {
			val := columnRef(c)
			if set[i] != nil {
				val = set[i]
			}
			targets = append(targets, pg.MakeResTargetNodeWithNameAndVal(c, val, -1))
		}
		targets = append(targets, pg.MakeResTargetNodeWithNameAndVal(mark, markOf(nil), -1))
	} else {
		// The condition is evaluated once per row, in the inner query.
		alias := name
		if u.Relation.Alias != nil {
			alias = u.Relation.Alias.Aliasname
		}
		inner := &pg.SelectStmt{TargetList: append(columnTargets(names), pg.MakeResTargetNodeWithNameAndVal(mark, markOf(u.WhereClause), -1)),
			FromClause: []*pg.Node{from}}
		from = &pg.Node{Node: &pg.Node_RangeSubselect{RangeSubselect: &pg.RangeSubselect{
			Subquery: &pg.Node{Node: &pg.Node_SelectStmt{SelectStmt: inner}}, Alias: &pg.Alias{Aliasname: alias}}}}
		for i, c := range names {
			val := columnRef(c)
			if set[i] != nil {
				val = pg.MakeCaseExprNode(nil, []*pg.Node{pg.MakeCaseWhenNode(columnRef(mark), set[i], -1)}, -1)
				val.GetCaseExpr().Defresult = columnRef(c)
			}
			targets = append(targets, pg.MakeResTargetNodeWithNameAndVal(c, val, -1))
		}
		targets = append(targets, pg.MakeResTargetNodeWithNameAndVal(mark, columnRef(mark), -1))
	}
	sel := &pg.SelectStmt{TargetList: targets, FromClause: []*pg.Node{from}, WithClause: u.WithClause}
	return b.rewriteRows(w, t, sel)
}

// fromColumns rewrites a SET value of UPDATE t SET c = e FROM s WHERE
// cond: each column of s it reads becomes the scalar subquery (SELECT
// s.x FROM s WHERE cond), the value of the one row of s that meets cond
// with t's row (it fails if more than one does, where PostgreSQL would
// take any one of them). A column of s is one qualified by a FROM item's
// name or alias, or an unqualified name that is not a column of t but is
// one of a FROM table's. Subqueries inside e are left as they are.
func (b *binder) fromColumns(e *pg.Node, u *pg.UpdateStmt, tcols []string) *pg.Node {
	items := map[string]bool{}    // FROM items' names and aliases
	fromCols := map[string]bool{} // columns of the FROM tables
	for _, f := range u.FromClause {
		switch x := f.Node.(type) {
		case *pg.Node_RangeVar:
			name := x.RangeVar.Relname
			if x.RangeVar.Alias != nil {
				name = x.RangeVar.Alias.Aliasname
			}
			items[strings.ToLower(name)] = true
			if t, ok := b.cat.Table(x.RangeVar.Relname); ok {
				for _, c := range columnNames(t) {
					fromCols[strings.ToLower(c)] = true
				}
			}
		case *pg.Node_RangeSubselect:
			if x.RangeSubselect.Alias != nil {
				items[strings.ToLower(x.RangeSubselect.Alias.Aliasname)] = true
			}
		}
	}
	isT := map[string]bool{}
	for _, c := range tcols {
		isT[strings.ToLower(c)] = true
	}
	ofS := func(cr *pg.ColumnRef) bool {
		parts := stringList(cr.Fields)
		switch len(parts) {
		case 1:
			c := strings.ToLower(parts[0])
			return !isT[c] && fromCols[c]
		case 2:
			return items[strings.ToLower(parts[0])]
		}
		return false
	}
	sub := func(cr *pg.Node) *pg.Node {
		return &pg.Node{Node: &pg.Node_SubLink{SubLink: &pg.SubLink{SubLinkType: pg.SubLinkType_EXPR_SUBLINK,
			Subselect: &pg.Node{Node: &pg.Node_SelectStmt{SelectStmt: &pg.SelectStmt{
				TargetList: []*pg.Node{pg.MakeResTargetNodeWithVal(cr, -1)}, FromClause: u.FromClause, WhereClause: u.WhereClause}}},
			Location: -1}}}
	}
	if cr := e.GetColumnRef(); cr != nil {
		if ofS(cr) {
			return sub(e)
		}
		return e
	}
	out := proto.Clone(e).(*pg.Node)
	replaceColumnRefs(out.ProtoReflect(), func(n *pg.Node) *pg.Node {
		if cr := n.GetColumnRef(); cr != nil && ofS(cr) {
			return sub(n)
		}
		return nil
	})
	return out
}

// replaceColumnRefs replaces, below m, every Node that repl returns a
// replacement for, without going into subqueries (SubLinks).
func replaceColumnRefs(m protoreflect.Message, repl func(*pg.Node) *pg.Node) {
	if n, ok := m.Interface().(*pg.Node); ok && n.GetSubLink() != nil {
		return
	}
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.Message() == nil || fd.IsMap() {
			return true
		}
		if fd.IsList() {
			l := v.List()
			for i := 0; i < l.Len(); i++ {
				if n, ok := l.Get(i).Message().Interface().(*pg.Node); ok {
					if r := repl(n); r != nil {
						l.Set(i, protoreflect.ValueOfMessage(r.ProtoReflect()))
						continue
					}
				}
				replaceColumnRefs(l.Get(i).Message(), repl)
			}
			return true
		}
		if n, ok := v.Message().Interface().(*pg.Node); ok {
			if r := repl(n); r != nil {
				m.Set(fd, protoreflect.ValueOfMessage(r.ProtoReflect()))
				return true
			}
		}
		replaceColumnRefs(v.Message(), repl)
		return true
	})
}

// readOnly refuses a write to information_schema's tables, which are
// made from the catalog.
func readOnly(rv *pg.RangeVar, kind string) error {
	if strings.EqualFold(rv.GetSchemaname(), "information_schema") {
		return &Error{Kind: "bind", Msg: fmt.Sprintf("%s refused: information_schema.%s is read-only (made from the catalog)", kind, rv.GetRelname())}
	}
	return nil
}

// existsIn is EXISTS (SELECT FROM from WHERE cond).
func existsIn(from []*pg.Node, cond *pg.Node) *pg.Node {
	sel := &pg.SelectStmt{TargetList: []*pg.Node{pg.MakeResTargetNodeWithVal(pg.MakeAConstIntNode(1, -1), -1)},
		FromClause: from, WhereClause: cond}
	return &pg.Node{Node: &pg.Node_SubLink{SubLink: &pg.SubLink{SubLinkType: pg.SubLinkType_EXISTS_SUBLINK,
		Subselect: &pg.Node{Node: &pg.Node_SelectStmt{SelectStmt: sel}}, Location: -1}}}
}

// rewriteRows binds sel, the table's columns and the mark, as w's query:
// the columns assigned to the table's with PostgreSQL's assignment casts.
func (b *binder) rewriteRows(w *Write, t catalog.Table, sel *pg.SelectStmt) (Bound, error) {
	w.Target = t
	r, err := b.selectStmt(sel, nil)
	if err != nil {
		return nil, err
	}
	if err := checkArrayUse(r.node); err != nil {
		return nil, err
	}
	tcols := t.Schema().Fields()
	target := make([]int, len(tcols))
	for i := range target {
		target[i] = i
	}
	exprs, names, err := assign(tcols, target, r)
	if err != nil {
		return nil, err
	}
	last := len(r.node.Schema()) - 1
	exprs = append(exprs, refName(r.node.Schema()[last], r.names[last]))
	names = append(names, r.names[last])
	w.Query = &Query{Plan: b.project(r.node, exprs, names), Names: names, IDs: b.ids}
	return w, w.check()
}

// checkWithNames refuses a WITH query named like the rewritten table: in
// the query a DELETE or UPDATE becomes, it would stand for the table.
func (b *binder) checkWithNames(with *pg.WithClause, table string) error {
	for _, n := range with.GetCtes() {
		if cte := n.GetCommonTableExpr(); cte != nil && strings.EqualFold(cte.Ctename, table) {
			e := b.errAt("bind", cte.Location, "WITH query %q has the name of the table the statement changes", cte.Ctename)
			e.Hint = "rename the WITH query"
			return e
		}
	}
	return nil
}

func columnNames(t catalog.Table) []string {
	fields := t.Schema().Fields()
	names := make([]string, len(fields))
	for i, f := range fields {
		names[i] = f.Name
	}
	return names
}

func columnRef(name string) *pg.Node {
	return pg.MakeColumnRefNode([]*pg.Node{pg.MakeStrNode(name)}, -1)
}

// columnTargets selects the named columns, in order.
func columnTargets(names []string) []*pg.Node {
	out := make([]*pg.Node, len(names))
	for i, c := range names {
		out[i] = pg.MakeResTargetNodeWithNameAndVal(c, columnRef(c), -1)
	}
	return out
}

// markOf is the mark of the rows cond selects: (cond) IS TRUE, so a row
// whose condition is NULL is left alone, as PostgreSQL leaves it; TRUE
// without a condition.
func markOf(cond *pg.Node) *pg.Node {
	if cond == nil {
		return &pg.Node{Node: &pg.Node_AConst{AConst: &pg.A_Const{Val: &pg.A_Const_Boolval{Boolval: &pg.Boolean{Boolval: true}}, Location: -1}}}
	}
	return &pg.Node{Node: &pg.Node_BooleanTest{BooleanTest: &pg.BooleanTest{Arg: cond, Booltesttype: pg.BoolTestType_IS_TRUE, Location: -1}}}
}

// markName names the mark column: a name none of the table's columns has.
func markName(names []string) string {
	m := "sluice_row_mark"
	for {
		clash := false
		for _, c := range names {
			if strings.EqualFold(c, m) {
				clash = true
			}
		}
		if !clash {
			return m
		}
		m += "_"
	}
}
