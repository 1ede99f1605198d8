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

// Repartition redistributes its input's rows over p.Count output partitions,
// by hash of p.Keys (PartHash: a row goes to PartitionOf(HashRows(keys),
// Count)) or
// round-robin (PartRoundRobin: whole batches are dealt out in turn).
//
// # Design: one shared exchange per task
//
// Execute is called once per output partition, possibly concurrently, but
// the input must be read only once for all of them. The first Execute for a
// given TaskContext therefore creates an exchange: one goroutine per input
// partition (owned by an errgroup) reads its stream, splits each batch by
// destination, buffers small pieces until they reach tc.BatchSize rows, and
// sends them on the destination's bounded channel. Later Execute calls with
// the same TaskContext attach to that exchange. The exchange lives in a map
// keyed by *TaskContext inside the operator, guarded by a mutex: that is
// execution state, but keyed per task, so the operator itself stays
// reusable by other tasks; it is not part of the plan's data (unexported,
// never serialized). The entry is deleted when every output stream has been
// closed, and the last Close cancels and waits for the goroutines.
//
// Consequences callers must respect:
//   - The exchange's goroutines run under the context of the first Execute
//     call; cancelling it stops them all (and every output stream then
//     reports the error).
//   - Channels are bounded, so a full output partition blocks the producers
//     (backpressure) until its consumer reads: all output partitions must be
//     consumed concurrently, and every one must eventually be executed and
//     closed. A consumer that closes early is dropped: rows for it are
//     discarded.
//   - An error in any input partition is returned by every output stream.
type Repartition struct {
	input Operator
	part  Partitioning

	mu        sync.Mutex
	exchanges map[*TaskContext]*exchange
}

// NewRepartition returns a Repartition of input into p (PartHash or
// PartRoundRobin).
func NewRepartition(input Operator, p Partitioning) *Repartition {
	return &Repartition{input: input, part: p}
}

// Schema implements Operator.
func (r *Repartition) Schema() *arrow.Schema { return r.input.Schema() }

// Children implements Operator.
func (r *Repartition) Children() []Operator { return []Operator{r.input} }

// OutputPartitioning implements Operator.
func (r *Repartition) OutputPartitioning() Partitioning { return r.part }

func (r *Repartition) String() string { return "Repartition: " + r.part.String() }

// exchangeBuffer is each output channel's capacity in batches.
const exchangeBuffer = 2

type exchange struct {
	outs   []*exchangeOut
	g      *taskGroup
	closed int // output streams closed; guarded by Repartition.mu
}

type exchangeOut struct {
	ch     chan arrow.RecordBatch
	gone   chan struct{} // closed when the consumer closes
	opened bool          // guarded by Repartition.mu
	closed bool          // guarded by Repartition.mu
}

// Execute implements Operator.
func (r *Repartition) Execute(ctx context.Context, partition int, tc *TaskContext) (Stream, error) {
	n := r.part.Count
	switch {
	case n < 1:
		return nil, fmt.Errorf("repartition: %d partitions", n)
	case r.part.Kind == PartHash && len(r.part.Keys) == 0:
		return nil, errors.New("repartition: hash partitioning without keys")
	case r.part.Kind != PartHash && r.part.Kind != PartRoundRobin:
		return nil, fmt.Errorf("repartition: unsupported partitioning %s", r.part)
	case partition < 0 || partition >= n:
		return nil, fmt.Errorf("repartition: partition %d out of range", partition)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.exchanges == nil {
		r.exchanges = make(map[*TaskContext]*exchange)
	}
	ex := r.exchanges[tc]
	if ex == nil {
		ex = r.start(ctx, tc)
		r.exchanges[tc] = ex
	}
	out := ex.outs[partition]
	if out.opened {
		return nil, fmt.Errorf("repartition: partition %d executed twice in one task", partition)
	}
	out.opened = true
	return &repartitionStream{op: r, tc: tc, ex: ex, out: out}, nil
}

// start creates the exchange and its producer goroutines.
func (r *Repartition) start(ctx context.Context, tc *TaskContext) *exchange {
	ex := &exchange{outs: make([]*exchangeOut, r.part.Count), g: startGroup(ctx)}
	for i := range ex.outs {
		ex.outs[i] = &exchangeOut{ch: make(chan arrow.RecordBatch, exchangeBuffer), gone: make(chan struct{})}
	}
	// Open every input partition before any producer reads: streams of
	// one task that share work (a CollectLeft join's table) free it when
	// the last open one closes, so a fast partition must not close before
	// a slow one has opened.
	n := r.input.OutputPartitioning().Count
	streams, errs := make([]Stream, n), make([]error, n)
	for i := range n {
		streams[i], errs[i] = ExecuteOp(ex.g.gctx, r.input, i, tc)
	}
	for i := range n {
		p := &producer{op: r, ex: ex, tc: tc, input: i}
		s, err := streams[i], errs[i]
		ex.g.eg.Go(Safe(func() error {
			if err != nil {
				return fmt.Errorf("repartition input partition %d: %w", i, err)
			}
			defer s.Close()
			checkFailpoint(FailpointRepartition)
			return p.run(ex.g.gctx, s)
		}))
	}
	ex.g.finish()
	return ex
}

// producer splits one input partition's batches over the outputs.
type producer struct {
	op    *Repartition
	ex    *exchange
	tc    *TaskContext
	input int

	pending  [][]arrow.RecordBatch // per output: pieces not yet sent
	pendRows []int
	next     int // round-robin turn
	hashes   []uint64
	idx      [][]int32
}

func (p *producer) run(ctx context.Context, s Stream) error {
	n := p.op.part.Count
	p.pending = make([][]arrow.RecordBatch, n)
	p.pendRows = make([]int, n)
	p.idx = make([][]int32, n)
	p.next = p.input % n
	defer func() {
		for _, pend := range p.pending {
			kernels.ReleaseAll(pend)
		}
	}()
	for {
		b, err := s.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("repartition input partition %d: %w", p.input, err)
		}
		if p.op.part.Kind == PartRoundRobin {
			err = p.send(ctx, p.next, b)
			p.next = (p.next + 1) % n
		} else {
			err = p.split(ctx, b)
		}
		if err != nil {
			return err
		}
	}
	for i := range p.pending {
		if err := p.flush(ctx, i); err != nil {
			return err
		}
	}
	return nil
}

// split hashes b's keys and queues each destination's rows.
func (p *producer) split(ctx context.Context, b arrow.RecordBatch) error {
	defer b.Release()
	var err error
	p.hashes, err = HashPartition(p.op.part.Keys, b, p.tc.Alloc, p.hashes, p.idx)
	if err != nil {
		return fmt.Errorf("repartition: %w", err)
	}
	for d, idx := range p.idx {
		if len(idx) == 0 {
			continue
		}
		piece, err := kernels.SelectRows(p.tc.Alloc, b, idx)
		if err != nil {
			return fmt.Errorf("repartition: %w", err)
		}
		p.pending[d] = append(p.pending[d], piece)
		p.pendRows[d] += len(idx)
		if p.pendRows[d] >= p.tc.BatchSize {
			if err := p.flush(ctx, d); err != nil {
				return err
			}
		}
	}
	return nil
}

// flush sends output d's pending pieces as one batch.
func (p *producer) flush(ctx context.Context, d int) error {
	pend := p.pending[d]
	if len(pend) == 0 {
		return nil
	}
	p.pending[d] = pend[:0]
	p.pendRows[d] = 0
	b, err := kernels.ConcatBatches(p.tc.Alloc, p.op.input.Schema(), pend)
	kernels.ReleaseAll(pend)
	clear(pend)
	if err != nil {
		return fmt.Errorf("repartition: %w", err)
	}
	return p.send(ctx, d, b)
}

// send hands b to output d, discarding it if that consumer has gone.
func (p *producer) send(ctx context.Context, d int, b arrow.RecordBatch) error {
	out := p.ex.outs[d]
	select {
	case <-out.gone:
		b.Release()
		return nil
	default:
	}
	select {
	case out.ch <- b:
		return nil
	case <-out.gone:
		b.Release()
		return nil
	case <-ctx.Done():
		b.Release()
		return ctx.Err()
	}
}

type repartitionStream struct {
	op  *Repartition
	tc  *TaskContext
	ex  *exchange
	out *exchangeOut
}

func (s *repartitionStream) Next(ctx context.Context) (arrow.RecordBatch, error) {
	select {
	case b := <-s.out.ch:
		return b, nil
	case <-s.ex.g.done:
		if s.ex.g.err != nil {
			return nil, s.ex.g.err
		}
		select {
		case b := <-s.out.ch:
			return b, nil
		default:
			return nil, io.EOF
		}
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (s *repartitionStream) Close() {
	r := s.op
	r.mu.Lock()
	if s.out.closed {
		r.mu.Unlock()
		return
	}
	s.out.closed = true
	close(s.out.gone)
	s.ex.closed++
	last := s.ex.closed == len(s.ex.outs)
	if last && r.exchanges[s.tc] == s.ex {
		delete(r.exchanges, s.tc)
	}
	r.mu.Unlock()
	if last {
		s.ex.g.stop()
		for _, o := range s.ex.outs {
			drain(o.ch)
		}
		return
	}
	drain(s.out.ch)
}
