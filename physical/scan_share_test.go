package physical

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/catalog"
	"sluice/physical/expr"
	"sluice/physical/kernels"
	"sluice/plan"
)

// oneRowGroupScan writes rows [0, n) of testParquetBatch as one row group
// and returns a scan of it over parts partitions.
func oneRowGroupScan(t *testing.T, n, parts int, projection []int) *ParquetScan {
	t.Helper()
	path := filepath.Join(t.TempDir(), "one.parquet")
	writeParquet(t, path, testParquetSchema, testParquetBatch(0, n))
	tbl, err := catalog.OpenParquet(path)
	if err != nil {
		t.Fatal(err)
	}
	return NewParquetScan("one", tbl, projection, nil, parts)
}

func TestShareScansMarksTheTasksPartitions(t *testing.T) {
	probe := oneRowGroupScan(t, 10, 3, []int{0})
	build := oneRowGroupScan(t, 10, 3, []int{0})
	below := oneRowGroupScan(t, 10, 2, []int{0})
	twice := oneRowGroupScan(t, 10, 3, []int{0})
	key := []expr.Expr{col(0, "id", plan.Int64)}
	join, err := NewHashJoin(build, NewFilter(probe, &expr.Literal{Value: plan.Literal{Typ: plan.Bool, Val: true}}), JoinInner, key, key, nil, false, JoinCollectLeft)
	if err != nil {
		t.Fatal(err)
	}
	union := NewUnion([]Operator{join, NewRepartition(NewProjection(below, key, []string{"id"}), Partitioning{Kind: PartRoundRobin, Count: 3})})
	tc := &TaskContext{}
	tc.ShareScans(union, []int{0, 1, 2})
	// The union maps its partitions to its inputs': nothing above it
	// says which of a scan's partitions the task runs; the repartition
	// runs all of its input's.
	if got := tc.sharedScans; len(got) != 1 || !slices.Equal(got[below], []int{0, 1}) {
		t.Fatalf("under a union: %v", got)
	}
	tc = &TaskContext{}
	tc.ShareScans(NewProjection(join, key, []string{"id"}), []int{1, 2})
	if got := tc.sharedScans; len(got) != 1 || !slices.Equal(got[probe], []int{1, 2}) {
		t.Fatalf("probe side: %v", got)
	}
	// A scan reached twice is left alone.
	join2, err := NewHashJoin(twice, twice, JoinInner, key, key, nil, false, JoinPartitioned)
	if err != nil {
		t.Fatal(err)
	}
	tc = &TaskContext{}
	tc.ShareScans(NewCoalescePartitions(join2), []int{0})
	if got := tc.sharedScans; len(got) != 0 {
		t.Fatalf("a scan on both sides: %v", got)
	}
}

// Tasks that run some of a one-row-group scan's partitions each read
// every row once between them, with the share threshold drawn at random:
// the task holding the row group deals its batches to its other
// partitions, and no other task reads it.
func TestSharedScanReadsEveryRowOnce(t *testing.T) {
	defer func(v int64) { ShareMinRows = v }(ShareMinRows)
	for _, tasks := range [][][]int{
		{{0, 1, 2}},
		{{0, 1}, {2}},
		{{1, 2}, {0}},
		{{0}, {1}, {2}},
	} {
		for _, filtered := range []bool{false, true} {
			ShareMinRows = rand.Int64N(400)
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			scan := oneRowGroupScan(t, 300, 3, []int{0, 5})
			var root Operator = scan
			if filtered {
				// qty (i % 7) < 3: a predicate the scan judges itself.
				root = NewFilter(scan, &expr.Binary{Op: plan.OpLt, L: col(1, "qty", plan.Int32),
					R: &expr.Literal{Value: plan.Literal{Typ: plan.Int32, Val: int32(3)}}, Type: arrow.FixedWidthTypes.Boolean})
			}
			seen := make([]int, 300)
			var mu sync.Mutex
			for _, parts := range tasks {
				tc := testTaskContext(mem, 16)
				tc.ShareScans(root, parts)
				var wg sync.WaitGroup
				for _, p := range parts {
					wg.Go(func() {
						bs := drainPartition(t, root, p, tc)
						mu.Lock()
						for _, id := range int64Column(bs, 0) {
							seen[id]++
						}
						mu.Unlock()
						kernels.ReleaseAll(bs)
					})
				}
				wg.Wait()
				if len(scan.shares) != 0 {
					t.Fatalf("tasks %v: %d shares left open", tasks, len(scan.shares))
				}
			}
			for id, n := range seen {
				want := 1
				if filtered && id%7 >= 3 {
					want = 0
				}
				if n != want {
					t.Fatalf("tasks %v, filtered %v, ShareMinRows %d: id %d read %d times, want %d", tasks, filtered, ShareMinRows, id, n, want)
				}
			}
			mem.AssertSize(t, 0)
		}
	}
}

// A partition that closes its stream early leaves the rest to the others;
// the last to close stops the reader and releases what it had queued.
func TestSharedScanEarlyClose(t *testing.T) {
	defer func(v int64) { ShareMinRows = v }(ShareMinRows)
	ShareMinRows = 0
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	scan := oneRowGroupScan(t, 3000, 2, []int{0})
	tc := testTaskContext(mem, 16)
	tc.ShareScans(scan, []int{0, 1})
	ctx := context.Background()
	s0, err := scan.Execute(ctx, 0, tc)
	if err != nil {
		t.Fatal(err)
	}
	s1, err := scan.Execute(ctx, 1, tc)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s1.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	first := b.NumRows()
	b.Release()
	s1.Close()
	if rows := first + int64(countRows(t, s0)); rows != 3000 {
		t.Fatalf("%d rows, want 3000", rows)
	}
	s0.Close()

	// Both close before the end.
	tc = testTaskContext(mem, 16)
	tc.ShareScans(scan, []int{0, 1})
	s0, _ = scan.Execute(ctx, 0, tc)
	s1, _ = scan.Execute(ctx, 1, tc)
	if b, err := s0.Next(ctx); err != nil {
		t.Fatal(err)
	} else {
		b.Release()
	}
	s0.Close()
	s1.Close()
	if _, err := s1.Next(ctx); err == nil || errors.Is(err, io.EOF) {
		t.Fatalf("Next after Close: %v, want an error", err)
	}
	if len(scan.shares) != 0 {
		t.Fatalf("%d shares left open", len(scan.shares))
	}
	mem.AssertSize(t, 0)
}

// A reader that fails fails every partition of the share: none of them
// ends as if its rows were all there.
func TestSharedScanReaderFailureFailsEveryPartition(t *testing.T) {
	defer func(v int64) { ShareMinRows = v }(ShareMinRows)
	ShareMinRows = 0
	scan := oneRowGroupScan(t, 300, 2, []int{0})
	clear := SetPanicFailpoint(FailpointScan)
	defer clear()
	tc := testTaskContext(memory.NewGoAllocator(), 16)
	tc.ShareScans(scan, []int{0, 1})
	ctx := context.Background()
	for p := range 2 {
		s, err := scan.Execute(ctx, p, tc)
		if err != nil {
			t.Fatal(err)
		}
		for {
			b, err := s.Next(ctx)
			if err == nil {
				b.Release()
				continue
			}
			if errors.Is(err, io.EOF) || !strings.Contains(err.Error(), "injected panic") {
				t.Fatalf("partition %d ended with %v, want the reader's panic", p, err)
			}
			break
		}
		s.Close()
	}
}

// The partitions take batches from one channel: a partition without row
// groups, read alone, gets all of them, and then the one holding the row
// group has none left. Above the threshold, it keeps its own row group.
func TestSharedScanIdlePartitionTakesTheRowGroup(t *testing.T) {
	defer func(v int64) { ShareMinRows = v }(ShareMinRows)
	scan := oneRowGroupScan(t, 300, 2, []int{0})
	owner := 0
	if len(scan.parts[0]) == 0 {
		owner = 1
	}
	for _, c := range []struct {
		min        int64
		idle, kept int
	}{{300, 300, 0}, {301, 0, 300}} {
		ShareMinRows = c.min
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		tc := testTaskContext(mem, 16)
		tc.ShareScans(scan, []int{0, 1})
		s, err := scan.Execute(context.Background(), 1-owner, tc)
		if err != nil {
			t.Fatal(err)
		}
		idle := countRows(t, s)
		kept := 0
		for _, b := range drainPartition(t, scan, owner, tc) {
			kept += int(b.NumRows())
			b.Release()
		}
		s.Close()
		if idle != c.idle || kept != c.kept {
			t.Fatalf("ShareMinRows %d: the idle partition read %d rows, the owner %d; want %d and %d", c.min, idle, kept, c.idle, c.kept)
		}
		mem.AssertSize(t, 0)
	}
}

// countRows reads s to its end and returns its rows.
func countRows(t *testing.T, s Stream) int {
	t.Helper()
	n := 0
	for {
		b, err := s.Next(context.Background())
		if errors.Is(err, io.EOF) {
			return n
		}
		if err != nil {
			t.Fatal(err)
		}
		n += int(b.NumRows())
		b.Release()
	}
}

// Partitions that each hold row groups share them too: a task's partition
// that runs ahead takes the batches of the others' row groups, so no core
// waits at the end of a stage for the partition dealt the larger row
// groups. Read alone, either partition gets every row once; below the
// threshold each keeps its own.
func TestSharedScanBalancesPartitionsWithRowGroups(t *testing.T) {
	defer func(v int64) { ShareMinRows = v }(ShareMinRows)
	path := filepath.Join(t.TempDir(), "two.parquet")
	writeParquet(t, path, testParquetSchema, testParquetBatch(0, 150), testParquetBatch(150, 300))
	tbl, err := catalog.OpenParquet(path)
	if err != nil {
		t.Fatal(err)
	}
	scan := NewParquetScan("two", tbl, []int{0}, nil, 2)
	if len(scan.parts[0]) == 0 || len(scan.parts[1]) == 0 {
		t.Fatalf("want a row group in each partition, got %v", scan.parts)
	}
	for _, c := range []struct {
		min          int64
		first, other int
	}{{300, 300, 0}, {301, 150, 150}} {
		ShareMinRows = c.min
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		tc := testTaskContext(mem, 16)
		tc.ShareScans(scan, []int{0, 1})
		first := rand.IntN(2)
		s, err := scan.Execute(context.Background(), first, tc)
		if err != nil {
			t.Fatal(err)
		}
		got := countRows(t, s)
		other := 0
		for _, b := range drainPartition(t, scan, 1-first, tc) {
			other += int(b.NumRows())
			b.Release()
		}
		s.Close()
		if got != c.first || other != c.other {
			t.Fatalf("ShareMinRows %d: partition %d read alone got %d rows, the other %d; want %d and %d", c.min, first, got, other, c.first, c.other)
		}
		mem.AssertSize(t, 0)
	}
}
