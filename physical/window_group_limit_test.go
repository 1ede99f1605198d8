package physical

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/physical/expr"
	"sluice/plan"
)

// groupLimitCase is one random input of TestWindowGroupLimit.
type groupLimitCase struct {
	rows  [][]any // p, o, v, id (id = index)
	parts [][]int // the rows of each input partition, in order
	fn    plan.WindowFunc
	limit int64
	key   SortKey // ORDER BY o, direction and NULLs random
	byP   bool    // PARTITION BY p (else one window partition)
}

func newGroupLimitCase(rng *rand.Rand) groupLimitCase {
	n := rng.IntN(3000)
	nparts, nvals := 1+rng.IntN(60), 1+rng.IntN(40)
	maybe := func(v, nulls int) any {
		if rng.IntN(nulls) == 0 {
			return nil
		}
		return v
	}
	c := groupLimitCase{
		fn:    []plan.WindowFunc{plan.WinRowNumber, plan.WinRank, plan.WinDenseRank}[rng.IntN(3)],
		limit: int64(rng.IntN(12)),
		key:   SortKey{Expr: wO, Desc: rng.IntN(2) == 0, NullsFirst: rng.IntN(2) == 0},
		byP:   rng.IntN(5) > 0,
	}
	c.parts = make([][]int, 1+rng.IntN(3))
	for i := 0; i < n; i++ {
		c.rows = append(c.rows, []any{maybe(rng.IntN(nparts), 10), maybe(rng.IntN(nvals), 8), rng.IntN(1000), i})
		p := rng.IntN(len(c.parts))
		c.parts[p] = append(c.parts[p], i)
	}
	return c
}

// orderCmp orders two o values as c.key does.
func (c groupLimitCase) orderCmp(a, b any) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		if c.key.NullsFirst {
			return -1
		}
		return 1
	case b == nil:
		if c.key.NullsFirst {
			return 1
		}
		return -1
	}
	r := a.(int) - b.(int)
	if c.key.Desc {
		r = -r
	}
	return r
}

// check reports what is wrong with out (row ids the operator passed on):
// every row must be an input row, passed once, and out must hold enough
// rows for the window and filter above to answer as over all rows: for
// rank and dense_rank every row whose value over all rows is within the
// limit, for row_number every row ordered before the limit-th row's value
// and enough rows at that value to fill the limit.
func (c groupLimitCase) check(out []int) error {
	seen := map[int]bool{}
	for _, id := range out {
		if id < 0 || id >= len(c.rows) || seen[id] {
			return fmt.Errorf("row %d passed twice or not an input row", id)
		}
		seen[id] = true
	}
	groups := map[string][]int{}
	for i, r := range c.rows {
		k := "all"
		if c.byP {
			k = fmt.Sprint(r[0])
		}
		groups[k] = append(groups[k], i)
	}
	for k, ids := range groups {
		slices.SortFunc(ids, func(a, b int) int { return c.orderCmp(c.rows[a][1], c.rows[b][1]) })
		var rank, dense int64
		for pos, id := range ids {
			peer := pos > 0 && c.orderCmp(c.rows[ids[pos-1]][1], c.rows[id][1]) == 0
			if !peer {
				rank = int64(pos + 1)
				dense++
			}
			v := rank
			if c.fn == plan.WinDenseRank {
				v = dense
			}
			if c.fn == plan.WinRowNumber {
				// Before the limit-th row's value: needed; at it: the
				// limit must be fillable.
				if int64(pos) >= c.limit {
					break
				}
				last := ids[min(c.limit, int64(len(ids)))-1]
				if c.orderCmp(c.rows[id][1], c.rows[last][1]) < 0 && !seen[id] {
					return fmt.Errorf("partition %s: row %d (row_number %d) missing", k, id, pos+1)
				}
				if c.orderCmp(c.rows[id][1], c.rows[last][1]) == 0 {
					have, need := 0, 0
					for p, j := range ids {
						if c.orderCmp(c.rows[j][1], c.rows[last][1]) == 0 {
							if seen[j] {
								have++
							}
							if int64(p) < c.limit {
								need++
							}
						}
					}
					if have < need {
						return fmt.Errorf("partition %s: %d rows at the limit's value passed, %d needed", k, have, need)
					}
					break
				}
				continue
			}
			if v <= c.limit && !seen[id] {
				return fmt.Errorf("partition %s: row %d (%s %d) missing", k, id, c.fn, v)
			}
		}
	}
	return nil
}

func (c groupLimitCase) source(t *testing.T, mem memory.Allocator, rng *rand.Rand) *memSource {
	parts := make([][]arrow.RecordBatch, len(c.parts))
	for p, ids := range c.parts {
		per := 1 + rng.IntN(400)
		for s := 0; s < len(ids); s += per {
			cols := make([][]any, 4)
			for _, id := range ids[s:min(s+per, len(ids))] {
				for k := range cols {
					cols[k] = append(cols[k], c.rows[id][k])
				}
			}
			parts[p] = append(parts[p], makeBatch(t, mem, windowSchema, cols...))
		}
	}
	return newMemSource(windowSchema, parts)
}

// TestWindowGroupLimit runs random inputs (partition and order keys with
// NULLs and ties, spread over input partitions and batches) through the
// operator with random compaction bounds and memory limits, and checks
// that what it passes on lets the window and filter above answer as over
// all rows.
func TestWindowGroupLimit(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 5))
	old := GroupLimitCompactRows
	defer func() { GroupLimitCompactRows = old }()
	for trial := 0; trial < 150; trial++ {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		c := newGroupLimitCase(rng)
		GroupLimitCompactRows = 1 + rng.IntN(500)
		var limit int64
		if rng.IntN(4) == 0 {
			limit = int64(1000 + rng.IntN(100000))
		}
		src := c.source(t, mem, rng)
		var pby []expr.Expr
		if c.byP {
			pby = append(pby, wP)
		}
		op, err := NewWindowGroupLimit(src, pby, []SortKey{c.key}, c.fn, c.limit)
		if err != nil {
			t.Fatal(err)
		}
		tc := jaTC(mem, 1+rng.IntN(200), limit)
		var out []int
		for p, rows := range collectPartitions(t, op, tc) {
			inPart := map[int]bool{}
			for _, id := range c.parts[p] {
				inPart[id] = true
			}
			for _, r := range rows {
				id := r[3].(int)
				if !inPart[id] {
					t.Fatalf("trial %d: row %d came out of partition %d, not its own", trial, id, p)
				}
				out = append(out, id)
			}
		}
		if err := c.check(out); err != nil {
			t.Fatalf("trial %d (%s <= %d, order %s, by p %v, compact at %d, memory %d): %v",
				trial, c.fn, c.limit, c.key, c.byP, GroupLimitCompactRows, limit, err)
		}
		src.release()
		mem.AssertSize(t, 0)
	}
}

// TestWindowGroupLimitDrops checks that the operator drops what it may:
// over one input partition that it does not give up on (each sort keeps
// far fewer than three quarters of at least GroupLimitCompactRows rows),
// it passes exactly the rows within the limit.
func TestWindowGroupLimitDrops(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	old := GroupLimitCompactRows
	defer func() { GroupLimitCompactRows = old }()
	for _, fn := range []plan.WindowFunc{plan.WinRowNumber, plan.WinRank, plan.WinDenseRank} {
		for _, at := range []int{500, 1500, 5000} {
			GroupLimitCompactRows = at
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			c := groupLimitCase{fn: fn, limit: 3, key: SortKey{Expr: wO, Desc: true}, byP: true, parts: [][]int{nil}}
			for i := 0; i < 4000; i++ {
				c.rows = append(c.rows, []any{rng.IntN(5), rng.IntN(50), 0, i})
				c.parts[0] = append(c.parts[0], i)
			}
			src := c.source(t, mem, rng)
			op, err := NewWindowGroupLimit(src, []expr.Expr{wP}, []SortKey{c.key}, fn, c.limit)
			if err != nil {
				t.Fatal(err)
			}
			rows := collectAll(t, op, jaTC(mem, 64, 0))
			var out []int
			for _, r := range rows {
				out = append(out, r[3].(int))
			}
			if err := c.check(out); err != nil {
				t.Fatalf("%s, compact at %d: %v", fn, at, err)
			}
			// Exactly the rows within the limit: 5 partitions of 3 rows
			// for row_number; for rank and dense_rank, whatever ties make.
			want := 0
			for p := 0; p < 5; p++ {
				var os []int
				for _, r := range c.rows {
					if r[0] == p {
						os = append(os, r[1].(int))
					}
				}
				slices.SortFunc(os, func(a, b int) int { return b - a })
				dense := 0
				for i, o := range os {
					if i == 0 || o != os[i-1] {
						dense++
						if (fn == plan.WinRank && i >= 3) || (fn == plan.WinDenseRank && dense > 3) {
							break
						}
					}
					if fn == plan.WinRowNumber && i >= 3 {
						break
					}
					want++
				}
			}
			if len(out) != want {
				t.Errorf("%s, compact at %d: passed %d rows, want %d", fn, at, len(out), want)
			}
			src.release()
			mem.AssertSize(t, 0)
		}
	}
}

// TestWindowGroupLimitPlanned: the planner puts a group limit below a
// window only for the filter over it; the same window node read elsewhere
// without the filter (a CTE read twice) keeps every row.
func TestWindowGroupLimitPlanned(t *testing.T) {
	in := testScan(t)
	k := in.Schema()[0]
	rkID := plan.ColumnID(1000 + testIDs.Add(1))
	w := &plan.Window{
		Input: in,
		Calls: []*plan.WindowCall{{Func: plan.WinRank, PartitionBy: []plan.Expr{k.Ref()},
			OrderBy: []plan.SortKey{{Expr: k.Ref()}}, Frame: plan.DefaultFrame, Typ: plan.Int64}},
		Cols: plan.Schema{{ID: rkID, Name: "rk", Type: plan.Int64, Nullable: true}},
	}
	rk := w.Schema()[1]
	lit := &plan.Literal{Typ: plan.Int64, Val: int64(1)}
	filtered := &plan.Filter{Input: w, Pred: &plan.Binary{Op: plan.OpLtEq, L: rk.Ref(), R: lit, Typ: arrow.FixedWidthTypes.Boolean}}
	limits := func(op Operator) int {
		n := 0
		for _, o := range PreOrder(op) {
			if _, ok := o.(*WindowGroupLimit); ok {
				n++
			}
		}
		return n
	}
	for _, tc := range []struct {
		name string
		n    plan.Node
		want int
	}{
		{"filtered", filtered, 1},
		{"bare", w, 0},
		{"filtered then bare", &plan.Union{Inputs: []plan.Node{filtered, w}, Cols: w.Schema()}, 1},
		{"bare then filtered", &plan.Union{Inputs: []plan.Node{w, filtered}, Cols: w.Schema()}, 1},
		{"bound from below", &plan.Filter{Input: w, Pred: &plan.Binary{Op: plan.OpGtEq, L: rk.Ref(), R: lit, Typ: arrow.FixedWidthTypes.Boolean}}, 0},
	} {
		op, err := PlanForTests(tc.n, 2, false)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := limits(op); got != tc.want {
			t.Errorf("%s: %d group limits planned, want %d", tc.name, got, tc.want)
		}
	}
}
