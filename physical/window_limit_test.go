package physical

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/physical/expr"
	"sluice/physical/kernels"
	"sluice/physical/mempool"
	"sluice/plan"
)

// windowLimitShapes are inputs sorted by p (NULLs last), then o, then id:
// many partitions of a few rows with NULL keys at the end, one partition
// of every row, and one partition of NULL keys.
func windowLimitShapes(n int) map[string][][]any {
	tiny := make([][]any, n)
	huge := make([][]any, n)
	nulls := make([][]any, n)
	rng := rand.New(rand.NewPCG(3, 11))
	for i := range tiny {
		var p any = i / 5
		if i >= n-12 {
			p = nil
		}
		// o grows with i, so the rows are sorted within each partition;
		// every other pair shares a value (peers).
		o, v := i/2, rng.IntN(50)-20
		tiny[i] = []any{p, o, v, i}
		huge[i] = []any{7, o, v, i}
		nulls[i] = []any{nil, o, v, i}
	}
	return map[string][][]any{"tiny": tiny, "huge": huge, "nulls": nulls, "empty": nil}
}

// windowLimitFamilies are the function families a limit is tried on.
func windowLimitFamilies() map[string][]WindowExpr {
	i64 := func(v int64) expr.Expr { return &expr.Literal{Value: plan.Literal{Typ: plan.Int64, Val: v}} }
	running := plan.WindowFrame{Rows: true, Start: plan.FrameBound{Kind: plan.BoundUnboundedPreceding}, End: plan.FrameBound{Kind: plan.BoundCurrentRow}}
	sliding := plan.WindowFrame{Rows: true, Start: offsetBound(plan.BoundPreceding, 2), End: offsetBound(plan.BoundFollowing, 1)}
	groups := plan.WindowFrame{Start: offsetBound(plan.BoundPreceding, 3), End: offsetBound(plan.BoundFollowing, 2)}
	return map[string][]WindowExpr{
		"ranking": {
			{Func: plan.WinRowNumber, Name: "rn", Type: plan.Int64},
			{Func: plan.WinRank, Name: "rank", Type: plan.Int64},
			{Func: plan.WinDenseRank, Name: "dense", Type: plan.Int64},
			{Func: plan.WinNtile, Args: []expr.Expr{i64(4)}, Name: "tile", Type: plan.Int64},
			{Func: plan.WinPercentRank, Name: "pr", Type: plan.Float64},
			{Func: plan.WinCumeDist, Name: "cd", Type: plan.Float64},
		},
		"offset": {
			{Func: plan.WinLag, Args: []expr.Expr{wV, i64(1), &expr.Literal{Value: plan.Literal{Typ: plan.Int64}}}, Name: "lag", Type: plan.Int64},
			{Func: plan.WinLead, Args: []expr.Expr{wID, i64(3), i64(-1)}, Name: "lead", Type: plan.Int64},
		},
		"value": {
			{Func: plan.WinFirstValue, Args: []expr.Expr{wV}, Frame: sliding, Name: "first", Type: plan.Int64},
			{Func: plan.WinLastValue, Args: []expr.Expr{wV}, Frame: plan.DefaultFrame, Name: "last", Type: plan.Int64},
			{Func: plan.WinNthValue, Args: []expr.Expr{wID, i64(2)}, Frame: running, Name: "nth", Type: plan.Int64},
		},
		"aggregate": {
			{Func: plan.WinAggregate, Agg: plan.AggSum, Args: []expr.Expr{wV}, Frame: running, Name: "sum", Type: plan.Int64},
			{Func: plan.WinAggregate, Agg: plan.AggCountStar, Frame: plan.DefaultFrame, Name: "n", Type: plan.Int64},
			{Func: plan.WinAggregate, Agg: plan.AggMin, Args: []expr.Expr{wV}, Frame: groups, Name: "min", Type: plan.Int64},
			{Func: plan.WinAggregate, Agg: plan.AggMax, Args: []expr.Expr{wV}, Frame: sliding, Name: "max", Type: plan.Int64},
		},
	}
}

// TestWindowLimitRandom runs each function family over each input shape
// under random memory limits in a task that may spill, and compares with
// the unlimited answer: a limit at least the unlimited run's peak must
// give exactly that answer (many small partitions run in a fraction of
// what the whole input needs, as the window holds one partition at a
// time); a smaller one either does too, or fails with the error that
// names the window partition too big for the limit. Either way nothing
// stays reserved, allocated, or on disk.
func TestWindowLimitRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(uint64(os.Getpid()), 5))
	for shape, rows := range windowLimitShapes(3000) {
		for family, funcs := range windowLimitFamilies() {
			t.Run(shape+"/"+family, func(t *testing.T) {
				mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
				defer mem.AssertSize(t, 0)
				per := 1 + rng.IntN(40)
				src := windowSource(t, mem, rows, per)
				defer src.release()
				w, err := NewWindow(src, []expr.Expr{wP}, []SortKey{{Expr: wO}}, funcs)
				if err != nil {
					t.Fatal(err)
				}
				tc := newTestTC(mem, 1+rng.IntN(64))
				want := collectAll(t, w, tc)
				peak := tc.Memory.Peak()
				if len(want) != len(rows) {
					t.Fatalf("unlimited: %d rows, want %d", len(want), len(rows))
				}
				for try := 0; try < 6; try++ {
					limit := 1 + rng.Int64N(2*peak+1)
					if try == 0 {
						limit = max(peak, 1)
					}
					got, err := runWindowLimited(t, w, mem, tc.BatchSize, limit)
					switch {
					case err == nil:
						if fmt.Sprint(got) != fmt.Sprint(want) {
							t.Fatalf("limit %d (peak %d): answer differs from the unlimited one", limit, peak)
						}
					case limit >= peak:
						t.Fatalf("limit %d at least the unlimited peak %d: %v", limit, peak, err)
					case !errors.Is(err, mempool.ErrResourcesExhausted) || !strings.Contains(err.Error(), "a window holds in memory the input batch it reads"):
						t.Fatalf("limit %d: %v, want the window partition error", limit, err)
					case shape == "nulls" && !strings.Contains(err.Error(), "PARTITION BY p = NULL"):
						t.Fatalf("limit %d: %v does not name the NULL partition", limit, err)
					}
				}
				if shape == "tiny" {
					// The window held a few partitions at a time, never the
					// input.
					if total := memSourceBytes(src); peak*4 > total {
						t.Errorf("peak %d bytes for an input of %d bytes in partitions of 5 rows", peak, total)
					}
				}
			})
		}
	}
}

// runWindowLimited runs w under a task limit of limit bytes, in a task
// that may spill to a fresh directory, and checks nothing is left behind.
func runWindowLimited(t *testing.T, w *Window, mem memory.Allocator, batchSize int, limit int64) ([][]any, error) {
	t.Helper()
	tc := newTestTC(mem, batchSize)
	tc.Memory = mempool.NewPool("task", limit, nil)
	tc.SpillDir = t.TempDir()
	defer func() {
		if tc.Memory.Used() != 0 {
			t.Errorf("limit %d: %d bytes still reserved", limit, tc.Memory.Used())
		}
		if left, _ := os.ReadDir(tc.SpillDir); len(left) != 0 {
			t.Errorf("limit %d: %d files left in the spill directory", limit, len(left))
		}
	}()
	s, err := w.Execute(context.Background(), 0, tc)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	var rows [][]any
	for {
		b, err := s.Next(context.Background())
		if err != nil {
			if errors.Is(err, io.EOF) {
				return rows, nil
			}
			return nil, err
		}
		rows = append(rows, batchRows(b)...)
		b.Release()
	}
}

// TestWindowLimitOneHugePartition: a window partition larger than the
// limit is spilled in a task that may spill, giving the unlimited
// answer; in one that may not (pipelined), it fails with the memory
// error.
func TestWindowLimitOneHugePartition(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	src := windowSource(t, mem, windowLimitShapes(2000)["huge"], 50)
	defer src.release()
	for _, by := range [][]expr.Expr{{wP}, nil} {
		w, err := NewWindow(src, by, []SortKey{{Expr: wO}}, []WindowExpr{{Func: plan.WinRowNumber, Name: "rn", Type: plan.Int64}})
		if err != nil {
			t.Fatal(err)
		}
		want := collectAll(t, w, newTestTC(mem, 64))
		files, _ := SpillStats()
		got, err := runWindowLimited(t, w, mem, 64, 8000)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatal("answer differs from the unlimited one")
		}
		if after, _ := SpillStats(); after == files {
			t.Fatal("nothing spilled")
		}
		tc := newTestTC(mem, 64)
		tc.Memory = mempool.NewPool("task", 8000, nil)
		s, err := w.Execute(context.Background(), 0, tc)
		if err != nil {
			t.Fatal(err)
		}
		for err == nil {
			var b arrow.RecordBatch
			if b, err = s.Next(context.Background()); err == nil {
				b.Release()
			}
		}
		s.Close()
		if !errors.Is(err, mempool.ErrResourcesExhausted) {
			t.Fatalf("without a spill directory: err = %v, want mempool.ErrResourcesExhausted", err)
		}
	}
}

// TestWindowLimitCancel: a cancelled window stops and frees what it
// holds.
func TestWindowLimitCancel(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	src := windowSource(t, mem, windowLimitShapes(2000)["tiny"], 10)
	defer src.release()
	w, err := NewWindow(src, []expr.Expr{wP}, []SortKey{{Expr: wO}}, []WindowExpr{{Func: plan.WinRank, Name: "r", Type: plan.Int64}})
	if err != nil {
		t.Fatal(err)
	}
	tc := newTestTC(mem, 8)
	tc.Memory = mempool.NewPool("task", 1<<20, nil)
	tc.SpillDir = t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	s, err := w.Execute(ctx, 0, tc)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b.Release()
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
}

// memSourceBytes is the size of src's batches.
func memSourceBytes(src *memSource) int64 {
	var n int64
	for _, p := range src.parts {
		for _, b := range p {
			n += kernels.BatchBytes(b)
		}
	}
	return n
}

// TestWindowLimitSmallerGroups: complete partitions are evaluated a
// batch's worth at a time, and in smaller groups when a group's results
// are refused memory, so a limit that fits one small partition's results
// is enough whatever the batch size.
func TestWindowLimitSmallerGroups(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	src := windowSource(t, mem, windowLimitShapes(3000)["tiny"], 1000)
	defer src.release()
	w, err := NewWindow(src, []expr.Expr{wP}, []SortKey{{Expr: wO}}, windowLimitFamilies()["aggregate"])
	if err != nil {
		t.Fatal(err)
	}
	small := newTestTC(mem, 5)
	want := collectAll(t, w, small)
	big := newTestTC(mem, 1000)
	collectAll(t, w, big)
	if small.Memory.Peak() >= big.Memory.Peak() {
		t.Fatalf("peak %d with groups of one partition, %d with groups of a batch", small.Memory.Peak(), big.Memory.Peak())
	}
	got, err := runWindowLimited(t, w, mem, 1000, small.Memory.Peak())
	if err != nil {
		t.Fatalf("limit %d (peak with groups of a batch %d): %v", small.Memory.Peak(), big.Memory.Peak(), err)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatal("answer differs from the unlimited one")
	}
}
