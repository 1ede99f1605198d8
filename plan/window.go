package plan

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
)

// WindowFunc names a window function. WinAggregate is an aggregate
// (WindowCall.Agg) computed over each row's window frame.
type WindowFunc int

// Window functions.
const (
	WinAggregate WindowFunc = iota
	WinRowNumber
	WinRank
	WinDenseRank
	WinPercentRank
	WinCumeDist
	WinNtile
	WinLag
	WinLead
	WinFirstValue
	WinLastValue
	WinNthValue
)

var windowFuncNames = [...]string{"aggregate", "row_number", "rank", "dense_rank", "percent_rank",
	"cume_dist", "ntile", "lag", "lead", "first_value", "last_value", "nth_value"}

func (f WindowFunc) String() string { return windowFuncNames[f] }

// UsesFrame reports whether the function's result depends on the window
// frame; the ranking functions and lag/lead look at the whole partition.
func (f WindowFunc) UsesFrame() bool {
	switch f {
	case WinAggregate, WinFirstValue, WinLastValue, WinNthValue:
		return true
	}
	return false
}

// BoundKind is the kind of one end of a window frame.
type BoundKind int

// Frame bound kinds.
const (
	BoundUnboundedPreceding BoundKind = iota
	BoundPreceding                    // Offset PRECEDING
	BoundCurrentRow
	BoundFollowing // Offset FOLLOWING
	BoundUnboundedFollowing
)

// FrameBound is one end of a window frame. Offset is set for BoundPreceding
// and BoundFollowing: a non-negative BIGINT for ROWS frames, and for RANGE
// frames a value of the ORDER BY key's type (for DATE keys: INT days).
type FrameBound struct {
	Kind   BoundKind
	Offset *Literal
}

func (b FrameBound) String() string {
	switch b.Kind {
	case BoundUnboundedPreceding:
		return "UNBOUNDED PRECEDING"
	case BoundPreceding:
		return b.Offset.String() + " PRECEDING"
	case BoundCurrentRow:
		return "CURRENT ROW"
	case BoundFollowing:
		return b.Offset.String() + " FOLLOWING"
	}
	return "UNBOUNDED FOLLOWING"
}

// WindowFrame is a window frame: ROWS (Rows) or RANGE, between Start and
// End. With RANGE, CURRENT ROW includes the current row's peers (rows equal
// on the ORDER BY keys; all rows of the partition without ORDER BY).
type WindowFrame struct {
	Rows       bool
	Start, End FrameBound
}

// DefaultFrame is the frame of a window without a frame clause: RANGE
// BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW, which is the whole partition
// when the window has no ORDER BY.
var DefaultFrame = WindowFrame{Start: FrameBound{Kind: BoundUnboundedPreceding}, End: FrameBound{Kind: BoundCurrentRow}}

func (f WindowFrame) String() string {
	mode := "RANGE"
	if f.Rows {
		mode = "ROWS"
	}
	return mode + " BETWEEN " + f.Start.String() + " AND " + f.End.String()
}

// WindowCall is a window function call; it appears only in Window.Calls.
// Args are the function's arguments: the aggregate's argument (none for
// count(*)); ntile's bucket count; lag/lead's value, offset and default;
// nth_value's value and position. Rows are grouped by PartitionBy, ordered
// by OrderBy within a partition, and aggregates and first/last/nth_value
// look at the rows of Frame.
type WindowCall struct {
	Func        WindowFunc
	Agg         AggFunc // WinAggregate only
	Args        []Expr
	PartitionBy []Expr
	OrderBy     []SortKey
	Frame       WindowFrame
	Typ         arrow.DataType
}

// Type implements Expr.
func (e *WindowCall) Type() arrow.DataType { return e.Typ }

// Children of a WindowCall are its Args, then PartitionBy, then the OrderBy
// expressions.
func (e *WindowCall) Children() []Expr {
	out := make([]Expr, 0, len(e.Args)+len(e.PartitionBy)+len(e.OrderBy))
	out = append(out, e.Args...)
	out = append(out, e.PartitionBy...)
	for _, k := range e.OrderBy {
		out = append(out, k.Expr)
	}
	return out
}

// WithChildren implements Expr.
func (e *WindowCall) WithChildren(c []Expr) Expr {
	out := *e
	na, np := len(e.Args), len(e.PartitionBy)
	out.Args = append([]Expr(nil), c[:na]...)
	out.PartitionBy = append([]Expr(nil), c[na:na+np]...)
	out.OrderBy = append([]SortKey(nil), e.OrderBy...)
	for i := range out.OrderBy {
		out.OrderBy[i].Expr = c[na+np+i]
	}
	return &out
}

// FuncString renders the function and its arguments, without the window.
func (e *WindowCall) FuncString() string {
	if e.Func == WinAggregate {
		if e.Agg == AggCountStar {
			return "count(*)"
		}
		return e.Agg.String() + "(" + exprList(e.Args) + ")"
	}
	return e.Func.String() + "(" + exprList(e.Args) + ")"
}

// SpecString renders the window: partitioning, ordering and frame.
func (e *WindowCall) SpecString() string {
	var parts []string
	if len(e.PartitionBy) > 0 {
		parts = append(parts, "PARTITION BY "+exprList(e.PartitionBy))
	}
	if len(e.OrderBy) > 0 {
		parts = append(parts, "ORDER BY "+sortKeyList(e.OrderBy))
	}
	if e.Func.UsesFrame() && e.Frame != DefaultFrame {
		parts = append(parts, e.Frame.String())
	}
	return strings.Join(parts, " ")
}

func (e *WindowCall) String() string {
	return e.FuncString() + " OVER (" + e.SpecString() + ")"
}

// Window computes window functions: its output is every input column, in
// order, followed by one column per call (Cols[i] is the result of
// Calls[i]). Calls may use different windows. Rows are not filtered nor
// reordered in any specified way.
type Window struct {
	Input Node
	Calls []*WindowCall
	Cols  Schema
}

// Schema implements Node.
func (n *Window) Schema() Schema {
	in := n.Input.Schema()
	out := make(Schema, 0, len(in)+len(n.Cols))
	return append(append(out, in...), n.Cols...)
}

// Children implements Node.
func (n *Window) Children() []Node { return []Node{n.Input} }

// WithChildren implements Node.
func (n *Window) WithChildren(c []Node) Node {
	o := *n
	o.Input = c[0]
	return &o
}

func (n *Window) String() string {
	parts := make([]string, len(n.Calls))
	for i, c := range n.Calls {
		parts[i] = fmt.Sprintf("%s AS %s", c, n.Cols[i].Name)
	}
	return "Window: " + strings.Join(parts, ", ")
}

// partitionKeyCols returns the columns every call of w partitions by (as a
// plain column reference): a predicate on those alone keeps or drops whole
// partitions, so it can be evaluated below the window.
func partitionKeyCols(w *Window) ColumnSet {
	var out ColumnSet
	for _, c := range w.Calls {
		s := ColumnSet{}
		for _, p := range c.PartitionBy {
			if r, ok := p.(*ColRef); ok {
				s[r.ID] = struct{}{}
			}
		}
		if out == nil {
			out = s
			continue
		}
		for id := range out {
			if !s.Has(id) {
				delete(out, id)
			}
		}
	}
	return out
}
