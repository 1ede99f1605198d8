package physical

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/plan"
)

func TestSortPreservingMerge(t *testing.T) {
	for _, kc := range sortKeyCases {
		for _, parts := range []int{1, 4} {
			for _, fetch := range []int64{-1, 0, 5, 333, 10000} {
				t.Run(fmt.Sprintf("%s parts=%d fetch=%d", kc.name, parts, fetch), func(t *testing.T) {
					before := runtime.NumGoroutine()
					mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
					src, all := sortSource(t, mem, 9, parts, 300, 16)
					tc := newTestTC(mem, 50)
					m := NewSortPreservingMerge(NewSort(src, kc.keys, -1), kc.keys, fetch)
					if m.OutputPartitioning().Count != 1 {
						t.Fatal("merge must have one partition")
					}
					got := collectAll(t, m, tc)
					want := refSort(all, kc.keys)
					if fetch >= 0 && int(fetch) < len(want) {
						want = want[:fetch]
					}
					if rowsString(got) != rowsString(want) {
						t.Errorf("got %d rows, want %d: %s", len(got), len(want), firstDiff(got, want))
					}
					if src.open.Load() != 0 {
						t.Errorf("input streams left open")
					}
					waitGoroutines(t, before)
					src.release()
					mem.AssertSize(t, 0)
				})
			}
		}
	}
}

func TestSortPreservingMergeErrors(t *testing.T) {
	key := []SortKey{{Expr: col(0, "v", plan.Int64)}}
	t.Run("input error", func(t *testing.T) {
		before := runtime.NumGoroutine()
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		src := newMemSource(intSchema, [][]arrow.RecordBatch{intBatches(t, mem, 0, 50, 5), intBatches(t, mem, 25, 50, 5)})
		src.errPart, src.errAt = 1, 4
		s, err := NewSortPreservingMerge(src, key, -1).Execute(context.Background(), 0, newTestTC(mem, 8))
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
		testCancel(t, func(src Operator) Operator { return NewSortPreservingMerge(src, key, -1) })
	})
	t.Run("early close", func(t *testing.T) {
		before := runtime.NumGoroutine()
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		src := newMemSource(intSchema, [][]arrow.RecordBatch{intBatches(t, mem, 0, 500, 5), intBatches(t, mem, 25, 500, 5)})
		rows := collectAll(t, NewLimit(NewSortPreservingMerge(src, key, -1), 0, 4), newTestTC(mem, 3))
		if fmt.Sprint(flatten(rows)) != "[0 1 2 3]" {
			t.Errorf("rows = %v", flatten(rows))
		}
		if src.open.Load() != 0 {
			t.Errorf("input streams left open")
		}
		waitGoroutines(t, before)
		src.release()
		mem.AssertSize(t, 0)
	})
	if got, want := NewSortPreservingMerge(nil, []SortKey{{Expr: col(1, "x", plan.Int64), Desc: true, NullsFirst: true}}, 3).String(), "SortPreservingMerge: x@1 DESC NULLS FIRST fetch=3"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}
