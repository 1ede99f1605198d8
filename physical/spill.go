package physical

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/physical/kernels"
	"sluice/physical/mempool"
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

// spilledFiles and spilledBytes count the spill files this process
// created and the bytes written to them: a process-wide metric, as a
// runtime's counters are, that tests read to tell a query spilled.
var spilledFiles, spilledBytes atomic.Int64

// SpillStats returns how many spill files this process has created and
// how many bytes were written to the ones finished.
func SpillStats() (files, bytes int64) { return spilledFiles.Load(), spilledBytes.Load() }

// canSpill reports whether err is a refused reservation the task may
// answer by spilling.
func canSpill(tc *TaskContext, err error) bool {
	return tc.SpillDir != "" && errors.Is(err, mempool.ErrResourcesExhausted)
}

// spillFile holds batches of one schema in Arrow IPC stream format.
type spillFile struct {
	f      *os.File
	w      *ipc.Writer
	schema *arrow.Schema
	mem    memory.Allocator
	rows   int64 // written or added
	bytes  int64
	// pending holds the small pieces splitRows adds until they make a
	// batch worth a write (pendingBytes of them): rows split 16 ways, and
	// again for a bucket split anew, would otherwise be written and read
	// back as batches of a row or two, each costing a message.
	pending      []arrow.RecordBatch
	pendingBytes int64
}

// spillPendingBytes is how much of the pieces splitRows adds a spill file
// holds before it writes them as one batch.
const spillPendingBytes = 64 << 10

// newSpillFile creates an unlinked spill file in dir.
func newSpillFile(dir string, schema *arrow.Schema, mem memory.Allocator) (*spillFile, error) {
	f, err := os.CreateTemp(dir, "sluice-spill-*.arrows")
	if err != nil {
		return nil, fmt.Errorf("spilling to disk: %w", err)
	}
	if err := os.Remove(f.Name()); err != nil {
		f.Close()
		return nil, fmt.Errorf("spilling to disk: %w", err)
	}
	spilledFiles.Add(1)
	return &spillFile{f: f, w: ipc.NewWriter(f, ipc.WithSchema(schema), ipc.WithAllocator(mem)), schema: schema, mem: mem}, nil
}

// write appends b (the caller keeps its reference).
func (s *spillFile) write(b arrow.RecordBatch) error {
	if err := s.w.Write(b); err != nil {
		return fmt.Errorf("spilling to disk: %w", err)
	}
	s.rows += b.NumRows()
	return nil
}

// add appends the rows of piece, held until they make a batch worth
// writing (the caller keeps its reference).
func (s *spillFile) add(piece arrow.RecordBatch) error {
	piece.Retain()
	s.rows += piece.NumRows()
	s.pending = append(s.pending, piece)
	s.pendingBytes += kernels.BatchBytes(piece)
	if s.pendingBytes >= spillPendingBytes {
		return s.flush()
	}
	return nil
}

// flush writes the pieces held as one batch.
func (s *spillFile) flush() error {
	if len(s.pending) == 0 {
		return nil
	}
	b, err := kernels.ConcatBatches(s.mem, s.schema, s.pending)
	kernels.ReleaseAll(s.pending)
	s.pending, s.pendingBytes = s.pending[:0], 0
	if err != nil {
		return fmt.Errorf("spilling to disk: %w", err)
	}
	err = s.w.Write(b)
	b.Release()
	if err != nil {
		return fmt.Errorf("spilling to disk: %w", err)
	}
	return nil
}

// finish ends writing; the file is then read from its start, by as many
// readers at once as want to (each reads through a section of its own).
// Finishing a finished file does nothing.
func (s *spillFile) finish() error {
	if s.w == nil {
		return nil
	}
	if err := s.flush(); err != nil {
		return err
	}
	if err := s.w.Close(); err != nil {
		return fmt.Errorf("spilling to disk: %w", err)
	}
	s.w = nil
	off, err := s.f.Seek(0, io.SeekCurrent)
	if err != nil {
		return fmt.Errorf("spilling to disk: %w", err)
	}
	s.bytes = off
	spilledBytes.Add(off)
	return nil
}

// reader returns a reader of the finished file from its start.
func (s *spillFile) reader() io.Reader { return io.NewSectionReader(s.f, 0, s.bytes) }

// close releases the file, and with it its disk space.
func (s *spillFile) close() {
	kernels.ReleaseAll(s.pending)
	s.pending = nil
	if s.w != nil {
		s.w.Close()
		s.w = nil
	}
	if s.f != nil {
		s.f.Close()
		s.f = nil
	}
}

// spillBucket is the bucket of n that a row hashing to h goes to at split
// level level (0: the first split; a bucket split again takes the next).
// Each level takes its own bits of the hash, above the low ones that hash
// tables index by (a bucket's rows sharing those would crowd a table
// built of them into a fraction of its slots) and below the high ones
// that choose a row's partition (PartitionOf: a partition's rows share
// those).
func spillBucket(h uint64, n, level int) int {
	return int((h >> (24 + 5*level)) % uint64(n))
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
func splitRows(tc *TaskContext, b arrow.RecordBatch, keys []arrow.Array, files []*spillFile, level int, spreadNulls bool) error {
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
		k := spillBucket(h, len(files), level)
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
		err = files[k].add(part)
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
	runs   []*spillFile
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
	rd, err := ipc.NewReader(r.runs[partition].reader(), ipc.WithAllocator(tc.Alloc), ipc.WithSchema(r.schema))
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
