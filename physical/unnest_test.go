package physical

import (
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/physical/expr"
	"sluice/plan"
)

// unnestInput is Values of (k BIGINT, a INT[], b VARCHAR[]) rows built with
// make_array: a row with two arrays of different lengths, one with a NULL
// and an empty array, one with a NULL element.
func unnestInput() *Values {
	schema := arrow.NewSchema([]arrow.Field{{Name: "k", Type: plan.Int64, Nullable: true}}, nil)
	lit := func(typ arrow.DataType, v any) expr.Expr { return &expr.Literal{Value: plan.Literal{Typ: typ, Val: v}} }
	return NewValues(schema, [][]expr.Expr{
		{lit(plan.Int64, int64(1))}, {lit(plan.Int64, int64(2))}, {lit(plan.Int64, int64(3))},
	})
}

func unnestArgs() []expr.Expr {
	k := jaCol(0, "k", plan.Int64)
	lit := func(typ arrow.DataType, v any) expr.Expr { return &expr.Literal{Value: plan.Literal{Typ: typ, Val: v}} }
	// a: [k, k*10] for k < 3, NULL for k = 3; b: ['x'] for k = 1, [] for
	// k = 2, ['y', NULL, 'z'] for k = 3.
	a := &expr.Case{Type: plan.ArrayOf(plan.Int64), Whens: []expr.When{{
		Cond: &expr.Binary{Op: plan.OpLt, L: k, R: lit(plan.Int64, int64(3)), Type: plan.Bool},
		Then: &expr.Func{Name: "make_array", Type: plan.ArrayOf(plan.Int64), Args: []expr.Expr{k, &expr.Binary{Op: plan.OpMul, L: k, R: lit(plan.Int64, int64(10)), Type: plan.Int64}}},
	}}}
	eq := func(v int64) expr.Expr {
		return &expr.Binary{Op: plan.OpEq, L: k, R: lit(plan.Int64, v), Type: plan.Bool}
	}
	b := &expr.Case{Type: plan.TextArray, Whens: []expr.When{
		{Cond: eq(1), Then: &expr.Func{Name: "make_array", Type: plan.TextArray, Args: []expr.Expr{lit(plan.Utf8, "x")}}},
		{Cond: eq(2), Then: &expr.Func{Name: "make_array", Type: plan.TextArray}},
	}, Else: &expr.Func{Name: "make_array", Type: plan.TextArray, Args: []expr.Expr{lit(plan.Utf8, "y"), lit(plan.Utf8, nil), lit(plan.Utf8, "z")}}}
	return []expr.Expr{a, b}
}

func TestUnnest(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	op, err := NewUnnest(unnestInput(), []int{0}, unnestArgs(), []string{"ea", "eb"})
	if err != nil {
		t.Fatal(err)
	}
	if got := op.Schema().Field(1).Type; !arrow.TypeEqual(got, plan.Int64) {
		t.Fatalf("element column type %s", got)
	}
	want := []string{"1|1|x", "1|10|NULL", "2|2|NULL", "2|20|NULL", "3|NULL|NULL", "3|NULL|y", "3|NULL|z"}
	slices.Sort(want)
	// Batches of 2 rows: arrays are split across output batches.
	for _, batch := range []int{2, 8192} {
		if got := jaCollect(t, shipPlan(t, op, nil), jaTC(mem, batch, 0)); !slices.Equal(got, want) {
			t.Fatalf("batch size %d: got %v, want %v", batch, got, want)
		}
	}
	// Without passing k on: the element columns alone.
	only, err := NewUnnest(unnestInput(), nil, unnestArgs(), []string{"ea", "eb"})
	if err != nil {
		t.Fatal(err)
	}
	wantOnly := []string{"1|x", "10|NULL", "2|NULL", "20|NULL", "NULL|NULL", "NULL|y", "NULL|z"}
	slices.Sort(wantOnly)
	if got := jaCollect(t, shipPlan(t, only, nil), jaTC(mem, 3, 0)); !slices.Equal(got, wantOnly) {
		t.Fatalf("got %v, want %v", got, wantOnly)
	}
	if _, err := NewUnnest(unnestInput(), []int{0}, []expr.Expr{jaCol(0, "k", plan.Int64)}, []string{"e"}); err == nil || !strings.Contains(err.Error(), "not an array") {
		t.Fatalf("unnest of a non-array: %v", err)
	}
}
