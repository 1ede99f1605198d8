package physical

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/physical/expr"
	"sluice/plan"
)

// TestPercentileDiscIndex: the first 0-based position whose 1-based
// position reaches f*n.
func TestPercentileDiscIndex(t *testing.T) {
	cases := []struct {
		f    float64
		n    int
		want int
	}{
		{0, 5, 0}, {0.2, 5, 0}, {0.21, 5, 1}, {0.5, 5, 2}, {0.5, 4, 1}, {0.51, 4, 2}, {1, 5, 4}, {1, 1, 0}, {0.999, 1000, 998},
	}
	for _, c := range cases {
		if got := percentileDiscIndex(c.f, c.n); got != c.want {
			t.Errorf("percentileDiscIndex(%g, %d) = %d, want %d", c.f, c.n, got, c.want)
		}
	}
}

// TestHashAggregatePercentiles: percentile_cont and percentile_disc, in
// both directions, per group over batches of random sizes with NULL
// values and keys, match percentiles computed from each group's sorted
// values; everything the accumulators retain is released.
func TestHashAggregatePercentiles(t *testing.T) {
	for trial := range 4 {
		t.Run(fmt.Sprint(trial), func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			schema := jaSchema("k", plan.Int64, "x", plan.Int64, "s", plan.Utf8)
			src := &jaSource{schema: schema, parts: make([][]arrow.RecordBatch, 1)}
			defer src.release()
			groups := map[string][]int{} // key text -> non-NULL x
			strs := map[string][]string{}
			for range 1 + rand.IntN(6) {
				var rows [][]any
				for range rand.IntN(300) {
					k := any(rand.IntN(8))
					if rand.IntN(10) == 0 {
						k = nil
					}
					x := any(rand.IntN(50) - 10)
					if rand.IntN(5) == 0 {
						x = nil
					}
					s := fmt.Sprint("v", rand.IntN(30))
					rows = append(rows, []any{k, x, s})
					key := "NULL"
					if k != nil {
						key = fmt.Sprint(k)
					}
					if _, ok := groups[key]; !ok {
						groups[key] = nil
					}
					if x != nil {
						groups[key] = append(groups[key], x.(int))
						strs[key] = append(strs[key], s)
					}
				}
				src.parts[0] = append(src.parts[0], jaBatch(t, mem, schema, rows))
			}
			f := []float64{0, 0.1, 0.25, 0.5, 0.9, 1}[rand.IntN(6)]
			frac := &expr.Literal{Value: plan.Literal{Typ: plan.Float64, Val: f}}
			x, s := jaCol(1, "x", plan.Int64), jaCol(2, "s", plan.Utf8)
			// s only where x is not NULL, as the reference counts it.
			sx := &expr.Case{Whens: []expr.When{{Cond: &expr.IsNull{X: x, Negated: true}, Then: s}}, Type: plan.Utf8}
			xf := &expr.Cast{X: x, To: plan.Float64}
			aggs := []AggregateExpr{
				{Func: plan.AggPercentileCont, Arg: xf, Arg2: frac, OrderBy: []SortKey{{Expr: xf}}, Name: "cont", Type: plan.Float64},
				{Func: plan.AggPercentileCont, Arg: xf, Arg2: frac, OrderBy: []SortKey{{Expr: xf, Desc: true}}, Name: "cont_desc", Type: plan.Float64},
				{Func: plan.AggPercentileDisc, Arg: x, Arg2: frac, OrderBy: []SortKey{{Expr: x}}, Name: "disc", Type: plan.Int64},
				{Func: plan.AggPercentileDisc, Arg: x, Arg2: frac, OrderBy: []SortKey{{Expr: x, Desc: true}}, Name: "disc_desc", Type: plan.Int64},
				{Func: plan.AggPercentileDisc, Arg: sx, Arg2: frac, OrderBy: []SortKey{{Expr: sx}}, Name: "disc_s", Type: plan.Utf8},
			}
			op, err := NewHashAggregate(src, AggSingle, []expr.Expr{jaCol(0, "k", plan.Int64)}, []string{"k"}, aggs)
			if err != nil {
				t.Fatal(err)
			}
			got := jaCollect(t, op, jaTC(mem, 1+rand.IntN(64), 0))
			var want []string
			for key, vals := range groups {
				row := []string{key}
				if len(vals) == 0 {
					row = append(row, "NULL", "NULL", "NULL", "NULL", "NULL")
					want = append(want, strings.Join(row, "|"))
					continue
				}
				slices.Sort(vals)
				desc := slices.Clone(vals)
				slices.Reverse(desc)
				sv := slices.Clone(strs[key])
				slices.Sort(sv)
				row = append(row, fmt.Sprintf("%g", refPercentileCont(vals, f)), fmt.Sprintf("%g", refPercentileCont(desc, f)))
				row = append(row, fmt.Sprint(refPercentileDisc(vals, f)), fmt.Sprint(refPercentileDisc(desc, f)), refPercentileDisc(sv, f))
				want = append(want, strings.Join(row, "|"))
			}
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Fatalf("fraction %g:\n got %v\nwant %v", f, got, want)
			}
		})
	}
}

// refPercentileCont is PostgreSQL's definition over values in the
// aggregate's order: interpolate at position f*(n-1).
func refPercentileCont(vals []int, f float64) float64 {
	pos := f * float64(len(vals)-1)
	lo, hi := int(math.Floor(pos)), int(math.Ceil(pos))
	return float64(vals[lo]) + (pos-float64(lo))*float64(vals[hi]-vals[lo])
}

// refPercentileDisc: the first value, in the aggregate's order, whose
// 1-based position p has p/n >= f.
func refPercentileDisc[T any](vals []T, f float64) T {
	for i, v := range vals {
		if float64(i+1)/float64(len(vals)) >= f {
			return v
		}
	}
	return vals[len(vals)-1]
}
