package physical

import (
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/physical/expr"
	"sluice/plan"
)

// arrayAggRows renders key|array rows, each array's elements sorted when
// sorted is set (without ORDER BY their order is not defined).
func arrayAggRows(t *testing.T, op Operator, mem memory.Allocator, sorted bool) []string {
	t.Helper()
	bs, err := jaRun(t, op, jaTC(mem, 2, 0))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, b := range bs {
		l := b.Column(1).(*array.List)
		for r := 0; r < int(b.NumRows()); r++ {
			key := jaFormat(b.Column(0), r)
			if l.IsNull(r) {
				out = append(out, key+"|NULL")
				continue
			}
			lo, hi := l.ValueOffsets(r)
			var el []string
			for k := lo; k < hi; k++ {
				el = append(el, jaFormat(l.ListValues(), int(k)))
			}
			if sorted {
				slices.Sort(el)
			}
			out = append(out, key+"|{"+strings.Join(el, ",")+"}")
		}
		b.Release()
	}
	slices.Sort(out)
	return out
}

func TestArrayAggTwoStage(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	src := jaAggSource(t, mem, false)
	defer src.release()
	x := jaCol(1, "x", plan.Int64)
	aggs := []AggregateExpr{{Func: plan.AggArrayAgg, Arg: x, Name: "a", Type: plan.ArrayOf(plan.Int64)}}
	k := []expr.Expr{jaCol(0, "k", plan.Utf8)}
	single, err := NewHashAggregate(&jaCoalesce{in: src}, AggSingle, k, []string{"k"}, aggs)
	if err != nil {
		t.Fatal(err)
	}
	partial, err := NewHashAggregate(src, AggPartial, k, []string{"k"}, aggs)
	if err != nil {
		t.Fatal(err)
	}
	if got := partial.Schema().Field(1); got.Name != "a[values]" || !arrow.TypeEqual(got.Type, plan.ArrayOf(plan.Int64)) {
		t.Fatalf("partial state %s %s", got.Name, got.Type)
	}
	final, err := NewHashAggregate(&jaCoalesce{in: partial}, AggFinal, k, []string{"k"}, aggs)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"NULL|{3,NULL}", "a|{1,1,NULL}", "b|{2,5}", "c|{NULL}"}
	for name, op := range map[string]Operator{"single": single, "two-stage": final} {
		if got := arrayAggRows(t, op, mem, true); !slices.Equal(got, want) {
			t.Errorf("%s: got %v, want %v", name, got, want)
		}
	}
}

func TestArrayAggOrderedFilteredDistinct(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	src := jaAggSource(t, mem, false)
	defer src.release()
	x, d := jaCol(1, "x", plan.Int64), jaCol(2, "d", plan.Decimal(12, 2))
	k := []expr.Expr{jaCol(0, "k", plan.Utf8)}
	for _, c := range []struct {
		name string
		agg  AggregateExpr
		want []string
	}{
		{"order by x desc nulls first", AggregateExpr{Func: plan.AggArrayAgg, Arg: d, OrderBy: []SortKey{{Expr: x, Desc: true, NullsFirst: true}}},
			[]string{"NULL|{NULL,-1.00}", "a|{NULL,1.50,0.01}", "b|{2.25,2.25}", "c|{NULL}"}},
		{"distinct", AggregateExpr{Func: plan.AggArrayAgg, Arg: d, Distinct: true, OrderBy: []SortKey{{Expr: d}}},
			[]string{"NULL|{-1.00,NULL}", "a|{0.01,1.50,NULL}", "b|{2.25}", "c|{NULL}"}},
		{"filter", AggregateExpr{Func: plan.AggArrayAgg, Arg: x, Arg2: &jaCmp{L: 1, R: 1, Op: "="}},
			nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := c.agg
			a.Name = "a"
			a.Type = plan.ArrayOf(a.Arg.DataType())
			op, err := NewHashAggregate(&jaCoalesce{in: src}, AggSingle, k, []string{"k"}, []AggregateExpr{a})
			if err != nil {
				t.Fatal(err)
			}
			got := arrayAggRows(t, op, mem, c.want == nil)
			want := c.want
			if want == nil {
				// x = x is true where x is not NULL: the filter keeps
				// those rows and the group without any is NULL.
				want = []string{"NULL|{3}", "a|{1,1}", "b|{2,5}", "c|NULL"}
			}
			if !slices.Equal(got, want) {
				t.Fatalf("got %v, want %v", got, want)
			}
		})
	}
	if _, err := NewHashAggregate(src, AggPartial, k, []string{"k"}, []AggregateExpr{{Func: plan.AggArrayAgg, Arg: x, Name: "a",
		Type: plan.ArrayOf(plan.Int64), OrderBy: []SortKey{{Expr: x}}}}); err == nil {
		t.Fatal("ordered array_agg accepted in a partial aggregate")
	}
}

func TestArrayAggProtoRoundTrip(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	schema := arrow.NewSchema([]arrow.Field{{Name: "k", Type: plan.Int64, Nullable: true}, {Name: "v", Type: plan.Utf8, Nullable: true}}, nil)
	lit := func(typ arrow.DataType, v any) expr.Expr { return &expr.Literal{Value: plan.Literal{Typ: typ, Val: v}} }
	values := NewValues(schema, [][]expr.Expr{
		{lit(plan.Int64, int64(1)), lit(plan.Utf8, "b")},
		{lit(plan.Int64, int64(1)), lit(plan.Utf8, nil)},
		{lit(plan.Int64, int64(2)), lit(plan.Utf8, "a")},
		{lit(plan.Int64, int64(1)), lit(plan.Utf8, "a")},
	})
	must := func(op *HashAggregate, err error) Operator {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return op
	}
	k := []expr.Expr{jaCol(0, "k", plan.Int64)}
	v := jaCol(1, "v", plan.Utf8)
	ordered := AggregateExpr{Func: plan.AggArrayAgg, Arg: v, Name: "a", Type: plan.TextArray, OrderBy: []SortKey{{Expr: v, Desc: true}}}
	filtered := AggregateExpr{Func: plan.AggArrayAgg, Arg: v, Arg2: &expr.IsNull{X: v, Negated: true}, Name: "f", Type: plan.TextArray}
	partial := must(NewHashAggregate(values, AggPartial, k, []string{"k"}, []AggregateExpr{filtered}))
	for _, c := range []struct {
		name string
		op   Operator
		want []string
	}{
		{"ordered", must(NewHashAggregate(values, AggSingle, k, []string{"k"}, []AggregateExpr{ordered})), []string{"1|{b,a,NULL}", "2|{a}"}},
		{"filtered two-stage", must(NewHashAggregate(NewCoalescePartitions(partial), AggFinal, k, []string{"k"}, []AggregateExpr{filtered})), []string{"1|{a,b}", "2|{a}"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := shipPlan(t, c.op, nil)
			if !strings.Contains(Format(got), "array_agg") {
				t.Fatalf("decoded plan %s", Format(got))
			}
			rows := arrayAggRows(t, got, mem, c.name != "ordered")
			if !slices.Equal(rows, c.want) {
				t.Fatalf("got %v, want %v", rows, c.want)
			}
		})
	}
}
