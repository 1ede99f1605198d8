package exchange

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/physical"
	"sluice/physical/expr"
	"sluice/physical/mempool"
)

// This file holds the helpers both writers share, above all the splitter
// that routes rows to output partitions. It hashes, gathers and measures
// with physical's own helpers (HashPartition, TakeBatch, BatchBytes), so a
// hash exchange splits rows exactly as physical.Repartition does.

func releaseBatches(bs []arrow.RecordBatch) {
	for _, b := range bs {
		if b != nil {
			b.Release()
		}
	}
}

// withSchema returns b relabelled with schema when only names or metadata
// differ; it takes ownership of b.
func withSchema(schema *arrow.Schema, b arrow.RecordBatch) (arrow.RecordBatch, error) {
	if b.Schema().Equal(schema) {
		return b, nil
	}
	if int(b.NumCols()) != schema.NumFields() {
		b.Release()
		return nil, fmt.Errorf("batch has %d columns, expected %d (%s)", b.NumCols(), schema.NumFields(), schema)
	}
	for i, f := range schema.Fields() {
		if !arrow.TypeEqual(f.Type, b.Column(i).DataType()) {
			t := b.Column(i).DataType()
			b.Release()
			return nil, fmt.Errorf("column %d (%s) is %s, expected %s", i, f.Name, t, f.Type)
		}
	}
	out := array.NewRecordBatch(schema, b.Columns(), b.NumRows())
	b.Release()
	return out, nil
}

// emitFunc receives one output partition's batch and takes ownership of it.
type emitFunc func(ctx context.Context, partition int, b arrow.RecordBatch) error

// splitter routes one input partition's rows to output partitions by
// physical.HashRows of the keys scaled to the partition count (the rule of
// physical.Repartition, so a distributed run places every row where the
// single-process engine would), and coalesces each output partition's
// pieces back up to the target batch size before emitting them. The pieces
// it holds are charged to the task's memory pool. It is used by one
// goroutine.
type splitter struct {
	keys   []expr.Expr
	schema *arrow.Schema
	alloc  memory.Allocator
	target int

	pending   [][]arrow.RecordBatch // per output partition: pieces not yet emitted
	pendRows  []int
	pendBytes []int64
	res       *mempool.Reservation // nil when the task has no pool
	// early: the task may spill (a blocking task, whose emit writes to a
	// file): when the pool refuses a piece, what is pending is emitted at
	// once, in smaller batches, rather than failing the task.
	early  bool
	hashes []uint64
	idx    [][]int32
}

func newSplitter(p physical.Partitioning, schema *arrow.Schema, tc *physical.TaskContext) *splitter {
	target := tc.BatchSize
	if target <= 0 {
		target = physical.DefaultBatchSize
	}
	s := &splitter{
		keys:      p.Keys,
		schema:    schema,
		alloc:     tc.Alloc,
		target:    target,
		pending:   make([][]arrow.RecordBatch, p.Count),
		pendRows:  make([]int, p.Count),
		pendBytes: make([]int64, p.Count),
		idx:       make([][]int32, p.Count),
		early:     tc.SpillDir != "",
	}
	if tc.Memory != nil {
		s.res = tc.Memory.NewReservation("exchange partition buffers")
	}
	return s
}

// add splits b, taking ownership of it, and emits every output partition
// whose pending rows reached the target.
func (s *splitter) add(ctx context.Context, b arrow.RecordBatch, emit emitFunc) error {
	defer b.Release()
	rows := int(b.NumRows())
	if rows == 0 {
		return nil
	}
	var err error
	s.hashes, err = physical.HashPartition(s.keys, b, s.alloc, s.hashes, s.idx)
	if err != nil {
		return err
	}
	for d, idx := range s.idx {
		if len(idx) == 0 {
			continue
		}
		piece, err := physical.SelectRows(s.alloc, b, idx)
		if err != nil {
			return err
		}
		n := physical.BatchBytes(piece)
		if s.res != nil {
			err := s.res.Grow(n)
			if err != nil && s.early && errors.Is(err, mempool.ErrResourcesExhausted) {
				if err := s.flushAll(ctx, emit); err != nil {
					piece.Release()
					return err
				}
				if s.res.Grow(n) != nil {
					// Even with nothing pending the piece does not fit:
					// it goes out alone.
					if err := emit(ctx, d, piece); err != nil {
						return err
					}
					continue
				}
				err = nil
			}
			if err != nil {
				piece.Release()
				return err
			}
		}
		s.pending[d] = append(s.pending[d], piece)
		s.pendRows[d] += len(idx)
		s.pendBytes[d] += n
		if s.pendRows[d] >= s.target {
			if err := s.flush(ctx, d, emit); err != nil {
				return err
			}
		}
	}
	return nil
}

// flush emits output partition d's pending pieces as one batch.
func (s *splitter) flush(ctx context.Context, d int, emit emitFunc) error {
	pend := s.pending[d]
	if len(pend) == 0 {
		return nil
	}
	s.pending[d] = pend[:0]
	s.pendRows[d] = 0
	s.shrink(d)
	b, err := physical.ConcatBatches(s.alloc, s.schema, pend)
	releaseBatches(pend)
	clear(pend)
	if err != nil {
		return err
	}
	return emit(ctx, d, b)
}

// flushAll emits every output partition's remaining rows.
func (s *splitter) flushAll(ctx context.Context, emit emitFunc) error {
	for d := range s.pending {
		if err := s.flush(ctx, d, emit); err != nil {
			return err
		}
	}
	return nil
}

// release drops any pieces not yet emitted (after an error).
func (s *splitter) release() {
	for d, pend := range s.pending {
		releaseBatches(pend)
		s.pending[d] = nil
		s.pendRows[d] = 0
		s.shrink(d)
	}
}

func (s *splitter) shrink(d int) {
	if s.res != nil {
		s.res.Shrink(s.pendBytes[d])
	}
	s.pendBytes[d] = 0
}

// coalesceWait is how long a pass-through partition's small batches may
// wait for more before they are queued anyway (checked as batches arrive).
const coalesceWait = 2 * time.Millisecond

// coalescer merges a pass-through output partition's small batches before
// they are queued. Every queued batch becomes a Flight message of its own,
// and a selective filter emits many small ones: TPC-H's lineitem rows with
// the largest quantity (120K rows) left a scan partition as 368 batches of
// about 160 rows, and reached the client 14.5 ms later than in process,
// where 480K rows in 59 full batches took 15.5 ms more for four times the
// bytes. The first batch is queued at once (time to first row), a batch of
// at least half the target size as it is, after what is pending; smaller
// ones are merged until they reach the target, or until the oldest has
// waited coalesceWait when the next arrives, and at the end. What it holds
// is at most one and a half batches' rows, so unlike the splitter's pieces
// it is not charged to the task's memory pool.
type coalescer struct {
	schema  *arrow.Schema
	alloc   memory.Allocator
	target  int
	pending []arrow.RecordBatch
	rows    int
	since   time.Time // when the oldest pending batch arrived
	sent    bool      // a batch was queued
	wait    time.Duration
	now     func() time.Time
}

// newCoalescer returns the coalescer of a pipelined pass-through partition.
func newCoalescer(schema *arrow.Schema, tc *physical.TaskContext) *coalescer {
	target := tc.BatchSize
	if target <= 0 {
		target = physical.DefaultBatchSize
	}
	return &coalescer{schema: schema, alloc: tc.Alloc, target: target, wait: coalesceWait, now: time.Now}
}

// newFileCoalescer returns the coalescer of a pass-through shuffle file,
// which nobody reads before the stage ends: batches merge up to the target,
// the first one too, however long they take.
func newFileCoalescer(schema *arrow.Schema, tc *physical.TaskContext) *coalescer {
	c := newCoalescer(schema, tc)
	c.sent, c.wait = true, 0
	return c
}

// add takes b (non-empty; ownership passes) for partition d.
func (c *coalescer) add(ctx context.Context, d int, b arrow.RecordBatch, emit emitFunc) error {
	n := int(b.NumRows())
	if !c.sent || n >= c.target/2 {
		if err := c.flush(ctx, d, emit); err != nil {
			b.Release()
			return err
		}
		c.sent = true
		return emit(ctx, d, b)
	}
	if len(c.pending) == 0 {
		c.since = c.now()
	}
	c.pending = append(c.pending, b)
	c.rows += n
	if c.rows >= c.target || (c.wait > 0 && c.now().Sub(c.since) >= c.wait) {
		return c.flush(ctx, d, emit)
	}
	return nil
}

// flush queues the pending batches as one.
func (c *coalescer) flush(ctx context.Context, d int, emit emitFunc) error {
	if len(c.pending) == 0 {
		return nil
	}
	merged, err := physical.ConcatBatches(c.alloc, c.schema, c.pending)
	c.release()
	if err != nil {
		return fmt.Errorf("merging small batches: %w", err)
	}
	return emit(ctx, d, merged)
}

// release drops the pending batches.
func (c *coalescer) release() {
	releaseBatches(c.pending)
	c.pending, c.rows = c.pending[:0], 0
}
