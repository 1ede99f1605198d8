package physical

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"

	"sluice/physical/kernels"
	"sluice/physical/mempool"
	"sluice/physical/spill"
)

// Spilling: an operator whose memory reservation is refused writes what it
// holds to a temporary file and goes on, where the task allows it
// (TaskContext.SpillDir set: in process and in blocking mode; a pipelined
// task fails with the memory error instead, as its queues give it no
// place to wait).
//
// A spill file is unlinked the moment it is created and read through the
// descriptor kept open: it disappears when the operator closes it, and
// when the process ends, however the query ends, so no spill file is ever
// left behind.

// SpillStats returns how many spill files this process has created and
// how many bytes were written to the ones finished (spill.Stats).
func SpillStats() (files, bytes int64) { return spill.Stats() }

// canSpill reports whether err is a refused reservation the task may
// answer by spilling.
func canSpill(tc *TaskContext, err error) bool {
	return tc.SpillDir != "" && errors.Is(err, mempool.ErrResourcesExhausted)
}

// maxSplitLevel bounds how often a bucket still too big for memory is
// split again: past it, the bucket's rows share almost all of their hash,
// so they are, all but certainly, one key too big for memory.
const maxSplitLevel = 4

// splitRows writes each row of b to the file of its key's hash bucket at
// split level level (keys: the key columns evaluated on b). A row's equal
// keys hash alike, so a spilling aggregate or join finds all of a key's
// rows in one file. With spreadNulls (a join's, whose rows with a NULL key
// match nothing and may be in any bucket) the rows with a NULL key are
// dealt round the buckets instead, since they all hash alike and would
// make one bucket that no split makes smaller.
func splitRows(tc *TaskContext, b arrow.RecordBatch, keys []arrow.Array, files []*spill.File, level int, spreadNulls bool) error {
	n := int(b.NumRows())
	hashes := make([]uint64, n)
	if err := HashRows(keys, hashes); err != nil {
		return err
	}
	nulls := false
	for _, k := range keys {
		nulls = nulls || k.NullN() > 0
	}
	idx := make([][]int32, len(files))
	for r, h := range hashes {
		k := spill.Bucket(h, len(files), level)
		if spreadNulls && nulls && joinRowHasNull(keys, r) {
			k = r % len(files)
		}
		idx[k] = append(idx[k], int32(r))
	}
	for k, rows := range idx {
		if len(rows) == 0 {
			continue
		}
		part, err := kernels.SelectRows(tc.Alloc, b, rows)
		if err != nil {
			return err
		}
		err = files[k].Add(part)
		part.Release()
		if err != nil {
			return err
		}
	}
	return nil
}

// spillRuns is an operator whose partition i reads back spill file i, a
// finished run. It feeds SortPreservingMerge, which merges the runs of an
// external sort.
type spillRuns struct {
	schema *arrow.Schema
	runs   []*spill.File
}

func (r *spillRuns) Schema() *arrow.Schema { return r.schema }
func (r *spillRuns) Children() []Operator  { return nil }
func (r *spillRuns) OutputPartitioning() Partitioning {
	return Partitioning{Kind: PartUnknown, Count: len(r.runs)}
}
func (r *spillRuns) String() string { return fmt.Sprintf("SpillRuns: runs=%d", len(r.runs)) }

// Execute implements Operator: a stream of run partition's batches.
func (r *spillRuns) Execute(_ context.Context, partition int, tc *TaskContext) (Stream, error) {
	if partition < 0 || partition >= len(r.runs) {
		return nil, fmt.Errorf("spilled runs: partition %d out of range", partition)
	}
	rd, err := ipc.NewReader(r.runs[partition].Reader(), ipc.WithAllocator(tc.Alloc), ipc.WithSchema(r.schema))
	if err != nil {
		return nil, fmt.Errorf("reading back spilled rows: %w", err)
	}
	return &spillStream{rd: rd}, nil
}

type spillStream struct{ rd *ipc.Reader }

func (s *spillStream) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if !s.rd.Next() {
		if err := s.rd.Err(); err != nil && err != io.EOF {
			return nil, fmt.Errorf("reading back spilled rows: %w", err)
		}
		return nil, io.EOF
	}
	b := s.rd.RecordBatch()
	b.Retain()
	return b, nil
}

func (s *spillStream) Close() { s.rd.Release() }
