package physical

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// Union concatenates its inputs' partitions: output partition i is input
// partition (input, p) in order. Inputs must have the same column types;
// column names come from the first input.
type Union struct {
	inputs []Operator
	schema *arrow.Schema
}

// NewUnion returns a Union of inputs (at least one).
func NewUnion(inputs []Operator) *Union {
	return &Union{inputs: inputs, schema: inputs[0].Schema()}
}

// Schema implements Operator.
func (u *Union) Schema() *arrow.Schema { return u.schema }

// Children implements Operator.
func (u *Union) Children() []Operator { return u.inputs }

// OutputPartitioning implements Operator.
func (u *Union) OutputPartitioning() Partitioning {
	n := 0
	for _, in := range u.inputs {
		n += in.OutputPartitioning().Count
	}
	return Partitioning{Kind: PartUnknown, Count: n}
}

func (u *Union) String() string { return "Union" }

// Execute implements Operator.
func (u *Union) Execute(ctx context.Context, partition int, tc *TaskContext) (Stream, error) {
	p := partition
	for i, in := range u.inputs {
		n := in.OutputPartitioning().Count
		if p >= n {
			p -= n
			continue
		}
		if err := u.checkSchema(in.Schema()); err != nil {
			return nil, fmt.Errorf("union input %d: %w", i, err)
		}
		s, err := in.Execute(ctx, p, tc)
		if err != nil {
			return nil, err
		}
		if i == 0 {
			return s, nil
		}
		return &unionStream{in: s, schema: u.schema}, nil
	}
	return nil, fmt.Errorf("union: partition %d out of range", partition)
}

func (u *Union) checkSchema(s *arrow.Schema) error {
	if len(s.Fields()) != len(u.schema.Fields()) {
		return fmt.Errorf("has %d columns, expected %d", len(s.Fields()), len(u.schema.Fields()))
	}
	for i, f := range s.Fields() {
		if want := u.schema.Field(i).Type; !arrow.TypeEqual(f.Type, want) {
			return fmt.Errorf("column %d has type %s, expected %s", i, f.Type, want)
		}
	}
	return nil
}

// unionStream relabels a later input's batches with the union's schema.
type unionStream struct {
	in     Stream
	schema *arrow.Schema
}

func (s *unionStream) Next(ctx context.Context) (arrow.RecordBatch, error) {
	b, err := s.in.Next(ctx)
	if err != nil {
		return nil, err
	}
	out := array.NewRecordBatch(s.schema, b.Columns(), b.NumRows())
	b.Release()
	return out, nil
}

func (s *unionStream) Close() {
	if s.in != nil {
		s.in.Close()
		s.in = nil
	}
}
