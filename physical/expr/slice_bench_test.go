package expr

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/plan"
)

// TestSlicedBatch checks that kernels honour array offsets: evaluating on
// a slice of the batch equals slicing the full result.
func TestSlicedBatch(t *testing.T) {
	exprs := []plan.Expr{
		bin(plan.OpAdd, col("i32"), i32(1)),
		bin(plan.OpLt, col("i64"), i64(25)),
		bin(plan.OpMul, col("d1"), col("d2")),
		bin(plan.OpAnd, col("b"), bin(plan.OpGt, col("f64"), f64(-3))),
		like(col("s"), str("%l%"), false),
		bin(plan.OpEq, col("s"), str("")),
		&plan.IsNull{X: col("d2")},
		fn("substring", plan.Utf8, col("s"), i32(2)),
		cast(col("d4"), plan.Decimal(10, 1)),
		&plan.Func{Name: "coalesce", Args: []plan.Expr{col("i64"), i64(0)}, Typ: plan.Int64},
		bin(plan.OpAdd, col("dt"), interval(1, 0)),
	}
	for _, e := range exprs {
		t.Run(e.String(), func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			batch := testBatch(t, mem)
			defer batch.Release()
			pe, err := Compile(e, testSchema())
			if err != nil {
				t.Fatal(err)
			}
			full, err := pe.Eval(batch, mem)
			if err != nil {
				t.Fatal(err)
			}
			defer full.Release()
			for lo := 0; lo < 4; lo++ {
				sub := batch.NewSlice(int64(lo), 4)
				got, err := pe.Eval(sub, mem)
				sub.Release()
				if err != nil {
					t.Fatal(err)
				}
				want := array.NewSlice(full, int64(lo), 4)
				if !array.Equal(got, want) {
					t.Errorf("slice %d: got %s, want %s", lo, got, want)
				}
				got.Release()
				want.Release()
			}
		})
	}
}

// benchBatch is a 1M-row batch with a DECIMAL(15,2) price, a
// DECIMAL(15,2) discount and a date column, like TPC-H lineitem.
func benchBatch(b *testing.B, mem memory.Allocator) (arrow.RecordBatch, plan.Schema) {
	const n = 1 << 20
	dt := plan.Decimal(15, 2)
	pb := array.NewDecimal128Builder(mem, dt.(*arrow.Decimal128Type))
	db := array.NewDecimal128Builder(mem, dt.(*arrow.Decimal128Type))
	sb := array.NewDate32Builder(mem)
	for i := 0; i < n; i++ {
		pb.Append(decimal128.FromI64(int64(100000 + i*37%9000000)))
		db.Append(decimal128.FromI64(int64(i % 11)))
		sb.Append(arrow.Date32(8000 + i%2500))
	}
	arrs := []arrow.Array{pb.NewArray(), db.NewArray(), sb.NewArray()}
	pb.Release()
	db.Release()
	sb.Release()
	schema := arrow.NewSchema([]arrow.Field{{Name: "price", Type: dt}, {Name: "disc", Type: dt},
		{Name: "ship", Type: plan.Date32}}, nil)
	rb := array.NewRecordBatch(schema, arrs, n)
	for _, a := range arrs {
		a.Release()
	}
	ps := plan.Schema{{ID: 1, Name: "price", Type: dt}, {ID: 2, Name: "disc", Type: dt}, {ID: 3, Name: "ship", Type: plan.Date32}}
	return rb, ps
}

func benchExpr(b *testing.B, e plan.Expr) {
	mem := memory.NewGoAllocator()
	batch, schema := benchBatch(b, mem)
	defer batch.Release()
	pe, err := Compile(e, schema)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		out, err := pe.Eval(batch, mem)
		if err != nil {
			b.Fatal(err)
		}
		out.Release()
	}
	b.SetBytes(batch.NumRows())
}

var (
	benchPrice = &plan.ColRef{ID: 1, Name: "price", Typ: plan.Decimal(15, 2)}
	benchDisc  = &plan.ColRef{ID: 2, Name: "disc", Typ: plan.Decimal(15, 2)}
	benchShip  = &plan.ColRef{ID: 3, Name: "ship", Typ: plan.Date32}
)

// BenchmarkFilterDate is shipdate <= DATE '1998-09-02' over 1M rows.
func BenchmarkFilterDate(b *testing.B) {
	benchExpr(b, bin(plan.OpLtEq, benchShip, date("1998-09-02")))
}

// BenchmarkFilterDecimalBetween is disc >= 0.05 AND disc <= 0.07.
func BenchmarkFilterDecimalBetween(b *testing.B) {
	benchExpr(b, bin(plan.OpAnd, bin(plan.OpGtEq, benchDisc, dec("0.05", 3, 2)),
		bin(plan.OpLtEq, benchDisc, dec("0.07", 3, 2))))
}

// BenchmarkDecimalMul is price * (1 - disc) over 1M rows.
func BenchmarkDecimalMul(b *testing.B) {
	benchExpr(b, bin(plan.OpMul, benchPrice, bin(plan.OpSub, dec("1", 1, 0), benchDisc)))
}

// BenchmarkCompareFloats is x > 0.5 over 1M doubles in PostgreSQL's order
// (NaN above every number).
func BenchmarkCompareFloats(b *testing.B) {
	const n = 1 << 20
	a := make([]float64, n)
	for i := range a {
		a[i] = float64(i%1000) / 1000
	}
	c := []float64{0.5}
	out := make([]byte, n/8)
	b.SetBytes(n)
	for i := 0; i < b.N; i++ {
		clear(out)
		compareFloatsInto(plan.OpGt, a, c, 0, out)
	}
}
