package physical

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"sluice/physical/kernels"

	"github.com/apache/arrow-go/v18/arrow"
)

// SharedOutput computes its input once for several consumers: a query
// that uses the same aggregate twice (TPC-H q15's view, in its FROM clause
// and in a scalar subquery) plans one SharedOutput and hands it to both.
// Each output partition keeps the batches its input produced, and every
// stream of it replays them from the start. The first stream opened starts
// a goroutine that drives the input partition to its end under a context
// of its own, so that a consumer stopping early (a LIMIT) or failing does
// not cut the others short; it is cancelled when the partition is
// released. A partition's batches are released once no stream of it is
// open and either Refs streams were opened or the last one's consumer was
// cancelled (the query was); a stream opened after that (a consumer that
// executes a partition again, or one that came after a LIMIT stopped the
// first) computes the input again.
//
// Only the in-process planner makes them (planner.Config.ShareSubplans);
// the cluster planner shares such a computation as one stage read by
// several others.
type SharedOutput struct {
	input Operator
	// Refs is how many streams of each partition the plan will open.
	Refs  int
	parts []*sharedPart
}

type sharedPart struct {
	mu      sync.Mutex
	batches []arrow.RecordBatch
	more    chan struct{} // closed when a batch is added or the input ends
	started bool
	done    bool  // the input ended (err says how)
	err     error // the input's error, returned to every stream
	cancel  context.CancelFunc
	stopped chan struct{} // closed when the producer has returned
	opened  int           // streams opened
	closed  int           // streams closed
	gone    bool          // batches released: later streams recompute
}

// NewSharedOutput returns a SharedOutput of input for refs consumers.
func NewSharedOutput(input Operator, refs int) *SharedOutput {
	n := input.OutputPartitioning().Count
	parts := make([]*sharedPart, n)
	for i := range parts {
		parts[i] = &sharedPart{more: make(chan struct{})}
	}
	return &SharedOutput{input: input, Refs: refs, parts: parts}
}

// Schema implements Operator.
func (s *SharedOutput) Schema() *arrow.Schema { return s.input.Schema() }

// Children implements Operator.
func (s *SharedOutput) Children() []Operator { return []Operator{s.input} }

// OutputPartitioning implements Operator.
func (s *SharedOutput) OutputPartitioning() Partitioning { return s.input.OutputPartitioning() }

func (s *SharedOutput) String() string { return fmt.Sprintf("SharedOutput: consumers=%d", s.Refs) }

// Execute implements Operator.
func (s *SharedOutput) Execute(ctx context.Context, partition int, tc *TaskContext) (Stream, error) {
	if partition < 0 || partition >= len(s.parts) {
		return nil, fmt.Errorf("shared output: partition %d out of range", partition)
	}
	p := s.parts[partition]
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.gone {
		return ExecuteOp(ctx, s.input, partition, tc)
	}
	p.opened++
	if !p.started {
		// Start the input when its first consumer executes it, as that
		// consumer would have. The producer outlives this consumer's
		// context: the other consumers need the whole input.
		pctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		p.started, p.cancel, p.stopped = true, cancel, make(chan struct{})
		go p.produce(pctx, s.input, partition, tc)
	}
	return &sharedStream{op: s, part: partition, p: p, ctx: ctx}, nil
}

// produce drives input partition part into p until it ends or ctx is
// cancelled.
func (p *sharedPart) produce(ctx context.Context, input Operator, part int, tc *TaskContext) {
	defer close(p.stopped)
	finished := false
	finish := func(err error) {
		finished = true
		p.mu.Lock()
		p.done, p.err = true, err
		if err != nil {
			// Every stream gets the error from here on; the rows before
			// it are no use to anyone.
			kernels.ReleaseAll(p.batches)
			p.batches = nil
		}
		close(p.more)
		p.mu.Unlock()
	}
	defer func() {
		// The consumers wait on p.more: a panic must end the input for
		// them with its error, as any other failure does.
		if r := recover(); r != nil && !finished {
			finish(Recovered(r))
		}
	}()
	src, err := ExecuteOp(ctx, input, part, tc)
	if err != nil {
		finish(err)
		return
	}
	defer src.Close()
	for {
		b, err := src.Next(ctx)
		if errors.Is(err, io.EOF) {
			finish(nil)
			return
		}
		if err != nil {
			finish(err)
			return
		}
		p.mu.Lock()
		p.batches = append(p.batches, b)
		close(p.more)
		p.more = make(chan struct{})
		p.mu.Unlock()
	}
}

type sharedStream struct {
	op     *SharedOutput
	part   int
	p      *sharedPart
	ctx    context.Context // the consumer's, from Execute
	next   int             // index of the next batch to hand out
	closed bool
}

func (s *sharedStream) Next(ctx context.Context) (arrow.RecordBatch, error) {
	p := s.p
	p.mu.Lock()
	defer p.mu.Unlock()
	for {
		if s.closed {
			return nil, io.EOF
		}
		if s.next < len(p.batches) {
			b := p.batches[s.next]
			s.next++
			b.Retain()
			return b, nil
		}
		if p.done {
			if p.err != nil {
				return nil, p.err
			}
			return nil, io.EOF
		}
		more := p.more
		p.mu.Unlock()
		select {
		case <-more:
		case <-ctx.Done():
			p.mu.Lock()
			return nil, ctx.Err()
		}
		p.mu.Lock()
	}
}

// Close implements Stream. When no stream of the partition is left open
// and either the planned number were opened or this one's consumer was
// cancelled (the query was, or a LIMIT stopped it: a later consumer
// computes the input again), it stops the producer, waits for it and
// releases the partition's batches.
func (s *sharedStream) Close() {
	p := s.p
	p.mu.Lock()
	if s.closed {
		p.mu.Unlock()
		return
	}
	s.closed = true
	p.closed++
	if p.closed < p.opened || (p.opened < s.op.Refs && s.ctx.Err() == nil) {
		p.mu.Unlock()
		return
	}
	p.gone = true
	cancel, stopped := p.cancel, p.stopped
	p.mu.Unlock()
	if cancel != nil {
		cancel()
		<-stopped
	}
	p.mu.Lock()
	kernels.ReleaseAll(p.batches)
	p.batches = nil
	p.mu.Unlock()
}
