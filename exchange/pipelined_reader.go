package exchange

import (
	"context"
	"errors"
	"fmt"
	"io"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"golang.org/x/sync/errgroup"
	"google.golang.org/protobuf/proto"

	"sluice/physical"
	"sluice/physical/mempool"
	"sluice/rpc"
)

// PipelinedReader is the leaf of a pipelined-mode stage reading a running
// stage's queues: partition p merges the queues of partition p of every
// producer task in Partitions[p].
//
// Execute opens one stream per producer at once and drains them all
// concurrently. There is deliberately no cap on streams in flight: each
// producer blocks on its bounded queue until it is read, and a producer
// that feeds several partitions cannot finish any of them while one is
// unread, so a capped reader would wait for streams it never opened.
// Producers on this executor are read from the Registry directly; others
// over Flight. There are no retries: a broken stream fails the read.
type PipelinedReader struct {
	JobID string
	// StageID is the producer stage.
	StageID    int
	schema     *arrow.Schema
	Partitions [][]*rpc.PipelinedProducer
}

// NewPipelinedReader returns a reader of stage stageID of job jobID whose
// partition i merges partition i of every producer in partitions[i].
func NewPipelinedReader(jobID string, stageID int, schema *arrow.Schema, partitions [][]*rpc.PipelinedProducer) *PipelinedReader {
	return &PipelinedReader{JobID: jobID, StageID: stageID, schema: schema, Partitions: partitions}
}

// Schema implements physical.Operator.
func (r *PipelinedReader) Schema() *arrow.Schema { return r.schema }

// Children implements physical.Operator.
func (r *PipelinedReader) Children() []physical.Operator { return nil }

// OutputPartitioning implements physical.Operator.
func (r *PipelinedReader) OutputPartitioning() physical.Partitioning {
	return physical.Partitioning{Kind: physical.PartUnknown, Count: len(r.Partitions)}
}

func (r *PipelinedReader) String() string {
	return fmt.Sprintf("PipelinedReader: job=%s stage=%d partitions=%d", r.JobID, r.StageID, len(r.Partitions))
}

// Execute implements physical.Operator.
func (r *PipelinedReader) Execute(ctx context.Context, partition int, tc *physical.TaskContext) (physical.Stream, error) {
	if partition < 0 || partition >= len(r.Partitions) {
		return nil, fmt.Errorf("pipelined reader of stage %d: partition %d out of range (%d partitions)", r.StageID, partition, len(r.Partitions))
	}
	env, err := envOf(tc)
	if err != nil {
		return nil, fmt.Errorf("pipelined reader of stage %d: %w", r.StageID, err)
	}
	producers := r.Partitions[partition]
	run := func(ctx context.Context, m *mergeStream) error {
		g, gctx := errgroup.WithContext(ctx)
		for _, p := range producers {
			g.Go(func() error {
				err := physical.RunSafe(func() error { return r.drain(gctx, env, tc, partition, p, m) })
				if err != nil && gctx.Err() == nil {
					err = fmt.Errorf("reading partition %d of stage %d from task %d on executor %s: %w",
						partition, r.StageID, p.TaskId, p.ExecutorId, err)
					if status.Code(err) == codes.Unavailable {
						// The producer's executor is unreachable: say which,
						// so the scheduler can check on it at once.
						return &FetchError{ExecutorID: p.ExecutorId, StageID: r.StageID, MapPartition: int(p.TaskId), Partition: partition, Err: err}
					}
				}
				return err
			})
		}
		return g.Wait()
	}
	return startMerge(ctx, r.schema, max(len(producers), 1), run), nil
}

// drain copies one producer's queue into m.
func (r *PipelinedReader) drain(ctx context.Context, env *Env, tc *physical.TaskContext, partition int, p *rpc.PipelinedProducer, m *mergeStream) error {
	if src, left := r.localProducer(env, p); src != nil {
		if left != nil {
			// A peer's queue: should the peer stop (killed, or
			// closing), the read ends as a Flight read of its stopped
			// service would, unavailable, so the client reports the
			// executor instead of waiting on a queue no one finishes.
			pctx, cancel := context.WithCancel(ctx)
			defer cancel()
			go func() {
				select {
				case <-left:
					cancel()
				case <-pctx.Done():
				}
			}()
			err := r.drainLocal(pctx, src, tc, partition, p, m)
			if err != nil && ctx.Err() == nil {
				select {
				case <-left:
					return status.Errorf(codes.Unavailable, "executor %s stopped: %v", p.ExecutorId, err)
				default:
				}
			}
			return err
		}
		return r.drainLocal(ctx, src, tc, partition, p, m)
	}
	if env.Clients == nil {
		return errors.New("no Flight client pool configured")
	}
	if te, ok := tc.Exchange.(*TaskEnv); ok && te.Multiplex {
		tc.Analyzer.CountQueueRead(r, false)
		return r.drainMux(ctx, te, tc, partition, p, m)
	}
	ticket, err := proto.Marshal(&rpc.Ticket{Kind: &rpc.Ticket_FetchPipelinedPartition{FetchPipelinedPartition: &rpc.FetchPipelinedPartition{
		JobId:      r.JobID,
		StageId:    int32(r.StageID),
		TaskId:     p.TaskId,
		Partition:  int32(partition),
		JobSecret:  jobSecretOf(tc),
		Capability: capabilityOf(tc, r.StageID, int(p.TaskId), partition),
	}}})
	if err != nil {
		return fmt.Errorf("encoding ticket: %w", err)
	}
	tc.Analyzer.CountQueueRead(r, false)
	return doGet(ctx, env.Clients, p.FlightAddress, ticket, tc.Alloc, m.send)
}

// drainLocal copies the queue of producer p, which src runs in this
// process, into m.
func (r *PipelinedReader) drainLocal(ctx context.Context, src *Env, tc *physical.TaskContext, partition int, p *rpc.PipelinedProducer, m *mergeStream) error {
	// A local read: the producer's queue is taken from the registry
	// and its batches handed over as they are, with no Flight stream
	// and no IPC encoding. The same capability as a remote ticket's
	// is checked (an executor checking no secrets, in tests of the
	// exchange alone, checks none), so a plan cannot read a queue it
	// was not wired to just because its producer runs here.
	k := QueueKey{JobID: r.JobID, StageID: r.StageID, TaskID: int(p.TaskId), Partition: partition}
	var q *QueueReader
	var err error
	if src.Secrets == nil {
		q, err = src.Registry.Take(ctx, k, src.producerWait())
	} else {
		q, err = src.Registry.TakeCapable(ctx, k, src.producerWait(), capabilityOf(tc, r.StageID, int(p.TaskId), partition))
	}
	if err != nil {
		return err
	}
	defer q.Close()
	tc.Analyzer.CountQueueRead(r, true)
	for {
		b, err := q.Next(ctx)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := m.send(ctx, b); err != nil {
			return err
		}
	}
}

// localProducer returns the executor in this process that runs p, whose
// queues a reader takes from its registry: for an executor's reader, the
// executor itself (another executor's queues are read over Flight); for a
// client's (a session in the embedded cluster's process), any of the
// peers, with a channel closed when that peer leaves. Nil: read over
// Flight.
func (r *PipelinedReader) localProducer(env *Env, p *rpc.PipelinedProducer) (*Env, <-chan struct{}) {
	if env.ExecutorID != "" {
		if env.Registry != nil && p.ExecutorId == env.ExecutorID {
			return env, nil
		}
		return nil, nil
	}
	if src, left := env.Peers.lookupPeer(p.FlightAddress, p.ExecutorId); src != nil && src.Registry != nil {
		env.Peers.reads.Add(1)
		return src, left
	}
	return nil, nil
}

// drainMux copies one producer's queue into m over the task's
// multiplexed stream to that producer.
func (r *PipelinedReader) drainMux(ctx context.Context, te *TaskEnv, tc *physical.TaskContext, partition int, p *rpc.PipelinedProducer, m *mergeStream) error {
	mem := tc.Memory
	if mem == nil {
		mem = mempool.NewPool("exchange reader", 0, nil)
	}
	ch, started, err := te.mux.open(ctx, muxOpen{
		pool: te.Clients, addr: p.FlightAddress, job: r.JobID, secret: te.JobSecret,
		stage: r.StageID, task: int(p.TaskId), partition: partition,
		capability: capabilityOf(tc, r.StageID, int(p.TaskId), partition),
		credit:     te.muxCredit(), mem: mem,
	})
	if err != nil {
		return err
	}
	defer ch.close()
	if started {
		tc.Analyzer.CountMuxStream(r)
	}
	rdr, err := flight.NewRecordReader(ch.reader(ctx), ipc.WithAllocator(tc.Alloc))
	if err != nil {
		return err
	}
	defer rdr.Release()
	for rdr.Next() {
		b := rdr.RecordBatch()
		b.Retain()
		if err := m.send(ctx, b); err != nil {
			return err
		}
	}
	if err := rdr.Err(); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}

var _ physical.Operator = (*PipelinedReader)(nil)
