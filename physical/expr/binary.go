package expr

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/plan"
)

// Binary applies Op to L and R: arithmetic (+ - * / %), comparison
// (= <> < <= > >=), logic (AND, OR, three-valued) or string concatenation.
type Binary struct {
	Op   plan.BinaryOp
	L, R Expr
	Type arrow.DataType
}

// DataType implements Expr.
func (b *Binary) DataType() arrow.DataType { return b.Type }

func (b *Binary) String() string {
	return "(" + b.L.String() + " " + b.Op.String() + " " + b.R.String() + ")"
}

// Eval implements Expr.
func (b *Binary) Eval(batch arrow.RecordBatch, mem memory.Allocator) (arrow.Array, error) {
	switch b.Op {
	case plan.OpAnd, plan.OpOr:
		return evalLogic(b, batch, mem)
	}
	l, err := evalOperand(b.L, batch, mem)
	if err != nil {
		return nil, err
	}
	defer l.release()
	r, err := evalOperand(b.R, batch, mem)
	if err != nil {
		return nil, err
	}
	defer r.release()
	n := numRows(batch)
	if l.allNull() || r.allNull() {
		return nullArray(b.Type, n, mem), nil
	}
	var out arrow.Array
	switch {
	case b.Op.IsComparison():
		out, err = compare(b.Op, l, r, n, mem)
	case b.Op == plan.OpConcat:
		out, err = concat(l, r, n, mem)
	default:
		out, err = arith(b.Op, l, r, b.Type, n, mem)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", b, err)
	}
	return out, nil
}

var _ Expr = (*Binary)(nil)

// Conjuncts splits e at its top-level ANDs.
func Conjuncts(e Expr) []Expr {
	if b, ok := e.(*Binary); ok && b.Op == plan.OpAnd {
		return append(Conjuncts(b.L), Conjuncts(b.R)...)
	}
	return []Expr{e}
}
