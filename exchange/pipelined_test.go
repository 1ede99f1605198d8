package exchange

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"sluice/physical"
	"sluice/rpc"
)

// pipelinedJob runs a pipelined stage: w's tasks (task i on envs[i] with
// input partitions inputs[i]) and a reader on consumer reading all output
// partitions concurrently. It returns the rows per output partition, the
// readers' errors and the tasks' errors.
func pipelinedJob(t *testing.T, w *PipelinedWriter, envs []*Env, inputs [][]int, consumer *Env, outputs int) ([][]string, []error, []error) {
	t.Helper()
	producers := make([]*rpc.PipelinedProducer, len(envs))
	for i, e := range envs {
		producers[i] = &rpc.PipelinedProducer{TaskId: int32(i), ExecutorId: e.ExecutorID, FlightAddress: e.FlightAddress}
	}
	parts := make([][]*rpc.PipelinedProducer, outputs)
	for p := range parts {
		if w.Part.Kind == physical.PartHash {
			parts[p] = producers
			continue
		}
		for i, in := range inputs {
			if slices.Contains(in, p) {
				parts[p] = append(parts[p], producers[i])
			}
		}
	}
	r := NewPipelinedReader(w.JobID, w.StageID, testSchema, parts)

	taskErrs := make([]error, len(envs))
	readErrs := make([]error, outputs)
	rows := make([][]string, outputs)
	var wg sync.WaitGroup
	for i, e := range envs {
		tc, _ := checkedTC(t, &TaskEnv{Env: e, JobID: w.JobID, StageID: w.StageID, TaskID: i})
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, taskErrs[i] = w.RunTask(context.Background(), inputs[i], tc)
		}()
	}
	for p := 0; p < outputs; p++ {
		tc, _ := checkedTC(t, consumer)
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := r.Execute(context.Background(), p, tc)
			if err != nil {
				readErrs[p] = err
				return
			}
			rows[p], readErrs[p] = readAll(t, s)
		}()
	}
	wg.Wait()
	return rows, readErrs, taskErrs
}

func rowKey(t *testing.T, row string) int64 {
	t.Helper()
	k, err := strconv.ParseInt(row[:strings.IndexByte(row, '|')], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestPipelinedOverFlight(t *testing.T) {
	tests := []struct {
		name     string
		consumer string // "a": the consumer runs on executor a (reads a's queues locally)
	}{
		{name: "remote consumer"},
		{name: "consumer beside a producer", consumer: "a"},
		{name: "remote consumer, one producer uncompressed", consumer: "uncompressed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkGoroutines(t)
			a, _ := newExecutorEnv(t, "a")
			b, _ := newExecutorEnv(t, "b")
			if tt.consumer == "uncompressed" {
				b.Compression = CompressNone
			}
			consumer := &Env{ExecutorID: "client", Clients: NewClientPool(nil)}
			defer consumer.Clients.Close()
			if tt.consumer == "a" {
				consumer = a
			}
			const total = 2000
			// Small queues and batches: producers run into backpressure.
			w := NewPipelinedWriter(rowsSource(4, total, 30), "job", 1, hashPart(3), false, 2)
			rows, readErrs, taskErrs := pipelinedJob(t, w, []*Env{a, b}, [][]int{{0, 1}, {2, 3}}, consumer, 3)
			for _, err := range append(readErrs, taskErrs...) {
				if err != nil {
					t.Fatal(err)
				}
			}
			var all []string
			for p, rs := range rows {
				for _, row := range rs {
					if k := rowKey(t, row); keyPartition(t, k, 3) != p {
						t.Fatalf("key %d read from partition %d", k, p)
					}
				}
				all = append(all, rs...)
			}
			slices.Sort(all)
			if !slices.Equal(all, expectedRows(total)) {
				t.Fatalf("read %d rows, want %d (contents differ)", len(all), total)
			}
			for _, e := range []*Env{a, b} {
				if n := e.Registry.Entries("job"); n != 0 {
					t.Errorf("executor %s keeps %d consumed queues", e.ExecutorID, n)
				}
				if peak := e.Registry.PeakQueuedBytes("job"); peak == 0 {
					t.Errorf("executor %s queued nothing", e.ExecutorID)
				}
			}
		})
	}
}

func TestPipelinedProducerFailure(t *testing.T) {
	checkGoroutines(t)
	a, _ := newExecutorEnv(t, "a")
	b, _ := newExecutorEnv(t, "b")
	consumer := &Env{ExecutorID: "client", Clients: NewClientPool(nil)}
	defer consumer.Clients.Close()
	boom := errors.New("disk on fire")
	src := rowsSource(2, 1000, 50)
	src.failErr = boom
	w := NewPipelinedWriter(src, "job", 1, hashPart(3), false, 2)
	_, readErrs, taskErrs := pipelinedJob(t, w, []*Env{a, b}, [][]int{{0}, {1}}, consumer, 3)
	for i, err := range taskErrs {
		if !errors.Is(err, boom) {
			t.Errorf("task %d: %v", i, err)
		}
	}
	for p, err := range readErrs {
		if err == nil || !strings.Contains(err.Error(), "disk on fire") {
			t.Errorf("partition %d: reader saw %v, want the producer's error", p, err)
		}
	}
	a.Registry.DropJob("job")
	b.Registry.DropJob("job")
}

func TestPipelinedProducerCancelled(t *testing.T) {
	checkGoroutines(t)
	a, _ := newExecutorEnv(t, "a")
	consumer := &Env{ExecutorID: "client", Clients: NewClientPool(nil)}
	defer consumer.Clients.Close()
	src := rowsSource(1, 100, 50)
	src.block = true // never ends by itself
	w := NewPipelinedWriter(src, "job", 1, physical.Partitioning{Kind: physical.PartUnknown}, false, 2)
	tc, _ := checkedTC(t, &TaskEnv{Env: a, JobID: "job", StageID: 1})
	ctx, cancel := context.WithCancel(context.Background())
	var g errgroup.Group
	g.Go(func() error {
		_, err := w.RunTask(ctx, []int{0}, tc)
		return err
	})
	rtc, _ := checkedTC(t, consumer)
	r := NewPipelinedReader("job", 1, testSchema, [][]*rpc.PipelinedProducer{{{TaskId: 0, ExecutorId: "a", FlightAddress: a.FlightAddress}}})
	s, err := r.Execute(context.Background(), 0, rtc)
	if err != nil {
		t.Fatal(err)
	}
	rows := 0
	for rows < 100 { // everything before the stall arrives
		b, err := s.Next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		rows += int(b.NumRows())
		b.Release()
	}
	cancel()
	if err := g.Wait(); !errors.Is(err, context.Canceled) {
		t.Errorf("task: %v", err)
	}
	_, err = readAll(t, s)
	if err == nil || !strings.Contains(err.Error(), "task cancelled") {
		t.Errorf("reader after the producer was cancelled: %v", err)
	}
}

func TestPipelinedPassThroughAndBroadcast(t *testing.T) {
	checkGoroutines(t)
	a, _ := newExecutorEnv(t, "a")
	consumer := &Env{ExecutorID: "client", Clients: NewClientPool(nil)}
	defer consumer.Clients.Close()

	// Pass-through: the task owns input partition 1 only, and registers
	// only output partition 1.
	w := NewPipelinedWriter(rowsSource(3, 300, 40), "job", 1, physical.Partitioning{Kind: physical.PartUnknown}, false, 8)
	tc, _ := checkedTC(t, &TaskEnv{Env: a, JobID: "job", StageID: 1, TaskID: 0})
	if _, err := w.RunTask(context.Background(), []int{1}, tc); err != nil {
		t.Fatal(err)
	}
	if n := a.Registry.Entries("job"); n != 1 {
		t.Fatalf("pass-through task registered %d queues, want 1", n)
	}
	producer := []*rpc.PipelinedProducer{{TaskId: 0, ExecutorId: "a", FlightAddress: a.FlightAddress}}
	r := NewPipelinedReader("job", 1, testSchema, [][]*rpc.PipelinedProducer{nil, producer, nil})
	rtc, _ := checkedTC(t, consumer)
	s, err := r.Execute(context.Background(), 1, rtc)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := readAll(t, s)
	if err != nil || len(rows) != 100 || rowKey(t, rows[0]) < 100 || rowKey(t, rows[0]) >= 200 {
		t.Fatalf("partition 1: %d rows (%v), err %v", len(rows), rows[:min(len(rows), 1)], err)
	}

	// Broadcast: two consumer tasks each replay the whole output.
	bw := NewPipelinedWriter(rowsSource(2, 200, 40), "job", 2, physical.Partitioning{Kind: physical.PartUnknown}, true, 1)
	if _, err := bw.RunTask(context.Background(), []int{0, 1}, tc); err != nil {
		t.Fatal(err)
	}
	br := NewPipelinedReader("job", 2, testSchema, [][]*rpc.PipelinedProducer{producer, producer})
	for consumerTask := 0; consumerTask < 2; consumerTask++ {
		got := 0
		for p := 0; p < 2; p++ {
			s, err := br.Execute(context.Background(), p, rtc)
			if err != nil {
				t.Fatal(err)
			}
			rows, err := readAll(t, s)
			if err != nil {
				t.Fatal(err)
			}
			got += len(rows)
		}
		if got != 200 {
			t.Errorf("consumer task %d read %d broadcast rows, want 200", consumerTask, got)
		}
	}
	if a.Registry.Entries("job") != 2 {
		t.Errorf("broadcast queues: %d entries, want 2 kept until cleanup", a.Registry.Entries("job"))
	}

	// After cleanup the job is unknown to the Flight service.
	svc := NewFlightService(a)
	if err := svc.RemoveJob("job"); err != nil {
		t.Fatal(err)
	}
	ticket, _ := proto.Marshal(&rpc.Ticket{Kind: &rpc.Ticket_FetchPipelinedPartition{FetchPipelinedPartition: &rpc.FetchPipelinedPartition{JobId: "job", StageId: 2}}})
	_, err = rawDoGet(t, consumer.Clients, a.FlightAddress, ticket)
	if st, _ := status.FromError(unwrapStatus(err)); st.Code() != codes.NotFound || !strings.Contains(st.Message(), "unknown job job") {
		t.Errorf("fetch after cleanup: %v", err)
	}
}

// executeCounter is a source that counts its Execute calls.
type executeCounter struct {
	*source
	calls atomic.Int32
}

func (c *executeCounter) Execute(ctx context.Context, p int, tc *physical.TaskContext) (physical.Stream, error) {
	c.calls.Add(1)
	return c.source.Execute(ctx, p, tc)
}

// TestPipelinedWriterLazyStart: with TaskEnv.LazyStart the writer
// registers its queues at once but executes its input only when a
// consumer takes one of them; the consumer then reads every row. A lazy
// producer nobody reads ends with the job's release, its queues finished
// with the error, or, when the client is its reader, after the client's
// idle timeout.
func TestPipelinedWriterLazyStart(t *testing.T) {
	checkGoroutines(t)
	reg := NewRegistry()
	env := &Env{ExecutorID: "a", Registry: reg}
	src := &executeCounter{source: rowsSource(2, 100, 10)}
	w := NewPipelinedWriter(src, "job", 1, hashPart(3), false, 2)
	tc, _ := checkedTC(t, &TaskEnv{Env: env, JobID: "job", StageID: 1, TaskID: 0, LazyStart: true})
	var g errgroup.Group
	g.Go(func() error {
		_, err := w.RunTask(context.Background(), []int{0, 1}, tc)
		return err
	})
	eventually(t, "the lazy producer's queues registered", func() bool { return reg.Entries("job") == 3 })
	time.Sleep(50 * time.Millisecond) // it would have started by now if it were eager
	if n := src.calls.Load(); n != 0 {
		t.Fatalf("the lazy producer executed its input %d times before any consumer took a queue", n)
	}
	producer := []*rpc.PipelinedProducer{{TaskId: 0, ExecutorId: "a"}}
	r := NewPipelinedReader("job", 1, testSchema, [][]*rpc.PipelinedProducer{producer, producer, producer})
	var all []string
	for p := range 3 {
		rtc, _ := checkedTC(t, env)
		s, err := r.Execute(context.Background(), p, rtc)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := readAll(t, s)
		if err != nil {
			t.Fatalf("partition %d: %v", p, err)
		}
		all = append(all, rows...)
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(all)
	if !slices.Equal(all, expectedRows(100)) || src.calls.Load() != 2 {
		t.Errorf("%d rows, input executed %d times; want 100 rows and each of the 2 input partitions once", len(all), src.calls.Load())
	}

	// Never read: the release ends it.
	idle := &executeCounter{source: rowsSource(1, 10, 10)}
	w2 := NewPipelinedWriter(idle, "job2", 1, hashPart(1), false, 2)
	tc2, _ := checkedTC(t, &TaskEnv{Env: env, JobID: "job2", StageID: 1, TaskID: 0, LazyStart: true})
	done := make(chan error, 1)
	go func() {
		_, err := w2.RunTask(context.Background(), []int{0}, tc2)
		done <- err
	}()
	eventually(t, "the second producer's queue registered", func() bool { return reg.Entries("job2") == 1 })
	reg.DropJob("job2")
	if err := <-done; !errors.Is(err, ErrJobReleased) || idle.calls.Load() != 0 {
		t.Errorf("unread lazy producer after the release: %v, input executed %d times", err, idle.calls.Load())
	}

	// The client's producer, never read, gives up after the idle timeout
	// and frees its vcores, as it does on a full queue.
	w3 := NewPipelinedWriter(idle, "job3", 1, hashPart(1), false, 2)
	tc3, _ := checkedTC(t, &TaskEnv{Env: env, JobID: "job3", StageID: 1, TaskID: 0, LazyStart: true, ClientIdleTimeout: 30 * time.Millisecond})
	if _, err := w3.RunTask(context.Background(), []int{0}, tc3); !errors.Is(err, ErrClientIdle) || idle.calls.Load() != 0 {
		t.Errorf("lazy client output never read: %v, input executed %d times; want ErrClientIdle", err, idle.calls.Load())
	}
	reg.DropJob("job3")
	reg.DropJob("job")
}

// eventually polls cond until it holds, for at most five seconds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// A client of this process (a session beside the embedded cluster, with no
// executor of its own) takes a peer executor's queues from its registry
// instead of reading them over Flight. When the peer leaves while the
// client waits on a queue, the read fails as unavailable, naming the
// executor, as a Flight read of its stopped service would; a read that
// ended before the peer left stays a success.
func TestPipelinedClientTakesPeerQueues(t *testing.T) {
	checkGoroutines(t)
	a, _ := newExecutorEnv(t, "a")
	peers := NewPeers()
	peers.Add(a)
	client := &Env{Clients: NewClientPool(nil), Peers: peers}
	defer client.Clients.Close()
	producer := [][]*rpc.PipelinedProducer{{{TaskId: 0, ExecutorId: "a", FlightAddress: a.FlightAddress}}}
	run := func(job string, src *source) (*errgroup.Group, context.CancelFunc, physical.Stream) {
		w := NewPipelinedWriter(src, job, 1, physical.Partitioning{Kind: physical.PartUnknown}, false, 2)
		tc, _ := checkedTC(t, &TaskEnv{Env: a, JobID: job, StageID: 1})
		ctx, cancel := context.WithCancel(context.Background())
		g := &errgroup.Group{}
		g.Go(func() error {
			_, err := w.RunTask(ctx, []int{0}, tc)
			return err
		})
		rtc, _ := checkedTC(t, client)
		s, err := NewPipelinedReader(job, 1, testSchema, producer).Execute(context.Background(), 0, rtc)
		if err != nil {
			t.Fatal(err)
		}
		return g, cancel, s
	}

	g, cancel, s := run("done", rowsSource(1, 100, 50))
	rows, err := readAll(t, s)
	if err != nil || len(rows) != 100 {
		t.Fatalf("read %d rows, %v; want 100", len(rows), err)
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	cancel()
	if served := a.Registry.Taken(); served != 1 || peers.Reads() != 1 {
		t.Errorf("%d queues taken from the registry, %d peer reads; want the client's one each", served, peers.Reads())
	}

	src := rowsSource(1, 100, 50)
	src.block = true // never ends by itself
	g, cancel, s = run("stalled", src)
	defer cancel()
	for n := 0; n < 100; { // everything before the stall arrives
		b, err := s.Next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		n += int(b.NumRows())
		b.Release()
	}
	peers.Remove(a)
	_, err = readAll(t, s)
	var fe *FetchError
	if !errors.As(err, &fe) || fe.ExecutorID != "a" || status.Code(err) != codes.Unavailable {
		t.Errorf("reader after the peer left: %v; want executor a unavailable", err)
	}
	cancel()
	if err := g.Wait(); !errors.Is(err, context.Canceled) {
		t.Errorf("task: %v", err)
	}
	a.Registry.DropJob("done")
	a.Registry.DropJob("stalled")
}
