package exchange

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestCoalescerMergesSmallBatches: the first batch and large ones go out as
// they are (after what is pending), small ones are merged up to the target
// or until the oldest has waited coalesceWait, the end flushes the rest,
// and every row comes out once, in order.
func TestCoalescerMergesSmallBatches(t *testing.T) {
	tc, mem := checkedTC(t, nil)
	tc.BatchSize = 100
	c := newCoalescer(testSchema, tc)
	clock := time.Unix(0, 0)
	c.now = func() time.Time { return clock }
	var sizes []int64
	var rows []string
	emit := func(_ context.Context, d int, b arrow.RecordBatch) error {
		if d != 3 {
			t.Errorf("emitted to partition %d, want 3", d)
		}
		sizes = append(sizes, b.NumRows())
		rows = append(rows, batchRows(b)...)
		b.Release()
		return nil
	}
	next := 0
	add := func(n int, wait time.Duration) {
		t.Helper()
		clock = clock.Add(wait)
		if err := c.add(context.Background(), 3, makeBatch(mem, next, n), emit); err != nil {
			t.Fatal(err)
		}
		next += n
	}
	add(10, 0)           // the first batch: at once
	add(10, 0)           // small: pending
	add(30, 0)           // pending 40
	add(45, 0)           // pending 85
	add(20, 0)           // 105 >= 100: merged and sent
	add(20, 0)           // pending
	add(60, 0)           // >= half the target: the pending 20, then 60
	add(5, 0)            // pending
	add(5, coalesceWait) // the oldest waited coalesceWait: 10 sent
	add(7, 0)            // pending until the end
	if err := c.flush(context.Background(), 3, emit); err != nil {
		t.Fatal(err)
	}
	if want := []int64{10, 105, 20, 60, 10, 7}; !slices.Equal(sizes, want) {
		t.Errorf("batches sent %v, want %v", sizes, want)
	}
	all := makeBatch(memory.NewGoAllocator(), 0, next)
	want := batchRows(all)
	all.Release()
	if !slices.Equal(rows, want) {
		t.Errorf("rows came out as %d, want %d in order\n%v", len(rows), len(want), rows[:min(len(rows), 10)])
	}
	c.release()
}

// TestFileCoalescerWaitsForTheTarget: a shuffle file's coalescer merges the
// first batch too and never sends early for time.
func TestFileCoalescerWaitsForTheTarget(t *testing.T) {
	tc, mem := checkedTC(t, nil)
	tc.BatchSize = 100
	c := newFileCoalescer(testSchema, tc)
	clock := time.Unix(0, 0)
	c.now = func() time.Time { return clock }
	var sizes []int64
	emit := func(_ context.Context, _ int, b arrow.RecordBatch) error {
		sizes = append(sizes, b.NumRows())
		b.Release()
		return nil
	}
	next := 0
	for _, n := range []int{10, 20, 30, 45, 10, 5} {
		clock = clock.Add(time.Second)
		if err := c.add(context.Background(), 0, makeBatch(mem, next, n), emit); err != nil {
			t.Fatal(err)
		}
		next += n
	}
	if err := c.flush(context.Background(), 0, emit); err != nil {
		t.Fatal(err)
	}
	if want := []int64{105, 15}; !slices.Equal(sizes, want) {
		t.Errorf("batches written %v, want %v", sizes, want)
	}
}
