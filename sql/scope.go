package sql

import (
	"fmt"
	"sort"
	"strings"

	"sluice/plan"
)

// scopeCol is one column visible to name resolution.
type scopeCol struct {
	table  string // qualifier: table name or alias; "" for none
	name   string
	col    plan.Column
	hidden bool // merged away by JOIN USING: not visible unqualified or to *
}

// scope is the set of columns a query level can see. parent is the
// enclosing query's scope, searched for correlated references.
type scope struct {
	cols   []scopeCol
	parent *scope
}

// relation is a bound query or FROM item: its plan and user-visible names.
type relation struct {
	node  plan.Node
	names []string
}

// lookup finds a (possibly qualified) column. It searches this level, then
// enclosing levels; inner names shadow outer ones.
func (b *binder) lookup(sc *scope, parts []string, loc int32) (*plan.ColRef, error) {
	display := strings.Join(parts, ".")
	var table, name string
	switch len(parts) {
	case 1:
		name = parts[0]
	case 2:
		table, name = parts[0], parts[1]
	case 3:
		// schema.table.column: the schema is ignored (there is only one).
		table, name = parts[1], parts[2]
	default:
		return nil, b.errAt("bind", loc, "improper qualified name %s", display)
	}
	for s := sc; s != nil; s = s.parent {
		matches, tableSeen := s.find(table, name)
		switch {
		case len(matches) == 1:
			c := matches[0].col
			return &plan.ColRef{ID: c.ID, Name: display, Typ: c.Type}, nil
		case len(matches) > 1:
			cands := make([]string, len(matches))
			for i, m := range matches {
				cands[i] = m.table + "." + m.name
				if m.table == "" {
					cands[i] = m.name
				}
			}
			e := b.errAt("bind", loc, "column reference %q is ambiguous", display)
			e.Hint = "could be " + strings.Join(cands, " or ")
			return nil, e
		}
		if table != "" && tableSeen {
			e := b.errAt("bind", loc, "column %q does not exist", display)
			var names []string
			for _, c := range s.cols {
				if c.table == table {
					names = append(names, c.name)
				}
			}
			if m := closest(name, names); m != "" {
				e.Hint = fmt.Sprintf("did you mean %q?", table+"."+m)
			}
			return nil, e
		}
	}
	if table != "" && !sc.hasTable(table) {
		e := b.errAt("bind", loc, "missing FROM-clause entry for table %q", table)
		return nil, e
	}
	e := b.errAt("bind", loc, "column %q does not exist", display)
	if m := closest(name, sc.visibleNames()); m != "" {
		e.Hint = fmt.Sprintf("did you mean %q?", m)
	}
	return nil, e
}

// find returns the columns at this level matching table.name (table "" for
// unqualified), deduplicated by column ID, and whether any column has the
// qualifier table. Exact name matches win over case-insensitive ones.
func (s *scope) find(table, name string) (matches []scopeCol, tableSeen bool) {
	for pass := 0; pass < 2 && len(matches) == 0; pass++ {
		seen := map[plan.ColumnID]bool{}
		for _, c := range s.cols {
			if table != "" && c.table != table {
				continue
			}
			if table != "" {
				tableSeen = true
			} else if c.hidden {
				continue
			}
			eq := c.name == name
			if pass == 1 {
				eq = strings.EqualFold(c.name, name)
			}
			if eq && !seen[c.col.ID] {
				seen[c.col.ID] = true
				matches = append(matches, c)
			}
		}
	}
	return matches, tableSeen
}

func (s *scope) hasTable(t string) bool {
	for ; s != nil; s = s.parent {
		for _, c := range s.cols {
			if c.table == t {
				return true
			}
		}
	}
	return false
}

// visibleNames lists the column names of every level, for "did you mean".
func (s *scope) visibleNames() []string {
	set := map[string]bool{}
	for ; s != nil; s = s.parent {
		for _, c := range s.cols {
			set[c.name] = true
		}
	}
	out := make([]string, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// relationScope exposes a relation's columns under qualifier table.
func relationScope(r relation, table string) []scopeCol {
	schema := r.node.Schema()
	out := make([]scopeCol, len(schema))
	for i, c := range schema {
		out[i] = scopeCol{table: table, name: r.names[i], col: c}
	}
	return out
}
