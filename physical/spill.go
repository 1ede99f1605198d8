package physical

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

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

// canSpill reports whether err is a refused reservation the task may
// answer by spilling.
func canSpill(tc *TaskContext, err error) bool {
	return tc.SpillDir != "" && errors.Is(err, mempool.ErrResourcesExhausted)
}

// spillFile holds batches of one schema in Arrow IPC stream format.
type spillFile struct {
	f     *os.File
	w     *ipc.Writer
	rows  int64
	bytes int64
}

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
	return &spillFile{f: f, w: ipc.NewWriter(f, ipc.WithSchema(schema), ipc.WithAllocator(mem))}, nil
}

// write appends b (the caller keeps its reference).
func (s *spillFile) write(b arrow.RecordBatch) error {
	if err := s.w.Write(b); err != nil {
		return fmt.Errorf("spilling to disk: %w", err)
	}
	s.rows += b.NumRows()
	return nil
}

// finish ends writing; the file is then read from its start.
func (s *spillFile) finish() error {
	if err := s.w.Close(); err != nil {
		return fmt.Errorf("spilling to disk: %w", err)
	}
	s.w = nil
	off, err := s.f.Seek(0, io.SeekCurrent)
	if err != nil {
		return fmt.Errorf("spilling to disk: %w", err)
	}
	s.bytes = off
	if _, err := s.f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("spilling to disk: %w", err)
	}
	return nil
}

// close releases the file, and with it its disk space.
func (s *spillFile) close() {
	if s.w != nil {
		s.w.Close()
		s.w = nil
	}
	if s.f != nil {
		s.f.Close()
		s.f = nil
	}
}

// splitRows writes each row of b to the file of its key's hash bucket
// (keys: the key columns evaluated on b). A row's equal keys hash alike,
// so a spilling aggregate or join finds all of a key's rows in one file.
func splitRows(tc *TaskContext, b arrow.RecordBatch, keys []arrow.Array, files []*spillFile) error {
	n := int(b.NumRows())
	hashes := make([]uint64, n)
	if err := HashRows(keys, hashes); err != nil {
		return err
	}
	idx := make([][]int32, len(files))
	for r, h := range hashes {
		k := h % uint64(len(files))
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
		err = files[k].write(part)
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
	rd, err := ipc.NewReader(r.runs[partition].f, ipc.WithAllocator(tc.Alloc), ipc.WithSchema(r.schema))
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
