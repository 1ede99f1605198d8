package physical

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/physical/expr"
	"sluice/plan"
)

// recursiveCounter is WITH RECURSIVE r(n) AS (VALUES start... UNION [ALL]
// SELECT (n + 1) % mod FROM r WHERE n < stop): with mod it cycles, which
// only UNION ends.
func recursiveCounter(t *testing.T, start []int64, stop, mod int64, distinct bool) *RecursiveCTE {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{{Name: "n", Type: plan.Int64, Nullable: true}}, nil)
	rows := make([][]expr.Expr, len(start))
	for i, v := range start {
		rows[i] = []expr.Expr{&expr.Literal{Value: plan.Literal{Typ: plan.Int64, Val: v}}}
	}
	base := NewValues(schema, rows)
	work := NewWorkTableScan("r", 7, schema)
	in := plan.Schema{{ID: 1, Name: "n", Type: plan.Int64}}
	n := &plan.ColRef{ID: 1, Name: "n", Typ: plan.Int64}
	lit := func(v int64) plan.Expr { return &plan.Literal{Typ: plan.Int64, Val: v} }
	pred, err := expr.Compile(&plan.Binary{Op: plan.OpLt, L: n, R: lit(stop), Typ: plan.Bool}, in)
	if err != nil {
		t.Fatal(err)
	}
	next := plan.Expr(&plan.Binary{Op: plan.OpAdd, L: n, R: lit(1), Typ: plan.Int64})
	if mod > 0 {
		next = &plan.Binary{Op: plan.OpMod, L: next, R: lit(mod), Typ: plan.Int64}
	}
	proj, err := expr.Compile(next, in)
	if err != nil {
		t.Fatal(err)
	}
	rec := NewProjection(NewFilter(work, pred), []expr.Expr{proj}, []string{"n"})
	return NewRecursiveCTE("r", base, rec, distinct, 7, schema)
}

// TestRecursiveCTE: UNION ALL iterates until the recursive term gives no
// rows; UNION drops rows already output (across iterations and within
// one), which ends a cycle; the working tables and the UNION's table are
// reserved and all freed.
func TestRecursiveCTE(t *testing.T) {
	cases := []struct {
		name     string
		start    []int64
		stop     int64
		mod      int64
		distinct bool
		want     []string
	}{
		{"union all counts", []int64{1}, 5, 0, false, []string{"1", "2", "3", "4", "5"}},
		{"union all keeps duplicates", []int64{1, 1}, 3, 0, false, []string{"1", "1", "2", "2", "3", "3"}},
		{"union ends a cycle", []int64{0}, 100, 4, true, []string{"0", "1", "2", "3"}},
		{"union drops duplicates of the base", []int64{2, 2, 1}, 3, 0, true, []string{"1", "2", "3"}},
		{"empty base", nil, 3, 0, false, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			op := recursiveCounter(t, c.start, c.stop, c.mod, c.distinct)
			tc := jaTC(mem, 2, 0)
			got := jaCollect(t, op, tc)
			want := slices.Clone(c.want)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Fatalf("got %v, want %v", got, want)
			}
			if u := tc.Memory.Used(); u != 0 {
				t.Errorf("pool still holds %d bytes", u)
			}
		})
	}
}

// TestRecursiveCTEManyIterations: ten thousand iterations of one row each,
// under a memory limit far below what all the rows together take: only the
// working table is held, not every iteration's.
func TestRecursiveCTEManyIterations(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	op := recursiveCounter(t, []int64{1}, 10_000, 0, false)
	tc := jaTC(mem, 1024, 64<<10)
	got := jaCollect(t, op, tc)
	if len(got) != 10_000 {
		t.Fatalf("%d rows, want 10000", len(got))
	}
	seen := map[string]bool{}
	for _, r := range got {
		seen[r] = true
	}
	for i := 1; i <= 10_000; i++ {
		if !seen[strconv.Itoa(i)] {
			t.Fatalf("row %d missing", i)
		}
	}
}

// TestRecursiveCTEStops: a cycle under UNION ALL never ends by itself;
// closing the stream early or cancelling stops it, freeing what it holds.
func TestRecursiveCTEStops(t *testing.T) {
	for _, how := range []string{"close", "cancel"} {
		t.Run(how, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			op := recursiveCounter(t, []int64{0}, 100, 4, false)
			tc := jaTC(mem, 2, 0)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			s, err := op.Execute(ctx, 0, tc)
			if err != nil {
				t.Fatal(err)
			}
			for i := range 1000 {
				if how == "cancel" && i == 500 {
					cancel()
				}
				b, err := s.Next(ctx)
				if err != nil {
					if how == "cancel" && errors.Is(err, context.Canceled) {
						break
					}
					t.Fatalf("row %d: %v", i, err)
				}
				b.Release()
			}
			s.Close()
			if u := tc.Memory.Used(); u != 0 {
				t.Errorf("pool still holds %d bytes", u)
			}
		})
	}
}

// TestWorkTableScanOutsideItsCTE: executed without its recursive CTE's
// working table, the scan fails instead of reading nothing.
func TestWorkTableScanOutsideItsCTE(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{{Name: "n", Type: plan.Int64, Nullable: true}}, nil)
	_, err := NewWorkTableScan("r", 3, schema).Execute(context.Background(), 0, jaTC(memory.DefaultAllocator, 8, 0))
	if err == nil {
		t.Fatal("a working table scan outside its CTE executed")
	}
}
