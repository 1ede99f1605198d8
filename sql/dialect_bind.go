package sql

import (
	"slices"

	pg "github.com/pganalyze/pg_query_go/v6"

	"sluice/plan"
)

// The binder's half of the DuckDB constructs rewriteDialect took out of
// the text (dialect.go): each is looked up by the location the parse tree
// gives for the place it stood, and marked used.

// applied records that the construct keyed k was applied. The record is
// the binder's, so a parsed statement can be bound again, or concurrently.
func (b *binder) applied(k int) {
	if b.duckUsed == nil {
		b.duckUsed = map[int]bool{}
	}
	b.duckUsed[k] = true
}

// qualifyOf returns the QUALIFY clause of sel, nil when it has none.
func (b *binder) qualifyOf(sel *pg.SelectStmt) *qualifyClause {
	if b.duck == nil || len(sel.TargetList) == 0 {
		return nil
	}
	k := b.duck.selectOf(int(sel.TargetList[0].GetResTarget().GetLocation()))
	q := b.duck.qualify[k]
	if q != nil {
		b.applied(k)
	}
	return q
}

// isTryCast reports whether tc is DuckDB's try_cast (rewritten to CAST
// at the same place).
func (b *binder) isTryCast(tc *pg.TypeCast) bool {
	if b.duck == nil || !b.duck.tryCast[int(tc.Location)] {
		return false
	}
	b.applied(int(tc.Location))
	return true
}

// isGroupAll reports whether clause is DuckDB's GROUP BY ALL (rewritten to
// GROUP BY () at the same place).
func (b *binder) isGroupAll(clause []*pg.Node) bool {
	if b.duck == nil || len(clause) != 1 {
		return false
	}
	gs := clause[0].GetGroupingSet()
	if gs == nil || gs.Kind != pg.GroupingSetKind_GROUPING_SET_EMPTY {
		return false
	}
	if _, ok := b.duck.groupAll[int(gs.Location)]; !ok {
		return false
	}
	b.applied(int(gs.Location))
	return true
}

// groupAll binds GROUP BY ALL: DuckDB groups by every select-list entry
// that holds no aggregate (nor window function). With none, the query is a
// plain aggregation. Each entry is bound once on its own to see whether it
// holds an aggregate.
func (b *binder) groupAll(items []item, sc *scope, in plan.Schema, windows []*pg.Node) ([]plan.Expr, error) {
	var keys []plan.Expr
	seen := map[string]bool{}
	for _, it := range items {
		e := it.expr
		if it.ast != nil {
			agg := &aggState{in: in, byKey: map[string]int{}}
			win, err := newWinState(windows)
			if err != nil {
				return nil, err
			}
			srf := &srfState{}
			if _, err := b.expr(it.ast, ectx{sc: sc, agg: agg, win: win, srf: srf, clause: "SELECT"}); err != nil {
				return nil, err
			}
			if len(agg.calls) > 0 || len(win.calls) > 0 || len(srf.args) > 0 {
				continue
			}
			if e, err = b.expr(it.ast, ectx{sc: sc, clause: "GROUP BY"}); err != nil {
				return nil, err
			}
		}
		if k := exprKey(e); !seen[k] {
			seen[k] = true
			keys = append(keys, e)
		}
	}
	return keys, nil
}

// orderAll expands DuckDB's ORDER BY ALL [ASC|DESC] [NULLS ...]
// (rewritten to ORDER BY 1 at the same place): every select-list column,
// left to right, in the one direction given.
func (b *binder) orderAll(clause []*pg.Node, items []item) ([]sortSpec, bool) {
	if b.duck == nil || len(clause) != 1 || items == nil {
		return nil, false
	}
	sb := clause[0].GetSortBy()
	c := sb.GetNode().GetAConst()
	if c == nil {
		return nil, false
	}
	if _, ok := b.duck.orderAll[int(c.Location)]; !ok {
		return nil, false
	}
	s, err := b.sortDir(sb)
	if err != nil {
		return nil, false // left unused: reported as not supported
	}
	b.applied(int(c.Location))
	out := make([]sortSpec, len(items))
	for i := range items {
		out[i] = s
		out[i].item = i
	}
	return out, true
}

// starModifiers applies DuckDB's EXCLUDE and REPLACE lists of the star cr
// to its expansion: star are the columns it expands to, tables their
// tables. A name in either list that is not among them is an error.
func (b *binder) starModifiers(cr *pg.ColumnRef, star []item, tables []string) ([]item, error) {
	if b.duck == nil {
		return star, nil
	}
	m := b.duck.stars[int(cr.Location)]
	if m == nil {
		return star, nil
	}
	b.applied(int(cr.Location))
	drop := make([]bool, len(star))
	seen := map[string]bool{}
	for _, n := range m.exclude {
		ref := n.GetColumnRef()
		parts := stringList(ref.Fields)
		name, table := parts[len(parts)-1], ""
		if len(parts) > 1 {
			table = parts[len(parts)-2]
		}
		key := table + "." + name
		if seen[key] {
			return nil, b.errAt("bind", ref.Location, "duplicate entry %q in EXCLUDE list", name)
		}
		seen[key] = true
		found := false
		for i, it := range star {
			if it.name == name && (table == "" || tables[i] == table) {
				drop[i], found = true, true
			}
		}
		if !found {
			return nil, b.errAt("bind", ref.Location, "column %q in EXCLUDE list not found in FROM clause", name)
		}
	}
	replaced := map[string]bool{}
	for _, n := range m.replace {
		rt := n.GetResTarget()
		if replaced[rt.Name] {
			return nil, b.errAt("bind", rt.Location, "duplicate entry %q in REPLACE list", rt.Name)
		}
		replaced[rt.Name] = true
		found := false
		for i := range star {
			if star[i].name == rt.Name && !drop[i] {
				star[i] = item{ast: rt.Val, name: rt.Name, loc: rt.Location}
				found = true
			}
		}
		if !found {
			return nil, b.errAt("bind", rt.Location, "column %q in REPLACE list not found in FROM clause", rt.Name)
		}
	}
	out := star[:0:0]
	for i, it := range star {
		if !drop[i] {
			out = append(out, it)
		}
	}
	return slices.Clip(out), nil
}
