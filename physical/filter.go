package physical

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"sluice/physical/expr"
	"sluice/physical/kernels"
)

// Filter keeps the rows where its predicate is true; NULL counts as false.
// Batches with no surviving row are dropped, and a batch whose rows all pass
// is passed through without copying.
type Filter struct {
	input Operator
	pred  expr.Expr
}

// NewFilter returns a Filter of input by pred, a boolean expression.
func NewFilter(input Operator, pred expr.Expr) *Filter {
	return &Filter{input: input, pred: pred}
}

// Predicate is the filter's condition.
func (f *Filter) Predicate() expr.Expr { return f.pred }

// Schema implements Operator.
func (f *Filter) Schema() *arrow.Schema { return f.input.Schema() }

// Children implements Operator.
func (f *Filter) Children() []Operator { return []Operator{f.input} }

// OutputPartitioning implements Operator: filtering keeps rows in place.
func (f *Filter) OutputPartitioning() Partitioning { return f.input.OutputPartitioning() }

func (f *Filter) String() string { return "Filter: " + f.pred.String() }

// Execute implements Operator.
func (f *Filter) Execute(ctx context.Context, partition int, tc *TaskContext) (Stream, error) {
	t := f.pred.DataType().ID()
	if t != arrow.BOOL && t != arrow.NULL {
		return nil, fmt.Errorf("filter predicate %s has type %s, not boolean", f.pred, f.pred.DataType())
	}
	var in Stream
	var err error
	var marked filteredMarker
	if scan, ok := f.input.(*ParquetScan); ok {
		// Let the scan drop rows early on what it can judge cheaply; the
		// batches it judged on the whole predicate come marked.
		in, err = executeScan(ctx, scan, partition, tc, expr.Conjuncts(f.pred))
		marked, _ = in.(filteredMarker)
	} else {
		in, err = ExecuteOp(ctx, f.input, partition, tc)
	}
	if err != nil {
		return nil, err
	}
	return &filterStream{op: f, in: in, tc: tc, marked: marked}, nil
}

// filteredMarker is implemented by the stream of a Parquet scan read by a
// Filter: lastFiltered reports that the scan evaluated the Filter's whole
// predicate on the batch Next returned last and kept exactly the rows
// where it is true, so the Filter passes it on untouched.
type filteredMarker interface {
	lastFiltered() bool
}

type filterStream struct {
	op     *Filter
	in     Stream
	tc     *TaskContext
	idx    []int32
	marked filteredMarker // in, when it is a scan given the predicate
}

func (s *filterStream) Next(ctx context.Context) (arrow.RecordBatch, error) {
	for {
		b, err := s.in.Next(ctx)
		if err != nil {
			return nil, err
		}
		if s.marked != nil && s.marked.lastFiltered() {
			return b, nil // the scan applied the whole predicate already
		}
		out, err := s.filter(b)
		b.Release()
		if err != nil {
			return nil, err
		}
		if out != nil {
			return out, nil
		}
	}
}

// filter returns b's passing rows, or nil when none pass.
func (s *filterStream) filter(b arrow.RecordBatch) (arrow.RecordBatch, error) {
	m, err := s.op.pred.Eval(b, s.tc.Alloc)
	if err != nil {
		return nil, fmt.Errorf("filter: evaluating %s: %w", s.op.pred, err)
	}
	defer m.Release()
	mask, ok := m.(*array.Boolean)
	if !ok {
		// A NULL-typed predicate is never true.
		if m.DataType().ID() == arrow.NULL {
			return nil, nil
		}
		return nil, fmt.Errorf("filter: predicate %s returned %s", s.op.pred, m.DataType())
	}
	s.idx = kernels.SelectionIndices(mask, s.idx)
	if len(s.idx) == 0 {
		return nil, nil
	}
	out, err := kernels.SelectRows(s.tc.Alloc, b, s.idx)
	if err != nil {
		return nil, fmt.Errorf("filter: %w", err)
	}
	return out, nil
}

func (s *filterStream) Close() {
	if s.in != nil {
		s.in.Close()
		s.in = nil
	}
}
