package session

import (
	"context"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/physical"
)

// Result is the outcome of one statement. A statement that returns rows has
// a Schema and is read with Next until io.EOF; every Result must be Closed.
type Result struct {
	// Schema is nil for statements that return no rows (DDL, SET).
	Schema *arrow.Schema
	// Message is a short status such as "CREATE EXTERNAL TABLE" for
	// statements without rows.
	Message string

	stream physical.Stream
	onDone func()
}

// Next returns the next batch, or io.EOF. The caller releases each batch.
func (r *Result) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if r.stream == nil {
		return nil, io.EOF
	}
	return r.stream.Next(ctx)
}

// Close releases the result's resources; safe to call twice.
func (r *Result) Close() {
	if r.stream != nil {
		r.stream.Close()
		r.stream = nil
	}
	if r.onDone != nil {
		r.onDone()
		r.onDone = nil
	}
}

func messageResult(msg string) *Result { return &Result{Message: msg} }

// batchStream serves fixed batches.
type batchStream struct{ batches []arrow.RecordBatch }

func (s *batchStream) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(s.batches) == 0 {
		return nil, io.EOF
	}
	b := s.batches[0]
	s.batches = s.batches[1:]
	return b, nil
}

func (s *batchStream) Close() {
	for _, b := range s.batches {
		b.Release()
	}
	s.batches = nil
}

// stringsResult builds a result of utf8 columns from rows of strings.
func stringsResult(cols []string, rows [][]string) *Result {
	fields := make([]arrow.Field, len(cols))
	for i, c := range cols {
		fields[i] = arrow.Field{Name: c, Type: arrow.BinaryTypes.String, Nullable: true}
	}
	schema := arrow.NewSchema(fields, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for _, r := range rows {
		for i, v := range r {
			b.Field(i).(*array.StringBuilder).Append(v)
		}
	}
	rec := b.NewRecordBatch()
	return &Result{Schema: schema, stream: &batchStream{batches: []arrow.RecordBatch{rec}}}
}
