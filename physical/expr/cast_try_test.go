package expr

import (
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/plan"
)

// TestTryCast checks that try_cast gives NULL for exactly the values that
// do not convert (bad text, numeric overflow) where a plain cast fails.
func TestTryCast(t *testing.T) {
	diff := bin(plan.OpSub, col("i64"), i64(15)) // -5 5 15 NULL
	runCases(t, []exprCase{
		{"text to int", &plan.Cast{X: col("s"), To: plan.Int32, Try: true}, "NULL NULL NULL NULL", ""},
		{"text to int fails", cast(col("s"), plan.Int32), "", "invalid input syntax"},
		{"overflow", &plan.Cast{X: diff, To: plan.Decimal(1, 0), Try: true}, "-5 5 NULL NULL", ""},
		{"overflow fails", cast(diff, plan.Decimal(1, 0)), "", "does not fit"},
		{"converts", &plan.Cast{X: col("i32"), To: plan.Utf8, Try: true}, "1 2 NULL -4", ""},
	})
}

// TestTryCastManyRows casts 1000 strings with bad values scattered among
// them, on the whole array and on a slice of it, and compares every row
// with converting each value alone.
func TestTryCastManyRows(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	b := array.NewStringBuilder(mem)
	const n = 1000
	for i := range n {
		switch {
		case i%97 == 3:
			b.Append("bad" + strconv.Itoa(i))
		case i%89 == 5:
			b.Append("99999999999") // out of INTEGER's range
		case i%50 == 7:
			b.AppendNull()
		default:
			b.Append(strconv.Itoa(i - 500))
		}
	}
	in := b.NewArray()
	b.Release()
	defer in.Release()
	for _, r := range [][2]int64{{0, n}, {3, n - 11}, {5, 6}, {3, 4}} {
		a := array.NewSlice(in, r[0], r[1])
		out, err := tryCastArray(a, plan.Int32, mem)
		if err != nil {
			t.Fatal(err)
		}
		got := out.(*array.Int32)
		s := a.(*array.String)
		for i := 0; i < a.Len(); i++ {
			v, perr := strconv.ParseInt(s.Value(i), 10, 32)
			wantNull := s.IsNull(i) || perr != nil
			if got.IsNull(i) != wantNull || !wantNull && int64(got.Value(i)) != v {
				t.Fatalf("slice %v row %d (%q): got null=%v %d", r, i, s.Value(i), got.IsNull(i), got.Value(i))
			}
		}
		if !arrow.TypeEqual(out.DataType(), plan.Int32) || out.Len() != a.Len() {
			t.Fatalf("slice %v: %s of %d rows", r, out.DataType(), out.Len())
		}
		out.Release()
		a.Release()
	}
}
