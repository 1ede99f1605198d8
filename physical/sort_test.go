package physical

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/physical/mempool"
	"sluice/plan"
)

var sortSchema = arrow.NewSchema([]arrow.Field{
	{Name: "i32", Type: plan.Int32, Nullable: true},
	{Name: "i64", Type: plan.Int64, Nullable: true},
	{Name: "f", Type: plan.Float64, Nullable: true},
	{Name: "d", Type: plan.Decimal(15, 2), Nullable: true},
	{Name: "dt", Type: plan.Date32, Nullable: true},
	{Name: "ts", Type: plan.Timestamp, Nullable: true},
	{Name: "s", Type: plan.Utf8, Nullable: true},
	{Name: "b", Type: plan.Bool, Nullable: true},
	{Name: "id", Type: plan.Int64, Nullable: false},
}, nil)

// sortSource returns parts partitions of n random rows each (in batches of
// per), with few distinct values and NULLs so keys tie, and a unique id.
func sortSource(t testing.TB, mem memory.Allocator, seed uint64, parts, n, per int) (*memSource, [][]any) {
	rng := rand.New(rand.NewPCG(seed, 1))
	maybe := func(v any) any {
		if rng.IntN(6) == 0 {
			return nil
		}
		return v
	}
	var all [][]any
	src := make([][]arrow.RecordBatch, parts)
	id := 0
	for p := range src {
		for start := 0; start < n; start += per {
			cols := make([][]any, len(sortSchema.Fields()))
			for r := start; r < min(start+per, n); r++ {
				row := []any{
					maybe(rng.IntN(5) - 2),
					maybe(rng.IntN(7) * 1000000000000),
					maybe(float64(rng.IntN(9)) / 4),
					maybe(rng.IntN(5) - 1),
					maybe(rng.IntN(4) + 19000),
					maybe(rng.IntN(3) * 86400000000),
					maybe([]string{"", "a", "ab", "b", "ÿ"}[rng.IntN(5)]),
					maybe(rng.IntN(2) == 0),
					id,
				}
				id++
				for c, v := range row {
					cols[c] = append(cols[c], v)
				}
				all = append(all, row)
			}
			src[p] = append(src[p], makeBatch(t, mem, sortSchema, cols...))
		}
	}
	return newMemSource(sortSchema, src), all
}

func compareCells(a, b any) int {
	switch x := a.(type) {
	case int:
		return cmpOrdered(x, b.(int))
	case float64:
		return cmpOrdered(x, b.(float64))
	case string:
		return strings.Compare(x, b.(string))
	case bool:
		y := b.(bool)
		switch {
		case x == y:
			return 0
		case !x:
			return -1
		}
		return 1
	}
	panic(fmt.Sprintf("compareCells %T", a))
}

func cmpOrdered[T int | float64](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// refSort sorts rows by keys (column indexes) the slow, obvious way.
func refSort(rows [][]any, keys []SortKey) [][]any {
	out := slices.Clone(rows)
	slices.SortStableFunc(out, func(a, b []any) int {
		for _, k := range keys {
			c := k.Expr.(interface{ String() string })
			idx := columnIndex(c.String())
			x, y := a[idx], b[idx]
			switch {
			case x == nil && y == nil:
				continue
			case x == nil:
				if k.NullsFirst {
					return -1
				}
				return 1
			case y == nil:
				if k.NullsFirst {
					return 1
				}
				return -1
			}
			r := compareCells(x, y)
			if k.Desc {
				r = -r
			}
			if r != 0 {
				return r
			}
		}
		return 0
	})
	return out
}

func columnIndex(s string) int {
	var idx int
	fmt.Sscanf(s[strings.IndexByte(s, '@')+1:], "%d", &idx)
	return idx
}

func skey(i int, desc, nullsFirst bool) SortKey {
	f := sortSchema.Field(i)
	return SortKey{Expr: col(i, f.Name, f.Type), Desc: desc, NullsFirst: nullsFirst}
}

var sortKeyCases = []struct {
	name string
	keys []SortKey
}{
	{"int32 asc", []SortKey{skey(0, false, false), skey(8, false, false)}},
	{"int64 desc nulls first", []SortKey{skey(1, true, true), skey(8, false, false)}},
	{"float desc, string asc", []SortKey{skey(2, true, false), skey(6, false, true), skey(8, true, false)}},
	{"decimal, date, ts", []SortKey{skey(3, false, true), skey(4, true, false), skey(5, false, false), skey(8, false, false)}},
	{"bool, string desc", []SortKey{skey(7, false, false), skey(6, true, true), skey(8, false, false)}},
}

func TestSort(t *testing.T) {
	for _, kc := range sortKeyCases {
		for _, fetch := range []int64{-1, 0, 1, 7, 50, 1000} {
			t.Run(fmt.Sprintf("%s fetch=%d", kc.name, fetch), func(t *testing.T) {
				mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
				// 3 partitions of 400 rows in batches of 10: top-K sees
				// enough batches to compact.
				src, _ := sortSource(t, mem, uint64(fetch+7), 3, 400, 10)
				tc := newTestTC(mem, 64)
				op := NewSort(src, kc.keys, fetch)
				parts := collectPartitions(t, op, tc)
				for p, got := range parts {
					want := refSort(batchesRows(src.parts[p]), kc.keys)
					if fetch >= 0 && int(fetch) < len(want) {
						want = want[:fetch]
					}
					if rowsString(got) != rowsString(want) {
						t.Errorf("partition %d differs: got %d rows, want %d\n%s", p, len(got), len(want), firstDiff(got, want))
					}
				}
				if used := tc.Memory.Used(); used != 0 {
					t.Errorf("reservation not freed: %d bytes", used)
				}
				if tc.Memory.Peak() == 0 && fetch != 0 {
					t.Errorf("sort reserved no memory")
				}
				src.release()
				mem.AssertSize(t, 0)
			})
		}
	}
}

func batchesRows(bs []arrow.RecordBatch) [][]any {
	var rows [][]any
	for _, b := range bs {
		rows = append(rows, batchRows(b)...)
	}
	return rows
}

func firstDiff(got, want [][]any) string {
	for i := range min(len(got), len(want)) {
		if fmt.Sprint(got[i]) != fmt.Sprint(want[i]) {
			return fmt.Sprintf("row %d: got %v, want %v", i, got[i], want[i])
		}
	}
	return ""
}

func TestSortMemoryLimit(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	src, _ := sortSource(t, mem, 1, 1, 500, 50)
	tc := newTestTC(mem, 64)
	tc.Memory = mempool.NewPool("tiny", 1000, nil)
	s, err := NewSort(src, sortKeyCases[0].keys, -1).Execute(context.Background(), 0, tc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Next(context.Background()); !errors.Is(err, mempool.ErrResourcesExhausted) {
		t.Errorf("err = %v, want mempool.ErrResourcesExhausted", err)
	}
	s.Close()
	if tc.Memory.Used() != 0 {
		t.Errorf("reservation not freed")
	}
	src.release()
	mem.AssertSize(t, 0)
}

func TestSortCancelAndString(t *testing.T) {
	for _, fetch := range []int64{-1, 3} {
		testCancel(t, func(src Operator) Operator {
			return NewSort(src, []SortKey{{Expr: col(0, "v", plan.Int64)}}, fetch)
		})
	}
	op := NewSort(nil, []SortKey{{Expr: col(0, "l_returnflag", plan.Utf8)}}, 10)
	if got, want := op.String(), "Sort: l_returnflag@0 ASC NULLS LAST fetch=10"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if _, err := NewSort(newMemSource(kvSchema, nil), []SortKey{{Expr: lit(plan.Interval, nil)}}, -1).Execute(context.Background(), 0, NewTaskContext()); err == nil {
		t.Errorf("sorting by an interval should fail")
	}
}

// TestSortTopKCompaction uses a K whose rows spread over many batches, so
// top-K copies its survivors into one batch along the way.
func TestSortTopKCompaction(t *testing.T) {
	for _, kc := range sortKeyCases {
		t.Run(kc.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			src, all := sortSource(t, mem, 42, 1, 5000, 50)
			tc := newTestTC(mem, 16)
			got := collectAll(t, NewSort(src, kc.keys, 64), tc)
			want := refSort(all, kc.keys)[:64]
			if rowsString(got) != rowsString(want) {
				t.Errorf("differs: %s", firstDiff(got, want))
			}
			if tc.Memory.Used() != 0 {
				t.Errorf("reservation not freed")
			}
			src.release()
			mem.AssertSize(t, 0)
		})
	}
}

func BenchmarkSort(b *testing.B) {
	src := benchSource(b, 1<<20)
	defer src.release()
	for _, fetch := range []int64{-1, 10} {
		b.Run(fmt.Sprintf("fetch=%d", fetch), func(b *testing.B) {
			op := NewSort(src, []SortKey{{Expr: col(0, "a", plan.Int64)}, {Expr: col(2, "d", plan.Decimal(12, 2)), Desc: true}}, fetch)
			tc := NewTaskContext()
			for range b.N {
				s, _ := op.Execute(context.Background(), 0, tc)
				for {
					r, err := s.Next(context.Background())
					if err != nil {
						break
					}
					r.Release()
				}
				s.Close()
			}
		})
	}
}

// TestSortSpills: under a memory limit a fraction of what the partition
// needs, and a random one, the sort writes sorted runs to SpillDir and
// merges them into the same rows a sort in memory gives, for every key
// case; the spill directory is empty afterwards, and nothing stays reserved.
func TestSortSpills(t *testing.T) {
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 11))
	for _, kc := range sortKeyCases {
		for _, limit := range []int64{6000, 20000 + r.Int64N(40000)} {
			t.Run(fmt.Sprintf("%s limit=%d", kc.name, limit), func(t *testing.T) {
				mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
				src, _ := sortSource(t, mem, uint64(limit), 1, 2000, 50)
				tc := newTestTC(mem, 64)
				tc.Memory = mempool.NewPool("small", limit, nil)
				tc.SpillDir = t.TempDir()
				got := collectPartitions(t, NewSort(src, kc.keys, -1), tc)[0]
				want := refSort(batchesRows(src.parts[0]), kc.keys)
				if rowsString(got) != rowsString(want) {
					t.Errorf("spilled sort differs: got %d rows, want %d\n%s", len(got), len(want), firstDiff(got, want))
				}
				if used := tc.Memory.Used(); used != 0 {
					t.Errorf("reservation not freed: %d bytes", used)
				}
				if left, _ := os.ReadDir(tc.SpillDir); len(left) != 0 {
					t.Errorf("spill files left behind: %v", left)
				}
				src.release()
				mem.AssertSize(t, 0)
			})
		}
	}
}

// TestSortRefusedEveryBatch: while another operator of the task holds
// (nearly) the whole limit, a sort that may spill is refused even its first
// batch; it writes each batch as a run of its own and merges them into the
// rows a sort in memory gives, reserving nothing (TestSortMemoryLimit:
// without a spill directory the refusal is the error). With SortBatchRuns
// (random here) fewer than the batches, the refusal fails the query.
func TestSortRefusedEveryBatch(t *testing.T) {
	defer func(n int) { SortBatchRuns = n }(SortBatchRuns)
	for _, kc := range sortKeyCases {
		SortBatchRuns = 1 + rand.IntN(20)
		t.Run(kc.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			src, _ := sortSource(t, mem, 5, 1, 600, 50)
			defer src.release()
			tc := newTestTC(mem, 64)
			tc.Memory = mempool.NewPool("held", 4000, nil)
			hog := tc.Memory.NewReservation("other operator")
			if err := hog.Grow(3990); err != nil {
				t.Fatal(err)
			}
			tc.SpillDir = t.TempDir()
			s, err := NewSort(src, kc.keys, -1).Execute(context.Background(), 0, tc)
			if err != nil {
				t.Fatal(err)
			}
			var got [][]any
			batches := len(src.parts[0])
			for {
				b, err := s.Next(context.Background())
				if err == io.EOF {
					break
				}
				if err != nil && batches > SortBatchRuns && errors.Is(err, mempool.ErrResourcesExhausted) {
					s.Close()
					hog.Free()
					return // refused past SortBatchRuns, as it must be
				}
				if err != nil {
					t.Fatalf("%d batches, SortBatchRuns %d: %v", batches, SortBatchRuns, err)
				}
				got = append(got, batchesRows([]arrow.RecordBatch{b})...)
				b.Release()
			}
			if batches > SortBatchRuns {
				t.Errorf("%d batches sorted with SortBatchRuns %d", batches, SortBatchRuns)
			}
			if runs := len(s.(*sortStream).runs); runs != batches {
				t.Errorf("%d runs, want one per input batch (%d)", runs, batches)
			}
			s.Close()
			if want := refSort(batchesRows(src.parts[0]), kc.keys); rowsString(got) != rowsString(want) {
				t.Errorf("got %d rows, want %d\n%s", len(got), len(want), firstDiff(got, want))
			}
			if left, _ := os.ReadDir(tc.SpillDir); len(left) != 0 {
				t.Errorf("spill files left behind: %v", left)
			}
			hog.Free()
			if used := tc.Memory.Used(); used != 0 {
				t.Errorf("reservation not freed: %d bytes", used)
			}
		})
	}
}

// TestSortSpillCountsRuns: a limit far below the partition's size makes
// several runs (the merge really merges).
func TestSortSpillCountsRuns(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	src, _ := sortSource(t, mem, 3, 1, 2000, 50)
	defer src.release()
	tc := newTestTC(mem, 64)
	tc.Memory = mempool.NewPool("small", 8000, nil)
	tc.SpillDir = t.TempDir()
	s, err := NewSort(src, sortKeyCases[0].keys, -1).Execute(context.Background(), 0, tc)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	b, err := s.Next(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	b.Release()
	if runs := len(s.(*sortStream).runs); runs < 3 {
		t.Errorf("%d runs spilled under a limit far below the partition's size, want several", runs)
	}
}

// TestSortLeavesRoomAbove: a sort that ends its input in memory, in a task
// that may spill, writes its rows as one run when less of the limit is
// free than it holds, so the operators above it have memory; with room to
// spare it keeps them.
func TestSortLeavesRoomAbove(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	src, _ := sortSource(t, mem, 5, 1, 2000, 50)
	defer src.release()
	tc := newTestTC(mem, 64)
	want := collectPartitions(t, NewSort(src, sortKeyCases[0].keys, -1), tc)[0]
	peak := tc.Memory.Peak()
	for _, c := range []struct {
		limit int64
		runs  int
	}{{peak + peak/2, 1}, {3 * peak, 0}} {
		tc := newTestTC(mem, 64)
		tc.Memory = mempool.NewPool("task", c.limit, nil)
		tc.SpillDir = t.TempDir()
		s, err := NewSort(src, sortKeyCases[0].keys, -1).Execute(context.Background(), 0, tc)
		if err != nil {
			t.Fatal(err)
		}
		got := drainStreamKeepOpen(t, s)
		if runs := len(s.(*sortStream).runs); runs != c.runs {
			t.Errorf("limit %d (peak %d): %d runs, want %d", c.limit, peak, runs, c.runs)
		}
		s.Close()
		if rowsString(got) != rowsString(want) {
			t.Errorf("limit %d: rows differ\n%s", c.limit, firstDiff(got, want))
		}
		if used := tc.Memory.Used(); used != 0 {
			t.Errorf("reservation not freed: %d bytes", used)
		}
	}
}

// drainStreamKeepOpen pulls s to the end without closing it.
func drainStreamKeepOpen(t testing.TB, s Stream) [][]any {
	t.Helper()
	var rows [][]any
	for {
		b, err := s.Next(context.Background())
		if errors.Is(err, io.EOF) {
			return rows
		}
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, batchRows(b)...)
		b.Release()
	}
}
