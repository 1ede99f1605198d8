package physical

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"sluice/physical/expr"
	"sluice/physical/kernels"
)

// Expand replicates every input row once per grouping set (GROUP BY
// GROUPING SETS, ROLLUP, CUBE), for the ordinary hash aggregate above it to
// group by the key columns and the grouping id. Output: the input columns,
// then one column per key (the key's value in the copies of the sets that
// hold it, NULL in the others), then the int64 grouping id, the index of
// the copy's set. Each input batch becomes one output batch per set.
type Expand struct {
	input    Operator
	keys     []expr.Expr
	keyNames []string
	sets     [][]int
	schema   *arrow.Schema
}

// NewExpand validates the sets (indices into keys) and computes the output
// schema; the grouping id column is named gidName.
func NewExpand(input Operator, keys []expr.Expr, keyNames []string, sets [][]int, gidName string) (*Expand, error) {
	if len(keyNames) != len(keys) {
		return nil, fmt.Errorf("expand: %d names for %d keys", len(keyNames), len(keys))
	}
	if len(sets) == 0 {
		return nil, errors.New("expand: no grouping sets")
	}
	for _, s := range sets {
		for _, k := range s {
			if k < 0 || k >= len(keys) {
				return nil, fmt.Errorf("expand: grouping set refers to key %d of %d", k, len(keys))
			}
		}
	}
	in := input.Schema()
	fields := append([]arrow.Field(nil), in.Fields()...)
	for i, k := range keys {
		fields = append(fields, arrow.Field{Name: keyNames[i], Type: k.DataType(), Nullable: true})
	}
	fields = append(fields, arrow.Field{Name: gidName, Type: arrow.PrimitiveTypes.Int64})
	return &Expand{input: input, keys: keys, keyNames: keyNames, sets: sets, schema: arrow.NewSchema(fields, nil)}, nil
}

// Keys are the grouping key expressions over the input.
func (e *Expand) Keys() []expr.Expr { return e.keys }

// KeyNames are the key columns' names.
func (e *Expand) KeyNames() []string { return e.keyNames }

// Sets are the grouping sets, as indices into Keys.
func (e *Expand) Sets() [][]int { return e.sets }

// GidName is the grouping id column's name.
func (e *Expand) GidName() string { return e.schema.Field(e.schema.NumFields() - 1).Name }

// Schema implements Operator.
func (e *Expand) Schema() *arrow.Schema { return e.schema }

// Children implements Operator.
func (e *Expand) Children() []Operator { return []Operator{e.input} }

// OutputPartitioning implements Operator: the input's partitions; rows stay
// in their partition, so a hash partitioning on input columns still holds.
func (e *Expand) OutputPartitioning() Partitioning { return e.input.OutputPartitioning() }

func (e *Expand) String() string {
	sets := make([]string, len(e.sets))
	for i, s := range e.sets {
		ks := make([]string, len(s))
		for j, k := range s {
			ks[j] = e.keys[k].String()
		}
		sets[i] = "(" + strings.Join(ks, ", ") + ")"
	}
	return "Expand: sets=[" + strings.Join(sets, ", ") + "]"
}

// Execute implements Operator.
func (e *Expand) Execute(ctx context.Context, partition int, tc *TaskContext) (Stream, error) {
	in, err := ExecuteOp(ctx, e.input, partition, tc)
	if err != nil {
		return nil, fmt.Errorf("expand: %w", err)
	}
	return &expandStream{op: e, in: in, tc: tc}, nil
}

type expandStream struct {
	op *Expand
	in Stream
	tc *TaskContext
	// The batch being expanded, its evaluated keys and the next set.
	cur  arrow.RecordBatch
	keys []arrow.Array
	next int
}

// Next implements Stream.
func (s *expandStream) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if s.in == nil {
		return nil, errors.New("expand: stream closed")
	}
	for s.cur == nil {
		b, err := s.in.Next(ctx)
		if err != nil {
			return nil, err
		}
		if b.NumRows() == 0 {
			b.Release()
			continue
		}
		keys, err := kernels.EvalAll(s.op.keys, b, s.tc.Alloc)
		if err != nil {
			b.Release()
			return nil, fmt.Errorf("expand: %w", err)
		}
		for i, k := range keys {
			if want := s.op.keys[i].DataType(); !arrow.TypeEqual(k.DataType(), want) {
				if k.DataType().ID() != arrow.NULL {
					b.Release()
					kernels.ReleaseAll(keys)
					return nil, fmt.Errorf("expand: key %s evaluated to %s, expected %s", s.op.keys[i], k.DataType(), want)
				}
				k.Release()
				keys[i] = array.MakeArrayOfNull(s.tc.Alloc, want, int(b.NumRows()))
			}
		}
		s.cur, s.keys, s.next = b, keys, 0
	}
	out := s.expand(s.op.sets[s.next], int64(s.next))
	s.next++
	if s.next == len(s.op.sets) {
		s.drop()
	}
	return out, nil
}

// expand builds the copy of the current batch for one grouping set.
func (s *expandStream) expand(set []int, gid int64) arrow.RecordBatch {
	n := int(s.cur.NumRows())
	cols := make([]arrow.Array, 0, s.op.schema.NumFields())
	for _, c := range s.cur.Columns() {
		c.Retain()
		cols = append(cols, c)
	}
	in := make([]bool, len(s.keys))
	for _, k := range set {
		in[k] = true
	}
	for i, k := range s.keys {
		if in[i] {
			k.Retain()
			cols = append(cols, k)
		} else {
			cols = append(cols, array.MakeArrayOfNull(s.tc.Alloc, k.DataType(), n))
		}
	}
	b := array.NewInt64Builder(s.tc.Alloc)
	b.Reserve(n)
	for i := 0; i < n; i++ {
		b.UnsafeAppend(gid)
	}
	cols = append(cols, b.NewArray())
	b.Release()
	rb := array.NewRecordBatch(s.op.schema, cols, int64(n))
	kernels.ReleaseAll(cols)
	return rb
}

// drop releases the current batch and its keys.
func (s *expandStream) drop() {
	if s.cur != nil {
		s.cur.Release()
		kernels.ReleaseAll(s.keys)
		s.cur, s.keys = nil, nil
	}
}

// Close implements Stream.
func (s *expandStream) Close() {
	s.drop()
	if s.in != nil {
		s.in.Close()
		s.in = nil
	}
}
