package physical

import (
	"context"
	"errors"
	"runtime"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

func TestCoalescePartitions(t *testing.T) {
	tests := []struct {
		name  string
		parts int
	}{
		{"one", 1},
		{"four", 4},
		{"empty partitions", 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := runtime.NumGoroutine()
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			var parts [][]arrow.RecordBatch
			var want []any
			for p := 0; p < tt.parts; p++ {
				if tt.name == "empty partitions" && p != 1 {
					parts = append(parts, nil)
					continue
				}
				parts = append(parts, intBatches(t, mem, p*100, 25, 4))
				for i := p * 100; i < p*100+25; i++ {
					want = append(want, []any{i})
				}
			}
			src := newMemSource(intSchema, parts)
			c := NewCoalescePartitions(src)
			if c.OutputPartitioning().Count != 1 {
				t.Fatal("coalesce must have one partition")
			}
			rows := collectAll(t, c, newTestTC(mem, 8))
			var wantRows [][]any
			for _, w := range want {
				wantRows = append(wantRows, w.([]any))
			}
			if got, w := sortedRowsString(rows), sortedRowsString(wantRows); got != w {
				t.Errorf("rows differ: got %d rows, want %d", len(rows), len(wantRows))
			}
			if src.open.Load() != 0 {
				t.Errorf("input streams left open")
			}
			src.release()
			waitGoroutines(t, before)
			mem.AssertSize(t, 0)
		})
	}
}

func TestCoalesceEarlyCloseAndErrors(t *testing.T) {
	t.Run("early close", func(t *testing.T) {
		before := runtime.NumGoroutine()
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		src := newMemSource(intSchema, [][]arrow.RecordBatch{intBatches(t, mem, 0, 100, 2), intBatches(t, mem, 100, 100, 2)})
		rows := collectAll(t, NewLimit(NewCoalescePartitions(src), 0, 3), newTestTC(mem, 8))
		if len(rows) != 3 {
			t.Errorf("rows = %d, want 3", len(rows))
		}
		if src.open.Load() != 0 {
			t.Errorf("input streams left open")
		}
		waitGoroutines(t, before)
		src.release()
		mem.AssertSize(t, 0)
	})
	t.Run("input error", func(t *testing.T) {
		before := runtime.NumGoroutine()
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		src := newMemSource(intSchema, [][]arrow.RecordBatch{intBatches(t, mem, 0, 10, 2), intBatches(t, mem, 100, 10, 2)})
		src.errPart, src.errAt, src.block = 1, 2, true
		s, err := NewCoalescePartitions(src).Execute(context.Background(), 0, newTestTC(mem, 8))
		if err != nil {
			t.Fatal(err)
		}
		for {
			b, err := s.Next(context.Background())
			if err != nil {
				if !errors.Is(err, errInjected) {
					t.Errorf("err = %v, want the injected error", err)
				}
				break
			}
			b.Release()
		}
		s.Close()
		waitGoroutines(t, before)
		src.release()
		mem.AssertSize(t, 0)
	})
	t.Run("cancel", func(t *testing.T) {
		testCancel(t, func(src Operator) Operator { return NewCoalescePartitions(src) })
	})
}

// testCancel checks that a stream over a source that blocks forever returns
// context.Canceled once its context is cancelled, and that Close leaves no
// goroutine or buffer behind.
func testCancel(t *testing.T, build func(src Operator) Operator) {
	t.Helper()
	before := runtime.NumGoroutine()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	src := newMemSource(intSchema, [][]arrow.RecordBatch{intBatches(t, mem, 0, 4, 2), intBatches(t, mem, 10, 4, 2)})
	src.block = true
	op := build(src)
	ctx, cancel := context.WithCancel(context.Background())
	tc := newTestTC(mem, 8)
	n := op.OutputPartitioning().Count
	streams := make([]Stream, n)
	for p := range streams {
		s, err := op.Execute(ctx, p, tc)
		if err != nil {
			t.Fatal(err)
		}
		streams[p] = s
	}
	errs := make(chan error, n)
	for _, s := range streams {
		go func() {
			for {
				b, err := s.Next(ctx)
				if err != nil {
					errs <- err
					return
				}
				b.Release()
			}
		}()
	}
	cancel()
	for range streams {
		if err := <-errs; !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want context.Canceled", err)
		}
	}
	for _, s := range streams {
		s.Close()
	}
	if src.open.Load() != 0 {
		t.Errorf("input streams left open: %d", src.open.Load())
	}
	waitGoroutines(t, before)
	src.release()
	mem.AssertSize(t, 0)
}
