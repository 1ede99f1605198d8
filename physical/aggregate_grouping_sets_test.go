package physical

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/physical/expr"
	"sluice/plan"
)

// TestGroupingSetsCascade runs a two-stage aggregate over an Expand for
// many sets (ROLLUP, CUBE, duplicated and unrelated sets, a grand total)
// on random rows with NULL keys and values, in random batch sizes and
// partition counts (the last under a memory limit, spilling), and checks
// its answer against the same plan with an
// identity projection between the Expand and the partial aggregate (which
// replicates every row once per set instead of cascading).
func TestGroupingSetsCascade(t *testing.T) {
	schema := jaSchema("a", plan.Utf8, "b", plan.Int64, "c", plan.Utf8, "v", plan.Int64)
	keys := []expr.Expr{jaCol(0, "a", plan.Utf8), jaCol(1, "b", plan.Int64), jaCol(2, "c", plan.Utf8)}
	cases := []struct {
		name    string
		sets    [][]int
		cascade bool
	}{
		{"rollup", [][]int{{0, 1, 2}, {0, 1}, {0}, {}}, true},
		{"cube", [][]int{{0, 1, 2}, {0, 1}, {0, 2}, {0}, {1, 2}, {1}, {2}, {}}, true},
		{"sets out of order", [][]int{{2}, {0, 1, 2}, {1, 0}, {}}, true},
		{"duplicate sets", [][]int{{0, 1}, {0, 1}, {0}, {0}}, true},
		{"unrelated sets", [][]int{{0}, {1}, {2}}, false},
		{"no root", [][]int{{0, 1}, {1, 2}, {1}}, false},
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for _, c := range cases {
		for iter := 0; iter < 4; iter++ {
			t.Run(fmt.Sprintf("%s/%d", c.name, iter), func(t *testing.T) {
				mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
				defer mem.AssertSize(t, 0)
				parts := make([][]arrow.RecordBatch, 1+rng.IntN(3))
				rows := 0
				if iter > 0 {
					rows = rng.IntN(400)
				}
				for p := range parts {
					var data [][]any
					for i := 0; i < rows; i++ {
						r := []any{fmt.Sprint("a", rng.IntN(4)), rng.IntN(5), fmt.Sprint("c", rng.IntN(3)), rng.IntN(100)}
						for j := range r {
							if rng.IntN(8) == 0 {
								r[j] = nil
							}
						}
						data = append(data, r)
					}
					if len(data) > 0 {
						parts[p] = []arrow.RecordBatch{jaBatch(t, mem, schema, data)}
					}
				}
				src := &jaSource{schema: schema, parts: parts}
				defer src.release()
				var grand []int64
				for i, s := range c.sets {
					if len(s) == 0 {
						grand = append(grand, int64(i))
					}
				}
				batch := 1 + rng.IntN(50)
				// The last iterations run under a memory limit in a task
				// that may spill: held groups go to disk.
				limit := int64(0)
				if iter == 3 {
					limit = int64(96<<10 + rng.IntN(64<<10))
				}
				run := func(cascade bool) []string {
					exp, err := NewExpand(src, keys, []string{"ka", "kb", "kc"}, c.sets, "gid")
					if err != nil {
						t.Fatal(err)
					}
					var in Operator = exp
					if !cascade {
						var exprs []expr.Expr
						var names []string
						for i, f := range exp.Schema().Fields() {
							exprs, names = append(exprs, jaCol(i, f.Name, f.Type)), append(names, f.Name)
						}
						in = NewProjection(exp, exprs, names)
					}
					groups := []expr.Expr{jaCol(4, "ka", plan.Utf8), jaCol(5, "kb", plan.Int64), jaCol(6, "kc", plan.Utf8), jaCol(7, "gid", plan.Int64)}
					names := []string{"ka", "kb", "kc", "gid"}
					v := jaCol(3, "v", plan.Int64)
					aggs := []AggregateExpr{
						{Func: plan.AggSum, Arg: v, Name: "s", Type: plan.Int64},
						{Func: plan.AggMin, Arg: v, Name: "lo", Type: plan.Int64},
						{Func: plan.AggMax, Arg: jaCol(0, "a", plan.Utf8), Name: "hi", Type: plan.Utf8},
						{Func: plan.AggCount, Arg: v, Name: "n", Type: plan.Int64},
						{Func: plan.AggCountStar, Name: "rows", Type: plan.Int64},
					}
					partial, err := NewHashAggregate(in, AggPartial, groups, names, aggs)
					if err != nil {
						t.Fatal(err)
					}
					if _, ok := partial.groupingSetsCascadePlan(); ok != (cascade && c.cascade) {
						t.Fatalf("cascade planned %v, want %v", ok, cascade && c.cascade)
					}
					pkeys := []expr.Expr{jaCol(0, "ka", plan.Utf8), jaCol(1, "kb", plan.Int64), jaCol(2, "kc", plan.Utf8), jaCol(3, "gid", plan.Int64)}
					mid := NewRepartition(partial, Partitioning{Kind: PartHash, Count: 1 + rng.IntN(3), Keys: pkeys})
					final, err := NewHashAggregate(mid, AggFinal, groups, names, aggs)
					if err != nil {
						t.Fatal(err)
					}
					if final, err = final.WithGrandTotals(grand); err != nil {
						t.Fatal(err)
					}
					tctx := jaTC(mem, batch, limit)
					if limit > 0 {
						tctx.SpillDir = t.TempDir()
					}
					got := jaCollect(t, final, tctx)
					if u := tctx.Memory.Used(); u != 0 {
						t.Fatalf("memory pool still holds %d bytes", u)
					}
					return got
				}
				want := run(false)
				got := run(true)
				if !slices.Equal(got, want) {
					t.Fatalf("cascade\n%s\nreplicated\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
				}
			})
		}
	}
}

// TestGroupingSetsCascadeUniqueRoot runs the cascade over an aggregate
// (the grouping-sets pre-aggregation's shape), whose rows the root set
// passes through without grouping them, against the replicated plan; with
// a COUNT among the aggregates the root is grouped as usual.
func TestGroupingSetsCascadeUniqueRoot(t *testing.T) {
	schema := jaSchema("a", plan.Utf8, "b", plan.Int64, "v", plan.Int64)
	rng := rand.New(rand.NewPCG(7, 8))
	for iter := 0; iter < 12; iter++ {
		withCount := iter%2 == 1
		t.Run(fmt.Sprint(iter), func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			var data [][]any
			for i := rng.IntN(300); i > 0; i-- {
				r := []any{fmt.Sprint("a", rng.IntN(5)), rng.IntN(6), rng.IntN(50)}
				for j := range r {
					if rng.IntN(7) == 0 {
						r[j] = nil
					}
				}
				data = append(data, r)
			}
			var parts [][]arrow.RecordBatch
			if len(data) > 0 {
				parts = [][]arrow.RecordBatch{{jaBatch(t, mem, schema, data)}}
			} else {
				parts = [][]arrow.RecordBatch{nil}
			}
			src := &jaSource{schema: schema, parts: parts}
			defer src.release()
			v := jaCol(2, "v", plan.Int64)
			inner, err := NewHashAggregate(src, AggSingle, []expr.Expr{jaCol(0, "a", plan.Utf8), jaCol(1, "b", plan.Int64)}, []string{"a", "b"},
				[]AggregateExpr{{Func: plan.AggSum, Arg: v, Name: "s", Type: plan.Int64}, {Func: plan.AggMax, Arg: v, Name: "m", Type: plan.Int64}})
			if err != nil {
				t.Fatal(err)
			}
			sets := [][]int{{0, 1}, {0}, {}}
			run := func(cascade bool) []string {
				exp, err := NewExpand(inner, []expr.Expr{jaCol(0, "a", plan.Utf8), jaCol(1, "b", plan.Int64)}, []string{"ka", "kb"}, sets, "gid")
				if err != nil {
					t.Fatal(err)
				}
				var in Operator = exp
				if !cascade {
					var exprs []expr.Expr
					var names []string
					for i, f := range exp.Schema().Fields() {
						exprs, names = append(exprs, jaCol(i, f.Name, f.Type)), append(names, f.Name)
					}
					in = NewProjection(exp, exprs, names)
				}
				groups := []expr.Expr{jaCol(4, "ka", plan.Utf8), jaCol(5, "kb", plan.Int64), jaCol(6, "gid", plan.Int64)}
				names := []string{"ka", "kb", "gid"}
				aggs := []AggregateExpr{
					{Func: plan.AggSum, Arg: jaCol(2, "s", plan.Int64), Name: "s", Type: plan.Int64},
					{Func: plan.AggMax, Arg: jaCol(3, "m", plan.Int64), Name: "m", Type: plan.Int64},
				}
				if withCount {
					aggs = append(aggs, AggregateExpr{Func: plan.AggCount, Arg: jaCol(3, "m", plan.Int64), Name: "n", Type: plan.Int64})
				}
				partial, err := NewHashAggregate(in, AggPartial, groups, names, aggs)
				if err != nil {
					t.Fatal(err)
				}
				if c, ok := partial.groupingSetsCascadePlan(); cascade && (!ok || c.rootUnique == withCount) {
					t.Fatalf("cascade %v, unique root %v", ok, c != nil && c.rootUnique)
				}
				pkeys := []expr.Expr{jaCol(0, "ka", plan.Utf8), jaCol(1, "kb", plan.Int64), jaCol(2, "gid", plan.Int64)}
				mid := NewRepartition(partial, Partitioning{Kind: PartHash, Count: 2, Keys: pkeys})
				final, err := NewHashAggregate(mid, AggFinal, groups, names, aggs)
				if err != nil {
					t.Fatal(err)
				}
				if final, err = final.WithGrandTotals([]int64{2}); err != nil {
					t.Fatal(err)
				}
				tctx := jaTC(mem, 1+rng.IntN(40), 0)
				got := jaCollect(t, final, tctx)
				if u := tctx.Memory.Used(); u != 0 {
					t.Fatalf("memory pool still holds %d bytes", u)
				}
				return got
			}
			got, want := run(true), run(false)
			if !slices.Equal(got, want) {
				t.Fatalf("cascade\n%s\nreplicated\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

// TestGroupingSetsCascadeSpillsHeldGroups runs a ROLLUP over many distinct
// keys under a memory limit the root set's groups do not fit: they are
// held in a spill file for the sets computed from them, and the answer is
// the one without a limit.
func TestGroupingSetsCascadeSpillsHeldGroups(t *testing.T) {
	schema := jaSchema("a", plan.Utf8, "b", plan.Int64, "v", plan.Int64)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	var data [][]any
	for i := 0; i < 4000; i++ {
		data = append(data, []any{fmt.Sprintf("key %d", i%700), i, i % 13})
	}
	src := &jaSource{schema: schema, parts: [][]arrow.RecordBatch{{jaBatch(t, mem, schema, data)}}}
	defer src.release()
	run := func(limit int64) ([]string, int64) {
		exp, err := NewExpand(src, []expr.Expr{jaCol(0, "a", plan.Utf8), jaCol(1, "b", plan.Int64)}, []string{"ka", "kb"}, [][]int{{0, 1}, {0}, {}}, "gid")
		if err != nil {
			t.Fatal(err)
		}
		groups := []expr.Expr{jaCol(3, "ka", plan.Utf8), jaCol(4, "kb", plan.Int64), jaCol(5, "gid", plan.Int64)}
		names := []string{"ka", "kb", "gid"}
		aggs := []AggregateExpr{{Func: plan.AggSum, Arg: jaCol(2, "v", plan.Int64), Name: "s", Type: plan.Int64}}
		partial, err := NewHashAggregate(exp, AggPartial, groups, names, aggs)
		if err != nil {
			t.Fatal(err)
		}
		tctx := jaTC(mem, 256, limit)
		tctx.SpillDir = t.TempDir()
		files, _ := SpillStats()
		bs, err := jaRun(t, partial, tctx)
		if err != nil {
			t.Fatal(err)
		}
		after, _ := SpillStats()
		// The partial groups of each set, summed per group (a partial
		// aggregate under a limit may pass a group on in pieces).
		sums := map[string]int64{}
		for _, b := range bs {
			for r := 0; r < int(b.NumRows()); r++ {
				k := fmt.Sprint(jaFormat(b.Column(0), r), "|", jaFormat(b.Column(1), r), "|", jaFormat(b.Column(2), r))
				sums[k] += b.Column(3).(*array.Int64).Value(r)
			}
			b.Release()
		}
		var out []string
		for k, v := range sums {
			out = append(out, fmt.Sprint(k, "=", v))
		}
		slices.Sort(out)
		return out, after - files
	}
	want, _ := run(0)
	got, spilled := run(96 << 10)
	if spilled == 0 {
		t.Fatal("no spill file under the limit")
	}
	if !slices.Equal(got, want) {
		t.Fatalf("under a limit\n%s\nwithout\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
