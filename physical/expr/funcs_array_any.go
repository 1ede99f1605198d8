package expr

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/plan"
)

// x op ANY (array) and x op ALL (array): array_any(x, a, op) and
// array_all(x, a, op), op one of = <> < <= > >= as a text constant.

func init() {
	for _, name := range []string{"array_any", "array_all"} {
		funcArity[name] = [2]int{3, 3}
		opFuncs[name] = arrayQuantified
		nonStrict[name] = true
	}
}

// quantifiedOps maps the operator text of array_any/array_all to the
// comparison.
var quantifiedOps = map[string]plan.BinaryOp{
	"=": plan.OpEq, "<>": plan.OpNotEq, "<": plan.OpLt, "<=": plan.OpLtEq, ">": plan.OpGt, ">=": plan.OpGtEq,
}

// arrayQuantified compares x with every element of its row's array at
// once (x repeated per element, one run of the comparison kernel), then
// folds each row's results with three-valued logic, as PostgreSQL: ANY is
// true when some comparison is, else NULL when some is NULL, else false
// (an empty array gives false); ALL is false when some comparison is,
// else NULL when some is NULL, else true (an empty array gives true). A
// NULL array gives NULL.
func arrayQuantified(e *Func, ops []operand, n int, mem memory.Allocator) (arrow.Array, error) {
	opText, ok := ops[2].lit.Val.(string)
	op, known := quantifiedOps[opText]
	if !ops[2].isScalar() || !ok || !known {
		return nil, fmt.Errorf("%s: operator must be one of = <> < <= > >=", e.Name)
	}
	all := e.Name == "array_all"
	if n == 0 {
		return array.MakeArrayOfNull(mem, plan.Bool, 0), nil
	}
	l, err := listOperand(ops[1], n, mem)
	if err != nil {
		return nil, err
	}
	defer l.Release()
	off := l.ValueOffsets
	first, _ := off(0)
	_, last := off(n - 1)
	m := int(last - first)
	var cmp arrow.Array
	if m > 0 && !ops[0].isNullScalar() {
		elems := array.NewSlice(l.ListValues(), first, last)
		defer elems.Release()
		x, err := ops[0].materialize(n, mem)
		if err != nil {
			return nil, err
		}
		defer x.Release()
		idx := make([]int32, 0, m)
		for i := range n {
			lo, hi := off(i)
			for range hi - lo {
				idx = append(idx, int32(i))
			}
		}
		ib := array.NewInt32Builder(mem)
		ib.AppendValues(idx, nil)
		ia := ib.NewArray()
		ib.Release()
		defer ia.Release()
		xs, err := compute.TakeArray(compute.WithAllocator(context.Background(), mem), x, ia)
		if err != nil {
			return nil, err
		}
		defer xs.Release()
		// The kernel takes no all-NULL operand; then every comparison
		// is NULL.
		if xs.NullN() < m && elems.NullN() < m {
			if cmp, err = compare(op, operand{arr: xs}, operand{arr: elems}, m, mem); err != nil {
				return nil, err
			}
			defer cmp.Release()
		}
	}
	b := array.NewBooleanBuilder(mem)
	defer b.Release()
	b.Reserve(n)
	var bits []byte
	cmpValid := validity{bits: allZero(max(m, 1))}
	if cmp != nil {
		bits = cmp.Data().Buffers()[1].Bytes()
		cmpValid = validityOf(cmp)
	}
	xNull := ops[0].isNullScalar()
	var xv validity
	if !ops[0].isScalar() {
		xv = validityOf(ops[0].arr)
	}
	for i := range n {
		if l.IsNull(i) {
			b.AppendNull()
			continue
		}
		lo, hi := off(i)
		if lo == hi {
			b.Append(all)
			continue
		}
		if xNull || !xv.valid(i) {
			b.AppendNull()
			continue
		}
		decided, sawNull := false, false
		for k := int(lo - first); k < int(hi-first); k++ {
			if !cmpValid.valid(k) {
				sawNull = true
				continue
			}
			if bitutil.BitIsSet(bits, cmp.Data().Offset()+k) != all {
				decided = true
				break
			}
		}
		switch {
		case decided:
			b.Append(!all)
		case sawNull:
			b.AppendNull()
		default:
			b.Append(all)
		}
	}
	return b.NewArray(), nil
}
