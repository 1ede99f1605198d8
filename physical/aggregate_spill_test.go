package physical

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/physical/expr"
	"sluice/physical/mempool"
	"sluice/plan"
)

// jaFailAfter is an operator whose streams fail after n batches of in's.
type jaFailAfter struct {
	in Operator
	n  int
}

var errJaFail = errors.New("input failed on purpose")

func (f *jaFailAfter) String() string                   { return "FailAfter" }
func (f *jaFailAfter) Schema() *arrow.Schema            { return f.in.Schema() }
func (f *jaFailAfter) Children() []Operator             { return []Operator{f.in} }
func (f *jaFailAfter) OutputPartitioning() Partitioning { return f.in.OutputPartitioning() }
func (f *jaFailAfter) Execute(ctx context.Context, p int, tc *TaskContext) (Stream, error) {
	s, err := f.in.Execute(ctx, p, tc)
	if err != nil {
		return nil, err
	}
	return &jaFailStream{Stream: s, left: f.n}, nil
}

type jaFailStream struct {
	Stream
	left int
}

func (s *jaFailStream) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if s.left == 0 {
		return nil, errJaFail
	}
	s.left--
	return s.Stream.Next(ctx)
}

// jaSpillAggInput is 20,000 rows in 40 batches over 20,000 groups (k, s).
func jaSpillAggInput(t *testing.T, mem memory.Allocator) *jaSource {
	schema := jaSchema("k", plan.Int64, "s", plan.Utf8, "x", plan.Int64)
	src := &jaSource{schema: schema, parts: make([][]arrow.RecordBatch, 1)}
	for b := range 40 {
		var rows [][]any
		for i := range 500 {
			n := b*500 + i
			row := []any{n % 6000, fmt.Sprint("g", n%7), n % 1000}
			if n%13 == 0 {
				row[2] = nil
			}
			if n%101 == 0 {
				row[0] = nil
			}
			rows = append(rows, row)
		}
		src.parts[0] = append(src.parts[0], jaBatch(t, mem, schema, rows))
	}
	return src
}

func jaSpillAgg(t *testing.T, in Operator) *HashAggregate {
	x := jaCol(2, "x", plan.Int64)
	aggs := []AggregateExpr{
		{Func: plan.AggCountStar, Name: "cs", Type: plan.Int64},
		{Func: plan.AggSum, Arg: x, Name: "sx", Type: plan.SumType(plan.Int64)},
		{Func: plan.AggMin, Arg: x, Name: "mx", Type: plan.Int64},
	}
	gb := []expr.Expr{jaCol(0, "k", plan.Int64), jaCol(1, "s", plan.Utf8)}
	op, err := NewHashAggregate(in, AggSingle, gb, []string{"k", "s"}, aggs)
	if err != nil {
		t.Fatal(err)
	}
	return op
}

// jaStage is an aggregate of the given mode over in with single's group
// keys and functions: the partial or final half of single.
func jaStage(t *testing.T, in Operator, mode AggMode, single *HashAggregate) *HashAggregate {
	t.Helper()
	op, err := NewHashAggregate(in, mode, single.groupBy, single.groupNames, single.aggs)
	if err != nil {
		t.Fatal(err)
	}
	return op
}

// TestHashAggregateSplitsBucketsAgain: under a (random) limit far below
// a sixteenth of its groups, a spilled aggregate's bucket that does not
// fit spills again, split by other bits of the hash, and the answer is
// the unlimited one (NULL keys are one group, in one bucket).
func TestHashAggregateSplitsBucketsAgain(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	src := jaSpillAggInput(t, mem)
	defer src.release()
	op := jaSpillAgg(t, src)
	want := jaCollect(t, op, jaTC(mem, 256, 0))
	for range 3 {
		limit := 60_000 + rand.Int64N(60_000)
		tc := jaTC(mem, 256, limit)
		tc.SpillDir = t.TempDir()
		before, _ := SpillStats()
		spillCheck(t, tc, true, func() {
			got := jaCollect(t, op, tc)
			if !slices.Equal(got, want) {
				t.Fatalf("limit %d: %d rows differ from the unlimited %d", limit, len(got), len(want))
			}
		})
		if after, _ := SpillStats(); after-before <= spillBuckets {
			t.Errorf("limit %d: %d spill files, no bucket was split again", limit, after-before)
		}
	}
}

// TestHashAggregateSpillEnds: a spilling aggregate whose input fails, or
// whose query is cancelled, while it spills or merges buckets leaves no
// memory reserved and no spill file open or on disk.
func TestHashAggregateSpillEnds(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	src := jaSpillAggInput(t, mem)
	defer src.release()
	t.Run("input fails", func(t *testing.T) {
		op := jaSpillAgg(t, &jaFailAfter{in: src, n: 30})
		tc := jaTC(mem, 256, 100_000+rand.Int64N(100_000))
		tc.SpillDir = t.TempDir()
		spillCheck(t, tc, true, func() {
			if _, err := jaRun(t, op, tc); !errors.Is(err, errJaFail) {
				t.Fatalf("err = %v, want the input's", err)
			}
		})
	})
	for _, after := range []int{0, 1, 10} {
		t.Run(fmt.Sprintf("cancel after %d batches", after), func(t *testing.T) {
			op := jaSpillAgg(t, src)
			tc := jaTC(mem, 256, 100_000+rand.Int64N(100_000))
			tc.SpillDir = t.TempDir()
			spillCheck(t, tc, after > 0, func() {
				ctx, cancel := context.WithCancel(context.Background())
				s, err := op.Execute(ctx, 0, tc)
				if err != nil {
					t.Fatal(err)
				}
				for range after {
					b, err := s.Next(ctx)
					if err == io.EOF {
						break
					}
					if err != nil {
						t.Fatal(err)
					}
					b.Release()
				}
				cancel()
				if _, err := s.Next(ctx); !errors.Is(err, context.Canceled) {
					t.Errorf("after cancel: %v", err)
				}
				s.Close()
			})
		})
	}
}

// jaDistinctAgg is count, sum and min DISTINCT of x by (k, s).
func jaDistinctAgg(t *testing.T, in Operator) *HashAggregate {
	x := jaCol(2, "x", plan.Int64)
	aggs := []AggregateExpr{
		{Func: plan.AggCount, Arg: x, Distinct: true, Name: "cx", Type: plan.Int64},
		{Func: plan.AggSum, Arg: x, Distinct: true, Name: "sx", Type: plan.SumType(plan.Int64)},
		{Func: plan.AggMin, Arg: x, Distinct: true, Name: "mx", Type: plan.Int64},
	}
	gb := []expr.Expr{jaCol(0, "k", plan.Int64), jaCol(1, "s", plan.Utf8)}
	op, err := NewHashAggregate(in, AggSingle, gb, []string{"k", "s"}, aggs)
	if err != nil {
		t.Fatal(err)
	}
	return op
}

// TestHashAggregateDistinctSpills: an aggregate of DISTINCT functions
// only, refused memory, spills its groups' distinct values as rows and
// the rows after them, and gives the unlimited answer (NULL values and
// NULL keys, groups whose values are all NULL) under random small limits,
// splitting buckets again where needed; one group with more distinct
// values than the limit holds fails with the memory error saying so.
func TestHashAggregateDistinctSpills(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	schema := jaSchema("k", plan.Int64, "s", plan.Utf8, "x", plan.Int64)
	src := &jaSource{schema: schema, parts: make([][]arrow.RecordBatch, 1)}
	defer src.release()
	for b := range 40 {
		var rows [][]any
		for i := range 500 {
			n := b*500 + i
			row := []any{n % 700, fmt.Sprint("g", n%3), (n * 7) % 5000}
			if n%11 == 0 || n%700 == 5 {
				row[2] = nil
			}
			if n%101 == 0 {
				row[0] = nil
			}
			rows = append(rows, row)
		}
		src.parts[0] = append(src.parts[0], jaBatch(t, mem, schema, rows))
	}
	op := jaDistinctAgg(t, src)
	want := jaCollect(t, op, jaTC(mem, 256, 0))
	for range 4 {
		limit := 30_000 + rand.Int64N(200_000)
		tc := jaTC(mem, 256, limit)
		tc.SpillDir = t.TempDir()
		spillCheck(t, tc, true, func() {
			got := jaCollect(t, op, tc)
			if !slices.Equal(got, want) {
				t.Fatalf("limit %d: %d rows differ from the unlimited %d", limit, len(got), len(want))
			}
		})
	}
	t.Run("one group too big", func(t *testing.T) {
		one := &jaSource{schema: schema, parts: make([][]arrow.RecordBatch, 1)}
		defer one.release()
		for b := range 20 {
			var rows [][]any
			for i := range 500 {
				rows = append(rows, []any{1, "g", b*500 + i})
			}
			one.parts[0] = append(one.parts[0], jaBatch(t, mem, schema, rows))
		}
		tc := jaTC(mem, 256, 50_000)
		tc.SpillDir = t.TempDir()
		spillCheck(t, tc, true, func() {
			_, err := jaRun(t, jaDistinctAgg(t, one), tc)
			if !errors.Is(err, mempool.ErrResourcesExhausted) || !strings.Contains(err.Error(), "one group") {
				t.Fatalf("err = %v, want the memory limit naming one group", err)
			}
		})
	})
}

// TestHashAggregateGroupingSetsSpill: the final aggregate of grouping
// sets (its last key the grouping id, owing the grand-total group of the
// empty set) spills under random small limits and gives the unlimited
// answer: the sets' groups, NULL keys and all, stay apart by their
// grouping id, and the grand-total group appears exactly once, whether
// rows of it were spilled or it has none (then with an empty count and
// a NULL sum).
func TestHashAggregateGroupingSetsSpill(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	schema := jaSchema("k", plan.Int64, "s", plan.Utf8, "x", plan.Int64, "g", plan.Int64)
	for _, totals := range []bool{true, false} {
		t.Run(fmt.Sprintf("grand-total rows=%v", totals), func(t *testing.T) {
			src := &jaSource{schema: schema, parts: make([][]arrow.RecordBatch, 1)}
			defer src.release()
			for b := range 30 {
				var rows [][]any
				for i := range 300 {
					n := b*300 + i
					k, s, x := any(n%3000), any(fmt.Sprint("g", n%7)), any(n%1000)
					if n%101 == 0 {
						k = nil
					}
					// The rows an Expand makes of one input row: (k, s),
					// (k) and, with totals, ().
					rows = append(rows, []any{k, s, x, 0}, []any{k, nil, x, 1})
					if totals {
						rows = append(rows, []any{nil, nil, x, 3})
					}
				}
				src.parts[0] = append(src.parts[0], jaBatch(t, mem, schema, rows))
			}
			x := jaCol(2, "x", plan.Int64)
			aggs := []AggregateExpr{
				{Func: plan.AggCountStar, Name: "cs", Type: plan.Int64},
				{Func: plan.AggSum, Arg: x, Name: "sx", Type: plan.SumType(plan.Int64)},
			}
			gb := []expr.Expr{jaCol(0, "k", plan.Int64), jaCol(1, "s", plan.Utf8), jaCol(3, "g", plan.Int64)}
			op, err := NewHashAggregate(src, AggSingle, gb, []string{"k", "s", "g"}, aggs)
			if err != nil {
				t.Fatal(err)
			}
			if op, err = op.WithGrandTotals([]int64{3}); err != nil {
				t.Fatal(err)
			}
			want := jaCollect(t, op, jaTC(mem, 256, 0))
			total := 0
			for _, r := range want {
				if strings.HasPrefix(r, "NULL|NULL|3|") {
					total++
				}
			}
			if total != 1 {
				t.Fatalf("%d grand-total rows in the unlimited answer %v", total, want[:min(len(want), 5)])
			}
			for range 3 {
				limit := 60_000 + rand.Int64N(100_000)
				tc := jaTC(mem, 256, limit)
				tc.SpillDir = t.TempDir()
				before, _ := SpillStats()
				spillCheck(t, tc, true, func() {
					got := jaCollect(t, op, tc)
					if !slices.Equal(got, want) {
						t.Fatalf("limit %d: %d rows differ from the unlimited %d", limit, len(got), len(want))
					}
				})
				if after, _ := SpillStats(); after == before {
					t.Errorf("limit %d: nothing spilled", limit)
				}
			}
		})
	}
}

// TestHashAggregatePartialHalvesBatches: a streaming partial aggregate
// refused the memory for one batch's groups (the final aggregate above it
// in its task holding the limit) aggregates the batch in halves, and the
// final aggregate, spilling, gives the unlimited answer. Limits are swept
// at random steps under 1 KiB around what the partial's first table takes
// (about 39 KB here): less than 1 KiB above it, the final is refused even
// an empty table while the partial passes its groups on, and passes states
// to its buckets (passStates). Two more limits are anywhere from 25 to 65 KB.
func TestHashAggregatePartialHalvesBatches(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	src := jaSpillAggInput(t, mem)
	defer src.release()
	single := jaSpillAgg(t, src)
	want := jaCollect(t, single, jaTC(mem, 256, 0))
	partial := jaStage(t, src, AggPartial, single)
	final := jaStage(t, partial, AggFinal, single)
	var limits []int64
	for limit := int64(36_000) + rand.Int64N(1_000); limit < 44_000; limit += 600 + rand.Int64N(400) {
		limits = append(limits, limit)
	}
	limits = append(limits, 25_000+rand.Int64N(40_000), 25_000+rand.Int64N(40_000))
	for _, limit := range limits {
		tc := jaTC(mem, 256, limit)
		tc.SpillDir = t.TempDir()
		spillCheck(t, tc, true, func() {
			got := jaCollect(t, final, tc)
			if !slices.Equal(got, want) {
				t.Fatalf("limit %d: %d rows differ from the unlimited %d", limit, len(got), len(want))
			}
		})
	}
}

// TestHashAggregateSpilledBucketsStayHashed: dense integer keys, which an
// aggregate in memory indexes directly, are spread by the spill over every
// bucket's whole key range; each bucket's groups then fit the limit in a
// hash table, so no bucket splits again (a direct index over the range
// would not fit, and would be split up to the last level).
func TestHashAggregateSpilledBucketsStayHashed(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	schema := jaSchema("k", plan.Int64, "x", plan.Int64)
	src := &jaSource{schema: schema, parts: make([][]arrow.RecordBatch, 1)}
	defer src.release()
	const keys = 60_000
	for b := range 2 * keys / 1000 {
		var rows [][]any
		for i := range 1000 {
			n := b*1000 + i
			rows = append(rows, []any{n % keys, n})
		}
		src.parts[0] = append(src.parts[0], jaBatch(t, mem, schema, rows))
	}
	aggs := []AggregateExpr{
		{Func: plan.AggCountStar, Name: "c", Type: plan.Int64},
		{Func: plan.AggSum, Arg: jaCol(1, "x", plan.Int64), Name: "s", Type: plan.SumType(plan.Int64)},
	}
	op, err := NewHashAggregate(src, AggSingle, []expr.Expr{jaCol(0, "k", plan.Int64)}, []string{"k"}, aggs)
	if err != nil {
		t.Fatal(err)
	}
	want := jaCollect(t, op, jaTC(mem, 1000, 0))
	tc := jaTC(mem, 1000, 900_000)
	tc.SpillDir = t.TempDir()
	before, _ := SpillStats()
	spillCheck(t, tc, true, func() {
		got := jaCollect(t, op, tc)
		if !slices.Equal(got, want) {
			t.Fatalf("%d rows differ from the unlimited %d", len(got), len(want))
		}
	})
	if after, _ := SpillStats(); after-before != spillBuckets {
		t.Errorf("%d spill files, want the %d buckets of one spill", after-before, spillBuckets)
	}
}

// TestHashAggregatePartialStarved: a partial aggregate whose task's limit
// is held by an operator beside it (another partition's aggregate,
// outputting the table it filled before this one read a batch) cannot
// hold even one row's group: it passes its rows on as groups of their
// own, and the final aggregate over what it passed gives the unlimited
// answer. The sibling's hold is the whole limit, or all of it but up to
// 2 KiB (a random slack).
func TestHashAggregatePartialStarved(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	src := jaSpillAggInput(t, mem)
	defer src.release()
	single := jaSpillAgg(t, src)
	want := jaCollect(t, single, jaTC(mem, 256, 0))
	partial := jaStage(t, src, AggPartial, single)
	for _, slack := range []int64{0, rand.Int64N(2048)} {
		const limit = 1 << 20
		tc := jaTC(mem, 512, limit)
		tc.SpillDir = t.TempDir()
		sibling := tc.Memory.NewReservation("sibling")
		if err := sibling.Grow(limit - slack); err != nil {
			t.Fatal(err)
		}
		passed, err := jaRun(t, partial, tc)
		sibling.Free()
		if err != nil {
			t.Fatalf("slack %d: %v", slack, err)
		}
		if u := tc.Memory.Used(); u != 0 {
			t.Errorf("slack %d: memory pool still holds %d bytes", slack, u)
		}
		states := &jaSource{schema: partial.Schema(), parts: [][]arrow.RecordBatch{passed}}
		got := jaCollect(t, jaStage(t, states, AggFinal, single), jaTC(mem, 256, 0))
		states.release()
		if !slices.Equal(got, want) {
			t.Fatalf("slack %d: %d rows differ from the unlimited %d", slack, len(got), len(want))
		}
	}
}
