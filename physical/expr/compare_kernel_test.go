package expr

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/physical/internal/testutil"
	"sluice/plan"
)

// checkKernel compares cmpKernel with a value-by-value evaluation for every
// operator, against a constant and against a column, at lengths that do
// and do not fill whole bytes.
func checkKernel[T int32 | int64 | float64](t *testing.T, name string, gen func() T) {
	for _, n := range []int{0, 1, 7, 8, 9, 16, 23, 64, 1001} {
		a, b := make([]T, n), make([]T, n)
		for i := range a {
			a[i], b[i] = gen(), gen()
		}
		c := gen()
		for _, op := range testutil.CompareOps {
			out := make([]byte, bitutil.BytesForBits(int64(n)))
			cmpKernel(op, a, []T{c}, 0, out)
			for i := range a {
				if got, want := bitutil.BitIsSet(out, i), testutil.Compare(op, a[i], c); got != want {
					t.Fatalf("%s n=%d %v vs constant: row %d (%v, %v) = %v, want %v", name, n, op, i, a[i], c, got, want)
				}
			}
			out = make([]byte, bitutil.BytesForBits(int64(n)))
			cmpKernel(op, a, b, 1, out)
			for i := range a {
				if got, want := bitutil.BitIsSet(out, i), testutil.Compare(op, a[i], b[i]); got != want {
					t.Fatalf("%s n=%d %v vs column: row %d (%v, %v) = %v, want %v", name, n, op, i, a[i], b[i], got, want)
				}
			}
		}
	}
}

func TestCmpKernel(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	checkKernel(t, "int32", func() int32 { return int32(r.IntN(5)) - 2 })
	checkKernel(t, "int64", func() int64 { return int64(r.IntN(5)) - 2 })
	checkKernel(t, "float64", func() float64 {
		if r.IntN(7) == 0 {
			return math.NaN()
		}
		return float64(r.IntN(5)) - 2
	})
}

// TestCompareDecimalConstantChunks: a decimal column compared with a
// constant through the clamped integer kernel, over more rows than one
// chunk, including values outside the int64 range on both sides.
func TestCompareDecimalConstantChunks(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	const n = 1300
	vals := make([]decimal128.Num, n)
	for i := range vals {
		switch r.IntN(10) {
		case 0:
			vals[i] = decimal128.New(1, 5) // above int64
		case 1:
			vals[i] = decimal128.New(-2, 5) // below int64
		default:
			vals[i] = decimal128.FromI64(int64(r.IntN(9)) - 4)
		}
	}
	c := decimal128.FromI64(1)
	for _, op := range testutil.CompareOps {
		out := make([]byte, bitutil.BytesForBits(n))
		l := operand{arr: decArray(vals)}
		rr := operand{lit: plan.Literal{Typ: plan.Decimal(20, 0), Val: c}}
		if err := compareDecimal(op, l, rr, out); err != nil {
			t.Fatal(err)
		}
		tbl := cmpTable(op)
		for i, v := range vals {
			if got, want := bitutil.BitIsSet(out, i), tbl[cmp128(v, c)+1]; got != want {
				t.Fatalf("%v row %d (%v): got %v, want %v", op, i, v, got, want)
			}
		}
	}
}

func decArray(vals []decimal128.Num) arrow.Array {
	b := array.NewDecimal128Builder(memory.NewGoAllocator(), plan.Decimal(38, 0).(*arrow.Decimal128Type))
	defer b.Release()
	b.AppendValues(vals, nil)
	return b.NewArray()
}
