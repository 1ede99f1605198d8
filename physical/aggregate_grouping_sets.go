package physical

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"

	"sluice/physical/expr"
	"sluice/physical/kernels"
	"sluice/physical/mempool"
	"sluice/physical/spill"
	"sluice/plan"
)

// A partial aggregate over an Expand (GROUPING SETS, ROLLUP, CUBE) is
// computed set by set: the largest set from the Expand's input, every other
// set from the partial results of a set that holds all of its keys, which
// has at most as many rows and usually far fewer. The plan is unchanged
// (HashAggregate(Partial) over Expand, the same output layout); only its
// execution is. Replicating every input row once per set, as the Expand
// alone would, hashes each input row once per set: TPC-DS q67 rolls 112,000
// finest groups up over nine sets of up to eight keys, a million rows
// hashed on nine key columns, where the cascade hashes each set's parent's
// groups on the set's own keys only.
//
// It applies when each aggregate's partial state can be aggregated again
// into the same state: SUM (a sum of sums), MIN, MAX, COUNT and COUNT(*)
// (a sum of counts), without DISTINCT, ORDER BY or a second argument; when
// the arguments read the Expand's input columns only; when the group keys
// are the Expand's key columns and grouping id, in order; and when one set
// holds the keys of every other.

// groupingSetsCascade is the execution plan of a cascading partial
// aggregate: the order sets are computed in and each one's parent.
type groupingSetsCascade struct {
	expand *Expand
	order  []int // set indices, the root first
	parent []int // per set index: the set it is computed from, -1 for the root
	// stateCols are the output columns of each aggregate's state.
	stateCols []int
	// rootUnique: the Expand's input is an aggregate whose groups the
	// root set's keys include, so every input row is its own root group,
	// and every aggregate's state is its argument column as it is; the
	// root's partial groups are then a projection of the input.
	rootUnique bool
}

// groupingSetsCascadePlan reports whether h is computed set by set, and how.
func (h *HashAggregate) groupingSetsCascadePlan() (*groupingSetsCascade, bool) {
	e, ok := h.input.(*Expand)
	if !ok || h.mode != AggPartial || len(e.sets) < 2 || len(h.grandTotals) > 0 {
		return nil, false
	}
	nIn, k := e.input.Schema().NumFields(), len(e.keys)
	if len(h.groupBy) != k+1 {
		return nil, false
	}
	for i, g := range h.groupBy {
		c, ok := g.(*expr.Column)
		if !ok || c.Index != nIn+i {
			return nil, false
		}
	}
	c := &groupingSetsCascade{expand: e}
	col := k + 1
	for _, a := range h.aggs {
		switch a.Func {
		case plan.AggSum, plan.AggMin, plan.AggMax, plan.AggCount, plan.AggCountStar:
		default:
			return nil, false
		}
		if a.Distinct || a.Arg2 != nil || len(a.OrderBy) > 0 {
			return nil, false
		}
		if a.Arg != nil {
			for _, i := range expr.ColumnIndexes(a.Arg) {
				if i >= nIn {
					return nil, false
				}
			}
		}
		state := h.schema.Field(col).Type
		if _, err := cascadeAgg(a, col, state); err != nil {
			return nil, false
		}
		c.stateCols = append(c.stateCols, col)
		col++
	}
	if col != h.schema.NumFields() {
		return nil, false
	}
	// The root is the largest set; it must hold every other set's keys.
	c.order = make([]int, len(e.sets))
	for i := range c.order {
		c.order[i] = i
	}
	slices.SortStableFunc(c.order, func(a, b int) int { return len(e.sets[b]) - len(e.sets[a]) })
	root := c.order[0]
	if len(e.sets[root]) == 0 {
		return nil, false
	}
	c.rootUnique = rootRowsUnique(e, e.sets[root], h)
	c.parent = make([]int, len(e.sets))
	c.parent[root] = -1
	for j, s := range c.order[1:] {
		// The parent is the latest computed superset with the fewest keys
		// (a ROLLUP's sets then form a chain).
		best := -1
		for _, p := range c.order[:j+1] {
			if isSubset(e.sets[s], e.sets[p]) && (best < 0 || len(e.sets[p]) <= len(e.sets[best])) {
				best = p
			}
		}
		if best < 0 {
			return nil, false
		}
		c.parent[s] = best
	}
	return c, true
}

// rootRowsUnique reports whether the rows of e's input are distinct on the
// keys of set and h's states are its aggregates' argument columns unchanged:
// the input is a final (or single) aggregate without grand totals whose
// group columns are all among set's keys, and every aggregate is a SUM
// whose sum type is its argument's, a MIN or a MAX of an input column.
func rootRowsUnique(e *Expand, set []int, h *HashAggregate) bool {
	in, ok := e.input.(*HashAggregate)
	if !ok || (in.mode != AggFinal && in.mode != AggSingle) || len(in.grandTotals) > 0 {
		return false
	}
	covered := make([]bool, len(in.groupBy))
	for _, k := range set {
		if c, ok := e.keys[k].(*expr.Column); ok && c.Index < len(covered) {
			covered[c.Index] = true
		}
	}
	if slices.Contains(covered, false) {
		return false
	}
	for _, a := range h.aggs {
		c, ok := a.Arg.(*expr.Column)
		if !ok {
			return false
		}
		switch a.Func {
		case plan.AggMin, plan.AggMax:
		case plan.AggSum:
			if !arrow.TypeEqual(plan.SumType(c.Type), c.Type) {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// isSubset reports whether every key of a is in b.
func isSubset(a, b []int) bool {
	for _, k := range a {
		if !slices.Contains(b, k) {
			return false
		}
	}
	return true
}

// cascadeAgg is the aggregate that merges a's partial state, held in
// column col of type state, into the same state.
func cascadeAgg(a AggregateExpr, col int, state arrow.DataType) (AggregateExpr, error) {
	fn := a.Func
	if fn == plan.AggCount || fn == plan.AggCountStar {
		fn = plan.AggSum
	}
	out := AggregateExpr{Func: fn, Arg: &expr.Column{Index: col, Name: a.Name, Type: state}, Name: a.Name}
	out.Type = aggResultType(out)
	if !arrow.TypeEqual(out.Type, state) {
		return out, fmt.Errorf("hash aggregate: %s's state %s does not merge into itself", a, state)
	}
	return out, nil
}

// executeGroupingSets starts the cascade c for h's partition.
func (h *HashAggregate) executeGroupingSets(ctx context.Context, c *groupingSetsCascade, partition int, tc *TaskContext) (Stream, error) {
	children := make([]int, len(c.parent))
	for _, p := range c.parent {
		if p >= 0 {
			children[p]++
		}
	}
	return &groupingSetsStream{
		op: h, c: c, partition: partition, tc: tc,
		held: make([]heldSet, len(c.parent)), children: children,
		res: tc.NewReservation(ctx, fmt.Sprintf("HashAggregate[%d] grouping sets", partition)),
	}, nil
}

// groupingSetsStream computes one set at a time (in c.order), returning its
// partial groups as they come and holding them while sets computed from
// them remain.
type groupingSetsStream struct {
	op        *HashAggregate
	c         *groupingSetsCascade
	partition int
	tc        *TaskContext
	res       *mempool.Reservation

	next     int       // index into c.order of the next set to start
	set      int       // the set being computed, -1 for none
	cur      Stream    // its aggregate
	held     []heldSet // per set: its output, while children remain
	children []int     // per set: sets not yet computed from it
	closed   bool
}

// Next implements Stream.
func (s *groupingSetsStream) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if s.closed {
		return nil, errors.New("hash aggregate: stream closed")
	}
	for {
		if s.cur == nil {
			if s.next == len(s.c.order) {
				return nil, io.EOF
			}
			if err := s.start(ctx, s.c.order[s.next]); err != nil {
				return nil, err
			}
			s.next++
			continue
		}
		b, err := s.cur.Next(ctx)
		if err == io.EOF {
			s.finishSet()
			continue
		}
		if err != nil {
			return nil, err
		}
		if b.NumRows() == 0 {
			b.Release()
			continue
		}
		out, err := s.widen(b)
		b.Release()
		if err != nil {
			return nil, err
		}
		if s.children[s.set] > 0 {
			if err := s.hold(out); err != nil {
				out.Release()
				return nil, fmt.Errorf("hash aggregate: grouping set %d: %w", s.set, err)
			}
		}
		return out, nil
	}
}

// start begins computing set: from the Expand's input for the root, else
// from its parent's held output.
func (s *groupingSetsStream) start(ctx context.Context, set int) error {
	e, h := s.c.expand, s.op
	keys := e.sets[set]
	names := make([]string, len(keys))
	for i, k := range keys {
		names[i] = h.groupNames[k]
	}
	var agg *HashAggregate
	var err error
	p := s.c.parent[set]
	if p < 0 && s.c.rootUnique {
		exprs := make([]expr.Expr, 0, len(keys)+len(h.aggs))
		for _, k := range keys {
			exprs = append(exprs, e.keys[k])
		}
		for _, a := range h.aggs {
			exprs = append(exprs, a.Arg)
		}
		cur, err := NewProjection(e.input, exprs, make([]string, len(exprs))).Execute(ctx, s.partition, s.tc)
		if err != nil {
			return err
		}
		s.set, s.cur = set, cur
		return nil
	}
	if p < 0 {
		groupBy := make([]expr.Expr, len(keys))
		for i, k := range keys {
			groupBy[i] = e.keys[k]
		}
		agg, err = NewHashAggregate(e.input, AggPartial, groupBy, names, h.aggs)
	} else {
		if s.held[p].rows == 0 && len(keys) == 0 {
			// No groups above: an empty set over no rows has no partial
			// row either (the final aggregate makes its grand total).
			s.release(p)
			return nil
		}
		groupBy := make([]expr.Expr, len(keys))
		for i, k := range keys {
			groupBy[i] = &expr.Column{Index: k, Name: h.groupNames[k], Type: h.schema.Field(k).Type}
		}
		aggs := make([]AggregateExpr, len(h.aggs))
		for i, a := range h.aggs {
			col := s.c.stateCols[i]
			if aggs[i], err = cascadeAgg(a, col, h.schema.Field(col).Type); err != nil {
				return err
			}
		}
		if f := s.held[p].file; f != nil {
			if err := f.Finish(); err != nil {
				return err
			}
		}
		src := &heldBatches{schema: h.schema, batches: s.held[p].batches, file: s.held[p].file}
		agg, err = NewHashAggregate(src, AggPartial, groupBy, names, aggs)
	}
	if err != nil {
		return fmt.Errorf("hash aggregate: grouping set %d: %w", set, err)
	}
	cur, err := agg.Execute(ctx, s.partition, s.tc)
	if err != nil {
		return err
	}
	s.set, s.cur = set, cur
	return nil
}

// finishSet closes the current set's aggregate and releases its parent's
// output once no set is left to compute from it.
func (s *groupingSetsStream) finishSet() {
	s.cur.Close()
	s.cur = nil
	if p := s.c.parent[s.set]; p >= 0 {
		s.release(p)
	}
	s.set = -1
}

// release counts one child of set p done, dropping p's output after the last.
func (s *groupingSetsStream) release(p int) {
	s.children[p]--
	if s.children[p] > 0 {
		return
	}
	s.res.Shrink(s.held[p].size)
	s.held[p].release()
}

// heldSet is a set's output kept for the sets computed from it: in memory,
// reserved, or, once the reservation is refused in a task that may spill,
// in a spill file.
type heldSet struct {
	batches []arrow.RecordBatch
	size    int64 // reserved for batches
	file    *spill.File
	rows    int64
}

func (h *heldSet) release() {
	kernels.ReleaseAll(h.batches)
	h.batches, h.size = nil, 0
	if h.file != nil {
		h.file.Close()
		h.file = nil
	}
}

// hold keeps b (the caller keeps its reference) as the current set's
// output: in memory while the reservation grows, else in a spill file,
// where the batches held so far go too.
func (s *groupingSetsStream) hold(b arrow.RecordBatch) error {
	h := &s.held[s.set]
	h.rows += b.NumRows()
	if h.file == nil {
		size := kernels.BatchBytes(b)
		err := s.res.Grow(size)
		if err == nil {
			b.Retain()
			h.batches = append(h.batches, b)
			h.size += size
			return nil
		}
		if !canSpill(s.tc, err) {
			return err
		}
		f, err := spill.NewFile(s.tc.SpillDir, s.op.schema, s.tc.Alloc)
		if err != nil {
			return err
		}
		h.file = f
		for _, old := range h.batches {
			if err := f.Write(old); err != nil {
				return err
			}
		}
		kernels.ReleaseAll(h.batches)
		h.batches = nil
		s.res.Shrink(h.size)
		h.size = 0
	}
	return h.file.Write(b)
}

// widen turns one of the current set's aggregate batches (its keys, then
// the states) into the output layout: every key column (NULL where the set
// lacks the key), the grouping id, the states.
func (s *groupingSetsStream) widen(b arrow.RecordBatch) (arrow.RecordBatch, error) {
	h, keys := s.op, s.c.expand.sets[s.set]
	n := int(b.NumRows())
	k := len(s.c.expand.keys)
	cols := make([]arrow.Array, 0, h.schema.NumFields())
	defer func() { kernels.ReleaseAll(cols) }()
	for i := 0; i < k; i++ {
		if j := slices.Index(keys, i); j >= 0 {
			c := b.Column(j)
			c.Retain()
			cols = append(cols, c)
			continue
		}
		cols = append(cols, array.MakeArrayOfNull(s.tc.Alloc, h.schema.Field(i).Type, n))
	}
	gid, err := expr.ConstArray(plan.Literal{Typ: plan.Int64, Val: int64(s.set)}, n, s.tc.Alloc)
	if err != nil {
		return nil, err
	}
	cols = append(cols, gid)
	for _, c := range b.Columns()[len(keys):] {
		c.Retain()
		cols = append(cols, c)
	}
	return array.NewRecordBatch(h.schema, cols, int64(n)), nil
}

// Close implements Stream.
func (s *groupingSetsStream) Close() {
	if s.closed {
		return
	}
	s.closed = true
	if s.cur != nil {
		s.cur.Close()
		s.cur = nil
	}
	for i := range s.held {
		s.held[i].release()
	}
	s.res.Free()
}

// heldBatches is the operator a cascaded set's aggregate reads: its
// parent's output, held in memory or in a finished spill file (one
// partition; never planned or serialized).
type heldBatches struct {
	schema  *arrow.Schema
	batches []arrow.RecordBatch
	file    *spill.File
}

func (o *heldBatches) Schema() *arrow.Schema { return o.schema }
func (o *heldBatches) Children() []Operator  { return nil }
func (o *heldBatches) String() string        { return "HeldBatches" }
func (o *heldBatches) OutputPartitioning() Partitioning {
	return Partitioning{Kind: PartUnknown, Count: 1}
}

// Execute returns a stream of the batches, each retained for the reader;
// partition is ignored (the batches are the caller's partition's).
func (o *heldBatches) Execute(_ context.Context, _ int, tc *TaskContext) (Stream, error) {
	if o.file != nil {
		rd, err := ipc.NewReader(o.file.Reader(), ipc.WithAllocator(tc.Alloc), ipc.WithSchema(o.schema))
		if err != nil {
			return nil, fmt.Errorf("reading back spilled rows: %w", err)
		}
		return &spillStream{rd: rd}, nil
	}
	return &heldBatchesStream{batches: o.batches}, nil
}

type heldBatchesStream struct{ batches []arrow.RecordBatch }

func (s *heldBatchesStream) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(s.batches) == 0 {
		return nil, io.EOF
	}
	b := s.batches[0]
	s.batches = s.batches[1:]
	b.Retain()
	return b, nil
}

func (s *heldBatchesStream) Close() { s.batches = nil }
