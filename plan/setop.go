package plan

import "fmt"

// SetOpKind is INTERSECT or EXCEPT.
type SetOpKind int

// Set operation kinds (UNION is a Union, with an Aggregate for DISTINCT).
const (
	SetIntersect SetOpKind = iota
	SetExcept
)

func (k SetOpKind) String() string {
	if k == SetExcept {
		return "Except"
	}
	return "Intersect"
}

// SetOp is Left INTERSECT or EXCEPT Right. Rows are compared as a whole,
// NULLs equal to NULLs (IS NOT DISTINCT FROM). Without All the result has
// no duplicates; with All a row occurring m times on the left and n times
// on the right occurs min(m, n) times (INTERSECT ALL) or max(m-n, 0) times
// (EXCEPT ALL). Both inputs have Cols' types, matched by position; Cols
// are fresh output columns.
type SetOp struct {
	Kind        SetOpKind
	All         bool
	Left, Right Node
	Cols        Schema
}

// Schema implements Node.
func (n *SetOp) Schema() Schema { return n.Cols }

// Children implements Node.
func (n *SetOp) Children() []Node { return []Node{n.Left, n.Right} }

// WithChildren implements Node.
func (n *SetOp) WithChildren(c []Node) Node {
	o := *n
	o.Left, o.Right = c[0], c[1]
	return &o
}

func (n *SetOp) String() string {
	s := n.Kind.String()
	if n.All {
		s += " All"
	}
	return fmt.Sprintf("%s: %s", s, exprList(colRefs(n.Cols)))
}

func colRefs(s Schema) []Expr {
	out := make([]Expr, len(s))
	for i, c := range s {
		out[i] = c.Ref()
	}
	return out
}
