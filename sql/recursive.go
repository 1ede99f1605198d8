package sql

import (
	"fmt"
	"slices"

	pg "github.com/pganalyze/pg_query_go/v6"

	"sluice/plan"
)

// WITH RECURSIVE name AS (base UNION [ALL] recursive): each reference to
// name from outside its body binds a plan.RecursiveCTE; inside the
// recursive term, name is the working table (a plan.WorkTable), as in
// PostgreSQL. A CTE of a WITH RECURSIVE list that does not refer to itself
// is an ordinary CTE.

// recursiveState is a recursive CTE's binding in progress.
type recursiveState struct {
	inBase bool // binding the non-recursive term
	// In the recursive term: the working table's ID, columns and names,
	// and how often it was referenced.
	workID int64
	cols   []plan.Column
	names  []string
	refs   int
}

// recursiveRef binds a reference to the recursive CTE def (whose body can
// see def itself) with the given alias and column aliases.
func (b *binder) recursiveRef(def *cteDef, rv *pg.RangeVar, qual string, aliases []string) (plan.Node, []scopeCol, error) {
	name := def.name
	if st := def.rec; st != nil {
		// A reference inside its own body.
		if st.inBase || st.cols == nil {
			return nil, nil, b.errAt("bind", rv.Location, "recursive reference to query %q must not appear within its non-recursive term", name)
		}
		st.refs++
		if st.refs > 1 {
			return nil, nil, b.errAt("bind", rv.Location, "recursive reference to query %q must not appear more than once", name)
		}
		wt := &plan.WorkTable{Name: name, WorkID: st.workID, Cols: make(plan.Schema, len(st.cols))}
		for i, c := range st.cols {
			wt.Cols[i] = plan.Column{ID: b.ids.Next(), Name: st.names[i], Table: qual, Type: c.Type, Nullable: true}
		}
		r, err := renameColumns(relation{node: wt, names: st.names}, aliases, qual)
		if err != nil {
			return nil, nil, err
		}
		return wt, relationScope(r, qual), nil
	}
	q := def.query
	saved := b.ctes
	defer func() { b.ctes = saved }()
	b.ctes = append(slices.Clip(def.visible), def)
	if q.Op != pg.SetOperation_SETOP_UNION || q.Larg == nil || q.Rarg == nil {
		// Not of the recursive form: an ordinary CTE, unless it refers
		// to itself.
		def.rec = &recursiveState{}
		r, err := b.selectStmt(q, nil)
		def.rec = nil
		if err != nil {
			if e, ok := err.(*Error); ok && e.Msg == fmt.Sprintf("recursive reference to query %q must not appear within its non-recursive term", name) {
				e.Msg = fmt.Sprintf("recursive query %q does not have the form non-recursive-term UNION [ALL] recursive-term", name)
			}
			return nil, nil, err
		}
		return b.finishCTERef(r, def, qual, aliases)
	}
	if len(q.SortClause) > 0 || q.LimitCount != nil || q.LimitOffset != nil {
		return nil, nil, b.errAt("bind", rv.Location, "ORDER BY, LIMIT and OFFSET in a recursive query are not supported")
	}
	def.rec = &recursiveState{inBase: true}
	base, err := b.selectStmt(q.Larg, nil)
	def.rec = nil
	if err != nil {
		return nil, nil, err
	}
	names := slices.Clone(base.names)
	if len(def.aliases) > len(names) {
		return nil, nil, &Error{Kind: "bind", Msg: fmt.Sprintf("%s has %d columns available but %d columns specified", name, len(names), len(def.aliases))}
	}
	copy(names, def.aliases)
	st := &recursiveState{workID: int64(b.ids.Next()), names: names}
	for _, c := range base.node.Schema() {
		st.cols = append(st.cols, plan.Column{Type: c.Type})
	}
	def.rec = st
	rec, err := b.selectStmt(q.Rarg, nil)
	def.rec = nil
	if err != nil {
		return nil, nil, err
	}
	if st.refs == 0 {
		// The second term does not read the first: a plain UNION.
		r, err := b.selectStmt(q, nil)
		if err != nil {
			return nil, nil, err
		}
		return b.finishCTERef(r, def, qual, aliases)
	}
	bs, rs := base.node.Schema(), rec.node.Schema()
	if len(bs) != len(rs) {
		return nil, nil, &Error{Kind: "bind", Msg: fmt.Sprintf("each UNION query must have the same number of columns (%d vs %d) in recursive query %q", len(bs), len(rs), name)}
	}
	cols := make([]plan.Column, len(bs))
	for i := range bs {
		t, ok := plan.CommonType(bs[i].Type, rs[i].Type)
		if !ok || !typeEq(t, bs[i].Type) {
			e := &Error{Kind: "type", Msg: fmt.Sprintf("recursive query %q column %d has type %s in non-recursive term but type %s in the recursive term",
				name, i+1, plan.TypeName(bs[i].Type), plan.TypeName(rs[i].Type))}
			if ok {
				e.Hint = fmt.Sprintf("cast the output of the non-recursive term to %s", plan.TypeName(t))
			}
			return nil, nil, e
		}
		cols[i] = plan.Column{ID: b.ids.Next(), Name: names[i], Type: bs[i].Type, Nullable: true}
	}
	node := &plan.RecursiveCTE{
		Name: name, Base: base.node, Recursive: b.castTo(relation{node: rec.node, names: rec.names}, cols),
		Distinct: !q.All, WorkID: st.workID, Cols: cols,
	}
	r, err := renameColumns(relation{node: node, names: names}, aliases, qual)
	if err != nil {
		return nil, nil, err
	}
	return node, relationScope(r, qual), nil
}

// finishCTERef applies a CTE's column aliases and the reference's to its
// bound body.
func (b *binder) finishCTERef(r relation, def *cteDef, qual string, aliases []string) (plan.Node, []scopeCol, error) {
	r, err := renameColumns(r, def.aliases, def.name)
	if err != nil {
		return nil, nil, err
	}
	if r, err = renameColumns(r, aliases, qual); err != nil {
		return nil, nil, err
	}
	return r.node, relationScope(r, qual), nil
}
