package exchange

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"golang.org/x/sync/errgroup"

	"sluice/physical"
	"sluice/rpc"
)

// PipelinedWriter is the root of a pipelined-mode stage: it drives its
// task's input partitions concurrently and routes their batches into the
// task's bounded queues in the executor's Registry, one per output
// partition, from which consumers stream them over Flight.
//
// PartHash splits rows by physical.HashRows(Keys) scaled to Count and coalesces each
// output partition's rows back up to the batch size before queueing them;
// every task produces all Count output partitions. PartUnknown passes
// through: input partition i becomes output partition i, so a task owns
// (and registers) only the output partitions of its input partitions;
// small batches are merged on the way (coalescer), the first one excepted.
//
// Every output partition ends with an end-of-stream marker once all input
// partitions are done, or with the task's error (cancellation included),
// so consumers never mistake a failed producer for a short one. RunTask
// returns once everything has been queued: for a non-broadcast output that
// is when consumers have read all but the last few batches.
type PipelinedWriter struct {
	input physical.Operator
	// JobID and StageID name the stage; the task id comes from TaskEnv.
	JobID   string
	StageID int
	// Part is how output partitions are formed (PartHash or PartUnknown).
	Part physical.Partitioning
	// Broadcast keeps the output for every consumer task to replay.
	Broadcast bool
	// QueueBatches is each queue's capacity in batches.
	QueueBatches int
}

// NewPipelinedWriter returns a PipelinedWriter of input for stage stageID
// of job jobID.
func NewPipelinedWriter(input physical.Operator, jobID string, stageID int, p physical.Partitioning, broadcast bool, queueBatches int) *PipelinedWriter {
	return &PipelinedWriter{input: input, JobID: jobID, StageID: stageID, Part: p, Broadcast: broadcast, QueueBatches: queueBatches}
}

// Input is the stage body the writer drives.
func (w *PipelinedWriter) Input() physical.Operator { return w.input }

// Schema implements physical.Operator.
func (w *PipelinedWriter) Schema() *arrow.Schema { return w.input.Schema() }

// Children implements physical.Operator.
func (w *PipelinedWriter) Children() []physical.Operator { return []physical.Operator{w.input} }

// OutputPartitioning is the partitioning of the queues the writer fills.
func (w *PipelinedWriter) OutputPartitioning() physical.Partitioning {
	if w.Part.Kind == physical.PartHash {
		return w.Part
	}
	return physical.Partitioning{Kind: physical.PartUnknown, Count: w.input.OutputPartitioning().Count}
}

func (w *PipelinedWriter) String() string {
	s := fmt.Sprintf("PipelinedWriter: job=%s stage=%d output=%s queue=%d", w.JobID, w.StageID, w.OutputPartitioning(), w.QueueBatches)
	if w.Broadcast {
		s += " broadcast"
	}
	return s
}

// Execute implements physical.Operator. A stage writer fills queues, not a
// stream: executors call RunTask.
func (w *PipelinedWriter) Execute(context.Context, int, *physical.TaskContext) (physical.Stream, error) {
	return nil, fmt.Errorf("internal: pipelined writer of stage %d is a stage root; run it with RunTask", w.StageID)
}

// RunTask implements StageWriter. It returns no locations: consumers find
// the queues by (job, stage, task, partition).
func (w *PipelinedWriter) RunTask(ctx context.Context, partitions []int, tc *physical.TaskContext) ([]*rpc.PartitionLocation, error) {
	switch w.Part.Kind {
	case physical.PartHash:
		if w.Part.Count < 1 || len(w.Part.Keys) == 0 {
			return nil, fmt.Errorf("pipelined writer: hash partitioning needs keys and at least one partition, got %s", w.Part)
		}
	case physical.PartUnknown:
	default:
		return nil, fmt.Errorf("pipelined writer: unsupported output partitioning %s", w.Part)
	}
	te, err := taskEnvOf(tc)
	if err != nil {
		return nil, err
	}
	if te.Registry == nil {
		return nil, errors.New("pipelined writer: the executor has no pipelined registry")
	}
	in := w.input.OutputPartitioning().Count
	for _, p := range partitions {
		if p < 0 || p >= in {
			return nil, fmt.Errorf("pipelined writer: stage %d has no partition %d (it has %d)", w.StageID, p, in)
		}
	}
	owned := partitions
	if w.Part.Kind == physical.PartHash {
		owned = make([]int, w.Part.Count)
		for i := range owned {
			owned[i] = i
		}
	}
	reg := te.Registry
	if err := reg.RegisterCharged(w.JobID, w.StageID, te.TaskID, w.input.Schema(), owned, w.QueueBatches, w.Broadcast, te.OutputKey, tc.Memory); err != nil {
		return nil, fmt.Errorf("pipelined writer stage %d task %d: %w", w.StageID, te.TaskID, err)
	}
	key := func(p int) QueueKey {
		return QueueKey{JobID: w.JobID, StageID: w.StageID, TaskID: te.TaskID, Partition: p}
	}
	push := func(ctx context.Context, d int, b arrow.RecordBatch) error {
		return reg.PushIdle(ctx, key(d), b, te.ClientIdleTimeout)
	}
	if te.LazyStart {
		// A lazy producer runs nothing until its output is wanted: its
		// queues exist, so a consumer finds them, but its scans and
		// operators start only once one is taken.
		if err := reg.AwaitDemand(ctx, w.JobID, w.StageID, te.TaskID, te.ClientIdleTimeout); err != nil {
			if ctx.Err() != nil {
				err = producerCancelled(ctx)
			}
			for _, p := range owned {
				reg.Finish(key(p), err)
			}
			return nil, fmt.Errorf("pipelined writer stage %d task %d: %w", w.StageID, te.TaskID, err)
		}
	}

	g, gctx := errgroup.WithContext(ctx)
	for _, p := range partitions {
		g.Go(physical.Safe(func() error {
			err := w.drive(gctx, p, tc, push)
			if err == nil && w.Part.Kind != physical.PartHash {
				// Without hash partitioning partition p writes only its
				// own queue: end it now, not when the task's other
				// partitions end. A consumer that merges partitions
				// (SortPreservingMerge) waits for this one's end while
				// it leaves a longer partition's full queue unread.
				reg.Finish(key(p), nil)
			}
			return err
		}))
	}
	err = g.Wait()
	if err != nil && ctx.Err() != nil {
		err = producerCancelled(ctx)
	}
	for _, p := range owned {
		reg.Finish(key(p), err)
	}
	if err != nil {
		return nil, fmt.Errorf("pipelined writer stage %d task %d: %w", w.StageID, te.TaskID, err)
	}
	return nil, nil
}

// drive routes input partition in's batches to the queues.
func (w *PipelinedWriter) drive(ctx context.Context, in int, tc *physical.TaskContext, push emitFunc) error {
	s, err := physical.ExecuteOp(ctx, w.input, in, tc)
	if err != nil {
		return fmt.Errorf("partition %d: %w", in, err)
	}
	defer s.Close()
	var split *splitter
	var co *coalescer
	if w.Part.Kind == physical.PartHash {
		split = newSplitter(w.Part, w.input.Schema(), tc)
		defer split.release()
	} else {
		co = newCoalescer(w.input.Schema(), tc)
		defer co.release()
	}
	for {
		b, err := s.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("partition %d: %w", in, err)
		}
		switch {
		case split != nil:
			err = split.add(ctx, b, push)
		case b.NumRows() == 0:
			b.Release()
		default:
			err = co.add(ctx, in, b, push)
		}
		if err != nil {
			return fmt.Errorf("partition %d: %w", in, err)
		}
	}
	if split != nil {
		err = split.flushAll(ctx, push)
	} else {
		err = co.flush(ctx, in, push)
	}
	if err != nil {
		return fmt.Errorf("partition %d: %w", in, err)
	}
	return nil
}

var _ StageWriter = (*PipelinedWriter)(nil)

// ErrProducerCancelled ends the queues of a producer task that was
// cancelled, not failed: its executor is stopping, or the scheduler ended
// its job. A consumer on another executor is told so with codes.Unavailable,
// as it would be if the executor were gone already, so that the scheduler
// blames (and probes) that executor instead of failing the query with the
// cancellation as its cause; a job that had ended ignores the report.
var ErrProducerCancelled = errors.New("task cancelled")

// producerCancelled is the error a cancelled producer's queues end with:
// ErrProducerCancelled and the cancellation's cause.
func producerCancelled(ctx context.Context) error {
	return fmt.Errorf("%w: %w", ErrProducerCancelled, context.Cause(ctx))
}
