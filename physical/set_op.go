package physical

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"sluice/physical/kernels"
	"sluice/physical/mempool"
	"sluice/plan"
)

// SetOp computes INTERSECT or EXCEPT, with or without ALL, of its two
// inputs, one partition at a time. Equal rows must meet in one partition:
// the planner hash-partitions both inputs by all their columns into the
// same number of partitions (or gives each a single partition).
//
// A partition first counts the rows of its right input per distinct row
// (NULLs equal, as GROUP BY has them), then streams its left input and
// keeps a row by how often its value was seen on the left so far (k, this
// row included) and how often on the right (n):
//
//	INTERSECT      k = 1 and n > 0
//	INTERSECT ALL  k <= n             (min(m, n) copies of m)
//	EXCEPT         k = 1 and n = 0
//	EXCEPT ALL     k > n              (max(m-n, 0) copies of m)
//
// Only the distinct rows are held (a group table and two counts each), never
// the rows themselves, and the left side streams: output rows are selected
// from the left batches as they arrive.
type SetOp struct {
	left, right Operator
	kind        plan.SetOpKind
	all         bool
	schema      *arrow.Schema
}

var _ Operator = (*SetOp)(nil)

// NewSetOp returns the set operation of left and right, whose column types
// must equal schema's (the output names are schema's).
func NewSetOp(left, right Operator, kind plan.SetOpKind, all bool, schema *arrow.Schema) (*SetOp, error) {
	for side, in := range []Operator{left, right} {
		s := in.Schema()
		if s.NumFields() != schema.NumFields() {
			return nil, fmt.Errorf("set operation: input %d has %d columns, want %d", side+1, s.NumFields(), schema.NumFields())
		}
		for i, f := range s.Fields() {
			if !arrow.TypeEqual(f.Type, schema.Field(i).Type) {
				return nil, fmt.Errorf("set operation: input %d column %d is %s, want %s", side+1, i+1, f.Type, schema.Field(i).Type)
			}
			if _, err := newGroupKeyStore(f.Type); err != nil {
				return nil, fmt.Errorf("set operation: %w", err)
			}
		}
	}
	if l, r := left.OutputPartitioning().Count, right.OutputPartitioning().Count; l != r {
		return nil, fmt.Errorf("set operation: inputs have %d and %d partitions", l, r)
	}
	return &SetOp{left: left, right: right, kind: kind, all: all, schema: schema}, nil
}

// Schema implements Operator.
func (s *SetOp) Schema() *arrow.Schema { return s.schema }

// Children implements Operator.
func (s *SetOp) Children() []Operator { return []Operator{s.left, s.right} }

// OutputPartitioning implements Operator: the left input's partitions,
// and its hash partitioning: every output row is a left row, in the
// left's column positions.
func (s *SetOp) OutputPartitioning() Partitioning {
	in := s.left.OutputPartitioning()
	if in.Kind == PartHash {
		return in
	}
	return Partitioning{Kind: PartUnknown, Count: in.Count}
}

// Kind is INTERSECT or EXCEPT.
func (s *SetOp) Kind() plan.SetOpKind { return s.kind }

// All reports whether duplicates count (INTERSECT ALL, EXCEPT ALL).
func (s *SetOp) All() bool { return s.all }

func (s *SetOp) String() string {
	name := "Intersect"
	if s.kind == plan.SetExcept {
		name = "Except"
	}
	if s.all {
		name += " All"
	}
	return "SetOp: " + name
}

// Execute implements Operator. The left input starts at once; the right
// one is read whole on the first Next.
func (s *SetOp) Execute(ctx context.Context, partition int, tc *TaskContext) (Stream, error) {
	types := make([]arrow.DataType, s.schema.NumFields())
	for i, f := range s.schema.Fields() {
		types[i] = f.Type
	}
	table, err := newGroupTable(types)
	if err != nil {
		return nil, fmt.Errorf("set operation: %w", err)
	}
	left, err := ExecuteOp(ctx, s.left, partition, tc)
	if err != nil {
		return nil, fmt.Errorf("set operation left input: %w", err)
	}
	return &setOpStream{
		op: s, tc: tc, partition: partition, left: left, table: table,
		res: tc.NewReservation(ctx, fmt.Sprintf("SetOp[%d]", partition)),
	}, nil
}

type setOpStream struct {
	op        *SetOp
	tc        *TaskContext
	partition int
	left      Stream // nil once drained or closed
	table     *groupTable
	res       *mempool.Reservation
	right     []int64 // right-side count per group
	seen      []int64 // left-side count so far per group
	gids      []int32
	idx       []int32
	built     bool
	closed    bool
}

// Next implements Stream.
func (s *setOpStream) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if s.closed {
		return nil, errors.New("set operation: stream closed")
	}
	if !s.built {
		if err := s.build(ctx); err != nil {
			return nil, err
		}
		s.built = true
		if s.op.kind == plan.SetIntersect && len(s.right) == 0 {
			// Nothing can be in common with an empty right side.
			s.closeLeft()
		}
	}
	for s.left != nil {
		b, err := s.left.Next(ctx)
		if err == io.EOF {
			s.closeLeft()
			break
		}
		if err != nil {
			return nil, err
		}
		out, err := s.keep(b)
		b.Release()
		if err != nil {
			return nil, err
		}
		if out != nil {
			return out, nil
		}
	}
	return nil, io.EOF
}

// build counts the rows of the right input per group.
func (s *setOpStream) build(ctx context.Context) error {
	in, err := ExecuteOp(ctx, s.op.right, s.partition, s.tc)
	if err != nil {
		return fmt.Errorf("set operation right input: %w", err)
	}
	defer in.Close()
	for {
		b, err := in.Next(ctx)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		gids, err := s.lookup(b)
		if err != nil {
			b.Release()
			return err
		}
		for _, g := range gids {
			s.right[g]++
		}
		b.Release()
	}
}

// lookup finds the group of every row of b, growing the counts (and the
// reservation) for new groups.
func (s *setOpStream) lookup(b arrow.RecordBatch) ([]int32, error) {
	n := int(b.NumRows())
	if cap(s.gids) < n {
		s.gids = make([]int32, n)
	}
	gids := s.gids[:n]
	if err := s.table.lookup(b.Columns(), n, gids, nil); err != nil {
		return nil, fmt.Errorf("set operation: %w", err)
	}
	for len(s.right) < s.table.numGroups() {
		s.right = append(s.right, 0)
		s.seen = append(s.seen, 0)
	}
	size := s.table.memSize() + int64(cap(s.right)+cap(s.seen))*8
	if grow := size - s.res.Size(); grow > 0 {
		if err := s.res.Grow(grow); err != nil {
			return nil, fmt.Errorf("set operation: %w", err)
		}
	}
	return gids, nil
}

// keep returns the rows of left batch b that the set operation outputs, or
// nil when there are none.
func (s *setOpStream) keep(b arrow.RecordBatch) (arrow.RecordBatch, error) {
	gids, err := s.lookup(b)
	if err != nil {
		return nil, err
	}
	idx := s.idx[:0]
	for i, g := range gids {
		s.seen[g]++
		k, n := s.seen[g], s.right[g]
		var ok bool
		switch {
		case s.op.kind == plan.SetIntersect && s.op.all:
			ok = k <= n
		case s.op.kind == plan.SetIntersect:
			ok = k == 1 && n > 0
		case s.op.all:
			ok = k > n
		default:
			ok = k == 1 && n == 0
		}
		if ok {
			idx = append(idx, int32(i))
		}
	}
	s.idx = idx
	if len(idx) == 0 {
		return nil, nil
	}
	sel, err := kernels.SelectRows(s.tc.Alloc, b, idx)
	if err != nil {
		return nil, err
	}
	defer sel.Release()
	return array.NewRecordBatch(s.op.schema, sel.Columns(), sel.NumRows()), nil
}

func (s *setOpStream) closeLeft() {
	if s.left != nil {
		s.left.Close()
		s.left = nil
	}
}

// Close implements Stream.
func (s *setOpStream) Close() {
	if s.closed {
		return
	}
	s.closed = true
	s.closeLeft()
	s.table, s.right, s.seen = nil, nil, nil
	s.res.Free()
}
