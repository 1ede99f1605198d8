package physical

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/physical/expr"
	"sluice/plan"
)

var expandSchema = jaSchema("a", plan.Utf8, "b", plan.Int64, "v", plan.Int64)

// expandSource is two partitions of (a, b, v) rows, with NULL keys in the
// data; empty gives the same partitions without rows.
func expandSource(t testing.TB, mem memory.Allocator, empty bool) *jaSource {
	if empty {
		return &jaSource{schema: expandSchema, parts: [][]arrow.RecordBatch{nil, nil}}
	}
	p0 := jaBatch(t, mem, expandSchema, [][]any{{"x", 1, 10}, {"x", 2, 20}, {nil, 1, 5}})
	p1 := jaBatch(t, mem, expandSchema, [][]any{{"y", nil, 7}, {"x", 1, 1}})
	return &jaSource{schema: expandSchema, parts: [][]arrow.RecordBatch{{p0}, {p1}}}
}

func TestExpand(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	src := expandSource(t, mem, false)
	defer src.release()
	keys := []expr.Expr{jaCol(0, "a", plan.Utf8), jaCol(1, "b", plan.Int64)}
	op, err := NewExpand(src, keys, []string{"ka", "kb"}, [][]int{{0, 1}, {0}, {}}, "gid")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range op.Schema().Fields() {
		names = append(names, f.Name+":"+f.Type.String())
	}
	if got, want := strings.Join(names, ","), "a:utf8,b:int64,v:int64,ka:utf8,kb:int64,gid:int64"; got != want {
		t.Fatalf("schema %s, want %s", got, want)
	}
	if got, want := op.String(), "Expand: sets=[(a@0, b@1), (a@0), ()]"; got != want {
		t.Fatalf("String() = %q, want %q", got, want)
	}
	if op.OutputPartitioning().Count != 2 {
		t.Fatalf("partitions = %d", op.OutputPartitioning().Count)
	}
	got := jaCollect(t, op, jaTC(mem, 8192, 0))
	var want []string
	rows := [][]string{{"x", "1", "10"}, {"x", "2", "20"}, {"NULL", "1", "5"}, {"y", "NULL", "7"}, {"x", "1", "1"}}
	for _, r := range rows {
		in := strings.Join(r, "|")
		want = append(want,
			fmt.Sprintf("%s|%s|%s|0", in, r[0], r[1]),
			fmt.Sprintf("%s|%s|NULL|1", in, r[0]),
			in+"|NULL|NULL|2")
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestExpandRejectsBadSets(t *testing.T) {
	src := &jaSource{schema: expandSchema}
	keys := []expr.Expr{jaCol(0, "a", plan.Utf8)}
	if _, err := NewExpand(src, keys, []string{"ka"}, [][]int{{1}}, "gid"); err == nil {
		t.Fatal("set naming a missing key accepted")
	}
	if _, err := NewExpand(src, keys, []string{"ka"}, nil, "gid"); err == nil {
		t.Fatal("no sets accepted")
	}
}

// TestExpandAggregate runs ROLLUP(a, b) as the planner builds it: Expand,
// then a two-stage aggregate through a hash repartition (or one stage),
// with the grand total that must appear exactly once, also for empty input.
func TestExpandAggregate(t *testing.T) {
	full := []string{
		"NULL|1|0|5", "x|1|0|11", "x|2|0|20", "y|NULL|0|7", // (a, b)
		"NULL|NULL|1|5", "x|NULL|1|31", "y|NULL|1|7", // (a)
		"NULL|NULL|2|43", // ()
	}
	slices.Sort(full)
	for _, tc := range []struct {
		name     string
		empty    bool
		twoStage bool
		parts    int
		want     []string
	}{
		{"single", false, false, 1, full},
		{"two-stage 1 partition", false, true, 1, full},
		{"two-stage 3 partitions", false, true, 3, full},
		{"two-stage 5 partitions", false, true, 5, full},
		{"empty single", true, false, 1, []string{"NULL|NULL|2|NULL"}},
		{"empty two-stage 3 partitions", true, true, 3, []string{"NULL|NULL|2|NULL"}},
		{"empty two-stage 7 partitions", true, true, 7, []string{"NULL|NULL|2|NULL"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			src := expandSource(t, mem, tc.empty)
			defer src.release()
			keys := []expr.Expr{jaCol(0, "a", plan.Utf8), jaCol(1, "b", plan.Int64)}
			exp, err := NewExpand(src, keys, []string{"ka", "kb"}, [][]int{{0, 1}, {0}, {}}, "gid")
			if err != nil {
				t.Fatal(err)
			}
			groups := []expr.Expr{jaCol(3, "ka", plan.Utf8), jaCol(4, "kb", plan.Int64), jaCol(5, "gid", plan.Int64)}
			names := []string{"ka", "kb", "gid"}
			aggs := []AggregateExpr{{Func: plan.AggSum, Arg: jaCol(2, "v", plan.Int64), Name: "s", Type: plan.Int64}}
			var op *HashAggregate
			if tc.twoStage {
				partial, err := NewHashAggregate(exp, AggPartial, groups, names, aggs)
				if err != nil {
					t.Fatal(err)
				}
				pkeys := []expr.Expr{jaCol(0, "ka", plan.Utf8), jaCol(1, "kb", plan.Int64), jaCol(2, "gid", plan.Int64)}
				mid := NewRepartition(partial, Partitioning{Kind: PartHash, Count: tc.parts, Keys: pkeys})
				op, err = NewHashAggregate(mid, AggFinal, groups, names, aggs)
				if err != nil {
					t.Fatal(err)
				}
			} else {
				op, err = NewHashAggregate(&jaCoalesce{in: exp}, AggSingle, groups, names, aggs)
				if err != nil {
					t.Fatal(err)
				}
			}
			op, err = op.WithGrandTotals([]int64{2})
			if err != nil {
				t.Fatal(err)
			}
			tctx := jaTC(mem, 3, 0)
			got := jaCollect(t, op, tctx)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			if u := tctx.Memory.Used(); u != 0 {
				t.Fatalf("memory pool still holds %d bytes", u)
			}
		})
	}
}

func TestWithGrandTotalsRejects(t *testing.T) {
	src := &jaSource{schema: expandSchema}
	aggs := []AggregateExpr{{Func: plan.AggCountStar, Name: "c", Type: plan.Int64}}
	partial, err := NewHashAggregate(src, AggPartial, []expr.Expr{jaCol(1, "b", plan.Int64)}, []string{"b"}, aggs)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := partial.WithGrandTotals([]int64{0}); err == nil {
		t.Fatal("grand totals on a partial aggregate accepted")
	}
	single, err := NewHashAggregate(src, AggSingle, []expr.Expr{jaCol(0, "a", plan.Utf8)}, []string{"a"}, aggs)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := single.WithGrandTotals([]int64{0}); err == nil {
		t.Fatal("grand totals without an int64 grouping id key accepted")
	}
}
