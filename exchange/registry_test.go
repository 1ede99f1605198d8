package exchange

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/physical"
	"sluice/physical/mempool"
)

func qkey(job string, p int) QueueKey {
	return QueueKey{JobID: job, StageID: 1, TaskID: 0, Partition: p}
}

// readQueue drains a queue reader, returning rows read and the final error.
func readQueue(q *QueueReader, each func()) (int, error) {
	rows := 0
	for {
		b, err := q.Next(context.Background())
		if err != nil {
			return rows, err
		}
		rows += int(b.NumRows())
		b.Release()
		if each != nil {
			each()
		}
	}
}

func TestRegistryBackpressure(t *testing.T) {
	checkGoroutines(t)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	r := NewRegistry()
	const capacity, batches = 3, 40
	if err := r.Register("j", 1, 0, testSchema, []int{0}, capacity, false, nil); err != nil {
		t.Fatal(err)
	}
	// Batches of equal size, so the queue's bytes count its batches.
	one := makeBatch(mem, 1000, 100)
	size := physical.BatchBytes(one)
	one.Release()

	produced := make(chan error, 1)
	go func() {
		for i := 0; i < batches; i++ {
			if err := r.Push(context.Background(), qkey("j", 0), makeBatch(mem, 1000, 100)); err != nil {
				produced <- err
				return
			}
		}
		r.Finish(qkey("j", 0), nil)
		produced <- nil
	}()
	q, err := r.Take(context.Background(), qkey("j", 0), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// The slow consumer waits for the queue to fill before every read: the
	// producer must be held at the capacity, never beyond it.
	deadline := time.Now().Add(5 * time.Second)
	reads := 0
	rows, err := readQueue(q, func() {
		reads++
		for reads < batches-capacity && r.QueuedBytes("j") < capacity*size {
			if time.Now().After(deadline) {
				t.Fatal("producer never refilled the queue")
			}
			time.Sleep(time.Millisecond) // polling state that cannot be awaited
		}
	})
	q.Close()
	if !errors.Is(err, io.EOF) || rows != batches*100 {
		t.Fatalf("read %d rows, err %v", rows, err)
	}
	if err := <-produced; err != nil {
		t.Fatal(err)
	}
	if peak := r.PeakQueuedBytes("j"); peak != capacity*size {
		t.Errorf("peak queued %d bytes, want exactly capacity %d×%d", peak, capacity, size)
	}
	if n, b := r.Entries("j"), r.QueuedBytes("j"); n != 0 || b != 0 {
		t.Errorf("after EOF: %d entries, %d bytes queued", n, b)
	}
}

func TestRegistryEndOfStream(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name   string
		finish error // nil: end-of-stream marker
		want   error
	}{
		{name: "end of stream", want: io.EOF},
		{name: "producer error", finish: boom, want: boom},
		{name: "producer cancelled", finish: context.Canceled, want: context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			r := NewRegistry()
			if err := r.Register("j", 1, 0, testSchema, []int{0}, 4, false, nil); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 2; i++ {
				if err := r.Push(context.Background(), qkey("j", 0), makeBatch(mem, 0, 10)); err != nil {
					t.Fatal(err)
				}
			}
			r.Finish(qkey("j", 0), tt.finish)
			r.Finish(qkey("j", 0), nil) // only the first Finish counts
			q, err := r.Take(context.Background(), qkey("j", 0), time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer q.Close()
			rows, err := readQueue(q, nil)
			if rows != 20 || !errors.Is(err, tt.want) {
				t.Fatalf("read %d rows then %v, want 20 rows then %v", rows, err, tt.want)
			}
			if tt.finish != nil && errors.Is(err, io.EOF) {
				t.Fatal("a failed producer looked like a finished one")
			}
		})
	}
}

func TestRegistryWaitsAreCancellable(t *testing.T) {
	checkGoroutines(t)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	r := NewRegistry()
	if err := r.Register("j", 1, 0, testSchema, []int{0, 1}, 1, false, nil); err != nil {
		t.Fatal(err)
	}
	if err := r.Push(context.Background(), qkey("j", 0), makeBatch(mem, 0, 10)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	pushed := make(chan error, 1)
	go func() { pushed <- r.Push(ctx, qkey("j", 0), makeBatch(mem, 0, 10)) }()
	q1, err := r.Take(context.Background(), qkey("j", 1), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer q1.Close()
	read := make(chan error, 1)
	go func() { _, err := q1.Next(ctx); read <- err }()
	cancel()
	if err := <-pushed; !errors.Is(err, context.Canceled) {
		t.Errorf("blocked Push: %v", err)
	}
	if err := <-read; !errors.Is(err, context.Canceled) {
		t.Errorf("blocked Next: %v", err)
	}
	r.DropJob("j")
}

func TestRegistryTakeWaitsBoundedTime(t *testing.T) {
	checkGoroutines(t)
	r := NewRegistry()
	start := time.Now()
	_, err := r.Take(context.Background(), qkey("j", 0), 50*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "did not start within 50ms") {
		t.Fatalf("Take of an unregistered queue: %v", err)
	}
	if time.Since(start) < 50*time.Millisecond {
		t.Error("Take gave up before its wait")
	}

	// A producer registering during the wait is found.
	taken := make(chan error, 1)
	go func() {
		q, err := r.Take(context.Background(), qkey("j", 2), 10*time.Second)
		if err == nil {
			q.Close()
		}
		taken <- err
	}()
	if err := r.Register("j", 1, 0, testSchema, []int{2}, 1, false, nil); err != nil {
		t.Fatal(err)
	}
	if err := <-taken; err != nil {
		t.Fatalf("Take during registration: %v", err)
	}
	if _, err := r.Take(context.Background(), qkey("j", 2), time.Second); err == nil {
		t.Error("a non-broadcast queue was taken twice")
	}
	if err := r.Register("j", 1, 0, testSchema, []int{2}, 1, false, nil); err == nil {
		t.Error("a queue was registered twice")
	}
	r.DropJob("j")
}

func TestRegistryBroadcastReplay(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	r := NewRegistry()
	if err := r.Register("j", 1, 0, testSchema, []int{0}, 1, true, nil); err != nil {
		t.Fatal(err)
	}
	first, err := r.Take(context.Background(), qkey("j", 0), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// Push never blocks on a broadcast queue, whatever its capacity.
	for i := 0; i < 5; i++ {
		if err := r.Push(context.Background(), qkey("j", 0), makeBatch(mem, i*10, 10)); err != nil {
			t.Fatal(err)
		}
	}
	r.Finish(qkey("j", 0), nil)
	second, err := r.Take(context.Background(), qkey("j", 0), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for i, q := range []*QueueReader{first, second} {
		rows, err := readQueue(q, nil)
		q.Close()
		if rows != 50 || !errors.Is(err, io.EOF) {
			t.Errorf("consumer %d read %d rows then %v", i, rows, err)
		}
	}
	if r.Entries("j") != 1 || r.QueuedBytes("j") == 0 {
		t.Error("a broadcast queue was released before job cleanup")
	}
	r.DropJob("j")
	if r.Entries("j") != 0 || r.QueuedBytes("j") != 0 {
		t.Error("DropJob kept a broadcast queue")
	}
}

func TestRegistryDropJobUnblocksEveryone(t *testing.T) {
	checkGoroutines(t)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	r := NewRegistry()
	if err := r.Register("j", 1, 0, testSchema, []int{0, 1}, 1, false, nil); err != nil {
		t.Fatal(err)
	}
	if err := r.Register("k", 1, 0, testSchema, []int{0}, 1, false, nil); err != nil {
		t.Fatal(err)
	}
	if err := r.Push(context.Background(), qkey("j", 0), makeBatch(mem, 0, 10)); err != nil {
		t.Fatal(err)
	}
	q1, err := r.Take(context.Background(), qkey("j", 1), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 3)
	go func() { errs <- r.Push(context.Background(), qkey("j", 0), makeBatch(mem, 0, 10)) }() // full: blocks
	go func() { _, err := q1.Next(context.Background()); errs <- err }()                      // empty: blocks
	go func() { _, err := r.Take(context.Background(), qkey("j", 9), time.Minute); errs <- err }()
	r.DropJob("j")
	for i := 0; i < 3; i++ {
		if err := <-errs; !errors.Is(err, ErrJobReleased) {
			t.Errorf("after DropJob: %v", err)
		}
	}
	q1.Close()
	if err := r.Register("j", 1, 1, testSchema, []int{0}, 1, false, nil); !errors.Is(err, ErrJobReleased) {
		t.Errorf("registering for a dropped job: %v", err)
	}
	if r.Entries("k") != 1 {
		t.Error("DropJob touched another job")
	}
	r.DropJob("k")
}

func TestRegistryConsumerGone(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	r := NewRegistry()
	if err := r.Register("j", 1, 0, testSchema, []int{0}, 2, false, nil); err != nil {
		t.Fatal(err)
	}
	q, err := r.Take(context.Background(), qkey("j", 0), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if err := r.Push(context.Background(), qkey("j", 0), makeBatch(mem, 0, 10)); err != nil {
			t.Fatal(err)
		}
	}
	q.Close() // LIMIT satisfied: stop reading early
	// The queue was full; pushes now succeed and are discarded.
	for i := 0; i < 5; i++ {
		if err := r.Push(context.Background(), qkey("j", 0), makeBatch(mem, 0, 10)); err != nil {
			t.Fatal(err)
		}
	}
	if r.QueuedBytes("j") != 0 {
		t.Error("batches kept for a consumer that left")
	}
	r.Finish(qkey("j", 0), nil)
	if r.Entries("j") != 0 {
		t.Error("an abandoned, finished queue was kept")
	}
}

// TestRegistryPushIdle: a push to a full queue its reader takes nothing
// from gives up after the idle timeout with ErrClientIdle, whether the
// reader never came or stopped; a reader that keeps taking, however
// slowly against the timeout's sum, never trips it.
func TestRegistryPushIdle(t *testing.T) {
	checkGoroutines(t)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	r := NewRegistry()
	if err := r.Register("idle", 1, 0, testSchema, []int{0, 1}, 1, false, nil); err != nil {
		t.Fatal(err)
	}
	const idle = 100 * time.Millisecond
	// Partition 0: nobody reads. The first push fills the queue.
	if err := r.PushIdle(context.Background(), qkey("idle", 0), makeBatch(mem, 0, 10), idle); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err := r.PushIdle(context.Background(), qkey("idle", 0), makeBatch(mem, 0, 10), idle)
	if !errors.Is(err, ErrClientIdle) || !strings.Contains(err.Error(), "execution.idle_client_timeout") {
		t.Fatalf("push to an unread full queue: %v", err)
	}
	if waited := time.Since(start); waited < idle {
		t.Errorf("gave up after %v, before the %v timeout", waited, idle)
	}
	r.Finish(qkey("idle", 0), err)
	// Partition 1: the reader takes a batch every 40ms, 15 times: 600ms
	// in all, six timeouts' worth.
	q, err := r.Take(context.Background(), qkey("idle", 1), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		for i := 0; i < 16; i++ {
			if err := r.PushIdle(context.Background(), qkey("idle", 1), makeBatch(mem, i, 10), idle); err != nil {
				done <- err
				return
			}
		}
		r.Finish(qkey("idle", 1), nil)
		done <- nil
	}()
	rows, err := readQueue(q, func() { time.Sleep(40 * time.Millisecond) })
	if !errors.Is(err, io.EOF) || rows != 160 {
		t.Errorf("slow reader: %d rows, %v", rows, err)
	}
	if err := <-done; err != nil {
		t.Errorf("a slow reader's producer failed: %v", err)
	}
	r.DropJob("idle")
}

// TestQueuesChargeProducerPool: queued bytes count against the producer
// task's memory pool until the consumer takes them or the queue is
// discarded, and a push the pool's limit refuses fails with the pool's
// error, the queue unchanged.
func TestQueuesChargeProducerPool(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	r := NewRegistry()
	defer r.DropJob("j")
	b := makeBatch(mem, 0, 100)
	size := physical.BatchBytes(b)
	b.Release()
	pool := mempool.NewPool("task", 2*size, nil)
	if err := r.RegisterCharged("j", 1, 0, testSchema, []int{0, 1}, 4, false, nil, pool); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, p := range []int{0, 0} {
		if err := r.Push(ctx, qkey("j", p), makeBatch(mem, 0, 100)); err != nil {
			t.Fatal(err)
		}
	}
	if pool.Used() != 2*size || r.QueuedBytes("j") != 2*size {
		t.Fatalf("two batches queued: pool %d, registry %d; want %d each", pool.Used(), r.QueuedBytes("j"), 2*size)
	}
	err := r.Push(ctx, qkey("j", 1), makeBatch(mem, 0, 100))
	if !errors.Is(err, mempool.ErrResourcesExhausted) {
		t.Fatalf("a third batch over the pool's limit: %v, want ErrResourcesExhausted", err)
	}
	q, err := r.Take(ctx, qkey("j", 0), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	got, err := q.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if pool.Used() != size {
		t.Errorf("after the consumer took a batch the pool holds %d, want %d", pool.Used(), size)
	}
	got.Release()
	q.Close() // abandoned: the other batch is discarded
	if pool.Used() != 0 || r.QueuedBytes("j") != 0 {
		t.Errorf("after the consumer left: pool %d, registry %d; want 0", pool.Used(), r.QueuedBytes("j"))
	}
}
