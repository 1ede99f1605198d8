package plan

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
)

// GenerateSeries is the table function generate_series(start, stop[, step])
// in FROM: the values start, start+step, ... up to stop (down to stop for a
// negative step), in one column. Start, Stop and Step are expressions
// without columns, evaluated once when the series is produced. The column
// is INT or BIGINT with an integer Step, or TIMESTAMP with an INTERVAL Step.
type GenerateSeries struct {
	Start, Stop, Step Expr
	Col               Column
}

// Schema implements Node.
func (n *GenerateSeries) Schema() Schema { return Schema{n.Col} }

// Children implements Node.
func (n *GenerateSeries) Children() []Node { return nil }

// WithChildren implements Node.
func (n *GenerateSeries) WithChildren([]Node) Node { return n }

func (n *GenerateSeries) String() string {
	return fmt.Sprintf("GenerateSeries: %s, %s, %s AS %s", n.Start, n.Stop, n.Step, n.Col.Name)
}

// estimateRows is the series length for constant integer bounds, else a
// guess.
func (n *GenerateSeries) estimateRows() float64 {
	a, ok1 := intLit(n.Start)
	b, ok2 := intLit(n.Stop)
	s, ok3 := intLit(n.Step)
	if !ok1 || !ok2 || !ok3 || s == 0 {
		return 1000
	}
	if c := (float64(b) - float64(a)) / float64(s); c >= 0 {
		return c + 1
	}
	return 0
}

func intLit(e Expr) (int64, bool) {
	l, ok := e.(*Literal)
	if !ok || l.Val == nil {
		return 0, false
	}
	switch l.Typ.ID() {
	case arrow.INT64:
		v, ok := l.Val.(int64)
		return v, ok
	case arrow.INT32:
		v, ok := l.Val.(int32)
		return int64(v), ok
	}
	return 0, false
}
