package physical

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"golang.org/x/sync/errgroup"
)

// CoalescePartitions merges all input partitions into one output partition.
// Every input partition is driven by its own goroutine into one bounded
// channel, so inputs run in parallel and a slow consumer applies
// backpressure. The first error cancels the others and is returned by Next.
type CoalescePartitions struct {
	input Operator
}

// NewCoalescePartitions returns a CoalescePartitions of input.
func NewCoalescePartitions(input Operator) *CoalescePartitions {
	return &CoalescePartitions{input: input}
}

// Schema implements Operator.
func (c *CoalescePartitions) Schema() *arrow.Schema { return c.input.Schema() }

// Children implements Operator.
func (c *CoalescePartitions) Children() []Operator { return []Operator{c.input} }

// OutputPartitioning implements Operator.
func (c *CoalescePartitions) OutputPartitioning() Partitioning { return SinglePartition }

func (c *CoalescePartitions) String() string { return "CoalescePartitions" }

// Execute implements Operator.
func (c *CoalescePartitions) Execute(ctx context.Context, partition int, tc *TaskContext) (Stream, error) {
	if partition != 0 {
		return nil, fmt.Errorf("coalesce partitions: partition %d out of range", partition)
	}
	n := c.input.OutputPartitioning().Count
	if n == 1 {
		// Nothing to merge: no goroutine needed.
		return ExecuteOp(ctx, c.input, 0, tc)
	}
	return mergePartitions(ctx, c.input, allPartitions(c.input), tc), nil
}

// mergePartitions returns a stream of the batches of input's partitions
// parts, each driven by its own goroutine into one bounded channel.
func mergePartitions(ctx context.Context, input Operator, parts []int, tc *TaskContext) Stream {
	out := make(chan arrow.RecordBatch, max(len(parts), 2))
	g := startGroup(ctx)
	for _, p := range parts {
		g.goStream(input, p, tc, func(gctx context.Context, b arrow.RecordBatch) error {
			select {
			case out <- b:
				return nil
			case <-gctx.Done():
				b.Release()
				return gctx.Err()
			}
		}, nil)
	}
	g.finish()
	return &coalesceStream{g: g, out: out}
}

type coalesceStream struct {
	g   *taskGroup
	out chan arrow.RecordBatch
}

func (s *coalesceStream) Next(ctx context.Context) (arrow.RecordBatch, error) {
	select {
	case b := <-s.out:
		return b, nil
	case <-s.g.done:
		// Every producer has returned; whatever they sent is buffered.
		if s.g.err != nil {
			return nil, s.g.err
		}
		select {
		case b := <-s.out:
			return b, nil
		default:
			return nil, io.EOF
		}
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (s *coalesceStream) Close() {
	s.g.stop()
	drain(s.out)
}

// drain releases every batch buffered in ch (its senders have stopped; ch
// may be closed).
func drain(ch chan arrow.RecordBatch) {
	for {
		select {
		case b, ok := <-ch:
			if !ok {
				return
			}
			b.Release()
		default:
			return
		}
	}
}

// taskGroup owns the goroutines an operator starts to drive input streams:
// the first error cancels the rest, err is set before done closes, and stop
// cancels and waits for all of them.
type taskGroup struct {
	cancel context.CancelFunc
	eg     *errgroup.Group
	gctx   context.Context
	done   chan struct{}
	err    error
}

func startGroup(ctx context.Context) *taskGroup {
	cctx, cancel := context.WithCancel(ctx)
	eg, gctx := errgroup.WithContext(cctx)
	return &taskGroup{cancel: cancel, eg: eg, gctx: gctx, done: make(chan struct{})}
}

// goStream executes input partition p on a new goroutine and hands each
// batch to emit (which owns it); the stream is closed when the goroutine
// ends. Executing inside the goroutine lets Execute errors flow like any
// other error.
// exit, if not nil, is called with the goroutine's result as it ends.
func (g *taskGroup) goStream(input Operator, p int, tc *TaskContext, emit func(context.Context, arrow.RecordBatch) error, exit func(error)) {
	// Execute here rather than in the goroutine: every partition's stream
	// then exists before any is drained, so state the streams share (a
	// join's build side) cannot be dropped by a fast partition and rebuilt
	// for a slow one.
	s, execErr := ExecuteOp(g.gctx, input, p, tc)
	g.eg.Go(func() (err error) {
		if exit != nil {
			defer func() { exit(err) }()
		}
		defer CatchPanic(&err)
		if execErr != nil {
			return fmt.Errorf("input partition %d: %w", p, execErr)
		}
		defer s.Close()
		for {
			b, err := s.Next(g.gctx)
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("input partition %d: %w", p, err)
			}
			if err := emit(g.gctx, b); err != nil {
				return err
			}
		}
	})
}

// finish starts the goroutine that records the group's outcome; call it
// after the last goStream.
func (g *taskGroup) finish() {
	go func() {
		err := g.eg.Wait()
		g.err = err
		close(g.done)
	}()
}

// stop cancels the goroutines and waits for them to return.
func (g *taskGroup) stop() {
	g.cancel()
	<-g.done
}
