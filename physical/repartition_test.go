package physical

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/physical/expr"
	"sluice/plan"
)

var kvSchema = arrow.NewSchema([]arrow.Field{
	{Name: "k", Type: plan.Int64, Nullable: true},
	{Name: "v", Type: plan.Utf8, Nullable: true},
}, nil)

// kvSource has parts partitions of rows (k = i % keys, NULL every 17th row;
// v = unique label), in batches of per rows.
func kvSource(t testing.TB, mem memory.Allocator, parts, rows, keys, per int) (*memSource, [][]any) {
	var all [][]any
	src := make([][]arrow.RecordBatch, parts)
	for p := 0; p < parts; p++ {
		for start := 0; start < rows; start += per {
			var ks, vs []any
			for i := start; i < min(start+per, rows); i++ {
				var k any = i % keys
				if i%17 == 0 {
					k = nil
				}
				v := fmt.Sprintf("p%d-%d", p, i)
				ks, vs = append(ks, k), append(vs, v)
				all = append(all, []any{k, v})
			}
			src[p] = append(src[p], makeBatch(t, mem, kvSchema, ks, vs))
		}
	}
	return newMemSource(kvSchema, src), all
}

// collectConcurrently executes all partitions of op at once (as a
// repartition requires) and drains each on its own goroutine.
func collectConcurrently(t testing.TB, op Operator, tc *TaskContext) ([][][]any, error) {
	n := op.OutputPartitioning().Count
	out := make([][][]any, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for p := 0; p < n; p++ {
		s, err := op.Execute(context.Background(), p, tc)
		if err != nil {
			t.Fatalf("Execute(%d): %v", p, err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer s.Close()
			for {
				b, err := s.Next(context.Background())
				if err != nil {
					if !errors.Is(err, io.EOF) {
						errs[p] = err
					}
					return
				}
				out[p] = append(out[p], batchRows(b)...)
				b.Release()
			}
		}()
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

func TestRepartitionHash(t *testing.T) {
	tests := []struct {
		name            string
		inParts, outCnt int
		batchSize       int
	}{
		{"3 to 4", 3, 4, 16},
		{"1 to 1", 1, 1, 16},
		{"2 to 5 big batches", 2, 5, 1000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := runtime.NumGoroutine()
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			src, all := kvSource(t, mem, tt.inParts, 300, 23, 7)
			key := col(0, "k", plan.Int64)
			r := NewRepartition(src, Partitioning{Kind: PartHash, Count: tt.outCnt, Keys: []expr.Expr{key}})
			parts, err := collectConcurrently(t, r, newTestTC(mem, tt.batchSize))
			if err != nil {
				t.Fatal(err)
			}
			var got [][]any
			for p, rows := range parts {
				for _, row := range rows {
					if want := hashPartition(t, mem, row[0], tt.outCnt); want != p {
						t.Errorf("key %v in partition %d, want %d", row[0], p, want)
					}
				}
				got = append(got, rows...)
			}
			if sortedRowsString(got) != sortedRowsString(all) {
				t.Errorf("rows differ: got %d, want %d", len(got), len(all))
			}
			if len(r.exchanges) != 0 {
				t.Errorf("exchange not released")
			}
			if src.open.Load() != 0 {
				t.Errorf("input streams left open")
			}
			waitGoroutines(t, before)
			src.release()
			mem.AssertSize(t, 0)
		})
	}
	if got, want := NewRepartition(nil, Partitioning{Kind: PartHash, Count: 4, Keys: []expr.Expr{col(0, "l_orderkey", plan.Int64)}}).String(), "Repartition: Hash([l_orderkey@0], 4)"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

// hashPartition is where HashRows sends a one-row int64 key.
func hashPartition(t testing.TB, mem memory.Allocator, k any, n int) int {
	b := array.NewInt64Builder(mem)
	defer b.Release()
	if k == nil {
		b.AppendNull()
	} else {
		b.Append(int64(k.(int)))
	}
	a := b.NewArray()
	defer a.Release()
	h := make([]uint64, 1)
	if err := HashRows([]arrow.Array{a}, h); err != nil {
		t.Fatal(err)
	}
	return PartitionOf(h[0], n)
}

func TestRepartitionRoundRobin(t *testing.T) {
	before := runtime.NumGoroutine()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	src, all := kvSource(t, mem, 2, 100, 5, 10)
	r := NewRepartition(src, Partitioning{Kind: PartRoundRobin, Count: 4})
	parts, err := collectConcurrently(t, r, newTestTC(mem, 16))
	if err != nil {
		t.Fatal(err)
	}
	var got [][]any
	for p, rows := range parts {
		// Each of 2 inputs deals its 10 batches of 10 rows over 4
		// partitions: every partition gets 2 or 3 batches from each.
		if len(rows) < 40 || len(rows) > 60 {
			t.Errorf("partition %d has %d rows, want 40..60", p, len(rows))
		}
		got = append(got, rows...)
	}
	if sortedRowsString(got) != sortedRowsString(all) {
		t.Errorf("rows differ")
	}
	waitGoroutines(t, before)
	src.release()
	mem.AssertSize(t, 0)
}

func TestRepartitionTasks(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	src, all := kvSource(t, mem, 2, 200, 11, 9)
	r := NewRepartition(src, Partitioning{Kind: PartHash, Count: 3, Keys: []expr.Expr{col(0, "k", plan.Int64)}})
	// Two tasks run the same operator at once; each sees all rows.
	var wg sync.WaitGroup
	results := make([][][][]any, 2)
	for i := range results {
		tc := newTestTC(mem, 32)
		wg.Add(1)
		go func() {
			defer wg.Done()
			parts, err := collectConcurrently(t, r, tc)
			if err != nil {
				t.Error(err)
			}
			results[i] = parts
		}()
	}
	wg.Wait()
	for i, parts := range results {
		var got [][]any
		for _, p := range parts {
			got = append(got, p...)
		}
		if sortedRowsString(got) != sortedRowsString(all) {
			t.Errorf("task %d: rows differ (%d vs %d)", i, len(got), len(all))
		}
	}
	// The same task executing a partition twice is a planner bug.
	tc := newTestTC(mem, 32)
	s0, err := r.Execute(context.Background(), 0, tc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Execute(context.Background(), 0, tc); err == nil {
		t.Errorf("second Execute of partition 0 should fail")
	}
	s0.Close()
	// Partitions 1 and 2 were never executed: execute and close them so
	// the exchange ends.
	for p := 1; p < 3; p++ {
		s, err := r.Execute(context.Background(), p, tc)
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
	}
	if len(r.exchanges) != 0 {
		t.Errorf("exchange not released")
	}
	src.release()
	mem.AssertSize(t, 0)
}

func TestRepartitionEarlyCloseAndErrors(t *testing.T) {
	t.Run("one consumer closes early", func(t *testing.T) {
		before := runtime.NumGoroutine()
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		src, all := kvSource(t, mem, 2, 500, 13, 8)
		r := NewRepartition(src, Partitioning{Kind: PartHash, Count: 2, Keys: []expr.Expr{col(0, "k", plan.Int64)}})
		tc := newTestTC(mem, 4)
		s0, err := r.Execute(context.Background(), 0, tc)
		if err != nil {
			t.Fatal(err)
		}
		s1, err := r.Execute(context.Background(), 1, tc)
		if err != nil {
			t.Fatal(err)
		}
		s0.Close() // never read
		rows := drainStream(t, s1)
		want := 0
		for _, row := range all {
			if hashPartition(t, mem, row[0], 2) == 1 {
				want++
			}
		}
		if len(rows) != want {
			t.Errorf("partition 1 rows = %d, want %d", len(rows), want)
		}
		waitGoroutines(t, before)
		src.release()
		mem.AssertSize(t, 0)
	})
	t.Run("input error reaches every consumer", func(t *testing.T) {
		before := runtime.NumGoroutine()
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		src, _ := kvSource(t, mem, 2, 100, 13, 8)
		src.errPart, src.errAt = 1, 3
		r := NewRepartition(src, Partitioning{Kind: PartRoundRobin, Count: 3})
		_, err := collectConcurrently(t, r, newTestTC(mem, 4))
		var n int
		for e := range joinedErrors(err) {
			if !errors.Is(e, errInjected) {
				t.Errorf("err = %v", e)
			}
			n++
		}
		if n != 3 {
			t.Errorf("%d consumers saw the error, want 3", n)
		}
		waitGoroutines(t, before)
		src.release()
		mem.AssertSize(t, 0)
	})
	t.Run("cancel", func(t *testing.T) {
		testCancel(t, func(src Operator) Operator {
			return NewRepartition(src, Partitioning{Kind: PartHash, Count: 3, Keys: []expr.Expr{col(0, "v", plan.Int64)}})
		})
	})
}

// joinedErrors iterates the errors joined into err.
func joinedErrors(err error) func(func(error) bool) {
	return func(yield func(error) bool) {
		if err == nil {
			return
		}
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				if !yield(e) {
					return
				}
			}
			return
		}
		yield(err)
	}
}
