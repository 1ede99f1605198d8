package physical

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"sluice/physical/kernels"
	"sluice/physical/mempool"
)

// RecursiveCTE evaluates WITH RECURSIVE's base UNION [ALL] recursive term
// (plan.RecursiveCTE) in one partition: it outputs the base term's rows,
// which become the working table; then, while the working table has rows,
// it executes the recursive term again, its WorkTableScan reading the
// working table, and outputs the rows it gives, which become the next
// working table. With distinct (UNION), rows equal to one already output
// are dropped. Both terms run inside the task, each time anew; the
// distributed planner never cuts a stage inside one. The working tables
// and the distinct rows' table are reserved in the task's pool.
type RecursiveCTE struct {
	name      string
	base      Operator
	recursive Operator
	distinct  bool
	workID    int64
	schema    *arrow.Schema
}

// NewRecursiveCTE returns the recursive CTE name over its two terms (each
// read as one partition) with output schema; workID names the
// WorkTableScan in recursive that reads the working table.
func NewRecursiveCTE(name string, base, recursive Operator, distinct bool, workID int64, schema *arrow.Schema) *RecursiveCTE {
	if base.OutputPartitioning().Count != 1 {
		base = NewCoalescePartitions(base)
	}
	if recursive.OutputPartitioning().Count != 1 {
		recursive = NewCoalescePartitions(recursive)
	}
	return &RecursiveCTE{name: name, base: base, recursive: recursive, distinct: distinct, workID: workID, schema: schema}
}

// Name, Distinct and WorkID describe the CTE (for the codec).
func (r *RecursiveCTE) Name() string   { return r.name }
func (r *RecursiveCTE) Distinct() bool { return r.distinct }
func (r *RecursiveCTE) WorkID() int64  { return r.workID }

// Schema implements Operator.
func (r *RecursiveCTE) Schema() *arrow.Schema { return r.schema }

// Children implements Operator: the base term, then the recursive term.
func (r *RecursiveCTE) Children() []Operator { return []Operator{r.base, r.recursive} }

// OutputPartitioning implements Operator.
func (r *RecursiveCTE) OutputPartitioning() Partitioning { return SinglePartition }

func (r *RecursiveCTE) String() string {
	op := "UNION ALL"
	if r.distinct {
		op = "UNION"
	}
	return fmt.Sprintf("RecursiveCTE: %s (%s)", r.name, op)
}

// workTableKey finds, in an Execute context, the working table of the
// recursive CTE with that work id.
type workTableKey struct{ id int64 }

// Execute implements Operator.
func (r *RecursiveCTE) Execute(ctx context.Context, partition int, tc *TaskContext) (Stream, error) {
	if partition != 0 {
		return nil, fmt.Errorf("recursive CTE %s: partition %d of 1", r.name, partition)
	}
	s := &recursiveCTEStream{op: r, tc: tc, res: tc.NewReservation(ctx, "RecursiveCTE "+r.name)}
	if r.distinct {
		types := make([]arrow.DataType, r.schema.NumFields())
		for i, f := range r.schema.Fields() {
			types[i] = f.Type
		}
		var err error
		if s.seen, err = newGroupTable(types); err != nil {
			return nil, fmt.Errorf("recursive CTE %s: UNION: %w", r.name, err)
		}
	}
	in, err := ExecuteOp(ctx, r.base, 0, tc)
	if err != nil {
		return nil, err
	}
	s.cur = in
	return s, nil
}

type recursiveCTEStream struct {
	op  *RecursiveCTE
	tc  *TaskContext
	res *mempool.Reservation
	cur Stream // the term being read
	// work is the working table the current recursive term reads; next
	// collects the rows output meanwhile. Their bytes are reserved.
	work, next           []arrow.RecordBatch
	workBytes, nextBytes int64
	seen                 *groupTable // UNION: every row output
	newRows              []bool
	gids                 []int32
	iterations           int
	closed               bool
}

// Next implements Stream.
func (s *recursiveCTEStream) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if s.closed {
		return nil, errors.New("recursive CTE: stream closed")
	}
	for s.cur != nil {
		b, err := s.cur.Next(ctx)
		if err == io.EOF {
			s.cur.Close()
			s.cur = nil
			if err := s.nextIteration(ctx); err != nil {
				return nil, err
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		if s.seen != nil {
			if b, err = s.dropSeen(b); err != nil {
				return nil, err
			}
		}
		if !b.Schema().Equal(s.op.schema) {
			// The terms' own names and nullability: the CTE's schema.
			out := array.NewRecordBatch(s.op.schema, b.Columns(), b.NumRows())
			b.Release()
			b = out
		}
		if b.NumRows() == 0 {
			b.Release()
			continue
		}
		n := kernels.BatchBytes(b)
		if err := s.res.Grow(n); err != nil {
			b.Release()
			return nil, fmt.Errorf("recursive CTE %s (iteration %d): %w", s.op.name, s.iterations, err)
		}
		b.Retain()
		s.next = append(s.next, b)
		s.nextBytes += n
		return b, nil
	}
	return nil, io.EOF
}

// nextIteration makes the rows output since the last iteration the
// working table and executes the recursive term over it, or ends the CTE
// when there are none.
func (s *recursiveCTEStream) nextIteration(ctx context.Context) error {
	kernels.ReleaseAll(s.work)
	s.res.Shrink(s.workBytes)
	s.work, s.workBytes = s.next, s.nextBytes
	s.next, s.nextBytes = nil, 0
	if len(s.work) == 0 {
		return nil
	}
	s.iterations++
	wctx := context.WithValue(ctx, workTableKey{s.op.workID}, s.work)
	in, err := ExecuteOp(wctx, s.op.recursive, 0, s.tc)
	if err != nil {
		return err
	}
	s.cur = in
	return nil
}

// dropSeen returns b without the rows already output (or repeated within
// b), recording the others as output; b is released.
func (s *recursiveCTEStream) dropSeen(b arrow.RecordBatch) (arrow.RecordBatch, error) {
	defer b.Release()
	n := int(b.NumRows())
	s.gids = growSlice(s.gids[:0], n)[:n]
	s.newRows = growSlice(s.newRows[:0], n)[:n]
	clear(s.newRows)
	before := s.seen.memSize()
	if err := s.seen.lookup(b.Columns(), n, s.gids, s.newRows); err != nil {
		return nil, fmt.Errorf("recursive CTE %s: UNION: %w", s.op.name, err)
	}
	if grow := s.seen.memSize() - before; grow > 0 {
		if err := s.res.Grow(grow); err != nil {
			return nil, fmt.Errorf("recursive CTE %s (iteration %d): %w", s.op.name, s.iterations, err)
		}
	}
	keep := make([]int32, 0, n)
	for i, isNew := range s.newRows {
		if isNew {
			keep = append(keep, int32(i))
		}
	}
	if len(keep) == n {
		b.Retain()
		return b, nil
	}
	cols := make([]arrow.Array, b.NumCols())
	for i, c := range b.Columns() {
		t, err := kernels.TakeArray(s.tc.Alloc, c, keep)
		if err != nil {
			kernels.ReleaseAll(cols[:i])
			return nil, fmt.Errorf("recursive CTE %s: %w", s.op.name, err)
		}
		cols[i] = t
	}
	out := array.NewRecordBatch(b.Schema(), cols, int64(len(keep)))
	kernels.ReleaseAll(cols)
	return out, nil
}

// Close implements Stream.
func (s *recursiveCTEStream) Close() {
	if s.closed {
		return
	}
	s.closed = true
	if s.cur != nil {
		s.cur.Close()
	}
	kernels.ReleaseAll(s.work)
	kernels.ReleaseAll(s.next)
	s.work, s.next = nil, nil
	if s.seen != nil {
		s.seen.releaseSlots()
	}
	s.res.Free()
}

// WorkTableScan reads the working table of the RecursiveCTE with its work
// id, which executes it with that table in the Execute context.
type WorkTableScan struct {
	name   string
	workID int64
	schema *arrow.Schema
}

// NewWorkTableScan returns the scan of recursive CTE name's working table.
func NewWorkTableScan(name string, workID int64, schema *arrow.Schema) *WorkTableScan {
	return &WorkTableScan{name: name, workID: workID, schema: schema}
}

// Name and WorkID describe the scan (for the codec).
func (w *WorkTableScan) Name() string  { return w.name }
func (w *WorkTableScan) WorkID() int64 { return w.workID }

// Schema implements Operator.
func (w *WorkTableScan) Schema() *arrow.Schema { return w.schema }

// Children implements Operator.
func (w *WorkTableScan) Children() []Operator { return nil }

// OutputPartitioning implements Operator.
func (w *WorkTableScan) OutputPartitioning() Partitioning { return SinglePartition }

func (w *WorkTableScan) String() string { return "WorkTableScan: " + w.name }

// Execute implements Operator.
func (w *WorkTableScan) Execute(ctx context.Context, partition int, tc *TaskContext) (Stream, error) {
	work, ok := ctx.Value(workTableKey{w.workID}).([]arrow.RecordBatch)
	if !ok {
		return nil, fmt.Errorf("internal: working table of recursive CTE %s read outside its recursive term", w.name)
	}
	if partition != 0 {
		return nil, fmt.Errorf("working table of %s: partition %d of 1", w.name, partition)
	}
	batches := slices.Clone(work) // the stream clears its copy as it goes
	for _, b := range batches {
		b.Retain()
	}
	return &workTableStream{batches: batches, schema: w.schema}, nil
}

// workTableStream returns the working table's batches, under the scan's
// schema (its column names are the reference's).
type workTableStream struct {
	batches []arrow.RecordBatch
	schema  *arrow.Schema
	i       int
}

func (s *workTableStream) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if s.i >= len(s.batches) {
		return nil, io.EOF
	}
	b := s.batches[s.i]
	s.batches[s.i] = nil
	s.i++
	out := array.NewRecordBatch(s.schema, b.Columns(), b.NumRows())
	b.Release()
	return out, nil
}

func (s *workTableStream) Close() {
	for _, b := range s.batches[s.i:] {
		if b != nil {
			b.Release()
		}
	}
	s.i = len(s.batches)
}
