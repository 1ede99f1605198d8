package physical

import (
	"context"
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/csv"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/catalog"
)

// CSVScan reads a CSV table. Whole files are its work units, spread over the
// output partitions balanced by size; each partition parses on its own
// goroutine, a batch ahead of its consumer.
type CSVScan struct {
	name       string
	table      *catalog.CSVTable
	projection []int
	schema     *arrow.Schema
	parts      [][]int // file indices per partition, in path order
}

// NewCSVScan returns a scan of t producing the columns at projection
// (indices into t's schema; empty: zero-column batches carrying row counts)
// over `partitions` output partitions. name is the table name, for EXPLAIN.
func NewCSVScan(name string, t *catalog.CSVTable, projection []int, partitions int) *CSVScan {
	files := make([]int, len(t.Files))
	for i := range files {
		files[i] = i
	}
	parts := balanceUnits(files, max(partitions, 1), func(i int) int64 { return t.Files[i].Size })
	for _, p := range parts {
		slices.Sort(p)
	}
	return &CSVScan{
		name:       name,
		table:      t,
		projection: slices.Clone(projection),
		schema:     projectSchema(t.Schema(), projection),
		parts:      parts,
	}
}

// Schema implements Operator.
func (s *CSVScan) Schema() *arrow.Schema { return s.schema }

// Children implements Operator.
func (s *CSVScan) Children() []Operator { return nil }

// OutputPartitioning implements Operator.
func (s *CSVScan) OutputPartitioning() Partitioning {
	return Partitioning{Kind: PartUnknown, Count: len(s.parts)}
}

func (s *CSVScan) String() string {
	return fmt.Sprintf("CSVScan: %s files=%d partitions=%d projection=[%s]",
		s.name, len(s.table.Files), len(s.parts), fieldNames(s.schema))
}

// Execute implements Operator.
func (s *CSVScan) Execute(ctx context.Context, partition int, tc *TaskContext) (Stream, error) {
	if partition < 0 || partition >= len(s.parts) {
		return nil, fmt.Errorf("csv scan %s: partition %d out of range [0, %d)", s.name, partition, len(s.parts))
	}
	files := s.parts[partition]
	batchSize := tc.BatchSize
	if batchSize <= 0 {
		batchSize = DefaultBatchSize
	}
	return startPrefetch(ctx, func(ctx context.Context, emit func(arrow.RecordBatch) error) error {
		for _, fi := range files {
			if err := s.readFile(ctx, tc.Alloc, batchSize, s.table.Files[fi].Info(), emit); err != nil {
				return fmt.Errorf("csv scan %s: %w", s.name, err)
			}
		}
		return nil
	}), nil
}

func (s *CSVScan) readFile(ctx context.Context, mem memory.Allocator, batchSize int, fi catalog.FileInfo, emit func(arrow.RecordBatch) error) error {
	path := fi.Path
	f, err := catalog.OpenStream(ctx, fi)
	if err != nil {
		return err
	}
	defer f.Close()
	opts := s.table.Options()
	r := csv.NewReader(catalog.NewCSVRecordLimiter(f), s.table.Schema(),
		csv.WithHeader(opts.Header),
		csv.WithComma(opts.Delimiter),
		csv.WithChunk(batchSize),
		csv.WithAllocator(mem),
		csv.WithNullReader(true, ""))
	defer r.Release()
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		if !r.Next() {
			break
		}
		// A parse error still yields the batch (with NULLs where parsing
		// failed); it must not be passed on.
		if err := r.Err(); err != nil {
			return fmt.Errorf("read %s: %w", path, err)
		}
		rec := r.RecordBatch()
		if rec.NumRows() == 0 {
			continue
		}
		if err := emit(projectBatch(rec, s.schema, s.projection)); err != nil {
			return err
		}
	}
	if err := r.Err(); err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	return nil
}

// projectBatch returns a new batch (the caller owns it) holding rec's
// columns at projection, with the given schema.
func projectBatch(rec arrow.RecordBatch, schema *arrow.Schema, projection []int) arrow.RecordBatch {
	cols := make([]arrow.Array, len(projection))
	for i, c := range projection {
		cols[i] = rec.Column(c)
	}
	return array.NewRecordBatch(schema, cols, rec.NumRows())
}
