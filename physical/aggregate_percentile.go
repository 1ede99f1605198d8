package physical

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/physical/kernels"
	"sluice/plan"
)

// percentile_cont(f) and percentile_disc(f) WITHIN GROUP (ORDER BY x) keep
// every non-NULL x of a group and pick from them, sorted, when the group is
// output, as PostgreSQL does: cont interpolates linearly between the two
// values around position f*(n-1) (0-based), disc takes the first value
// whose position in the order, counted from 1, reaches f*n. NULL x are
// skipped; a group with none, or a NULL fraction, gives NULL. The order's
// direction (ORDER BY x DESC) counts positions from the other end. Holding
// every value, they have no partial state to merge and run in single-stage
// aggregation, as ordered string_agg does; they do not spill.

// percentileFraction reads the fraction (a constant the binder checked)
// from the first row of arg2: ok is false when it is NULL.
func percentileFraction(arg2 arrow.Array) (f float64, ok bool, err error) {
	if arg2.Len() == 0 || arg2.IsNull(0) {
		return 0, false, nil
	}
	a, isFloat := arg2.(*array.Float64)
	if !isFloat {
		return 0, false, fmt.Errorf("percentile fraction of type %s, want float64", arg2.DataType())
	}
	f = a.Value(0)
	if f < 0 || f > 1 || math.IsNaN(f) {
		return 0, false, fmt.Errorf("percentile value %g is not between 0 and 1", f)
	}
	return f, true, nil
}

// percentileDiscIndex is the 0-based position percentile_disc(f) takes
// among n sorted values: the first whose 1-based position is at least f*n.
func percentileDiscIndex(f float64, n int) int {
	return min(max(int(math.Ceil(f*float64(n)))-1, 0), n-1)
}

// aggPercentileCont is percentile_cont over float64 values (the binder
// casts x).
type aggPercentileCont struct {
	desc bool
	vals [][]float64 // per group
	n    int64       // values held
	// frac is the fraction, once a batch has shown it; fracNull: it is NULL.
	frac     float64
	fracSeen bool
	fracNull bool
}

func newAggPercentileCont(a AggregateExpr) (*aggPercentileCont, error) {
	if a.Arg.DataType().ID() != arrow.FLOAT64 {
		return nil, fmt.Errorf("percentile_cont of %s is not supported (the planner casts to float64)", a.Arg.DataType())
	}
	return &aggPercentileCont{desc: a.OrderBy[0].Desc}, nil
}

func (s *aggPercentileCont) resize(n int) { s.vals = growSlice(s.vals, n) }

func (s *aggPercentileCont) update([]int32, arrow.Array) error {
	return errors.New("percentile_cont needs its fraction")
}

func (s *aggPercentileCont) updateOrdered(gids []int32, va, fa arrow.Array, keys []arrow.Array) error {
	kernels.ReleaseAll(keys) // the values are the float64 argument
	if !s.fracSeen && fa.Len() > 0 {
		f, ok, err := percentileFraction(fa)
		if err != nil {
			return err
		}
		s.frac, s.fracNull, s.fracSeen = f, !ok, true
	}
	v, ok := va.(*array.Float64)
	if !ok {
		return fmt.Errorf("percentile_cont: unexpected argument type %s", va.DataType())
	}
	vals := v.Float64Values()
	for i, g := range gids {
		if v.IsValid(i) {
			s.vals[g] = append(s.vals[g], vals[i])
			s.n++
		}
	}
	return nil
}

func (s *aggPercentileCont) evalKeys(arrow.RecordBatch, memory.Allocator) ([]arrow.Array, error) {
	return nil, nil
}

func (s *aggPercentileCont) release() {}

func (s *aggPercentileCont) merge([]int32, []arrow.Array) error {
	return errors.New("percentile_cont cannot merge partial states")
}

func (s *aggPercentileCont) stateTypes() []arrow.DataType { return nil }

func (s *aggPercentileCont) emitStates(int, int, memory.Allocator) ([]arrow.Array, error) {
	return nil, errors.New("percentile_cont has no partial state")
}

func (s *aggPercentileCont) emitFinal(start, end int, mem memory.Allocator) (arrow.Array, error) {
	b := array.NewFloat64Builder(mem)
	defer b.Release()
	b.Reserve(end - start)
	for g := start; g < end; g++ {
		vals := s.vals[g]
		if len(vals) == 0 || s.fracNull {
			b.AppendNull()
			continue
		}
		// In the call's order, as PostgreSQL computes it: with DESC, the
		// position counts from the largest value (1-f ascending would
		// round differently).
		slices.Sort(vals)
		if s.desc {
			slices.Reverse(vals)
		}
		pos := s.frac * float64(len(vals)-1)
		lo := int(math.Floor(pos))
		hi := min(lo+1, len(vals)-1)
		v := vals[lo]
		if d := pos - float64(lo); d > 0 {
			v += d * (vals[hi] - vals[lo])
		}
		b.Append(v)
	}
	return b.NewArray(), nil
}

func (s *aggPercentileCont) memSize() int64 { return int64(cap(s.vals))*24 + s.n*8 }

// aggPercentileDisc is percentile_disc over any type a sort orders: it
// keeps each batch's x (in a rowComparator keyed on x with the call's
// direction) and each group's rows in it, and outputs the picked rows'
// values.
type aggPercentileDisc struct {
	cmp   *rowComparator
	typ   arrow.DataType
	rows  [][]kernels.RowRef // per group
	n     int64
	bytes int64
	// frac, fracSeen, fracNull: as aggPercentileCont's.
	frac     float64
	fracSeen bool
	fracNull bool
	// mode: pick the start of the longest run of equal values (the
	// first in the order among runs as long), not a position.
	mode bool
}

func newAggPercentileDisc(a AggregateExpr) (*aggPercentileDisc, error) {
	c, err := newRowComparator(a.OrderBy)
	if err != nil {
		return nil, fmt.Errorf("percentile_disc: %w", err)
	}
	return &aggPercentileDisc{cmp: c, typ: a.OrderBy[0].Expr.DataType()}, nil
}

func (s *aggPercentileDisc) resize(n int) { s.rows = growSlice(s.rows, n) }

func (s *aggPercentileDisc) update([]int32, arrow.Array) error {
	return errors.New("percentile_disc needs its fraction and order key")
}

func (s *aggPercentileDisc) updateOrdered(gids []int32, _, fa arrow.Array, keys []arrow.Array) error {
	if !s.fracSeen && fa.Len() > 0 {
		f, ok, err := percentileFraction(fa)
		if err != nil {
			kernels.ReleaseAll(keys)
			return err
		}
		s.frac, s.fracNull, s.fracSeen = f, !ok, true
	}
	if len(keys) != 1 {
		kernels.ReleaseAll(keys)
		return fmt.Errorf("percentile_disc: %d order keys, want 1", len(keys))
	}
	slot := int32(len(s.cmp.cols[0].arrays()))
	s.cmp.addBatch(keys)
	x := keys[0]
	for _, buf := range x.Data().Buffers() {
		if buf != nil {
			s.bytes += int64(buf.Len())
		}
	}
	for i, g := range gids {
		if x.IsValid(i) {
			s.rows[g] = append(s.rows[g], kernels.RowRef{Batch: slot, Row: int32(i)})
			s.n++
		}
	}
	return nil
}

func (s *aggPercentileDisc) evalKeys(b arrow.RecordBatch, mem memory.Allocator) ([]arrow.Array, error) {
	return s.cmp.evalKeys(b, mem)
}

func (s *aggPercentileDisc) release() { s.cmp.release() }

func (s *aggPercentileDisc) merge([]int32, []arrow.Array) error {
	return errors.New("percentile_disc cannot merge partial states")
}

func (s *aggPercentileDisc) stateTypes() []arrow.DataType { return nil }

func (s *aggPercentileDisc) emitStates(int, int, memory.Allocator) ([]arrow.Array, error) {
	return nil, errors.New("percentile_disc has no partial state")
}

// emitFinal gathers each group's picked value from the batches held, and
// NULL (from an extra one-row batch of NULL) for a group without values.
func (s *aggPercentileDisc) emitFinal(start, end int, mem memory.Allocator) (arrow.Array, error) {
	srcs := s.cmp.cols[0].arrays()
	null := array.MakeArrayOfNull(mem, s.typ, 1)
	defer null.Release()
	schema := arrow.NewSchema([]arrow.Field{{Name: "x", Type: s.typ, Nullable: true}}, nil)
	batches := make([]arrow.RecordBatch, len(srcs)+1)
	for i, a := range srcs {
		if a != nil {
			batches[i] = array.NewRecordBatch(schema, []arrow.Array{a}, int64(a.Len()))
		}
	}
	nullSlot := int32(len(srcs))
	batches[nullSlot] = array.NewRecordBatch(schema, []arrow.Array{null}, 1)
	defer kernels.ReleaseAll(batches)
	picks := make([]kernels.RowRef, 0, end-start)
	for g := start; g < end; g++ {
		rows := s.rows[g]
		if len(rows) == 0 || s.fracNull {
			picks = append(picks, kernels.RowRef{Batch: nullSlot})
			continue
		}
		sort.SliceStable(rows, func(i, j int) bool { return s.cmp.compare(rows[i], rows[j]) < 0 })
		if s.mode {
			picks = append(picks, rows[longestRun(rows, s.cmp)])
			continue
		}
		picks = append(picks, rows[percentileDiscIndex(s.frac, len(rows))])
	}
	out, err := kernels.InterleaveBatches(mem, schema, batches, picks)
	if err != nil {
		return nil, fmt.Errorf("percentile_disc: %w", err)
	}
	col := out.Column(0)
	col.Retain()
	out.Release()
	return col, nil
}

func (s *aggPercentileDisc) memSize() int64 { return int64(cap(s.rows))*24 + s.n*8 + s.bytes }

// longestRun returns where the first of the longest runs of equal rows
// starts in sorted rows.
func longestRun(rows []kernels.RowRef, cmp *rowComparator) int {
	best, bestLen, start := 0, 0, 0
	for i := 1; i <= len(rows); i++ {
		if i == len(rows) || cmp.compare(rows[i], rows[start]) != 0 {
			if i-start > bestLen {
				best, bestLen = start, i-start
			}
			start = i
		}
	}
	return best
}

// newAggPercentile returns the accumulator of percentile_cont,
// percentile_disc or mode.
func newAggPercentile(a AggregateExpr) (aggAccumulator, error) {
	if a.Func == plan.AggMode {
		if len(a.OrderBy) != 1 {
			return nil, fmt.Errorf("mode needs one ORDER BY key")
		}
		d, err := newAggPercentileDisc(a)
		if err != nil {
			return nil, err
		}
		d.mode, d.fracSeen = true, true
		return d, nil
	}
	if len(a.OrderBy) != 1 || a.Arg2 == nil {
		return nil, fmt.Errorf("%s needs one ORDER BY key and a fraction", a.Func)
	}
	if a.Func == plan.AggPercentileCont {
		return newAggPercentileCont(a)
	}
	return newAggPercentileDisc(a)
}
