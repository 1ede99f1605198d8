package physical

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// Union concatenates its inputs' partitions. Unfolded, output partition i
// is input partition (input, p) in order. Folded to k partitions (fewer than
// the inputs have together), output partition i merges every input partition
// whose overall index j has j % k == i, driving them concurrently: a
// pipelined job runs every partition of a stage at once, so a union of many
// small inputs must not need a vcore per input. Inputs must have the same
// column types; column names come from the first input.
type Union struct {
	inputs []Operator
	schema *arrow.Schema
	// folded is the output partition count when the inputs' partitions are
	// merged into fewer; 0 when they are not.
	folded int
}

// NewUnion returns a Union of inputs (at least one) with every input
// partition its own output partition.
func NewUnion(inputs []Operator) *Union {
	return &Union{inputs: inputs, schema: inputs[0].Schema()}
}

// NewFoldedUnion returns a Union of inputs with at most partitions output
// partitions (see Union); partitions < 1 means no limit.
func NewFoldedUnion(inputs []Operator, partitions int) *Union {
	u := NewUnion(inputs)
	if partitions >= 1 && partitions < u.inputPartitions() {
		u.folded = partitions
	}
	return u
}

// Folded returns the output partition count the inputs are merged into, or 0
// when every input partition is its own output partition.
func (u *Union) Folded() int { return u.folded }

// Schema implements Operator.
func (u *Union) Schema() *arrow.Schema { return u.schema }

// Children implements Operator.
func (u *Union) Children() []Operator { return u.inputs }

func (u *Union) inputPartitions() int {
	n := 0
	for _, in := range u.inputs {
		n += in.OutputPartitioning().Count
	}
	return n
}

// OutputPartitioning implements Operator.
func (u *Union) OutputPartitioning() Partitioning {
	if u.folded > 0 {
		return Partitioning{Kind: PartUnknown, Count: u.folded}
	}
	return Partitioning{Kind: PartUnknown, Count: u.inputPartitions()}
}

func (u *Union) String() string {
	if u.folded > 0 {
		return fmt.Sprintf("Union: %d partitions folded into %d", u.inputPartitions(), u.folded)
	}
	return "Union"
}

// Execute implements Operator.
func (u *Union) Execute(ctx context.Context, partition int, tc *TaskContext) (Stream, error) {
	if u.folded > 0 {
		return u.executeFolded(ctx, partition, tc)
	}
	return u.executeInput(ctx, partition, tc)
}

// executeInput executes the union's j-th input partition, counted across all
// inputs in order.
func (u *Union) executeInput(ctx context.Context, j int, tc *TaskContext) (Stream, error) {
	p := j
	for i, in := range u.inputs {
		n := in.OutputPartitioning().Count
		if p >= n {
			p -= n
			continue
		}
		if err := u.checkSchema(in.Schema()); err != nil {
			return nil, fmt.Errorf("union input %d: %w", i, err)
		}
		s, err := ExecuteOp(ctx, in, p, tc)
		if err != nil {
			return nil, err
		}
		if i == 0 {
			return s, nil
		}
		return &unionStream{in: s, schema: u.schema}, nil
	}
	return nil, fmt.Errorf("union: partition %d out of range", j)
}

// executeFolded merges input partitions partition, partition+k, ... (k the
// folded count), each driven by its own goroutine as CoalescePartitions
// drives its inputs.
func (u *Union) executeFolded(ctx context.Context, partition int, tc *TaskContext) (Stream, error) {
	if partition < 0 || partition >= u.folded {
		return nil, fmt.Errorf("union: partition %d out of range", partition)
	}
	var js []int
	for j := partition; j < u.inputPartitions(); j += u.folded {
		js = append(js, j)
	}
	if len(js) == 1 {
		return u.executeInput(ctx, js[0], tc)
	}
	return mergePartitions(ctx, unionInputs{u}, js, tc), nil
}

// unionInputs presents a union's input partitions, counted across all inputs,
// as the partitions of one operator, for mergePartitions.
type unionInputs struct{ u *Union }

func (w unionInputs) Schema() *arrow.Schema { return w.u.schema }
func (w unionInputs) Children() []Operator  { return w.u.inputs }
func (w unionInputs) OutputPartitioning() Partitioning {
	return Partitioning{Kind: PartUnknown, Count: w.u.inputPartitions()}
}
func (w unionInputs) String() string { return "Union inputs" }
func (w unionInputs) Execute(ctx context.Context, j int, tc *TaskContext) (Stream, error) {
	return w.u.executeInput(ctx, j, tc)
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
