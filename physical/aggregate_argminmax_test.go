package physical

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/physical/expr"
	"sluice/plan"
)

// TestHashAggregateArgMinMax: arg_max and arg_min per group, single-stage
// and as partial states merged by a final aggregate, over random batches
// with NULL keys, values and returned values and no ties, match the rows a
// scan finds; a group whose values are all NULL gives NULL.
func TestHashAggregateArgMinMax(t *testing.T) {
	for trial := range 4 {
		t.Run(fmt.Sprint(trial), func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			schema := jaSchema("k", plan.Int64, "v", plan.Int64, "s", plan.Utf8)
			src := &jaSource{schema: schema, parts: make([][]arrow.RecordBatch, 2)}
			defer src.release()
			type best struct {
				maxV, minV int
				maxS, minS string
				any        bool
			}
			want := map[string]*best{}
			perm := rand.Perm(5000) // distinct values: no ties
			next := 0
			for p := range 2 {
				for range 1 + rand.IntN(5) {
					var rows [][]any
					for range rand.IntN(200) {
						k := any(rand.IntN(6))
						key := fmt.Sprint(k)
						if rand.IntN(8) == 0 {
							k, key = nil, "NULL"
						}
						v := any(perm[next])
						next++
						if rand.IntN(6) == 0 {
							v = nil
						}
						s := any(fmt.Sprint("s", rand.IntN(100)))
						if rand.IntN(7) == 0 {
							s = nil
						}
						rows = append(rows, []any{k, v, s})
						b := want[key]
						if b == nil {
							b = &best{}
							want[key] = b
						}
						if v == nil {
							continue
						}
						str := "NULL"
						if s != nil {
							str = s.(string)
						}
						if !b.any || v.(int) > b.maxV {
							b.maxV, b.maxS = v.(int), str
						}
						if !b.any || v.(int) < b.minV {
							b.minV, b.minS = v.(int), str
						}
						b.any = true
					}
					src.parts[p] = append(src.parts[p], jaBatch(t, mem, schema, rows))
				}
			}
			s, v := jaCol(2, "s", plan.Utf8), jaCol(1, "v", plan.Int64)
			aggs := []AggregateExpr{
				{Func: plan.AggArgMax, Arg: s, Arg2: v, Name: "amax", Type: plan.Utf8},
				{Func: plan.AggArgMin, Arg: s, Arg2: v, Name: "amin", Type: plan.Utf8},
				{Func: plan.AggArgMax, Arg: v, Arg2: v, Name: "vmax", Type: plan.Int64},
			}
			gb := []expr.Expr{jaCol(0, "k", plan.Int64)}
			var lines []string
			for key, b := range want {
				if !b.any {
					lines = append(lines, key+"|NULL|NULL|NULL")
					continue
				}
				lines = append(lines, fmt.Sprintf("%s|%s|%s|%d", key, b.maxS, b.minS, b.maxV))
			}
			slices.Sort(lines)
			single, err := NewHashAggregate(NewCoalescePartitions(src), AggSingle, gb, []string{"k"}, aggs)
			if err != nil {
				t.Fatal(err)
			}
			partial, err := NewHashAggregate(src, AggPartial, gb, []string{"k"}, aggs)
			if err != nil {
				t.Fatal(err)
			}
			final, err := NewHashAggregate(NewCoalescePartitions(partial), AggFinal, []expr.Expr{jaCol(0, "k", plan.Int64)}, []string{"k"}, aggs)
			if err != nil {
				t.Fatal(err)
			}
			for name, op := range map[string]Operator{"single": single, "partial/final": final} {
				if got := jaCollect(t, op, jaTC(mem, 1+rand.IntN(50), 0)); !slices.Equal(got, lines) {
					t.Errorf("%s:\n got %s\nwant %s", name, strings.Join(got, " "), strings.Join(lines, " "))
				}
			}
		})
	}
}
