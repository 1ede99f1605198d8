package physical

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/physical/expr"
	"sluice/physical/mempool"
	"sluice/plan"
)

var setOpSchema = arrow.NewSchema([]arrow.Field{
	{Name: "a", Type: plan.Int64, Nullable: true}, {Name: "b", Type: plan.Utf8, Nullable: true},
}, nil)

// setOpRows renders rows sorted, one per line, NULL as <nil>.
func setOpRows(rows [][]any) string {
	lines := make([]string, len(rows))
	for i, r := range rows {
		lines[i] = fmt.Sprintf("%v", r)
	}
	sort.Strings(lines)
	return strings.Join(lines, " ")
}

// TestSetOp covers the four operations over duplicates and NULLs (equal to
// each other, as in GROUP BY), each input split over two batches, in one
// partition and hash-partitioned by both columns over three.
func TestSetOp(t *testing.T) {
	cases := []struct {
		kind plan.SetOpKind
		all  bool
		want string
	}{
		{plan.SetIntersect, false, "[1 x] [2 <nil>] [<nil> y]"},
		{plan.SetIntersect, true, "[1 x] [1 x] [2 <nil>] [<nil> y]"},
		{plan.SetExcept, false, "[3 z]"},
		{plan.SetExcept, true, "[1 x] [3 z] [<nil> y]"},
	}
	for _, parts := range []int{1, 3} {
		for _, tc := range cases {
			t.Run(fmt.Sprintf("%v all=%v parts=%d", tc.kind, tc.all, parts), func(t *testing.T) {
				mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
				left := newMemSource(setOpSchema, [][]arrow.RecordBatch{{
					makeBatch(t, mem, setOpSchema, []any{1, 1, nil, 3}, []any{"x", "x", "y", "z"}),
					makeBatch(t, mem, setOpSchema, []any{1, nil, 2}, []any{"x", "y", nil}),
				}})
				right := newMemSource(setOpSchema, [][]arrow.RecordBatch{{
					makeBatch(t, mem, setOpSchema, []any{1, nil, 2}, []any{"x", "y", nil}),
					makeBatch(t, mem, setOpSchema, []any{2, 4, 1}, []any{nil, "w", "x"}),
				}})
				var l, r Operator = left, right
				if parts > 1 {
					keys := []expr.Expr{col(0, "a", plan.Int64), col(1, "b", plan.Utf8)}
					l = NewRepartition(l, Partitioning{Kind: PartHash, Count: parts, Keys: keys})
					r = NewRepartition(r, Partitioning{Kind: PartHash, Count: parts, Keys: keys})
				}
				op, err := NewSetOp(l, r, tc.kind, tc.all, setOpSchema)
				if err != nil {
					t.Fatal(err)
				}
				if got := setOpRows(collectAll(t, op, newTestTC(mem, 4))); got != tc.want {
					t.Errorf("got %s, want %s", got, tc.want)
				}
				left.release()
				right.release()
				mem.AssertSize(t, 0)
			})
		}
	}
}

// TestSetOpEmptyRight: INTERSECT with an empty right side outputs nothing
// and never reads the left side; EXCEPT passes the distinct left rows.
func TestSetOpEmptyRight(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	left := newMemSource(setOpSchema, [][]arrow.RecordBatch{{
		makeBatch(t, mem, setOpSchema, []any{1, 1, nil}, []any{"x", "x", nil}),
	}})
	right := newMemSource(setOpSchema, [][]arrow.RecordBatch{nil})
	tc := newTestTC(mem, 4)
	inter, err := NewSetOp(left, right, plan.SetIntersect, true, setOpSchema)
	if err != nil {
		t.Fatal(err)
	}
	if got := collectAll(t, inter, tc); len(got) != 0 {
		t.Errorf("intersect with empty = %v", got)
	}
	except, err := NewSetOp(left, right, plan.SetExcept, false, setOpSchema)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := setOpRows(collectAll(t, except, tc)), "[1 x] [<nil> <nil>]"; got != want {
		t.Errorf("except empty = %s, want %s", got, want)
	}
	left.release()
	mem.AssertSize(t, 0)
}

// TestSetOpErrors: mismatched inputs are refused at construction, and a
// pool too small for the distinct rows fails with resources exhausted.
func TestSetOpErrors(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	one := newMemSource(setOpSchema, [][]arrow.RecordBatch{{
		makeBatch(t, mem, setOpSchema, []any{1, 2, 3}, []any{"x", "y", "z"}),
	}})
	if _, err := NewSetOp(one, newMemSource(intSchema, [][]arrow.RecordBatch{nil}), plan.SetExcept, false, setOpSchema); err == nil {
		t.Error("column count mismatch accepted")
	}
	two := newMemSource(setOpSchema, [][]arrow.RecordBatch{nil, nil})
	if _, err := NewSetOp(one, two, plan.SetExcept, false, setOpSchema); err == nil {
		t.Error("partition count mismatch accepted")
	}
	op, err := NewSetOp(one, one, plan.SetExcept, false, setOpSchema)
	if err != nil {
		t.Fatal(err)
	}
	tc := newTestTC(mem, 4)
	tc.Memory = mempool.NewPool("tiny", 64, nil)
	s, err := op.Execute(context.Background(), 0, tc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Next(context.Background()); !errors.Is(err, mempool.ErrResourcesExhausted) {
		t.Errorf("err = %v, want resources exhausted", err)
	}
	s.Close()
	if n := tc.Memory.Used(); n != 0 {
		t.Errorf("%d bytes still reserved", n)
	}
	one.release()
	mem.AssertSize(t, 0)
}

// TestPlannerJoinErrorIsReturned: a join the hash join constructor refuses
// (here a null-aware anti join on two keys) fails planning with that
// error instead of leaving a nil operator in the plan.
func TestPlannerJoinErrorIsReturned(t *testing.T) {
	l, r := testScan(t), testScan(t)
	eq := func(a, b plan.Expr) plan.Expr {
		return &plan.Binary{Op: plan.OpEq, L: a, R: b, Typ: arrow.FixedWidthTypes.Boolean}
	}
	k := l.Schema()[0].Ref()
	j := &plan.Join{Kind: plan.JoinAnti, NullAware: true, Left: l, Right: r,
		Cond: &plan.Binary{Op: plan.OpAnd, L: eq(k, r.Schema()[0].Ref()),
			R: eq(&plan.Binary{Op: plan.OpAdd, L: k, R: k, Typ: plan.Int64}, r.Schema()[0].Ref()), Typ: arrow.FixedWidthTypes.Boolean}}
	op, err := PlanForTests(j, 2, false)
	if err == nil {
		t.Fatalf("planned %s", Format(op))
	}
}
