package exchange

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/physical"
	"sluice/physical/expr"
)

// This file holds the batch helpers both writers share: measuring batches,
// gathering rows, concatenating pieces, and the hash splitter that routes
// rows to output partitions exactly as physical.Repartition does.

// batchBytes is the memory a batch's buffers occupy. Buffers shared by
// slices are counted in full, erring on the safe side.
func batchBytes(b arrow.RecordBatch) int64 {
	var n int64
	for _, col := range b.Columns() {
		n += arrayBytes(col.Data())
	}
	return n
}

func arrayBytes(d arrow.ArrayData) int64 {
	var n int64
	for _, buf := range d.Buffers() {
		if buf != nil {
			n += int64(buf.Len())
		}
	}
	for _, c := range d.Children() {
		n += arrayBytes(c)
	}
	return n
}

func releaseBatches(bs []arrow.RecordBatch) {
	for _, b := range bs {
		if b != nil {
			b.Release()
		}
	}
}

func releaseArrays(as []arrow.Array) {
	for _, a := range as {
		if a != nil {
			a.Release()
		}
	}
}

// takeRows gathers rows idx of b into a new batch.
func takeRows(alloc memory.Allocator, b arrow.RecordBatch, idx []int32) (arrow.RecordBatch, error) {
	ib := array.NewInt32Builder(alloc)
	ib.AppendValues(idx, nil)
	indices := ib.NewArray()
	ib.Release()
	defer indices.Release()
	ctx := compute.WithAllocator(context.Background(), alloc)
	cols := make([]arrow.Array, b.NumCols())
	for i, col := range b.Columns() {
		c, err := compute.TakeArray(ctx, col, indices)
		if err != nil {
			releaseArrays(cols)
			return nil, fmt.Errorf("gathering column %q: %w", b.ColumnName(i), err)
		}
		cols[i] = c
	}
	out := array.NewRecordBatch(b.Schema(), cols, int64(len(idx)))
	releaseArrays(cols)
	return out, nil
}

// concatBatches joins bs (same schema) into one batch; bs stay owned by the
// caller. A single batch is returned retained rather than copied.
func concatBatches(alloc memory.Allocator, schema *arrow.Schema, bs []arrow.RecordBatch) (arrow.RecordBatch, error) {
	if len(bs) == 1 {
		bs[0].Retain()
		return bs[0], nil
	}
	var rows int64
	for _, b := range bs {
		rows += b.NumRows()
	}
	cols := make([]arrow.Array, schema.NumFields())
	parts := make([]arrow.Array, len(bs))
	for c := range cols {
		for i, b := range bs {
			parts[i] = b.Column(c)
		}
		col, err := array.Concatenate(parts, alloc)
		if err != nil {
			releaseArrays(cols)
			return nil, fmt.Errorf("concatenating column %q: %w", schema.Field(c).Name, err)
		}
		cols[c] = col
	}
	out := array.NewRecordBatch(schema, cols, rows)
	releaseArrays(cols)
	return out, nil
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
// physical.HashRows of the keys modulo the partition count (the rule of
// physical.Repartition, so a distributed run places every row where the
// single-process engine would), and coalesces each output partition's
// pieces back up to the target batch size before emitting them. It is used
// by one goroutine.
type splitter struct {
	keys   []expr.Expr
	schema *arrow.Schema
	alloc  memory.Allocator
	target int

	pending  [][]arrow.RecordBatch // per output partition: pieces not yet emitted
	pendRows []int
	hashes   []uint64
	idx      [][]int32
}

func newSplitter(p physical.Partitioning, schema *arrow.Schema, tc *physical.TaskContext) *splitter {
	target := tc.BatchSize
	if target <= 0 {
		target = physical.DefaultBatchSize
	}
	return &splitter{
		keys:     p.Keys,
		schema:   schema,
		alloc:    tc.Alloc,
		target:   target,
		pending:  make([][]arrow.RecordBatch, p.Count),
		pendRows: make([]int, p.Count),
		idx:      make([][]int32, p.Count),
	}
}

// add splits b, taking ownership of it, and emits every output partition
// whose pending rows reached the target.
func (s *splitter) add(ctx context.Context, b arrow.RecordBatch, emit emitFunc) error {
	defer b.Release()
	rows := int(b.NumRows())
	if rows == 0 {
		return nil
	}
	keys := make([]arrow.Array, len(s.keys))
	for i, k := range s.keys {
		a, err := k.Eval(b, s.alloc)
		if err != nil {
			releaseArrays(keys)
			return fmt.Errorf("evaluating partition key %s: %w", k, err)
		}
		keys[i] = a
	}
	if cap(s.hashes) < rows {
		s.hashes = make([]uint64, rows)
	}
	s.hashes = s.hashes[:rows]
	err := physical.HashRows(keys, s.hashes)
	releaseArrays(keys)
	if err != nil {
		return fmt.Errorf("hashing partition keys: %w", err)
	}
	n := uint64(len(s.idx))
	for i := range s.idx {
		s.idx[i] = s.idx[i][:0]
	}
	for r, h := range s.hashes {
		d := h % n
		s.idx[d] = append(s.idx[d], int32(r))
	}
	for d, idx := range s.idx {
		var piece arrow.RecordBatch
		switch len(idx) {
		case 0:
			continue
		case rows:
			b.Retain()
			piece = b
		default:
			piece, err = takeRows(s.alloc, b, idx)
			if err != nil {
				return err
			}
		}
		s.pending[d] = append(s.pending[d], piece)
		s.pendRows[d] += len(idx)
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
	b, err := concatBatches(s.alloc, s.schema, pend)
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
	}
}
