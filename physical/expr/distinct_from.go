package expr

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/plan"
)

// DistinctFrom is L IS DISTINCT FROM R, or L IS NOT DISTINCT FROM R when
// Negated. Two NULLs are not distinct, a NULL and a value are, two values
// are distinct when they are not equal; the result is never NULL. L and R
// have the same type (the binder casts them).
type DistinctFrom struct {
	L, R    Expr
	Negated bool
}

// DataType implements Expr.
func (e *DistinctFrom) DataType() arrow.DataType { return plan.Bool }

func (e *DistinctFrom) String() string {
	if e.Negated {
		return "(" + e.L.String() + " IS NOT DISTINCT FROM " + e.R.String() + ")"
	}
	return "(" + e.L.String() + " IS DISTINCT FROM " + e.R.String() + ")"
}

// Eval implements Expr. The values are compared with the = kernel; the
// NULL rows, which that leaves NULL, are then decided by the operands'
// validity alone.
func (e *DistinctFrom) Eval(batch arrow.RecordBatch, mem memory.Allocator) (arrow.Array, error) {
	n := numRows(batch)
	l, err := evalOperand(e.L, batch, mem)
	if err != nil {
		return nil, err
	}
	defer l.release()
	r, err := evalOperand(e.R, batch, mem)
	if err != nil {
		return nil, err
	}
	defer r.release()
	var eqBits []byte
	eqOff := 0
	if !l.allNull() && !r.allNull() {
		eq, err := compare(plan.OpEq, l, r, n, mem)
		if err != nil {
			return nil, inExpr(e, err)
		}
		defer eq.Release()
		eqBits, eqOff = boolBits(eq)
	}
	lnull, rnull := nullTest(l), nullTest(r)
	buf, out := allocBitmap(mem, n)
	for i := 0; i < n; i++ {
		ln, rn := lnull(i), rnull(i)
		same := ln && rn
		if !ln && !rn {
			same = bitutil.BitIsSet(eqBits, eqOff+i)
		}
		if same == e.Negated {
			bitutil.SetBit(out, i)
		}
	}
	return makeArray(plan.Bool, n, nil, 0, buf), nil
}

// nullTest returns a function reporting whether row i of o is NULL.
func nullTest(o operand) func(int) bool {
	if o.isScalar() {
		null := o.isNullScalar()
		return func(int) bool { return null }
	}
	v := validityOf(o.arr)
	return func(i int) bool { return !v.valid(i) }
}

var _ Expr = (*DistinctFrom)(nil)

// checkDistinctFrom refuses operands the = kernel cannot compare, at
// compile or decode time rather than on the first batch.
func checkDistinctFrom(l, r Expr) error {
	lt, rt := l.DataType(), r.DataType()
	if lt.ID() == arrow.NULL || rt.ID() == arrow.NULL {
		return nil
	}
	if !arrow.TypeEqual(lt, rt) && !(plan.IsNumeric(lt) && plan.IsNumeric(rt)) {
		return fmt.Errorf("IS DISTINCT FROM: cannot compare %s with %s", plan.TypeName(lt), plan.TypeName(rt))
	}
	if plan.IsArray(lt) || lt.ID() == arrow.INTERVAL_MONTH_DAY_NANO {
		return fmt.Errorf("IS DISTINCT FROM: cannot compare values of type %s", plan.TypeName(lt))
	}
	return nil
}
