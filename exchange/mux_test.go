package exchange

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"sluice/physical"
	"sluice/physical/mempool"
	"sluice/rpc"
)

// muxProducer is a producer task on env whose output partitions are fed
// independently, one goroutine each, so that one unread partition holds
// up no other on the producer's side: what stays stalled is up to the
// stream.
type muxProducer struct {
	env    *Env
	pushed []atomic.Int64 // batches pushed per partition
	errs   []error        // per partition: its goroutine's Push error
	wg     sync.WaitGroup
}

// startMuxProducer registers task 0 of stage 1 of "job" on env with
// parts queues of capacity 2 and pushes batches[p] batches of 10 rows
// into partition p; partition p then ends with finish(p) (nil: end of
// stream; errBlock: not at all until the job is dropped).
func startMuxProducer(t *testing.T, env *Env, taskKey []byte, batches []int, finish func(p int) error) *muxProducer {
	t.Helper()
	parts := make([]int, len(batches))
	for i := range parts {
		parts[i] = i
	}
	if err := env.Registry.Register("job", 1, 0, testSchema, parts, 2, false, taskKey); err != nil {
		t.Fatal(err)
	}
	mp := &muxProducer{env: env, pushed: make([]atomic.Int64, len(batches)), errs: make([]error, len(batches))}
	for p, n := range batches {
		mp.wg.Add(1)
		go func() {
			defer mp.wg.Done()
			k := QueueKey{JobID: "job", StageID: 1, TaskID: 0, Partition: p}
			for i := 0; i < n; i++ {
				if err := env.Registry.Push(context.Background(), k, makeBatch(physical.NewTaskContext().Alloc, p*10000+i*10, 10)); err != nil {
					mp.errs[p] = err
					return
				}
				mp.pushed[p].Add(1)
			}
			err := finish(p)
			if errors.Is(err, errBlock) {
				return
			}
			env.Registry.Finish(k, err)
		}()
	}
	return mp
}

var errBlock = errors.New("do not finish")

// wait waits for the producer's goroutines, failing the test after d.
func (mp *muxProducer) wait(t *testing.T, d time.Duration) {
	t.Helper()
	done := make(chan struct{})
	go func() { mp.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("producer still pushing after %s: pushed %d, %d, ...", d, mp.pushed[0].Load(), mp.pushed[min(1, len(mp.pushed)-1)].Load())
	}
}

// muxReader is a reader of parts partitions of task 0 of stage 1 on
// producer, and the multiplexed consumer task (on executor "b") that runs
// it, with credit 2.
func muxReader(t *testing.T, producer *Env, parts int, caps []*rpc.PartitionCapability) (*PipelinedReader, *physical.TaskContext, *Env) {
	t.Helper()
	p := []*rpc.PipelinedProducer{{TaskId: 0, ExecutorId: producer.ExecutorID, FlightAddress: producer.FlightAddress}}
	partitions := make([][]*rpc.PipelinedProducer, parts)
	for i := range partitions {
		partitions[i] = p
	}
	consumer := &Env{ExecutorID: "b", Clients: NewClientPool(nil)}
	t.Cleanup(func() { consumer.Clients.Close() })
	tc, _ := checkedTC(t, &TaskEnv{Env: consumer, JobID: "job", StageID: 2, JobSecret: "secret",
		Capabilities: CapabilitiesOf(caps), Multiplex: true, MuxCredit: 2})
	t.Cleanup(func() {
		if n := tc.Memory.Used(); n != 0 {
			t.Errorf("the consumer task's pool still holds %d bytes", n)
		}
	})
	return NewPipelinedReader("job", 1, testSchema, partitions), tc, consumer
}

// readWithin drains s, failing the test if it takes longer than d (a
// deadlock).
func readWithin(t *testing.T, s physical.Stream, d time.Duration) ([]string, error) {
	t.Helper()
	type result struct {
		rows []string
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		rows, err := readAll(t, s)
		ch <- result{rows, err}
	}()
	select {
	case r := <-ch:
		return r.rows, r.err
	case <-time.After(d):
		t.Fatalf("read still running after %s: deadlock", d)
		return nil, nil
	}
}

// TestMuxUnevenReads: one partition of the stream is opened but not read
// while the others are read to their ends; it holds up none of them (no
// head-of-line blocking), its producer stalls after the queue's capacity
// and the credit, and reading it afterwards yields all of it.
func TestMuxUnevenReads(t *testing.T) {
	checkGoroutines(t)
	a, svc := newExecutorEnv(t, "a")
	const batches = 40
	mp := startMuxProducer(t, a, nil, []int{batches, batches, batches}, func(int) error { return nil })
	r, tc, _ := muxReader(t, a, 3, nil)

	unread, err := r.Execute(context.Background(), 0, tc)
	if err != nil {
		t.Fatal(err)
	}
	for p := 1; p < 3; p++ {
		s, err := r.Execute(context.Background(), p, tc)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := readWithin(t, s, 20*time.Second)
		if err != nil || len(rows) != batches*10 {
			t.Fatalf("partition %d: %d rows, %v; want %d", p, len(rows), err, batches*10)
		}
	}
	// Queue capacity 2, credit 2, and the batches between the stream and
	// the reader's consumer (the IPC reader's and the merge's): far fewer
	// than all.
	if n := mp.pushed[0].Load(); n >= batches/2 {
		t.Errorf("the unread partition's producer pushed %d of %d batches: credit does not bound it", n, batches)
	}
	rows, err := readWithin(t, unread, 20*time.Second)
	if err != nil || len(rows) != batches*10 {
		t.Fatalf("partition 0 read last: %d rows, %v; want %d", len(rows), err, batches*10)
	}
	mp.wait(t, 10*time.Second)
	if n := svc.MuxStreams(); n != 1 {
		t.Errorf("%d streams served for one producer task, want 1", n)
	}
	if n := svc.PipelinedServed(); n != 3 {
		t.Errorf("%d queues served, want 3", n)
	}
	if n := a.Registry.Entries("job"); n != 0 {
		t.Errorf("%d queues left in the registry", n)
	}
}

// TestMuxEarlyClose: a partition closed after one batch (LIMIT) abandons
// its queue, whose producer then runs to its end with its pushes
// discarded, while the other partition of the stream reads everything.
func TestMuxEarlyClose(t *testing.T) {
	checkGoroutines(t)
	a, svc := newExecutorEnv(t, "a")
	const batches = 30
	mp := startMuxProducer(t, a, nil, []int{batches, batches}, func(int) error { return nil })
	r, tc, _ := muxReader(t, a, 2, nil)

	s0, err := r.Execute(context.Background(), 0, tc)
	if err != nil {
		t.Fatal(err)
	}
	s1, err := r.Execute(context.Background(), 1, tc)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s0.Next(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	b.Release()
	// Partition 1's channel is open once it has a batch: closing
	// partition 0 before that could close the stream with its only
	// channel, and partition 1 would rightly start a second one.
	first, err := s1.Next(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := int(first.NumRows())
	first.Release()
	s0.Close()
	rows, err := readWithin(t, s1, 20*time.Second)
	if err != nil || got+len(rows) != batches*10 {
		t.Fatalf("partition 1: %d rows, %v; want %d", got+len(rows), err, batches*10)
	}
	mp.wait(t, 10*time.Second)
	for p, err := range mp.errs {
		if err != nil {
			t.Errorf("producer of partition %d: %v", p, err)
		}
	}
	if n := a.Registry.Entries("job"); n != 0 {
		t.Errorf("%d queues left in the registry", n)
	}
	if n := svc.MuxStreams(); n != 1 {
		t.Errorf("%d streams served, want 1", n)
	}
}

// TestMuxProducerError: a producer's error reaches the reader of its
// partition as an error (never a short result), after the batches queued
// before it; the stream's other partition is unaffected.
func TestMuxProducerError(t *testing.T) {
	checkGoroutines(t)
	a, _ := newExecutorEnv(t, "a")
	mp := startMuxProducer(t, a, nil, []int{20, 3}, func(p int) error {
		if p == 1 {
			return errors.New("boom in the producer")
		}
		return nil
	})
	r, tc, _ := muxReader(t, a, 2, nil)
	s0, err := r.Execute(context.Background(), 0, tc)
	if err != nil {
		t.Fatal(err)
	}
	s1, err := r.Execute(context.Background(), 1, tc)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := readWithin(t, s1, 20*time.Second)
	if err == nil || !strings.Contains(err.Error(), "boom in the producer") || status.Code(unwrapStatus(err)) != codes.Aborted {
		t.Errorf("partition 1: %d rows, %v; want the producer's error (Aborted)", len(rows), err)
	}
	rows, err = readWithin(t, s0, 20*time.Second)
	if err != nil || len(rows) != 200 {
		t.Errorf("partition 0: %d rows, %v; want 200", len(rows), err)
	}
	mp.wait(t, 10*time.Second)
}

// TestMuxRefusedCapability: a channel whose capability the producer's
// executor refuses fails the whole stream with PermissionDenied, so the
// stream's other partition fails too rather than waiting.
func TestMuxRefusedCapability(t *testing.T) {
	checkGoroutines(t)
	a, _ := newExecutorEnv(t, "a")
	bindJobSecret(t, a)
	wiring := rpc.NewWiringKey()
	key := rpc.PipelinedTaskKey(wiring, "job", 1, 0)
	mp := startMuxProducer(t, a, key, []int{5, 5}, func(int) error { return errBlock })
	r, tc, _ := muxReader(t, a, 2, []*rpc.PartitionCapability{
		{StageId: 1, TaskId: 0, Partition: 0, Capability: rpc.PipelinedCapability(key, 0)},
		// Partition 1 carries partition 0's capability.
		{StageId: 1, TaskId: 0, Partition: 1, Capability: rpc.PipelinedCapability(key, 0)},
	})
	s0, err := r.Execute(context.Background(), 0, tc)
	if err != nil {
		t.Fatal(err)
	}
	// A batch of partition 0 first, so that its channel is open on the
	// stream partition 1's opens on: partitions execute concurrently, and
	// a channel opened after a failed stream was let go starts a stream of
	// its own (which the refusal does not touch; the task's failure
	// cancels it).
	first, err := s0.Next(context.Background())
	if err != nil {
		t.Fatalf("partition 0's first batch: %v", err)
	}
	first.Release()
	s1, err := r.Execute(context.Background(), 1, tc)
	if err != nil {
		t.Fatal(err)
	}
	for p, s := range []physical.Stream{s0, s1} {
		rows, err := readWithin(t, s, 20*time.Second)
		if status.Code(unwrapStatus(err)) != codes.PermissionDenied {
			t.Errorf("partition %d: %d rows, %v; want PermissionDenied", p, len(rows), err)
		}
	}
	a.Registry.DropJob("job")
	mp.wait(t, 10*time.Second)
}

// TestMuxCancelled: cancelling the reading task (the job's cancellation)
// ends the read with the context's error, tears the stream down on both
// ends and abandons the queue, whose producer then finishes.
func TestMuxCancelled(t *testing.T) {
	checkGoroutines(t)
	a, _ := newExecutorEnv(t, "a")
	mp := startMuxProducer(t, a, nil, []int{30, 30}, func(int) error { return nil })
	r, tc, _ := muxReader(t, a, 2, nil)
	ctx, cancel := context.WithCancel(context.Background())
	var streams []physical.Stream
	for p := 0; p < 2; p++ {
		s, err := r.Execute(ctx, p, tc)
		if err != nil {
			t.Fatal(err)
		}
		streams = append(streams, s)
	}
	// One batch of each: both queues are taken, so it is the
	// cancellation that must abandon them.
	for _, s := range streams {
		b, err := s.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		b.Release()
	}
	cancel()
	for p, s := range streams {
		for {
			b, err := s.Next(ctx)
			if err != nil {
				if !errors.Is(err, context.Canceled) {
					t.Errorf("partition %d after cancellation: %v, want context.Canceled", p, err)
				}
				break
			}
			b.Release()
		}
		s.Close()
	}
	mp.wait(t, 10*time.Second)
	if n := a.Registry.Entries("job"); n != 0 {
		t.Errorf("%d queues left in the registry", n)
	}
}

// TestMuxLostExecutor: a producer executor that cannot be reached fails
// the read with a FetchError naming it, as a stream per partition does.
func TestMuxLostExecutor(t *testing.T) {
	checkGoroutines(t)
	gone := &Env{ExecutorID: "gone", FlightAddress: closedAddr(t)}
	r, tc, _ := muxReader(t, gone, 2, nil)
	for p := 0; p < 2; p++ {
		s, err := r.Execute(context.Background(), p, tc)
		if err != nil {
			t.Fatal(err)
		}
		_, err = readWithin(t, s, 20*time.Second)
		var fe *FetchError
		if !errors.As(err, &fe) || fe.ExecutorID != "gone" {
			t.Errorf("partition %d: %v, want a FetchError naming executor gone", p, err)
		}
	}
}

// TestMuxPipelinedJob: a hash exchange from two producer tasks on two
// executors to a multiplexed consumer task reading three partitions
// returns every row in its partition, over one stream per producer task.
// A credit of 5 has the readers return it two batches at a time.
func TestMuxPipelinedJob(t *testing.T) {
	checkGoroutines(t)
	a, sa := newExecutorEnv(t, "a")
	b, sb := newExecutorEnv(t, "b")
	b.Compression = CompressNone
	const total, outputs = 3000, 3
	w := NewPipelinedWriter(rowsSource(4, total, 30), "job", 1, hashPart(outputs), false, 2)
	producers := []*rpc.PipelinedProducer{
		{TaskId: 0, ExecutorId: "a", FlightAddress: a.FlightAddress},
		{TaskId: 1, ExecutorId: "b", FlightAddress: b.FlightAddress},
	}
	parts := make([][]*rpc.PipelinedProducer, outputs)
	for p := range parts {
		parts[p] = producers
	}
	r := NewPipelinedReader("job", 1, testSchema, parts)
	consumer := &Env{ExecutorID: "c", Clients: NewClientPool(nil)}
	defer consumer.Clients.Close()
	rtc, _ := checkedTC(t, &TaskEnv{Env: consumer, JobID: "job", StageID: 2, Multiplex: true, MuxCredit: 5})

	var wg sync.WaitGroup
	taskErrs := make([]error, 2)
	for i, e := range []*Env{a, b} {
		tc, _ := checkedTC(t, &TaskEnv{Env: e, JobID: "job", StageID: 1, TaskID: i})
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, taskErrs[i] = w.RunTask(context.Background(), []int{2 * i, 2*i + 1}, tc)
		}()
	}
	rows := make([][]string, outputs)
	readErrs := make([]error, outputs)
	for p := 0; p < outputs; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := r.Execute(context.Background(), p, rtc)
			if err != nil {
				readErrs[p] = err
				return
			}
			rows[p], readErrs[p] = readAll(t, s)
		}()
	}
	wg.Wait()
	for _, err := range append(readErrs, taskErrs...) {
		if err != nil {
			t.Fatal(err)
		}
	}
	var all []string
	for p, rs := range rows {
		for _, row := range rs {
			if k := rowKey(t, row); keyPartition(t, k, outputs) != p {
				t.Fatalf("key %d read from partition %d", k, p)
			}
		}
		all = append(all, rs...)
	}
	slices.Sort(all)
	if !slices.Equal(all, expectedRows(total)) {
		t.Fatalf("read %d rows, want %d (contents differ)", len(all), total)
	}
	for _, s := range []*FlightService{sa, sb} {
		// A producer cannot finish a partition while another is not
		// taken (its queues are full), so the three reads overlap and
		// share one stream.
		if n, q := s.MuxStreams(), s.PipelinedServed(); n != 1 || q != outputs {
			t.Errorf("%d streams carrying %d queues, want 1 carrying %d", n, q, outputs)
		}
	}
	if n := rtc.Memory.Used(); n != 0 {
		t.Errorf("the consumer's pool still holds %d bytes", n)
	}
}

// fakeExchange is the client end of a DoExchange stream that records
// what the consumer sends.
type fakeExchange struct {
	flight.FlightService_DoExchangeClient
	mu   sync.Mutex
	sent []*rpc.MuxRequest
}

func (f *fakeExchange) Send(fd *flight.FlightData) error {
	var req rpc.MuxRequest
	if err := proto.Unmarshal(fd.AppMetadata, &req); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sent = append(f.sent, &req)
	return nil
}

// credits sums the credit returned for channel ch and counts the messages.
func (f *fakeExchange) credits(ch uint32) (batches, messages int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range f.sent {
		for _, c := range r.Credit {
			if c.Channel == ch {
				batches += int(c.Batches)
				messages++
			}
		}
	}
	return batches, messages
}

// TestMuxChannelDemultiplexer drives one channel's buffer as the
// receive loop and a reader do: the schema spends no credit, each batch
// one; the reader returns credit half the initial credit at a time; the
// buffer is charged to the task's pool; a batch beyond the credit, or one
// the pool refuses, fails the channel after what it already holds.
func TestMuxChannelDemultiplexer(t *testing.T) {
	newChannel := func(t *testing.T, credit int, limit int64) (*muxChannel, *fakeExchange, *mempool.Pool) {
		fe := &fakeExchange{}
		done := make(chan struct{})
		close(done) // no receive loop: the test delivers
		s := &muxStream{owner: &muxStreams{}, stream: fe, key: muxKey{addr: "x"}, channels: map[uint32]*muxChannel{},
			refs: 1, cancel: func() {}, done: done}
		pool := mempool.NewPool("task", limit, nil)
		ch := s.addChannel(muxOpen{credit: credit, mem: pool})
		t.Cleanup(func() {
			ch.close()
			if used := pool.Used(); used != 0 {
				t.Errorf("pool holds %d bytes after the channel closed", used)
			}
		})
		return ch, fe, pool
	}
	data := func(n int) (*rpc.MuxFrame, *flight.FlightData) {
		return &rpc.MuxFrame{Kind: rpc.MuxFrame_DATA}, &flight.FlightData{DataHeader: []byte("h"), DataBody: make([]byte, n)}
	}
	recv := func(t *testing.T, ch *muxChannel) (*flight.FlightData, error) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return ch.reader(ctx).Recv()
	}

	t.Run("credit", func(t *testing.T) {
		ch, fe, pool := newChannel(t, 4, 0)
		for i := 0; i < 5; i++ { // the schema and four batches
			ch.deliver(data(100))
		}
		if ch.err != nil {
			t.Fatalf("within the credit: %v", ch.err)
		}
		if used := pool.Used(); used != 5*101 {
			t.Errorf("pool holds %d bytes, want %d", used, 5*101)
		}
		for i := 0; i < 5; i++ {
			if _, err := recv(t, ch); err != nil {
				t.Fatal(err)
			}
		}
		if b, m := fe.credits(ch.id); b != 4 || m != 2 {
			t.Errorf("returned %d credits in %d messages, want 4 in 2", b, m)
		}
		ch.deliver(&rpc.MuxFrame{Kind: rpc.MuxFrame_END}, &flight.FlightData{})
		if _, err := recv(t, ch); !errors.Is(err, io.EOF) {
			t.Errorf("after END: %v, want io.EOF", err)
		}
		if used := pool.Used(); used != 0 {
			t.Errorf("pool holds %d bytes after the reads", used)
		}
	})
	t.Run("beyond the credit", func(t *testing.T) {
		ch, _, _ := newChannel(t, 2, 0)
		for i := 0; i < 4; i++ { // the schema, two batches, one too many
			ch.deliver(data(10))
		}
		for i := 0; i < 3; i++ {
			if _, err := recv(t, ch); err != nil {
				t.Fatalf("message %d, within the credit: %v", i, err)
			}
		}
		if _, err := recv(t, ch); err == nil || !strings.Contains(err.Error(), "beyond the credit") {
			t.Errorf("a batch beyond the credit: %v", err)
		}
	})
	t.Run("memory refused", func(t *testing.T) {
		ch, _, pool := newChannel(t, 4, 1000)
		ch.deliver(data(10))
		ch.deliver(data(5000))
		if _, err := recv(t, ch); err != nil {
			t.Fatal(err)
		}
		if _, err := recv(t, ch); !errors.Is(err, mempool.ErrResourcesExhausted) {
			t.Errorf("a batch over the pool's limit: %v, want resources exhausted", err)
		}
		if used := pool.Used(); used != 0 {
			t.Errorf("pool holds %d bytes after the refusal", used)
		}
	})
	t.Run("closed early", func(t *testing.T) {
		ch, fe, pool := newChannel(t, 4, 0)
		ch.deliver(data(10))
		ch.deliver(data(10))
		ch.close()
		if used := pool.Used(); used != 0 {
			t.Errorf("pool holds %d bytes after an early close", used)
		}
		fe.mu.Lock()
		defer fe.mu.Unlock()
		if n := len(fe.sent); n != 1 || !slices.Equal(fe.sent[0].Close, []uint32{ch.id}) {
			t.Errorf("sent %v, want one message closing channel %d (the server abandons its queue)", fe.sent, ch.id)
		}
	})
	t.Run("producer error", func(t *testing.T) {
		ch, _, _ := newChannel(t, 4, 0)
		ch.deliver(data(10))
		ch.deliver(&rpc.MuxFrame{Kind: rpc.MuxFrame_ERROR, Code: int32(codes.Aborted), Message: "boom"}, &flight.FlightData{})
		if _, err := recv(t, ch); err != nil {
			t.Fatal(err)
		}
		_, err := recv(t, ch)
		if status.Code(unwrapStatus(err)) != codes.Aborted || !strings.Contains(err.Error(), "boom") {
			t.Errorf("after ERROR: %v, want Aborted boom", err)
		}
	})
}
