package physical

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/physical/expr"
	"sluice/physical/mempool"
	"sluice/plan"
)

// windowSpillFamilies are every window function, over every kind of
// frame the window supports, in groups run together.
func windowSpillFamilies() map[string][]WindowExpr {
	i64 := func(v int64) expr.Expr { return &expr.Literal{Value: plan.Literal{Typ: plan.Int64, Val: v}} }
	null := &expr.Literal{Value: plan.Literal{Typ: plan.Int64}}
	fams := map[string][]WindowExpr{
		"ranking": {
			{Func: plan.WinRowNumber, Name: "rn", Type: plan.Int64},
			{Func: plan.WinRank, Name: "rank", Type: plan.Int64},
			{Func: plan.WinDenseRank, Name: "dense", Type: plan.Int64},
			{Func: plan.WinNtile, Args: []expr.Expr{i64(7)}, Name: "tile", Type: plan.Int64},
			{Func: plan.WinNtile, Args: []expr.Expr{i64(5000)}, Name: "tiles", Type: plan.Int64},
			{Func: plan.WinPercentRank, Name: "pr", Type: plan.Float64},
			{Func: plan.WinCumeDist, Name: "cd", Type: plan.Float64},
		},
		"offset": {
			{Func: plan.WinLag, Args: []expr.Expr{wV, i64(1), null}, Name: "lag", Type: plan.Int64},
			{Func: plan.WinLag, Args: []expr.Expr{wID, i64(40), i64(-1)}, Name: "lag40", Type: plan.Int64},
			{Func: plan.WinLead, Args: []expr.Expr{wID, i64(3), i64(-1)}, Name: "lead", Type: plan.Int64},
			{Func: plan.WinLead, Args: []expr.Expr{wID, i64(0), i64(-1)}, Name: "lead0", Type: plan.Int64},
			// Offsets that vary from row to row (NULL among them): the
			// rows they point at go back and forth.
			{Func: plan.WinLag, Args: []expr.Expr{wID, wO, i64(-1)}, Name: "lagO", Type: plan.Int64},
			{Func: plan.WinLead, Args: []expr.Expr{wV, wO, wID}, Name: "leadO", Type: plan.Int64},
			{Func: plan.WinNthValue, Args: []expr.Expr{wID, i64(3)}, Frame: plan.DefaultFrame, Name: "nth", Type: plan.Int64},
		},
	}
	for i, fr := range windowFrameCases {
		fams[fmt.Sprintf("frame%d", i)] = []WindowExpr{
			{Func: plan.WinAggregate, Agg: plan.AggSum, Args: []expr.Expr{wV}, Frame: fr, Name: "sum", Type: plan.Int64},
			{Func: plan.WinAggregate, Agg: plan.AggAvg, Args: []expr.Expr{wV}, Frame: fr, Name: "avg", Type: plan.Float64},
			{Func: plan.WinAggregate, Agg: plan.AggCount, Args: []expr.Expr{wV}, Frame: fr, Name: "count", Type: plan.Int64},
			{Func: plan.WinAggregate, Agg: plan.AggCountStar, Frame: fr, Name: "rows", Type: plan.Int64},
			{Func: plan.WinAggregate, Agg: plan.AggMin, Args: []expr.Expr{wV}, Frame: fr, Name: "min", Type: plan.Int64},
			{Func: plan.WinAggregate, Agg: plan.AggMax, Args: []expr.Expr{wV}, Frame: fr, Name: "max", Type: plan.Int64},
			{Func: plan.WinFirstValue, Args: []expr.Expr{wID}, Frame: fr, Name: "first", Type: plan.Int64},
			{Func: plan.WinLastValue, Args: []expr.Expr{wID}, Frame: fr, Name: "last", Type: plan.Int64},
			{Func: plan.WinNthValue, Args: []expr.Expr{wV, i64(2)}, Frame: fr, Name: "nth", Type: plan.Int64},
		}
	}
	// A long sliding frame, longer than a block: min and max, which cannot
	// remove rows, start it over for every row.
	long := plan.WindowFrame{Rows: true, Start: offsetBound(plan.BoundPreceding, 150), End: offsetBound(plan.BoundFollowing, 90)}
	fams["long"] = []WindowExpr{
		{Func: plan.WinAggregate, Agg: plan.AggMax, Args: []expr.Expr{wV}, Frame: long, Name: "max", Type: plan.Int64},
		{Func: plan.WinAggregate, Agg: plan.AggSum, Args: []expr.Expr{wV}, Frame: long, Name: "sum", Type: plan.Int64},
		{Func: plan.WinFirstValue, Args: []expr.Expr{wV}, Frame: long, Name: "first", Type: plan.Int64},
	}
	return fams
}

// windowOnePartitionRows returns n rows of windowRows in one partition
// (p = 7), sorted by o then id.
func windowOnePartitionRows(seed uint64, n int, desc bool) [][]any {
	rows := windowRows(seed, n, desc)
	for _, r := range rows {
		r[0] = 7
	}
	slices.SortStableFunc(rows, func(a, b []any) int {
		x, y := a[1], b[1]
		switch {
		case x == nil && y == nil:
			return a[3].(int) - b[3].(int)
		case x == nil:
			if desc {
				return -1
			}
			return 1
		case y == nil:
			if desc {
				return 1
			}
			return -1
		}
		c := x.(int) - y.(int)
		if desc {
			c = -c
		}
		if c != 0 {
			return c
		}
		return a[3].(int) - b[3].(int)
	})
	return rows
}

// TestWindowSpillMatchesMemory runs every window function over window
// partitions far larger than the task's memory limit (one partition of
// every row, with and without PARTITION BY, and a few large partitions
// with NULL keys), ascending and descending, under random limits, in a
// task that may spill: the window spills each partition that does not
// fit and evaluates it from disk, giving exactly the unlimited answer,
// leaving nothing reserved, allocated or on disk.
func TestWindowSpillMatchesMemory(t *testing.T) {
	defer func(b int64) { windowSpillBlockBytes = b }(windowSpillBlockBytes)
	windowSpillBlockBytes = 256
	seed := uint64(os.Getpid())
	rng := rand.New(rand.NewPCG(seed, 17))
	const n = 2000
	for _, desc := range []bool{false, true} {
		shapes := map[string]struct {
			rows [][]any
			by   []expr.Expr
		}{
			"whole":      {windowOnePartitionRows(seed, n, desc), nil},
			"one":        {windowOnePartitionRows(seed+1, n, desc), []expr.Expr{wP}},
			"partitions": {windowRows(seed+2, 2*n, desc), []expr.Expr{wP}},
		}
		for shape, sh := range shapes {
			for family, funcs := range windowSpillFamilies() {
				t.Run(fmt.Sprintf("desc=%v/%s/%s", desc, shape, family), func(t *testing.T) {
					mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
					defer mem.AssertSize(t, 0)
					src := windowSource(t, mem, sh.rows, 1+rng.IntN(100))
					defer src.release()
					w, err := NewWindow(src, sh.by, []SortKey{{Expr: wO, Desc: desc, NullsFirst: desc}}, funcs)
					if err != nil {
						t.Fatal(err)
					}
					batch := 1 + rng.IntN(200)
					tc := newTestTC(mem, batch)
					want := collectAll(t, w, tc)
					peak := tc.Memory.Peak()
					for try := 0; try < 2; try++ {
						// A limit between a quarter and five twelfths of what
						// the unlimited run held: the large partitions
						// do not fit.
						limit := peak/4 + rng.Int64N(peak/6+1)
						files, _ := SpillStats()
						got, err := runWindowLimited(t, w, mem, batch, limit)
						if err != nil {
							t.Fatalf("seed %d, batch %d, limit %d (unlimited peak %d): %v", seed, batch, limit, peak, err)
						}
						if fmt.Sprint(got) != fmt.Sprint(want) {
							for i := range got {
								if fmt.Sprint(got[i]) != fmt.Sprint(want[i]) {
									t.Fatalf("seed %d, batch %d, limit %d (unlimited peak %d): row %d is %v, want %v", seed, batch, limit, peak, i, got[i], want[i])
								}
							}
							t.Fatalf("seed %d, limit %d: %d rows, want %d", seed, limit, len(got), len(want))
						}
						if after, _ := SpillStats(); after == files {
							t.Fatalf("limit %d (unlimited peak %d): nothing spilled", limit, peak)
						}
					}
				})
			}
		}
	}
}

// TestWindowSpillTinyLimits: under limits down to nothing, a window in a
// task that may spill gives the unlimited answer or fails with the memory
// error, never a wrong answer, and leaves nothing behind.
func TestWindowSpillTinyLimits(t *testing.T) {
	defer func(b int64) { windowSpillBlockBytes = b }(windowSpillBlockBytes)
	windowSpillBlockBytes = 256
	seed := uint64(os.Getpid())
	rng := rand.New(rand.NewPCG(seed, 23))
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	src := windowSource(t, mem, windowOnePartitionRows(seed, 1500, false), 50)
	defer src.release()
	funcs := append(windowSpillFamilies()["ranking"], windowSpillFamilies()["frame7"]...)
	w, err := NewWindow(src, nil, []SortKey{{Expr: wO}}, funcs)
	if err != nil {
		t.Fatal(err)
	}
	tc := newTestTC(mem, 64)
	want := collectAll(t, w, tc)
	passed := 0
	for try := 0; try < 20; try++ {
		limit := rng.Int64N(tc.Memory.Peak() / 4)
		got, err := runWindowLimited(t, w, mem, 64, limit)
		switch {
		case err == nil:
			passed++
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("seed %d, limit %d: the answer differs from the unlimited one", seed, limit)
			}
		case !errors.Is(err, mempool.ErrResourcesExhausted):
			t.Fatalf("seed %d, limit %d: %v", seed, limit, err)
		}
	}
	t.Logf("%d of 20 limits under a quarter of the unlimited peak passed", passed)
}

// TestWindowSpillCancel: a window cancelled while it evaluates a spilled
// partition stops, and frees what it holds, its spill file included.
func TestWindowSpillCancel(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	src := windowSource(t, mem, windowOnePartitionRows(5, 3000, false), 40)
	defer src.release()
	w, err := NewWindow(src, nil, []SortKey{{Expr: wO}}, windowSpillFamilies()["frame2"])
	if err != nil {
		t.Fatal(err)
	}
	tc := newTestTC(mem, 64)
	tc.Memory = mempool.NewPool("task", 40_000, nil)
	tc.SpillDir = t.TempDir()
	fds := openFDs(t)
	ctx, cancel := context.WithCancel(context.Background())
	s, err := w.Execute(ctx, 0, tc)
	if err != nil {
		t.Fatal(err)
	}
	files, _ := SpillStats()
	b, err := s.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b.Release()
	if after, _ := SpillStats(); after == files {
		t.Fatal("the partition was not spilled")
	}
	cancel()
	for err == nil {
		if b, err = s.Next(ctx); err == nil {
			b.Release()
		}
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	s.Close()
	if tc.Memory.Used() != 0 {
		t.Errorf("%d bytes still reserved", tc.Memory.Used())
	}
	checkNoSpillFiles(t, tc.SpillDir)
	if n := openFDs(t); n > fds {
		t.Errorf("%d file descriptors open, %d before: the spill file was left open", n, fds)
	}
}
