package physical

import (
	"context"
	encodingcsv "encoding/csv"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/csv"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/catalog"
	"sluice/physical/expr"
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
		schema:     ProjectSchema(t.Schema(), projection),
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
	read, text := csvReadSchema(s.table.Schema())
	r := csv.NewReader(catalog.NewCSVRecordLimiter(f), read,
		csv.WithHeader(opts.Header),
		csv.WithComma(opts.Delimiter),
		csv.WithChunk(batchSize),
		csv.WithAllocator(mem),
		csv.WithNullReader(true, ""))
	defer r.Release()
	var records int64 // records read before the current batch
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		if !r.Next() {
			break
		}
		// A parse error still yields the batch (with NULLs where parsing
		// failed); it must not be passed on.
		rec := r.RecordBatch()
		if err := r.Err(); err != nil {
			return csvReadError(path, records, rec.NumRows(), err)
		}
		n := rec.NumRows()
		if n == 0 {
			continue
		}
		out, err := s.convert(rec, text, mem)
		if err != nil {
			return csvReadError(path, records, n, err)
		}
		records += n
		if err := emit(out); err != nil {
			return err
		}
	}
	if err := r.Err(); err != nil {
		return csvReadError(path, records, 0, err)
	}
	return nil
}

// csvReadSchema is the schema the CSV reader parses: the table's, with
// TIMESTAMP columns read as text (text[c]) and converted by sluice's own
// parser, which takes what a CAST takes (ISO 8601 with 'T' and a UTC
// designator included; arrow-go's refuses '2024-01-01T10:00:00Z').
func csvReadSchema(table *arrow.Schema) (*arrow.Schema, []bool) {
	fields := table.Fields()
	text := make([]bool, len(fields))
	for i, f := range fields {
		if f.Type.ID() == arrow.TIMESTAMP {
			fields[i].Type, text[i] = arrow.BinaryTypes.String, true
		}
	}
	if !slices.Contains(text, true) {
		return table, text
	}
	return arrow.NewSchema(fields, nil), text
}

// convert returns a new batch (the caller owns it) of rec's projected
// columns, the ones read as text converted to the table's types.
func (s *CSVScan) convert(rec arrow.RecordBatch, text []bool, mem memory.Allocator) (arrow.RecordBatch, error) {
	cols := make([]arrow.Array, len(s.projection))
	var made []arrow.Array
	defer func() {
		for _, a := range made {
			a.Release()
		}
	}()
	for i, c := range s.projection {
		cols[i] = rec.Column(c)
		if text[c] {
			a, err := expr.CastArray(cols[i], s.schema.Field(i).Type, mem)
			if err != nil {
				return nil, err
			}
			made = append(made, a)
			cols[i] = a
		}
	}
	return array.NewRecordBatch(s.schema, cols, rec.NumRows()), nil
}

// csvReadError describes a failure to read path after `before` records,
// in a batch of n (0: unknown). A value that does not parse as its
// column's type, or a malformed record, is the file's content: a data
// error, the same on every executor, so the cluster fails the query at
// once, and in words rather than strconv's. Anything else (the file
// vanished, a read failed) may pass and is returned as it is.
func csvReadError(path string, before, n int64, err error) error {
	where := fmt.Sprintf("CSV file %s, record %d", path, before+1)
	if n > 1 {
		where = fmt.Sprintf("CSV file %s, records %d to %d", path, before+1, before+n)
	}
	var num *strconv.NumError
	var tm *time.ParseError
	var rec *encodingcsv.ParseError
	switch {
	case errors.As(err, &num) && errors.Is(num.Err, strconv.ErrRange):
		return expr.NewDataError(fmt.Sprintf("%s: value %q out of range for its column's type", where, num.Num))
	case errors.As(err, &num):
		return expr.NewDataError(fmt.Sprintf("%s: invalid input syntax for its column's type: %q", where, num.Num))
	case errors.As(err, &tm):
		return expr.NewDataError(fmt.Sprintf("%s: invalid date or timestamp %q%s", where, tm.Value, tm.Message))
	case errors.Is(err, csv.ErrMismatchFields):
		return expr.NewDataError(fmt.Sprintf("%s: wrong number of fields", where))
	case errors.As(err, &rec):
		return expr.NewDataError(fmt.Sprintf("CSV file %s: %v", path, rec))
	}
	if msg, ok := expr.UserMessage(err); ok {
		return expr.NewDataError(fmt.Sprintf("%s: %s", where, msg))
	}
	return fmt.Errorf("read %s: %w", path, err)
}
