package physical

import (
	"context"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/physical/expr"
	"sluice/plan"
)

// jaDrain runs partition 0 of op and returns the number of output rows.
func jaDrain(b *testing.B, op Operator, tc *TaskContext) int64 {
	ctx := context.Background()
	s, err := op.Execute(ctx, 0, tc)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	var n int64
	for {
		rb, err := s.Next(ctx)
		if err == io.EOF {
			return n
		}
		if err != nil {
			b.Fatal(err)
		}
		n += rb.NumRows()
		rb.Release()
	}
}

// BenchmarkHashAggregateQ1 aggregates 6M rows into 4 groups (two utf8 keys,
// as TPC-H q1) with 5 decimal sums, in one partition.
func BenchmarkHashAggregateQ1(b *testing.B) {
	const rows, batch = 6_000_000, 8192
	dt := plan.Decimal(15, 2)
	schema := jaSchema("flag", plan.Utf8, "status", plan.Utf8, "d1", dt, "d2", dt, "d3", dt, "d4", dt, "d5", dt)
	mem := memory.NewGoAllocator()
	rb := array.NewRecordBuilder(mem, schema)
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < batch; i++ {
		g := r.IntN(4)
		rb.Field(0).(*array.StringBuilder).Append([]string{"A", "N", "R"}[g%3])
		rb.Field(1).(*array.StringBuilder).Append([]string{"F", "O"}[g/2])
		for c := 2; c < 7; c++ {
			rb.Field(c).(*array.Decimal128Builder).Append(decimal128.FromI64(r.Int64N(10_000_000)))
		}
	}
	one := rb.NewRecordBatch()
	rb.Release()
	defer one.Release()
	var bs []arrow.RecordBatch
	for i := 0; i < rows/batch; i++ {
		bs = append(bs, one)
	}
	src := &jaSource{schema: schema, parts: [][]arrow.RecordBatch{bs}}
	var aggs []AggregateExpr
	for c := 2; c < 7; c++ {
		aggs = append(aggs, AggregateExpr{Func: plan.AggSum, Arg: jaCol(c, "d", dt), Name: "s", Type: plan.SumType(dt)})
	}
	aggs = append(aggs, AggregateExpr{Func: plan.AggCountStar, Name: "c", Type: plan.Int64})
	op, err := NewHashAggregate(src, AggSingle, []expr.Expr{jaCol(0, "flag", plan.Utf8), jaCol(1, "status", plan.Utf8)}, []string{"flag", "status"}, aggs)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if n := jaDrain(b, op, NewTaskContext()); n != 4 {
			b.Fatalf("%d groups", n)
		}
	}
	b.ReportMetric(float64(len(bs)*batch)*float64(b.N)/b.Elapsed().Seconds()/1e6, "Mrows/s")
}

// BenchmarkHashAggregateManyGroups aggregates 6M rows into 1.5M int64 groups
// (as TPC-H q18's subquery) with one decimal sum.
func BenchmarkHashAggregateManyGroups(b *testing.B) {
	const rows, groups, batch = 6_000_000, 1_500_000, 8192
	dt := plan.Decimal(15, 2)
	schema := jaSchema("k", plan.Int64, "d", dt)
	mem := memory.NewGoAllocator()
	r := rand.New(rand.NewPCG(3, 4))
	var bs []arrow.RecordBatch
	for s := 0; s < rows; s += batch {
		rb := array.NewRecordBuilder(mem, schema)
		for i := s; i < min(rows, s+batch); i++ {
			rb.Field(0).(*array.Int64Builder).Append(int64(r.IntN(groups)))
			rb.Field(1).(*array.Decimal128Builder).Append(decimal128.FromI64(r.Int64N(10_000)))
		}
		bs = append(bs, rb.NewRecordBatch())
		rb.Release()
	}
	defer func() {
		for _, x := range bs {
			x.Release()
		}
	}()
	src := &jaSource{schema: schema, parts: [][]arrow.RecordBatch{bs}}
	aggs := []AggregateExpr{{Func: plan.AggSum, Arg: jaCol(1, "d", dt), Name: "s", Type: plan.SumType(dt)}}
	op, err := NewHashAggregate(src, AggSingle, []expr.Expr{jaCol(0, "k", plan.Int64)}, []string{"k"}, aggs)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		jaDrain(b, op, NewTaskContext())
	}
	b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds()/1e6, "Mrows/s")
}

// BenchmarkHashJoin joins 1.5M build rows with 6M probe rows on an int64
// key (each probe row matches one build row).
func BenchmarkHashJoin(b *testing.B) {
	const buildRows, probeRows, batch = 1_500_000, 6_000_000, 8192
	mem := memory.NewGoAllocator()
	bschema := jaSchema("bk", plan.Int64, "bv", plan.Int64)
	pschema := jaSchema("pk", plan.Int64, "pv", plan.Int64)
	var build []arrow.RecordBatch
	for s := 0; s < buildRows; s += batch {
		rb := array.NewRecordBuilder(mem, bschema)
		for i := s; i < min(buildRows, s+batch); i++ {
			rb.Field(0).(*array.Int64Builder).Append(int64(i) * 3)
			rb.Field(1).(*array.Int64Builder).Append(int64(i))
		}
		build = append(build, rb.NewRecordBatch())
		rb.Release()
	}
	r := rand.New(rand.NewPCG(5, 6))
	var distinct, probe []arrow.RecordBatch
	for i := 0; i < 16; i++ {
		rb := array.NewRecordBuilder(mem, pschema)
		for j := 0; j < batch; j++ {
			rb.Field(0).(*array.Int64Builder).Append(int64(r.IntN(buildRows)) * 3)
			rb.Field(1).(*array.Int64Builder).Append(int64(j))
		}
		distinct = append(distinct, rb.NewRecordBatch())
		rb.Release()
	}
	for i := 0; i < probeRows/batch; i++ {
		probe = append(probe, distinct[i%len(distinct)])
	}
	defer func() {
		for _, x := range append(build, distinct...) {
			x.Release()
		}
	}()
	left := &jaSource{schema: bschema, parts: [][]arrow.RecordBatch{build}}
	right := &jaSource{schema: pschema, parts: [][]arrow.RecordBatch{probe}}
	op, err := NewHashJoin(left, right, JoinInner, []expr.Expr{jaCol(0, "bk", plan.Int64)}, []expr.Expr{jaCol(0, "pk", plan.Int64)}, nil, false, JoinCollectLeft)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if n := jaDrain(b, op, NewTaskContext()); n != int64(len(probe)*batch) {
			b.Fatalf("%d rows", n)
		}
	}
	b.ReportMetric(float64(len(probe)*batch)*float64(b.N)/b.Elapsed().Seconds()/1e6, "probe-Mrows/s")
}
