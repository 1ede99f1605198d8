package plan

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"sluice/catalog"
)

// ColumnID identifies a column uniquely within one query's plan.
type ColumnID int

// ColumnSet is a set of column IDs.
type ColumnSet map[ColumnID]struct{}

// Has reports whether id is in s.
func (s ColumnSet) Has(id ColumnID) bool { _, ok := s[id]; return ok }

// SubsetOf reports whether every member of s is in o.
func (s ColumnSet) SubsetOf(o ColumnSet) bool {
	for id := range s {
		if !o.Has(id) {
			return false
		}
	}
	return true
}

// Column describes one output column of a node.
type Column struct {
	ID       ColumnID
	Name     string // unqualified name as the user sees it
	Table    string // qualifier (table or alias), "" when none
	Type     arrow.DataType
	Nullable bool
}

// Ref returns a ColRef to c.
func (c Column) Ref() *ColRef {
	name := c.Name
	if c.Table != "" {
		name = c.Table + "." + c.Name
	}
	return &ColRef{ID: c.ID, Name: name, Typ: c.Type}
}

// Schema is a node's ordered output columns.
type Schema []Column

// IDs returns the set of column IDs in s.
func (s Schema) IDs() ColumnSet {
	out := make(ColumnSet, len(s))
	for _, c := range s {
		out[c.ID] = struct{}{}
	}
	return out
}

// IndexOf returns the position of id in s, or -1.
func (s Schema) IndexOf(id ColumnID) int {
	for i, c := range s {
		if c.ID == id {
			return i
		}
	}
	return -1
}

// IDGen hands out fresh column IDs for one query.
type IDGen struct{ next ColumnID }

// Next returns a fresh ID.
func (g *IDGen) Next() ColumnID { g.next++; return g.next }

// Node is a logical plan node. Nodes are immutable values.
type Node interface {
	// Schema is the node's output columns.
	Schema() Schema
	// Children are the inputs, in order.
	Children() []Node
	// WithChildren returns a copy with the inputs replaced.
	WithChildren(children []Node) Node
	// String is a one-line description for EXPLAIN (children not included).
	String() string
}

// Scan reads Columns of a catalog table. Cols[i] is table column
// Projection[i]. Filters are conjuncts pushed into the scan: the scan must
// still apply them exactly (they are also used for row-group pruning).
type Scan struct {
	TableName  string
	Table      catalog.Table
	Projection []int
	Cols       Schema
	Filters    []Expr
}

// Filter keeps rows where Pred is true.
type Filter struct {
	Input Node
	Pred  Expr
}

// Project computes Exprs; Cols[i] is the output of Exprs[i]. A pass-through
// column (Exprs[i] is a ColRef) keeps its ID.
type Project struct {
	Input Node
	Exprs []Expr
	Cols  Schema
}

// Aggregate groups by GroupBy and computes Aggs. Output: one column per
// group expression, then one per aggregate, described by Cols.
//
// Over an Expand (GROUPING SETS, ROLLUP, CUBE) the last group key is the
// grouping id and GrandTotals lists the ids of the empty grouping sets: for
// each, the group (NULL, ..., NULL, id) is output even when no input row
// has it (empty input), as PostgreSQL outputs one grand-total row. A filter
// must not move below such an aggregate: the grand-total row would escape it.
//
// Whole marks an aggregate MergeGlobalAggregates placed in several places,
// each reading some of its calls: pruning keeps every call, so that the
// copies stay the same subtree, computed once.
type Aggregate struct {
	Input       Node
	GroupBy     []Expr
	Aggs        []*AggCall
	Cols        Schema
	GrandTotals []int64
	Whole       bool
}

// Expand replicates each input row once per grouping set, under the
// Aggregate of a GROUP BY with GROUPING SETS, ROLLUP or CUBE. Its output is
// the input's columns (same IDs), then Cols: one column per key, holding
// Keys[i] in the copies for sets that contain i and NULL in the others,
// then the grouping id (int64), the index of the copy's set in Sets. The
// aggregate above groups by the key columns and the grouping id, so a NULL
// from the data and a NULL from a rolled-up key stay distinct groups.
type Expand struct {
	Input Node
	Keys  []Expr
	Sets  [][]int // indices into Keys
	Cols  Schema  // len(Keys) key columns, then the grouping id
}

// JoinKind is the kind of a join.
type JoinKind int

// Join kinds. Semi and Anti output only the left side's columns.
const (
	JoinInner JoinKind = iota
	JoinLeft
	JoinRight
	JoinFull
	JoinSemi
	JoinAnti
)

var joinKindNames = [...]string{"Inner", "Left", "Right", "Full", "Semi", "Anti"}

func (k JoinKind) String() string { return joinKindNames[k] }

// Join combines Left and Right on Cond (nil: cross product). For JoinAnti,
// NullAware gives NOT IN semantics: if the right side has a NULL key, or the
// left key is NULL and the right side is non-empty, no row qualifies.
type Join struct {
	Kind        JoinKind
	Left, Right Node
	Cond        Expr
	NullAware   bool
}

// SortKey is one ORDER BY key.
type SortKey struct {
	Expr       Expr
	Desc       bool
	NullsFirst bool
}

// Sort orders its input.
type Sort struct {
	Input Node
	Keys  []SortKey
}

// Limit skips Offset rows then passes at most Count (-1: no limit).
type Limit struct {
	Input  Node
	Offset int64
	Count  int64
}

// Union concatenates inputs (UNION ALL; UNION adds an Aggregate on top).
// Input columns are matched by position; Cols are fresh output columns.
type Union struct {
	Inputs []Node
	Cols   Schema
}

// Values is a literal table (VALUES, and the one-row input of SELECT
// without FROM).
type Values struct {
	Rows [][]Expr
	Cols Schema
}

func (n *Scan) Schema() Schema    { return n.Cols }
func (n *Filter) Schema() Schema  { return n.Input.Schema() }
func (n *Project) Schema() Schema { return n.Cols }
func (n *Aggregate) Schema() Schema {
	return n.Cols
}
func (n *Join) Schema() Schema {
	l := n.Left.Schema()
	if n.Kind == JoinSemi || n.Kind == JoinAnti {
		return l
	}
	r := n.Right.Schema()
	out := make(Schema, 0, len(l)+len(r))
	for _, c := range l {
		if n.Kind == JoinRight || n.Kind == JoinFull {
			c.Nullable = true
		}
		out = append(out, c)
	}
	for _, c := range r {
		if n.Kind == JoinLeft || n.Kind == JoinFull {
			c.Nullable = true
		}
		out = append(out, c)
	}
	return out
}
func (n *Expand) Schema() Schema {
	in := n.Input.Schema()
	return append(append(make(Schema, 0, len(in)+len(n.Cols)), in...), n.Cols...)
}
func (n *Sort) Schema() Schema   { return n.Input.Schema() }
func (n *Limit) Schema() Schema  { return n.Input.Schema() }
func (n *Union) Schema() Schema  { return n.Cols }
func (n *Values) Schema() Schema { return n.Cols }

func (n *Scan) Children() []Node      { return nil }
func (n *Filter) Children() []Node    { return []Node{n.Input} }
func (n *Project) Children() []Node   { return []Node{n.Input} }
func (n *Aggregate) Children() []Node { return []Node{n.Input} }
func (n *Join) Children() []Node      { return []Node{n.Left, n.Right} }
func (n *Expand) Children() []Node    { return []Node{n.Input} }
func (n *Sort) Children() []Node      { return []Node{n.Input} }
func (n *Limit) Children() []Node     { return []Node{n.Input} }
func (n *Union) Children() []Node     { return n.Inputs }
func (n *Values) Children() []Node    { return nil }

func (n *Scan) WithChildren([]Node) Node { return n }
func (n *Filter) WithChildren(c []Node) Node {
	o := *n
	o.Input = c[0]
	return &o
}
func (n *Project) WithChildren(c []Node) Node {
	o := *n
	o.Input = c[0]
	return &o
}
func (n *Aggregate) WithChildren(c []Node) Node {
	o := *n
	o.Input = c[0]
	return &o
}
func (n *Expand) WithChildren(c []Node) Node {
	o := *n
	o.Input = c[0]
	return &o
}
func (n *Join) WithChildren(c []Node) Node {
	o := *n
	o.Left, o.Right = c[0], c[1]
	return &o
}
func (n *Sort) WithChildren(c []Node) Node {
	o := *n
	o.Input = c[0]
	return &o
}
func (n *Limit) WithChildren(c []Node) Node {
	o := *n
	o.Input = c[0]
	return &o
}
func (n *Union) WithChildren(c []Node) Node {
	o := *n
	o.Inputs = append([]Node(nil), c...)
	return &o
}
func (n *Values) WithChildren([]Node) Node { return n }

func exprList(es []Expr) string {
	parts := make([]string, len(es))
	for i, e := range es {
		parts[i] = e.String()
	}
	return strings.Join(parts, ", ")
}

func (n *Scan) String() string {
	names := make([]string, len(n.Cols))
	for i, c := range n.Cols {
		names[i] = c.Name
	}
	s := fmt.Sprintf("Scan: %s [%s]", n.TableName, strings.Join(names, ", "))
	if len(n.Filters) > 0 {
		s += " filters=[" + exprList(n.Filters) + "]"
	}
	return s
}
func (n *Filter) String() string { return "Filter: " + n.Pred.String() }
func (n *Project) String() string {
	parts := make([]string, len(n.Exprs))
	for i, e := range n.Exprs {
		parts[i] = e.String()
		if r, ok := e.(*ColRef); !ok || r.Name != n.Cols[i].Name {
			parts[i] += " AS " + n.Cols[i].Name
		}
	}
	return "Project: " + strings.Join(parts, ", ")
}
func (n *Aggregate) String() string {
	aggs := make([]Expr, len(n.Aggs))
	for i, a := range n.Aggs {
		aggs[i] = a
	}
	s := "Aggregate: groupBy=[" + exprList(n.GroupBy) + "] aggs=[" + exprList(aggs) + "]"
	if len(n.GrandTotals) > 0 {
		s += fmt.Sprintf(" grandTotals=%v", n.GrandTotals)
	}
	return s
}
func (n *Expand) String() string {
	sets := make([]string, len(n.Sets))
	for i, set := range n.Sets {
		keys := make([]string, len(set))
		for j, k := range set {
			keys[j] = n.Keys[k].String()
		}
		sets[i] = "(" + strings.Join(keys, ", ") + ")"
	}
	return "Expand: sets=[" + strings.Join(sets, ", ") + "]"
}
func (n *Join) String() string {
	s := n.Kind.String() + " Join"
	if n.NullAware {
		s += " (null-aware)"
	}
	if n.Cond != nil {
		s += ": " + n.Cond.String()
	}
	return s
}
func (n *Sort) String() string {
	parts := make([]string, len(n.Keys))
	for i, k := range n.Keys {
		parts[i] = k.Expr.String()
		if k.Desc {
			parts[i] += " DESC"
		}
		if k.NullsFirst {
			parts[i] += " NULLS FIRST"
		}
	}
	return "Sort: " + strings.Join(parts, ", ")
}
func (n *Limit) String() string {
	return fmt.Sprintf("Limit: offset=%d count=%d", n.Offset, n.Count)
}
func (n *Union) String() string  { return "Union All" }
func (n *Values) String() string { return fmt.Sprintf("Values: %d rows", len(n.Rows)) }

// Format renders a plan tree, one node per line, children indented.
func Format(n Node) string {
	var b strings.Builder
	var rec func(n Node, depth int)
	rec = func(n Node, depth int) {
		b.WriteString(strings.Repeat("  ", depth))
		b.WriteString(n.String())
		b.WriteString("\n")
		for _, c := range n.Children() {
			rec(c, depth+1)
		}
	}
	rec(n, 0)
	return b.String()
}

// mapChildren returns n with f applied to each child (f recursing as it
// needs), or n itself when f changed none.
func mapChildren(n Node, f func(Node) Node) Node {
	kids := n.Children()
	if len(kids) == 0 {
		return n
	}
	nk := make([]Node, len(kids))
	changed := false
	for i, k := range kids {
		nk[i] = f(k)
		changed = changed || nk[i] != k
	}
	if !changed {
		return n
	}
	return n.WithChildren(nk)
}

// TransformUp rewrites a plan bottom-up: children first, then f on the node.
func TransformUp(n Node, f func(Node) Node) Node {
	kids := n.Children()
	if len(kids) > 0 {
		nk := make([]Node, len(kids))
		changed := false
		for i, k := range kids {
			nk[i] = TransformUp(k, f)
			changed = changed || nk[i] != k
		}
		if changed {
			n = n.WithChildren(nk)
		}
	}
	return f(n)
}

// Exprs returns the expressions a node holds directly (not its children's).
func Exprs(n Node) []Expr {
	switch n := n.(type) {
	case *Scan:
		return n.Filters
	case *Filter:
		return []Expr{n.Pred}
	case *Project:
		return n.Exprs
	case *Aggregate:
		out := append([]Expr(nil), n.GroupBy...)
		for _, a := range n.Aggs {
			out = append(out, a)
		}
		return out
	case *Expand:
		return n.Keys
	case *Join:
		if n.Cond != nil {
			return []Expr{n.Cond}
		}
	case *Sort:
		out := make([]Expr, len(n.Keys))
		for i, k := range n.Keys {
			out[i] = k.Expr
		}
		return out
	case *Window:
		out := make([]Expr, len(n.Calls))
		for i, c := range n.Calls {
			out[i] = c
		}
		return out
	case *Values:
		var out []Expr
		for _, r := range n.Rows {
			out = append(out, r...)
		}
		return out
	case *GenerateSeries:
		return []Expr{n.Start, n.Stop, n.Step}
	case *Unnest:
		return n.Args
	}
	return nil
}
