package physical

import (
	"context"
	"fmt"
	"io"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"sluice/catalog"
)

// MemScan reads an in-memory table: its batches are dealt round-robin to
// the output partitions, projected, and cut to the task's batch size. It
// copies no data.
type MemScan struct {
	name       string
	table      *catalog.MemTable
	projection []int
	schema     *arrow.Schema
	partitions int
}

// NewMemScan returns a scan of t producing the columns at projection
// (indices into t's schema; empty: zero-column batches carrying row counts)
// over `partitions` output partitions. name is the table name, for EXPLAIN.
func NewMemScan(name string, t *catalog.MemTable, projection []int, partitions int) *MemScan {
	return &MemScan{
		name:       name,
		table:      t,
		projection: slices.Clone(projection),
		schema:     ProjectSchema(t.Schema(), projection),
		partitions: max(partitions, 1),
	}
}

// Schema implements Operator.
func (s *MemScan) Schema() *arrow.Schema { return s.schema }

// Children implements Operator.
func (s *MemScan) Children() []Operator { return nil }

// OutputPartitioning implements Operator.
func (s *MemScan) OutputPartitioning() Partitioning {
	return Partitioning{Kind: PartUnknown, Count: s.partitions}
}

func (s *MemScan) String() string {
	return fmt.Sprintf("MemScan: %s batches=%d partitions=%d projection=[%s]",
		s.name, len(s.table.Batches()), s.partitions, fieldNames(s.schema))
}

// Execute implements Operator.
func (s *MemScan) Execute(_ context.Context, partition int, tc *TaskContext) (Stream, error) {
	if partition < 0 || partition >= s.partitions {
		return nil, fmt.Errorf("mem scan %s: partition %d out of range [0, %d)", s.name, partition, s.partitions)
	}
	batchSize := tc.BatchSize
	if batchSize <= 0 {
		batchSize = DefaultBatchSize
	}
	return &memScanStream{scan: s, next: partition, batchSize: int64(batchSize)}, nil
}

// memScanStream walks batches next, next+partitions, …, cutting each into
// slices of at most batchSize rows.
type memScanStream struct {
	scan      *MemScan
	next      int   // index of the current batch
	offset    int64 // rows of it already returned
	batchSize int64
	closed    bool
}

// Next implements Stream.
func (st *memScanStream) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	batches := st.scan.table.Batches()
	for !st.closed && st.next < len(batches) {
		b := batches[st.next]
		if st.offset >= b.NumRows() {
			st.next += st.scan.partitions
			st.offset = 0
			continue
		}
		lo := st.offset
		hi := min(lo+st.batchSize, b.NumRows())
		st.offset = hi
		cols := make([]arrow.Array, len(st.scan.projection))
		for i, c := range st.scan.projection {
			if lo == 0 && hi == b.NumRows() {
				cols[i] = b.Column(c)
				cols[i].Retain()
			} else {
				cols[i] = array.NewSlice(b.Column(c), lo, hi)
			}
		}
		out := array.NewRecordBatch(st.scan.schema, cols, hi-lo)
		for _, c := range cols {
			c.Release()
		}
		return out, nil
	}
	return nil, io.EOF
}

// Close implements Stream. The batches belong to the table; nothing to free.
func (st *memScanStream) Close() { st.closed = true }
