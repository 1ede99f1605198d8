package physical

import (
	"math"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/physical/expr"
	"sluice/physical/kernels"
	"sluice/plan"
)

// floats builds a float64 array (nil = NULL).
func floats(mem memory.Allocator, vals ...any) arrow.Array {
	b := array.NewFloat64Builder(mem)
	defer b.Release()
	for _, v := range vals {
		if v == nil {
			b.AppendNull()
		} else {
			b.Append(v.(float64))
		}
	}
	return b.NewArray()
}

// finalValues returns acc's final values of groups [0, n) (NaN for NULL).
func finalValues(t *testing.T, acc aggAccumulator, n int, mem memory.Allocator) []float64 {
	t.Helper()
	a, err := acc.emitFinal(0, n, mem)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Release()
	out := make([]float64, n)
	f := a.(*array.Float64)
	for i := range out {
		out[i] = math.NaN()
		if f.IsValid(i) {
			out[i] = f.Value(i)
		}
	}
	return out
}

// mergedThroughStates feeds each chunk to its own accumulator (one group),
// then merges their emitted states into a fresh one: the two-phase path.
func mergedThroughStates(t *testing.T, newAcc func() aggAccumulator, chunks [][]arrow.Array, mem memory.Allocator) aggAccumulator {
	t.Helper()
	final := newAcc()
	final.resize(1)
	for _, c := range chunks {
		part := newAcc()
		part.resize(1)
		gids := make([]int32, c[0].Len())
		var err error
		if len(c) == 2 {
			err = part.(aggBinaryAccumulator).update2(gids, c[0], c[1])
		} else {
			err = part.update(gids, c[0])
		}
		if err != nil {
			t.Fatal(err)
		}
		st, err := part.emitStates(0, 1, mem)
		if err != nil {
			t.Fatal(err)
		}
		if err := final.merge([]int32{0}, st); err != nil {
			t.Fatal(err)
		}
		kernels.ReleaseAll(st)
	}
	return final
}

func near(a, b float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	return math.Abs(a-b) <= 1e-9*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}

func TestAggVariance(t *testing.T) {
	nan := math.NaN()
	cases := []struct {
		name   string
		chunks [][]any
		// samp, pop (NaN: NULL)
		variance [2]float64
	}{
		{"simple", [][]any{{1.0, 2.0}, {4.0}}, [2]float64{7.0 / 3, 14.0 / 9}},
		{"one value", [][]any{{5.0}, {}}, [2]float64{nan, 0}},
		{"nulls only", [][]any{{nil, nil}, {nil}}, [2]float64{nan, nan}},
		{"nulls skipped", [][]any{{nil, 1.0}, {3.0, nil}}, [2]float64{2, 1}},
		{"empty", [][]any{{}}, [2]float64{nan, nan}},
		// A large offset: a sum of squares in float64 would lose the
		// deviations entirely.
		{"large offset", [][]any{{1e9 + 4, 1e9 + 7}, {1e9 + 13, 1e9 + 16}}, [2]float64{30, 22.5}},
		{"equal values", [][]any{{0.1, 0.1, 0.1}, {0.1}}, [2]float64{0, 0}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			var chunks [][]arrow.Array
			for _, c := range tc.chunks {
				chunks = append(chunks, []arrow.Array{floats(mem, c...)})
			}
			defer func() {
				for _, c := range chunks {
					kernels.ReleaseAll(c)
				}
			}()
			fns := []plan.AggFunc{plan.AggVarSamp, plan.AggVarPop, plan.AggStddevSamp, plan.AggStddevPop}
			for i, fn := range fns {
				want := tc.variance[i%2]
				if i >= 2 {
					want = math.Sqrt(want)
				}
				newAcc := func() aggAccumulator { return &aggVariance{fn: fn} }
				// One accumulator over all chunks, and the two-phase merge.
				one := newAcc()
				one.resize(1)
				for _, c := range chunks {
					if err := one.update(make([]int32, c[0].Len()), c[0]); err != nil {
						t.Fatal(err)
					}
				}
				merged := mergedThroughStates(t, newAcc, chunks, mem)
				for path, acc := range map[string]aggAccumulator{"single": one, "merged": merged} {
					if got := finalValues(t, acc, 1, mem)[0]; !near(got, want) {
						t.Errorf("%s %s = %v, want %v", path, fn, got, want)
					}
				}
			}
		})
	}
}

func TestAggCovar(t *testing.T) {
	nan := math.NaN()
	cases := []struct {
		name   string
		y, x   [][]any
		cp, cs float64 // covar_pop, covar_samp
		corr   float64
	}{
		{"line", [][]any{{2.0, 4.0}, {6.0}}, [][]any{{1.0, 2.0}, {3.0}}, 4.0 / 3, 2, 1},
		{"anti", [][]any{{3.0}, {2.0, 1.0}}, [][]any{{1.0}, {2.0, 3.0}}, -2.0 / 3, -1, -1},
		{"pairs with a NULL skipped", [][]any{{1.0, nil, 2.0}, {3.0}}, [][]any{{1.0, 9.0, nil}, {2.0}}, 0.5, 1, 1},
		{"zero variance x", [][]any{{1.0, 2.0}, {3.0}}, [][]any{{5.0, 5.0}, {5.0}}, 0, 0, nan},
		{"one pair", [][]any{{1.0}}, [][]any{{2.0}}, 0, nan, nan},
		{"no pairs", [][]any{{nil}}, [][]any{{1.0}}, nan, nan, nan},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			var chunks [][]arrow.Array
			for i := range tc.y {
				chunks = append(chunks, []arrow.Array{floats(mem, tc.y[i]...), floats(mem, tc.x[i]...)})
			}
			defer func() {
				for _, c := range chunks {
					kernels.ReleaseAll(c)
				}
			}()
			for fn, want := range map[plan.AggFunc]float64{plan.AggCovarPop: tc.cp, plan.AggCovarSamp: tc.cs, plan.AggCorr: tc.corr} {
				newAcc := func() aggAccumulator { return &aggCovar{fn: fn} }
				one := newAcc()
				one.resize(1)
				for _, c := range chunks {
					if err := one.(aggBinaryAccumulator).update2(make([]int32, c[0].Len()), c[0], c[1]); err != nil {
						t.Fatal(err)
					}
				}
				merged := mergedThroughStates(t, newAcc, chunks, mem)
				for path, acc := range map[string]aggAccumulator{"single": one, "merged": merged} {
					if got := finalValues(t, acc, 1, mem)[0]; !near(got, want) {
						t.Errorf("%s %s = %v, want %v", path, fn, got, want)
					}
				}
			}
		})
	}
}

func TestAggStringAgg(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	strs := func(vals ...any) arrow.Array {
		b := array.NewStringBuilder(mem)
		defer b.Release()
		for _, v := range vals {
			if v == nil {
				b.AppendNull()
			} else {
				b.Append(v.(string))
			}
		}
		return b.NewArray()
	}
	// Each value but the first comes after its own row's delimiter; a
	// NULL value is skipped, a NULL delimiter is empty.
	chunks := [][]arrow.Array{
		{strs("a", nil, "b"), strs(",", ";", "-")},
		{strs(nil), strs(",")},
		{strs("c", "d"), strs("+", nil)},
	}
	defer func() {
		for _, c := range chunks {
			kernels.ReleaseAll(c)
		}
	}()
	newAcc := func() aggAccumulator { return &aggStringAgg{} }
	one := newAcc()
	one.resize(2)
	for _, c := range chunks {
		if err := one.(aggBinaryAccumulator).update2(make([]int32, c[0].Len()), c[0], c[1]); err != nil {
			t.Fatal(err)
		}
	}
	merged := mergedThroughStates(t, newAcc, chunks, mem)
	for path, acc := range map[string]aggAccumulator{"single": one, "merged": merged} {
		a, err := acc.emitFinal(0, 1, mem)
		if err != nil {
			t.Fatal(err)
		}
		if got := a.(*array.String).Value(0); got != "a-b+cd" {
			t.Errorf("%s: got %q, want %q", path, got, "a-b+cd")
		}
		a.Release()
	}
	// Group 1 saw no value: NULL.
	a, err := one.emitFinal(1, 2, mem)
	if err != nil {
		t.Fatal(err)
	}
	if a.IsValid(0) {
		t.Errorf("string_agg of no values is %q, want NULL", a.(*array.String).Value(0))
	}
	a.Release()
	if err := one.update(nil, chunks[0][0]); err == nil {
		t.Error("string_agg updated with one argument")
	}
}

func TestHashAggregateOrderedStringAgg(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	schema := jaSchema("k", plan.Utf8, "v", plan.Utf8, "o", plan.Int64)
	p0 := jaBatch(t, mem, schema, [][]any{{"a", "x", 3}, {"a", "y", nil}, {"b", "z", 1}})
	p1 := jaBatch(t, mem, schema, [][]any{{"a", "w", 1}, {"a", nil, 0}, {"a", "u", 3}})
	p2 := jaBatch(t, mem, schema, [][]any{{"c", nil, 2}})
	src := &jaSource{schema: schema, parts: [][]arrow.RecordBatch{{p0}, {p1, p2}}}
	defer src.release()
	agg := AggregateExpr{Func: plan.AggStringAgg, Arg: jaCol(1, "v", plan.Utf8), Arg2: &expr.Literal{Value: plan.Literal{Typ: plan.Utf8, Val: "-"}},
		Name: "s", Type: plan.Utf8, OrderBy: []SortKey{{Expr: jaCol(2, "o", plan.Int64), Desc: true, NullsFirst: true}}}
	k := []expr.Expr{jaCol(0, "k", plan.Utf8)}
	op, err := NewHashAggregate(&jaCoalesce{in: src}, AggSingle, k, []string{"k"}, []AggregateExpr{agg})
	if err != nil {
		t.Fatal(err)
	}
	tctx := jaTC(mem, 2, 0)
	// a: y (NULL key first), then x and u (3, in arrival order), then w;
	// the NULL value is skipped; c has no value.
	got := jaCollect(t, op, tctx)
	want := []string{"a|y-x-u-w", "b|z", "c|NULL"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if u := tctx.Memory.Used(); u != 0 {
		t.Fatalf("memory pool still holds %d bytes", u)
	}
	if _, err := NewHashAggregate(src, AggPartial, k, []string{"k"}, []AggregateExpr{agg}); err == nil {
		t.Fatal("ordered string_agg accepted in a partial aggregate")
	}
}
