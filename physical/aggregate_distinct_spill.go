package physical

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"sluice/physical/expr"
	"sluice/physical/kernels"
	"sluice/physical/spill"
)

// A single aggregate whose every function is DISTINCT (count(DISTINCT x),
// sum(DISTINCT y), ...) holds a set of values per group, which has no
// partial state to merge. Refused memory, it spills rows instead: each
// group's distinct values become rows of its keys and one argument (the
// other arguments NULL, which DISTINCT aggregates skip; a value that is
// NULL itself keeps a group whose values are all NULL), split by key hash
// into the bucket files like states; every later input row goes to the
// files as its keys and arguments; and each bucket is aggregated alone by
// the same functions over those columns, one split level down. DISTINCT
// aggregates mixed with others, ordered string_agg and grand totals do not
// spill.

// distinctSpillable reports whether the aggregate can spill its groups as
// rows: a single aggregate with group keys whose every function is a
// one-argument DISTINCT aggregate, and that owes no grand-total rows.
func (s *hashAggStream) distinctSpillable() bool {
	if s.op.mode != AggSingle || len(s.op.groupBy) == 0 || len(s.op.grandTotals) > 0 || s.op.splitLevel >= maxSplitLevel {
		return false
	}
	for i, a := range s.op.aggs {
		if _, ok := s.accs[i].(*aggDistinct); !ok || !a.Distinct || a.Arg == nil || a.Arg2 != nil || len(a.OrderBy) > 0 {
			return false
		}
	}
	return true
}

// spillDistinct creates the bucket files of input rows, writes the
// distinct values of every group held to them and starts again with an
// empty table, which stays empty: every later row goes to the files.
func (s *hashAggStream) spillDistinct() error {
	nk := len(s.op.groupBy)
	fields := make([]arrow.Field, 0, nk+len(s.op.aggs))
	for i, g := range s.op.groupBy {
		fields = append(fields, arrow.Field{Name: s.op.groupNames[i], Type: g.DataType(), Nullable: true})
	}
	for i, a := range s.op.aggs {
		fields = append(fields, arrow.Field{Name: fmt.Sprintf("arg%d", i), Type: a.Arg.DataType(), Nullable: true})
	}
	s.bucketState = arrow.NewSchema(fields, nil)
	s.rawSpill = true
	s.buckets = make([]*spill.File, spillBuckets)
	for i := range s.buckets {
		var err error
		if s.buckets[i], err = spill.NewFile(s.tc.SpillDir, s.bucketState, s.tc.Alloc); err != nil {
			return fmt.Errorf("hash aggregate: %w", err)
		}
	}
	keys := s.table.buildKeys(0, s.table.numGroups(), s.tc.Alloc)
	defer kernels.ReleaseAll(keys)
	step := max(s.tc.BatchSize, 1)
	for i, acc := range s.accs {
		seen := acc.(*aggDistinct).seen
		n := seen.numGroups()
		for start := 0; start < n; start += step {
			if err := s.spillDistinctPairs(keys, i, seen.buildKeys(start, min(n, start+step), s.tc.Alloc)); err != nil {
				return err
			}
		}
	}
	table, accs, hist, err := s.op.newGroups(s.tc)
	if err != nil {
		return err
	}
	releaseAccs(s.accs)
	s.table.free()
	s.table, s.accs, s.hist = table, accs, hist
	return s.account()
}

// spillDistinctPairs writes (group, value) pairs of function i (pair: the
// group ids and the values, released here) as rows: the group's keys,
// the value as argument i, NULL for the others.
func (s *hashAggStream) spillDistinctPairs(keys []arrow.Array, i int, pair []arrow.Array) error {
	defer kernels.ReleaseAll(pair)
	gids := pair[0].(*array.Int64).Int64Values()
	idx := make([]int32, len(gids))
	for r, g := range gids {
		idx[r] = int32(g)
	}
	cols := make([]arrow.Array, 0, len(s.bucketState.Fields()))
	defer func() { kernels.ReleaseAll(cols) }()
	for _, k := range keys {
		c, err := joinTakeArray(k, idx, s.tc.Alloc)
		if err != nil {
			return fmt.Errorf("hash aggregate: %w", err)
		}
		cols = append(cols, c)
	}
	for j, a := range s.op.aggs {
		if j == i {
			pair[1].Retain()
			cols = append(cols, pair[1])
			continue
		}
		cols = append(cols, array.MakeArrayOfNull(s.tc.Alloc, a.Arg.DataType(), len(idx)))
	}
	b := array.NewRecordBatch(s.bucketState, cols, int64(len(idx)))
	defer b.Release()
	return s.writeBuckets(b)
}

// splitRaw writes input batch b to the buckets as its group keys and
// arguments.
func (s *hashAggStream) splitRaw(b arrow.RecordBatch) error {
	if b.NumRows() == 0 {
		return nil
	}
	exprs := append([]expr.Expr(nil), s.op.groupBy...)
	for _, a := range s.op.aggs {
		exprs = append(exprs, a.Arg)
	}
	cols, err := kernels.EvalAll(exprs, b, s.tc.Alloc)
	if err != nil {
		return fmt.Errorf("hash aggregate: %w", err)
	}
	rows := array.NewRecordBatch(s.bucketState, cols, b.NumRows())
	kernels.ReleaseAll(cols)
	defer rows.Release()
	return s.writeBuckets(rows)
}

// rawBucketAggregate is the aggregate of one bucket of rows: the same
// functions over the bucket's columns, one split level down.
func (s *hashAggStream) rawBucketAggregate(f *spill.File) (*HashAggregate, error) {
	nk := len(s.op.groupBy)
	fields := s.bucketState.Fields()
	gb := make([]expr.Expr, nk)
	for i := range gb {
		gb[i] = &expr.Column{Index: i, Name: fields[i].Name, Type: fields[i].Type}
	}
	aggs := make([]AggregateExpr, len(s.op.aggs))
	for i, a := range s.op.aggs {
		a.Arg = &expr.Column{Index: nk + i, Name: fields[nk+i].Name, Type: fields[nk+i].Type}
		aggs[i] = a
	}
	h, err := NewHashAggregate(&spillRuns{schema: s.bucketState, runs: []*spill.File{f}}, AggSingle, gb, s.op.groupNames, aggs)
	if err != nil {
		return nil, err
	}
	h.splitLevel = s.op.splitLevel + 1
	return h, nil
}
