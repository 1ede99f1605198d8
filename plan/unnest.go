package plan

import (
	"fmt"
	"strings"
)

// Unnest expands arrays in the select list (SELECT x, unnest(a) ...): for
// each input row, one output row per element, the input's columns
// repeated. Several arrays are expanded in lockstep, the shorter ones
// padded with NULLs, as PostgreSQL does with set-returning functions in
// the select list; a row whose arrays are all NULL or empty yields no
// rows. The output is the input's columns but those in Drop, then one
// column per array (Cols[i], of Args[i]'s element type). Column pruning
// fills Drop, so that an input column only an array reads (the array
// itself, often) is not repeated on every element's row.
type Unnest struct {
	Input Node
	Args  []Expr
	Cols  Schema
	Drop  ColumnSet
}

// Schema implements Node.
func (n *Unnest) Schema() Schema {
	in := n.Input.Schema()
	out := make(Schema, 0, len(in)+len(n.Cols))
	for _, c := range in {
		if !n.Drop.Has(c.ID) {
			out = append(out, c)
		}
	}
	return append(out, n.Cols...)
}

// Children implements Node.
func (n *Unnest) Children() []Node { return []Node{n.Input} }

// WithChildren implements Node.
func (n *Unnest) WithChildren(c []Node) Node {
	o := *n
	o.Input = c[0]
	return &o
}

func (n *Unnest) String() string {
	parts := make([]string, len(n.Args))
	for i, a := range n.Args {
		parts[i] = fmt.Sprintf("unnest(%s) AS %s", a, n.Cols[i].Name)
	}
	return "Unnest: " + strings.Join(parts, ", ")
}
