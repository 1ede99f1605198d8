package plan

import "fmt"

// RecursiveCTE is WITH RECURSIVE name AS (Base UNION [ALL] Recursive), as
// PostgreSQL evaluates it: Base's rows are output and become the working
// table; then, as long as the working table has rows, Recursive is
// evaluated with its WorkTable leaf reading the working table, and its
// rows are output and become the next working table. With Distinct
// (UNION), a row equal to one already output is dropped before either.
// Base and Recursive are matched to Cols by position; Recursive's WorkTable
// (the one with this WorkID) has columns of its own.
type RecursiveCTE struct {
	Name      string
	Base      Node
	Recursive Node
	Distinct  bool
	WorkID    int64
	Cols      Schema
}

// WorkTable reads the working table of the RecursiveCTE with the same
// WorkID: the rows its previous iteration produced.
type WorkTable struct {
	Name   string
	WorkID int64
	Cols   Schema
}

func (n *RecursiveCTE) Schema() Schema   { return n.Cols }
func (n *RecursiveCTE) Children() []Node { return []Node{n.Base, n.Recursive} }
func (n *RecursiveCTE) WithChildren(c []Node) Node {
	o := *n
	o.Base, o.Recursive = c[0], c[1]
	return &o
}
func (n *RecursiveCTE) String() string {
	op := "UNION ALL"
	if n.Distinct {
		op = "UNION"
	}
	return fmt.Sprintf("RecursiveCTE: %s (%s)", n.Name, op)
}

func (n *WorkTable) Schema() Schema             { return n.Cols }
func (n *WorkTable) Children() []Node           { return nil }
func (n *WorkTable) WithChildren(c []Node) Node { return n }
func (n *WorkTable) String() string             { return "WorkTable: " + n.Name }

// recursiveIterationsGuess is how many iterations the estimates assume a
// recursive CTE runs (the row count it reaches is unknown until it runs).
const recursiveIterationsGuess = 10
