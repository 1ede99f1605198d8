package exchange

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"sluice/physical"
	"sluice/rpc"
)

func pipelinedTicket(t *testing.T, f *rpc.FetchPipelinedPartition) []byte {
	t.Helper()
	b, err := proto.Marshal(&rpc.Ticket{Kind: &rpc.Ticket_FetchPipelinedPartition{FetchPipelinedPartition: f}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestFlightServiceWantsTheCapability: a pipelined queue is served only to
// a ticket carrying, besides the job's secret, the capability its
// producer task's key gives that very partition. Every other ticket is
// refused with PermissionDenied while the producer is still blocked on the
// full queue, and the queue is left as it was: its wired consumer then
// reads every row, through the reader with the capabilities a task is
// given.
func TestFlightServiceWantsTheCapability(t *testing.T) {
	checkGoroutines(t)
	a, _ := newExecutorEnv(t, "a")
	bindJobSecret(t, a)
	wiring := rpc.NewWiringKey()
	key := rpc.PipelinedTaskKey(wiring, "job", 1, 0)
	capOf := func(stage, task, partition int32) []byte {
		return rpc.PipelinedCapability(rpc.PipelinedTaskKey(wiring, "job", stage, task), partition)
	}

	// Two pass-through partitions of 100 rows in batches of 10, through
	// queues of one batch: the producer stalls until they are read.
	w := NewPipelinedWriter(rowsSource(2, 200, 10), "job", 1, physical.Partitioning{Kind: physical.PartUnknown}, false, 1)
	tc, _ := checkedTC(t, &TaskEnv{Env: a, JobID: "job", StageID: 1, TaskID: 0, JobSecret: "secret", OutputKey: key})
	var g errgroup.Group
	g.Go(func() error {
		_, err := w.RunTask(context.Background(), []int{0, 1}, tc)
		return err
	})

	pool := NewClientPool(nil)
	defer pool.Close()
	take := func(partition int32, capability []byte) (int, error) {
		return rawDoGet(t, pool, a.FlightAddress, pipelinedTicket(t, &rpc.FetchPipelinedPartition{
			JobId: "job", StageId: 1, TaskId: 0, Partition: partition, JobSecret: "secret", Capability: capability}))
	}
	for name, c := range map[string][]byte{
		"the job's secret only":        nil,
		"an empty capability":          {},
		"partition 1's capability":     capOf(1, 0, 1),
		"another task's capability":    capOf(1, 1, 0),
		"another stage's capability":   capOf(2, 0, 0),
		"the job's secret as one":      []byte("secret"),
		"the producer's key":           key,
		"a capability of another key":  rpc.PipelinedCapability(rpc.PipelinedTaskKey(rpc.NewWiringKey(), "job", 1, 0), 0),
		"a truncated capability":       capOf(1, 0, 0)[:31],
		"a capability with a byte off": append(capOf(1, 0, 0)[:31:31], capOf(1, 0, 0)[31]^1),
	} {
		rows, err := take(0, c)
		st, _ := status.FromError(unwrapStatus(err))
		if st.Code() != codes.PermissionDenied || !strings.Contains(st.Message(), "wired consumer") {
			t.Errorf("%s: %d rows, %v; want PermissionDenied naming the wired consumer", name, rows, err)
		}
	}
	// Without the job's secret the capability is not enough either.
	_, err := rawDoGet(t, pool, a.FlightAddress, pipelinedTicket(t, &rpc.FetchPipelinedPartition{
		JobId: "job", StageId: 1, TaskId: 0, Partition: 0, Capability: capOf(1, 0, 0)}))
	if st, _ := status.FromError(unwrapStatus(err)); st.Code() != codes.PermissionDenied {
		t.Errorf("the capability without the job's secret: %v, want PermissionDenied", err)
	}

	// The wired consumer of partition 0 gets all of it.
	if rows, err := take(0, capOf(1, 0, 0)); err != nil || rows != 100 {
		t.Errorf("partition 0 with its capability: %d rows, %v; want 100", rows, err)
	}
	// A reader holding only partition 0's capability cannot take
	// partition 1; the one wired to partition 1 reads it all.
	producer := []*rpc.PipelinedProducer{{TaskId: 0, ExecutorId: "a", FlightAddress: a.FlightAddress}}
	r := NewPipelinedReader("job", 1, testSchema, [][]*rpc.PipelinedProducer{producer, producer})
	consumer := &Env{ExecutorID: "b", Clients: pool}
	for _, c := range []struct {
		caps []*rpc.PartitionCapability
		want int
	}{
		{[]*rpc.PartitionCapability{{StageId: 1, TaskId: 0, Partition: 0, Capability: capOf(1, 0, 0)}}, -1},
		{[]*rpc.PartitionCapability{{StageId: 1, TaskId: 0, Partition: 1, Capability: capOf(1, 0, 1)}}, 100},
	} {
		rtc, _ := checkedTC(t, &TaskEnv{Env: consumer, JobID: "job", StageID: 2, JobSecret: "secret", Capabilities: CapabilitiesOf(c.caps)})
		s, err := r.Execute(context.Background(), 1, rtc)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := readAll(t, s)
		if c.want < 0 {
			if status.Code(unwrapStatus(err)) != codes.PermissionDenied {
				t.Errorf("reading partition 1 with partition 0's capability: %d rows, %v; want PermissionDenied", len(rows), err)
			}
		} else if err != nil || len(rows) != c.want {
			t.Errorf("reading partition 1 with its capability: %d rows, %v; want %d", len(rows), err, c.want)
		}
	}
	if err := g.Wait(); err != nil {
		t.Errorf("producer: %v", err)
	}
	// A queue read to its end is gone: its capability takes nothing more.
	a.ProducerWait = 50 * time.Millisecond
	if rows, err := take(0, capOf(1, 0, 0)); err == nil {
		t.Errorf("partition 0 taken twice: %d rows", rows)
	}
	a.Registry.DropJob("job")
}

// TestFlightServiceBroadcastCapability: a retained (broadcast) queue is
// replayed to every consumer holding its capability, and refused to any
// other ticket.
func TestFlightServiceBroadcastCapability(t *testing.T) {
	checkGoroutines(t)
	a, _ := newExecutorEnv(t, "a")
	bindJobSecret(t, a)
	wiring := rpc.NewWiringKey()
	key := rpc.PipelinedTaskKey(wiring, "job", 1, 0)
	w := NewPipelinedWriter(rowsSource(1, 50, 10), "job", 1, physical.Partitioning{Kind: physical.PartUnknown}, true, 1)
	tc, _ := checkedTC(t, &TaskEnv{Env: a, JobID: "job", StageID: 1, TaskID: 0, JobSecret: "secret", OutputKey: key})
	if _, err := w.RunTask(context.Background(), []int{0}, tc); err != nil {
		t.Fatal(err)
	}
	pool := NewClientPool(nil)
	defer pool.Close()
	take := func(capability []byte) (int, error) {
		return rawDoGet(t, pool, a.FlightAddress, pipelinedTicket(t, &rpc.FetchPipelinedPartition{
			JobId: "job", StageId: 1, TaskId: 0, Partition: 0, JobSecret: "secret", Capability: capability}))
	}
	good := rpc.PipelinedCapability(key, 0)
	for i := 0; i < 2; i++ {
		if rows, err := take(good); err != nil || rows != 50 {
			t.Errorf("consumer %d: %d rows, %v; want 50", i, rows, err)
		}
		if _, err := take(rpc.PipelinedCapability(key, 1)); status.Code(unwrapStatus(err)) != codes.PermissionDenied {
			t.Errorf("a wrong capability: %v, want PermissionDenied", err)
		}
	}
	a.Registry.DropJob("job")
}

// TestRegistryTakeCapable: a queue registered without a key is taken by
// no remote reader, and a refused take leaves the queue to its consumer.
func TestRegistryTakeCapable(t *testing.T) {
	r := NewRegistry()
	defer r.DropJob("j")
	if err := r.Register("j", 1, 0, testSchema, []int{0}, 1, false, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := r.TakeCapable(context.Background(), qkey("j", 0), time.Second, []byte("anything")); err == nil || !strings.Contains(err.Error(), "without a key") {
		t.Errorf("keyless queue: %v, want a refusal", err)
	}
	q, err := r.Take(context.Background(), qkey("j", 0), time.Second)
	if err != nil {
		t.Fatalf("the local consumer after a refused take: %v", err)
	}
	q.Close()
}

// TestLocalReadWantsTheCapability: a consumer on the producer's own
// executor takes the queue from the registry, without Flight (its Env has
// no client pool), and it too needs the partition's capability: a reader
// wired to another partition is refused and leaves the queue intact for
// the wired one, which reads every row. The batches it is handed are the
// producer's own: the registry's count of queued bytes falls to zero as
// they are taken, and every buffer is released once read (the checked
// allocators) and the producer task's memory pool, charged for them while
// they were queued, holds nothing.
func TestLocalReadWantsTheCapability(t *testing.T) {
	checkGoroutines(t)
	reg := NewRegistry()
	a := &Env{ExecutorID: "a", Registry: reg, Secrets: NewJobSecrets(), ProducerWait: time.Second}
	if err := a.Secrets.Bind("job", "secret"); err != nil {
		t.Fatal(err)
	}
	wiring := rpc.NewWiringKey()
	key := rpc.PipelinedTaskKey(wiring, "job", 1, 0)
	capOf := func(partition int32) *rpc.PartitionCapability {
		return &rpc.PartitionCapability{StageId: 1, TaskId: 0, Partition: partition, Capability: rpc.PipelinedCapability(key, partition)}
	}
	w := NewPipelinedWriter(rowsSource(2, 200, 10), "job", 1, physical.Partitioning{Kind: physical.PartUnknown}, false, 1)
	tc, _ := checkedTC(t, &TaskEnv{Env: a, JobID: "job", StageID: 1, TaskID: 0, JobSecret: "secret", OutputKey: key})
	var g errgroup.Group
	g.Go(func() error {
		_, err := w.RunTask(context.Background(), []int{0, 1}, tc)
		return err
	})

	producer := []*rpc.PipelinedProducer{{TaskId: 0, ExecutorId: "a", FlightAddress: "unused:0"}}
	r := NewPipelinedReader("job", 1, testSchema, [][]*rpc.PipelinedProducer{producer, producer})
	read := func(partition int, caps ...*rpc.PartitionCapability) ([]string, error) {
		rtc, _ := checkedTC(t, &TaskEnv{Env: a, JobID: "job", StageID: 2, JobSecret: "secret", Capabilities: CapabilitiesOf(caps)})
		s, err := r.Execute(context.Background(), partition, rtc)
		if err != nil {
			t.Fatal(err)
		}
		return readAll(t, s)
	}
	if rows, err := read(0, capOf(1)); !errors.Is(err, ErrNoCapability) {
		t.Errorf("partition 0 with partition 1's capability: %d rows, %v; want ErrNoCapability", len(rows), err)
	}
	if rows, err := read(0); !errors.Is(err, ErrNoCapability) {
		t.Errorf("partition 0 without a capability: %d rows, %v; want ErrNoCapability", len(rows), err)
	}
	var all []string
	for p := range 2 {
		rows, err := read(p, capOf(int32(p)))
		if err != nil || len(rows) != 100 {
			t.Errorf("partition %d with its capability: %d rows, %v; want 100", p, len(rows), err)
		}
		all = append(all, rows...)
	}
	if err := g.Wait(); err != nil {
		t.Errorf("producer: %v", err)
	}
	slices.Sort(all)
	if !slices.Equal(all, expectedRows(200)) {
		t.Errorf("rows read locally differ from the rows produced")
	}
	if n, q := reg.QueuedBytes("job"), reg.Entries("job"); n != 0 || q != 0 {
		t.Errorf("after the reads: %d bytes in %d queues still accounted to the job", n, q)
	}
	if n := tc.Memory.Used(); n != 0 || tc.Memory.Peak() == 0 {
		t.Errorf("the producer's pool holds %d bytes after the reads (peak %d); the queues charge it until the batches are taken", n, tc.Memory.Peak())
	}
	if reg.PeakQueuedBytes("job") == 0 {
		t.Errorf("no bytes were ever accounted to the job's queues")
	}
	reg.DropJob("job")
}
