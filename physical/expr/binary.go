package expr

import (
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
	out, _, _, err := b.evalBound(batch, mem)
	return out, err
}

// evalBound is Eval with the result's magnitude bound (EvalBound).
func (b *Binary) evalBound(batch arrow.RecordBatch, mem memory.Allocator) (arrow.Array, uint64, bool, error) {
	switch b.Op {
	case plan.OpAnd, plan.OpOr:
		out, err := evalLogic(b, batch, mem)
		return out, 0, false, err
	}
	l, err := evalOperand(b.L, batch, mem)
	if err != nil {
		return nil, 0, false, err
	}
	defer l.release()
	r, err := evalOperand(b.R, batch, mem)
	if err != nil {
		return nil, 0, false, err
	}
	defer r.release()
	n := numRows(batch)
	if l.allNull() || r.allNull() {
		return nullArray(b.Type, n, mem), 0, false, nil
	}
	var out arrow.Array
	var bound uint64
	var bounded bool
	switch {
	case b.Op.IsComparison():
		out, err = compare(b.Op, l, r, n, mem)
	case b.Op == plan.OpConcat:
		out, err = concat(l, r, n, mem)
	default:
		out, bound, bounded, err = arith(b.Op, l, r, b.Type, n, mem)
	}
	if err != nil {
		return nil, 0, false, inExpr(b, err)
	}
	return out, bound, bounded, nil
}

var _ Expr = (*Binary)(nil)

// Conjuncts splits e at its top-level ANDs.
func Conjuncts(e Expr) []Expr {
	if b, ok := e.(*Binary); ok && b.Op == plan.OpAnd {
		return append(Conjuncts(b.L), Conjuncts(b.R)...)
	}
	return []Expr{e}
}
