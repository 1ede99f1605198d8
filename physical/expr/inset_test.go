package expr

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/plan"
)

// TestInListSetMatchesThreeValuedLogic checks the hash-set IN against SQL's
// rules on random data: true on a match, NULL for a NULL value or (with no
// match) a NULL in the list, false otherwise; NOT IN negates true and
// false. The list is sometimes not all constants (a column among the
// items), which takes the comparison path, so both paths are held to the
// same answers.
func TestInListSetMatchesThreeValuedLogic(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	for round := range 300 {
		n := 1 + rng.IntN(64)
		typ := []arrow.DataType{plan.Int64, plan.Int32, plan.Utf8, plan.Decimal(12, 2), plan.Date32}[round%5]
		val := func() any {
			k := rng.IntN(12)
			switch typ.ID() {
			case arrow.INT64:
				return int64(k)
			case arrow.INT32, arrow.DATE32:
				return int32(k)
			case arrow.STRING:
				return fmt.Sprintf("s%d", k)
			}
			return decimal128.FromI64(int64(k) * 100)
		}
		xs := make([]any, n)
		for i := range xs {
			if rng.IntN(6) > 0 {
				xs[i] = val()
			}
		}
		batch := oneColumn(t, mem, typ, xs)
		var list []plan.Expr
		var items []any
		for range 1 + rng.IntN(10) {
			if rng.IntN(8) == 0 {
				list = append(list, &plan.Literal{Typ: typ})
				items = append(items, nil)
				continue
			}
			v := val()
			list = append(list, &plan.Literal{Typ: typ, Val: v})
			items = append(items, v)
		}
		colRef := &plan.ColRef{ID: 1, Name: "x", Typ: typ}
		if rng.IntN(4) == 0 {
			list = append(list, colRef) // x IN (..., x): not all constants
		}
		negated := rng.IntN(2) == 0
		e, err := Compile(&plan.InList{X: colRef, List: list, Negated: negated}, plan.Schema{{ID: 1, Name: "x", Type: typ, Nullable: true}})
		if err != nil {
			t.Fatal(err)
		}
		out, err := e.Eval(batch, mem)
		if err != nil {
			t.Fatal(err)
		}
		got := out.(*array.Boolean)
		selfItem := len(list) > len(items)
		for i, x := range xs {
			var want any // nil: NULL
			if x != nil {
				match, sawNull := selfItem, false
				for _, it := range items {
					if it == nil {
						sawNull = true
					} else if it == x {
						match = true
					}
				}
				switch {
				case match:
					want = !negated
				case !sawNull:
					want = negated
				}
			}
			var have any
			if got.IsValid(i) {
				have = got.Value(i)
			}
			if have != want {
				t.Fatalf("round %d (%s): %v %s row %d: got %v, want %v", round, typ, x, e, i, have, want)
			}
		}
		out.Release()
		batch.Release()
	}
}

// oneColumn builds a batch of one nullable column x of type typ.
func oneColumn(t *testing.T, mem memory.Allocator, typ arrow.DataType, vals []any) arrow.RecordBatch {
	t.Helper()
	b := array.NewBuilder(mem, typ)
	defer b.Release()
	for _, v := range vals {
		if v == nil {
			b.AppendNull()
			continue
		}
		switch bb := b.(type) {
		case *array.Int64Builder:
			bb.Append(v.(int64))
		case *array.Int32Builder:
			bb.Append(v.(int32))
		case *array.Date32Builder:
			bb.Append(arrow.Date32(v.(int32)))
		case *array.StringBuilder:
			bb.Append(v.(string))
		case *array.Decimal128Builder:
			bb.Append(v.(decimal128.Num))
		}
	}
	arr := b.NewArray()
	defer arr.Release()
	schema := arrow.NewSchema([]arrow.Field{{Name: "x", Type: typ, Nullable: true}}, nil)
	return array.NewRecordBatch(schema, []arrow.Array{arr}, int64(len(vals)))
}
