// Package spill owns the files operators write when their memory
// reservation is refused: Arrow IPC stream files (File) that a spilling
// sort, hash join or aggregate fills and reads back, the creation of any
// spill file (CreateTemp: unlinked the moment it exists, so it disappears
// when it is closed or the process ends, however the query ends), the
// bucket a hashed row goes to when an operator splits its rows (Bucket),
// and the process-wide counters tests read to tell a query spilled
// (Stats). When to spill, and what, is the operators' business (package
// physical).
package spill

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/physical/kernels"
)

// spilledFiles and spilledBytes count the spill files this process
// created and the bytes written to them: a process-wide metric, as a
// runtime's counters are, that tests read to tell a query spilled.
var spilledFiles, spilledBytes atomic.Int64

// Stats returns how many spill files this process has created and how
// many bytes were written to the ones finished.
func Stats() (files, bytes int64) { return spilledFiles.Load(), spilledBytes.Load() }

// CreateTemp creates a spill file in dir, named after pattern as
// os.CreateTemp names it, unlinks it at once and counts it.
func CreateTemp(dir, pattern string) (*os.File, error) {
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return nil, err
	}
	if err := os.Remove(f.Name()); err != nil {
		f.Close()
		return nil, err
	}
	spilledFiles.Add(1)
	return f, nil
}

// Wrote counts n bytes written to a finished spill file that is not a
// File (a File counts its own).
func Wrote(n int64) { spilledBytes.Add(n) }

// File holds batches of one schema in Arrow IPC stream format.
type File struct {
	f      *os.File
	buf    *bufio.Writer
	w      *ipc.Writer
	schema *arrow.Schema
	mem    memory.Allocator
	rows   int64 // written or added
	bytes  int64
	// pending holds the small pieces Add is given until they make a batch
	// worth a write (pendingBytes of them): rows split 16 ways, and again
	// for a bucket split anew, would otherwise be written and read back as
	// batches of a row or two, each costing a message.
	pending      []arrow.RecordBatch
	pendingBytes int64
}

// pendingBytes is how much of the pieces Add is given a File holds before
// it writes them as one batch.
const pendingBytes = 64 << 10

// NewFile creates an unlinked spill file in dir.
func NewFile(dir string, schema *arrow.Schema, mem memory.Allocator) (*File, error) {
	f, err := CreateTemp(dir, "sluice-spill-*.arrows")
	if err != nil {
		return nil, fmt.Errorf("spilling to disk: %w", err)
	}
	buf := bufio.NewWriterSize(f, ioBuffer)
	return &File{f: f, buf: buf, w: ipc.NewWriter(buf, ipc.WithSchema(schema), ipc.WithAllocator(mem)), schema: schema, mem: mem}, nil
}

// ioBuffer is how much a spill file's writer gathers before a write(2),
// and its readers read ahead: the IPC format writes and reads each
// batch's message header, every buffer and its padding as pieces of their
// own (some 60 for a batch of ten columns). Large pieces pass straight
// through.
const ioBuffer = 16 << 10

// Write appends b (the caller keeps its reference), after any pieces
// Add still holds, so the rows keep the order they were given in.
func (s *File) Write(b arrow.RecordBatch) error {
	if err := s.Flush(); err != nil {
		return err
	}
	if err := s.w.Write(b); err != nil {
		return fmt.Errorf("spilling to disk: %w", err)
	}
	s.rows += b.NumRows()
	return nil
}

// Add appends the rows of piece, held until they make a batch worth
// writing (the caller keeps its reference).
func (s *File) Add(piece arrow.RecordBatch) error {
	piece.Retain()
	s.rows += piece.NumRows()
	s.pending = append(s.pending, piece)
	s.pendingBytes += kernels.BatchBytes(piece)
	if s.pendingBytes >= pendingBytes {
		return s.Flush()
	}
	return nil
}

// Flush writes the pieces held as one batch.
func (s *File) Flush() error {
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

// Finish ends writing; the file is then read from its start, by as many
// readers at once as want to (each reads through a section of its own).
// Finishing a finished file does nothing.
func (s *File) Finish() error {
	if s.w == nil {
		return nil
	}
	if err := s.Flush(); err != nil {
		return err
	}
	err := s.w.Close()
	if err == nil {
		err = s.buf.Flush()
	}
	if err != nil {
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

// Reader returns a reader of the finished file from its start.
func (s *File) Reader() io.Reader {
	return bufio.NewReaderSize(io.NewSectionReader(s.f, 0, s.bytes), ioBuffer)
}

// Close releases the file, and with it its disk space.
func (s *File) Close() {
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

// Rows is how many rows were written or added.
func (s *File) Rows() int64 { return s.rows }

// Bucket is the bucket of n that a row hashing to h goes to at split
// level level (0: the first split; a bucket split again takes the next).
// Each level takes its own bits of the hash, above the low ones that hash
// tables index by (a bucket's rows sharing those would crowd a table
// built of them into a fraction of its slots) and below the high ones
// that choose a row's partition (PartitionOf: a partition's rows share
// those).
func Bucket(h uint64, n, level int) int {
	return int((h >> (24 + 5*level)) % uint64(n))
}
