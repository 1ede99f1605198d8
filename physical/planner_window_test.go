package physical

import (
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/catalog"
	"sluice/plan"
	"sluice/sql"
)

// A CTE read twice whose references keep different windows (pruning
// drops the average from the second, as TPC-DS q47 and q57 drop it from
// two of their three references): the window node is split per window,
// so the ranking over the monthly totals is one shared subtree sorted
// once, and the average above it sorts nothing. Both plans, shared or
// not, return the same rows.
func TestPlannerSharesTheCommonWindowOfDifferentlyPrunedReferences(t *testing.T) {
	cat := writeTPCH(t)
	const q = `with v as (
		select o_custkey, o_orderdate, sum(o_totalprice) t,
			rank() over (partition by o_custkey order by o_orderdate) rk,
			avg(sum(o_totalprice)) over (partition by o_custkey) s
		from orders group by o_custkey, o_orderdate)
	select a.o_custkey, a.o_orderdate, a.s, b.t from v a join v b
	on a.o_custkey = b.o_custkey and a.rk = b.rk + 1`
	var rows [2][]string
	for i, share := range []bool{true, false} {
		op := planQuery(t, cat, q, share)
		var sorts, windows int
		var sharedWindow *SharedOutput
		for _, o := range PreOrder(op) {
			switch x := o.(type) {
			case *Sort:
				sorts++
			case *Window:
				windows++
			case *SharedOutput:
				if _, ok := x.input.(*Window); ok {
					sharedWindow = x
				}
			}
		}
		if share {
			// PreOrder lists the shared subtree once.
			if sharedWindow == nil || sharedWindow.Refs != 2 || sorts != 1 || windows != 2 {
				t.Fatalf("shared: want the ranking window shared by 2 readers, one sort, two windows, got %v, %d sorts, %d windows\n%s", sharedWindow, sorts, windows, Format(op))
			}
		} else if sharedWindow != nil || sorts != 2 || windows != 3 {
			t.Fatalf("not shared: want the ranking planned in each reference, got %v, %d sorts, %d windows\n%s", sharedWindow, sorts, windows, Format(op))
		}
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		parts, err := runPartitions(t, op, testTaskContext(mem, 64))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range parts {
			rows[i] = append(rows[i], p...)
		}
		sort.Strings(rows[i])
		mem.AssertSize(t, 0)
	}
	if len(rows[0]) == 0 || !slices.Equal(rows[0], rows[1]) {
		t.Fatalf("shared plan returned %d rows, unshared %d; first lines:\n%s\n--\n%s", len(rows[0]), len(rows[1]),
			strings.Join(rows[0][:min(5, len(rows[0]))], "\n"), strings.Join(rows[1][:min(5, len(rows[1]))], "\n"))
	}
}

// A window over a scan is not shared: sharing keeps its whole output for
// its readers, which is bounded only when the window reads an aggregate
// (the distributed planner shares stages on the same terms).
func TestPlannerDoesNotShareAWindowOverAScan(t *testing.T) {
	cat := writeTPCH(t)
	const q = `with v as (select o_custkey, o_orderkey, rank() over (partition by o_custkey order by o_orderkey) rk from orders)
	select a.o_orderkey, b.o_orderkey from v a join v b on a.o_custkey = b.o_custkey and a.rk = b.rk + 1`
	op := planQuery(t, cat, q, true)
	windows := 0
	for _, o := range PreOrder(op) {
		if _, ok := o.(*Window); ok {
			windows++
		}
		if s, ok := o.(*SharedOutput); ok {
			t.Fatalf("want nothing shared, got %v\n%s", s, Format(op))
		}
	}
	if windows != 2 {
		t.Fatalf("want the window planned in both references, got %d windows\n%s", windows, Format(op))
	}
}

// planQuery plans one query over cat on 3 partitions, sharing repeated
// subplans when share is set.
func planQuery(t *testing.T, cat *catalog.Catalog, q string, share bool) Operator {
	t.Helper()
	stmts, err := sql.Parse(q)
	if err != nil {
		t.Fatal(err)
	}
	bound, err := (&sql.Binder{Catalog: cat}).Bind(stmts[0])
	if err != nil {
		t.Fatal(err)
	}
	query := bound.(*sql.Query)
	opt, err := plan.Optimize(query.Plan, query.IDs)
	if err != nil {
		t.Fatal(err)
	}
	op, err := PlanForTests(opt, 3, share)
	if err != nil {
		t.Fatal(err)
	}
	return op
}
