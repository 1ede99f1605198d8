package session

import (
	"context"
	"github.com/apache/arrow-go/v18/arrow/array"
	"io"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"sluice/physical"
	"sluice/physical/expr"
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
	// stats points at the query's statistics (nil for statements without
	// a query); statsVal holds them for in-process queries.
	stats    *Stats
	statsVal Stats
}

// Stats describe how a query ran. Times are measured from submission;
// FirstRow and Total are set once the first batch and EOF were read. Stages
// and Tasks are known for cluster queries once the result is closed.
type Stats struct {
	FirstRow time.Duration
	Total    time.Duration
	Rows     int64
	Stages   int
	Tasks    int
	// Report is the cluster's description of the finished job: its stages,
	// their tasks and the executors they ran on.
	Report string
	// Attempts is how many times a cluster query ran (more than 1 when a
	// pipelined query was retried after losing an executor); Notices are
	// what the cluster said about it, such as each retry's reason.
	Attempts int
	Notices  []string
	// Mode is how the cluster ran the query and, in auto mode, why.
	Mode string
	// Queued is how long the job waited for executors' vcores before its
	// first tasks were placed (a pipelined job needs all of them at
	// once), and Admission says so in words ("" when placed at once).
	Queued    time.Duration
	Admission string
}

// Stats returns the query's statistics, or nil for statements that ran no
// query.
func (r *Result) Stats() *Stats { return r.stats }

// Next returns the next batch, or io.EOF. The caller releases each batch.
func (r *Result) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if r.stream == nil {
		return nil, io.EOF
	}
	b, err := r.stream.Next(ctx)
	if msg, ok := expr.UserMessage(err); ok {
		// In process, as on the cluster, an error of the query's data
		// reads as what went wrong, not as the operators it went through.
		return nil, &dataError{msg: msg, err: err}
	}
	return b, err
}

// dataError is an error of the query itself on its data, as the user sees
// it; the error chain under it stays reachable for errors.Is and As.
type dataError struct {
	msg string
	err error
}

func (e *dataError) Error() string { return e.msg }

func (e *dataError) Unwrap() error { return e.err }

// ErrorDetail is the whole error chain: the operators it went through.
func (e *dataError) ErrorDetail() string { return e.err.Error() }

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

// renamed presents a stream's batches under another schema (same types).
type renamed struct {
	physical.Stream
	schema *arrow.Schema
}

func (r *renamed) Next(ctx context.Context) (arrow.RecordBatch, error) {
	b, err := r.Stream.Next(ctx)
	if err != nil {
		return nil, err
	}
	out := array.NewRecordBatch(r.schema, b.Columns(), b.NumRows())
	b.Release()
	return out, nil
}
