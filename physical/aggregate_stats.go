package physical

import (
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/physical/expr"
	"sluice/physical/kernels"
	"sluice/plan"
)

// aggBinaryAccumulator is the accumulator of a two-argument aggregate; the
// stream calls update2 instead of update.
type aggBinaryAccumulator interface {
	aggAccumulator
	// update2 folds raw argument pairs in (Arg's and Arg2's values).
	update2(gids []int32, a, b arrow.Array) error
}

// errNeedsTwoArgs is update's answer for two-argument accumulators.
var errNeedsTwoArgs = errors.New("aggregate needs two arguments")

// errVarianceOverflow is PostgreSQL's message for a float result that
// overflows.
var errVarianceOverflow = expr.NewDataError("value out of range: overflow")

// ---- variance and standard deviation ----

// aggVariance keeps, per group, the count, mean and sum of squared
// deviations from the mean (M2) of its float64 values, updated with
// Welford's method and merged with Chan et al.'s pairwise formula, which
// stay accurate where a sum of squares minus a squared sum would cancel
// catastrophically. Its partial state is those three columns.
type aggVariance struct {
	fn   plan.AggFunc
	n    []int64
	mean []float64
	m2   []float64
}

func (v *aggVariance) resize(n int) {
	v.n = growSlice(v.n, n)
	v.mean = growSlice(v.mean, n)
	v.m2 = growSlice(v.m2, n)
}

func (v *aggVariance) update(gids []int32, arg arrow.Array) error {
	a, ok := arg.(*array.Float64)
	if !ok {
		return fmt.Errorf("%s: unexpected argument type %s", v.fn, arg.DataType())
	}
	vals := a.Float64Values()
	for i, g := range gids {
		if a.IsNull(i) {
			continue
		}
		x := vals[i]
		v.n[g]++
		d := x - v.mean[g]
		v.mean[g] += d / float64(v.n[g])
		v.m2[g] += d * (x - v.mean[g])
	}
	return nil
}

func (v *aggVariance) merge(gids []int32, states []arrow.Array) error {
	ns, ok1 := states[0].(*array.Int64)
	means, ok2 := states[1].(*array.Float64)
	m2s, ok3 := states[2].(*array.Float64)
	if !ok1 || !ok2 || !ok3 {
		return fmt.Errorf("%s: unexpected state types", v.fn)
	}
	for i, g := range gids {
		if ns.IsNull(i) || ns.Value(i) == 0 {
			continue
		}
		nb := ns.Value(i)
		v.n[g], v.mean[g], v.m2[g] = mergeMoments(v.n[g], v.mean[g], v.m2[g], nb, means.Value(i), m2s.Value(i))
	}
	return nil
}

// mergeMoments combines the (count, mean, M2) of two disjoint sets.
func mergeMoments(na int64, ma, m2a float64, nb int64, mb, m2b float64) (int64, float64, float64) {
	if na == 0 {
		return nb, mb, m2b
	}
	n := na + nb
	d := mb - ma
	fa, fb, fn := float64(na), float64(nb), float64(n)
	return n, ma + d*fb/fn, m2a + m2b + d*d*fa*fb/fn
}

func (v *aggVariance) stateTypes() []arrow.DataType {
	return []arrow.DataType{plan.Int64, plan.Float64, plan.Float64}
}

func (v *aggVariance) emitStates(start, end int, mem memory.Allocator) ([]arrow.Array, error) {
	nb := array.NewInt64Builder(mem)
	defer nb.Release()
	nb.AppendValues(v.n[start:end], nil)
	mb := array.NewFloat64Builder(mem)
	defer mb.Release()
	mb.AppendValues(v.mean[start:end], nil)
	m2b := array.NewFloat64Builder(mem)
	defer m2b.Release()
	m2b.AppendValues(v.m2[start:end], nil)
	return []arrow.Array{nb.NewArray(), mb.NewArray(), m2b.NewArray()}, nil
}

func (v *aggVariance) emitFinal(start, end int, mem memory.Allocator) (arrow.Array, error) {
	b := array.NewFloat64Builder(mem)
	defer b.Release()
	b.Reserve(end - start)
	for g := start; g < end; g++ {
		n := v.n[g]
		var r float64
		switch v.fn {
		case plan.AggVarPop, plan.AggStddevPop:
			if n < 1 {
				b.UnsafeAppendBoolToBitmap(false)
				continue
			}
			r = v.m2[g] / float64(n)
		default:
			if n < 2 {
				b.UnsafeAppendBoolToBitmap(false)
				continue
			}
			r = v.m2[g] / float64(n-1)
		}
		// Finite values whose deviations overflow leave M2 infinite
		// (infinite inputs leave it NaN, and the result NaN, as in
		// PostgreSQL); clamped below, -Inf read as a variance of 0.
		if math.IsInf(r, 0) {
			return nil, errVarianceOverflow
		}
		// Rounding can leave a tiny negative M2 for equal values.
		r = math.Max(r, 0)
		if v.fn == plan.AggStddevPop || v.fn == plan.AggStddevSamp {
			r = math.Sqrt(r)
		}
		b.UnsafeAppend(r)
	}
	return b.NewArray(), nil
}

func (v *aggVariance) memSize() int64 { return int64(cap(v.n)) * 24 }

// ---- covariance and correlation ----

// aggCovar keeps, per group, the count, the means of Y and X, the
// co-moment sum((x-mx)(y-my)) and both M2s of the pairs where neither value
// is NULL (corr needs the M2s, the covariances only the co-moment), with
// the same online update and pairwise merge as aggVariance. Its partial
// state is n, mean y, mean x, co-moment, M2 y, M2 x.
type aggCovar struct {
	fn        plan.AggFunc
	n         []int64
	my, mx, c []float64
	m2y, m2x  []float64
}

func (v *aggCovar) resize(n int) {
	v.n = growSlice(v.n, n)
	v.my = growSlice(v.my, n)
	v.mx = growSlice(v.mx, n)
	v.c = growSlice(v.c, n)
	v.m2y = growSlice(v.m2y, n)
	v.m2x = growSlice(v.m2x, n)
}

func (v *aggCovar) update(gids []int32, arg arrow.Array) error {
	return fmt.Errorf("%s: %w", v.fn, errNeedsTwoArgs)
}

func (v *aggCovar) update2(gids []int32, ya, xa arrow.Array) error {
	y, ok1 := ya.(*array.Float64)
	x, ok2 := xa.(*array.Float64)
	if !ok1 || !ok2 {
		return fmt.Errorf("%s: unexpected argument types %s, %s", v.fn, ya.DataType(), xa.DataType())
	}
	yv, xv := y.Float64Values(), x.Float64Values()
	for i, g := range gids {
		if y.IsNull(i) || x.IsNull(i) {
			continue
		}
		v.n[g]++
		n := float64(v.n[g])
		dx := xv[i] - v.mx[g]
		dy := yv[i] - v.my[g]
		v.mx[g] += dx / n
		v.my[g] += dy / n
		// dx is against the old mean of X, (y - my) against the new
		// one of Y: their product is the co-moment's exact increment.
		v.c[g] += dx * (yv[i] - v.my[g])
		v.m2x[g] += dx * (xv[i] - v.mx[g])
		v.m2y[g] += dy * (yv[i] - v.my[g])
	}
	return nil
}

func (v *aggCovar) merge(gids []int32, states []arrow.Array) error {
	ns, ok := states[0].(*array.Int64)
	if !ok {
		return fmt.Errorf("%s: unexpected state types", v.fn)
	}
	f := make([]*array.Float64, 5)
	for k := range f {
		if f[k], ok = states[k+1].(*array.Float64); !ok {
			return fmt.Errorf("%s: unexpected state types", v.fn)
		}
	}
	for i, g := range gids {
		if ns.IsNull(i) || ns.Value(i) == 0 {
			continue
		}
		nb := ns.Value(i)
		myb, mxb, cb, m2yb, m2xb := f[0].Value(i), f[1].Value(i), f[2].Value(i), f[3].Value(i), f[4].Value(i)
		na := v.n[g]
		if na == 0 {
			v.n[g], v.my[g], v.mx[g], v.c[g], v.m2y[g], v.m2x[g] = nb, myb, mxb, cb, m2yb, m2xb
			continue
		}
		fa, fb := float64(na), float64(nb)
		fn := fa + fb
		dx, dy := mxb-v.mx[g], myb-v.my[g]
		v.c[g] += cb + dx*dy*fa*fb/fn
		_, v.my[g], v.m2y[g] = mergeMoments(na, v.my[g], v.m2y[g], nb, myb, m2yb)
		_, v.mx[g], v.m2x[g] = mergeMoments(na, v.mx[g], v.m2x[g], nb, mxb, m2xb)
		v.n[g] = na + nb
	}
	return nil
}

func (v *aggCovar) stateTypes() []arrow.DataType {
	return []arrow.DataType{plan.Int64, plan.Float64, plan.Float64, plan.Float64, plan.Float64, plan.Float64}
}

func (v *aggCovar) emitStates(start, end int, mem memory.Allocator) ([]arrow.Array, error) {
	nb := array.NewInt64Builder(mem)
	defer nb.Release()
	nb.AppendValues(v.n[start:end], nil)
	out := []arrow.Array{nb.NewArray()}
	for _, s := range [][]float64{v.my, v.mx, v.c, v.m2y, v.m2x} {
		b := array.NewFloat64Builder(mem)
		b.AppendValues(s[start:end], nil)
		out = append(out, b.NewArray())
		b.Release()
	}
	return out, nil
}

func (v *aggCovar) emitFinal(start, end int, mem memory.Allocator) (arrow.Array, error) {
	b := array.NewFloat64Builder(mem)
	defer b.Release()
	b.Reserve(end - start)
	for g := start; g < end; g++ {
		n := v.n[g]
		switch v.fn {
		case plan.AggCovarPop:
			if n < 1 {
				b.UnsafeAppendBoolToBitmap(false)
				continue
			}
			b.UnsafeAppend(v.c[g] / float64(n))
		case plan.AggCovarSamp:
			if n < 2 {
				b.UnsafeAppendBoolToBitmap(false)
				continue
			}
			b.UnsafeAppend(v.c[g] / float64(n-1))
		default: // corr
			// No correlation is defined when either side is constant.
			if n < 1 || v.m2x[g] <= 0 || v.m2y[g] <= 0 {
				b.UnsafeAppendBoolToBitmap(false)
				continue
			}
			r := v.c[g] / math.Sqrt(v.m2x[g]*v.m2y[g])
			b.UnsafeAppend(math.Max(-1, math.Min(1, r)))
		}
	}
	return b.NewArray(), nil
}

func (v *aggCovar) memSize() int64 { return int64(cap(v.n)) * 48 }

// ---- string_agg ----

// aggStringAgg concatenates each group's non-NULL values, each but the
// first preceded by its own row's delimiter (a NULL delimiter counts as
// empty). Its partial state is the concatenation so far and the delimiter
// of its first value, which a merge puts between two partial strings.
type aggStringAgg struct {
	vals  [][]byte
	first []string
	seen  []bool
	bytes int64
}

func (s *aggStringAgg) resize(n int) {
	s.vals = growSlice(s.vals, n)
	s.first = growSlice(s.first, n)
	s.seen = growSlice(s.seen, n)
}

func (s *aggStringAgg) update(gids []int32, arg arrow.Array) error {
	return fmt.Errorf("string_agg: %w", errNeedsTwoArgs)
}

func (s *aggStringAgg) update2(gids []int32, va, da arrow.Array) error {
	return s.add(gids, va, da)
}

// add appends value i of v to its group, after delimiter i of d.
func (s *aggStringAgg) add(gids []int32, va, da arrow.Array) error {
	v, ok1 := va.(*array.String)
	d, ok2 := da.(*array.String)
	if !ok1 || !ok2 {
		return fmt.Errorf("string_agg: unexpected argument types %s, %s", va.DataType(), da.DataType())
	}
	for i, g := range gids {
		if v.IsNull(i) {
			continue
		}
		delim := ""
		if d.IsValid(i) {
			delim = d.Value(i)
		}
		before := int64(cap(s.vals[g]))
		if !s.seen[g] {
			s.seen[g] = true
			// Copy: the strings point into the batch's buffers.
			s.first[g] = string([]byte(delim))
			s.bytes += int64(len(delim))
			s.vals[g] = append(s.vals[g][:0], v.Value(i)...)
		} else {
			s.vals[g] = append(append(s.vals[g], delim...), v.Value(i)...)
		}
		s.bytes += int64(cap(s.vals[g])) - before
	}
	return nil
}

func (s *aggStringAgg) merge(gids []int32, states []arrow.Array) error {
	return s.add(gids, states[0], states[1])
}

func (s *aggStringAgg) stateTypes() []arrow.DataType {
	return []arrow.DataType{plan.Utf8, plan.Utf8}
}

func (s *aggStringAgg) emitStates(start, end int, mem memory.Allocator) ([]arrow.Array, error) {
	v, err := s.emitFinal(start, end, mem)
	if err != nil {
		return nil, err
	}
	b := array.NewStringBuilder(mem)
	defer b.Release()
	for g := start; g < end; g++ {
		b.Append(s.first[g])
	}
	return []arrow.Array{v, b.NewArray()}, nil
}

func (s *aggStringAgg) emitFinal(start, end int, mem memory.Allocator) (arrow.Array, error) {
	b := array.NewStringBuilder(mem)
	defer b.Release()
	for g := start; g < end; g++ {
		if !s.seen[g] {
			b.AppendNull()
			continue
		}
		b.BinaryBuilder.Append(s.vals[g])
	}
	return b.NewArray(), nil
}

func (s *aggStringAgg) memSize() int64 { return int64(cap(s.vals))*(24+16+1) + s.bytes }

// ---- string_agg(x, d ORDER BY ...) ----

// aggOrderedAccumulator is the accumulator of an aggregate with ORDER BY
// inside its call; the stream passes the batch's evaluated order keys too.
type aggOrderedAccumulator interface {
	aggAccumulator
	// updateOrdered folds raw values in with their order keys (whose
	// ownership moves to the accumulator).
	updateOrdered(gids []int32, a, b arrow.Array, keys []arrow.Array) error
	// evalKeys evaluates the order keys on a batch.
	evalKeys(b arrow.RecordBatch, mem memory.Allocator) ([]arrow.Array, error)
	// release frees what the accumulator retains.
	release()
}

// aggOrderedStringAgg is string_agg with ORDER BY: it keeps every value
// with its delimiter and the row's order keys (the key arrays of each batch,
// in a rowComparator), and concatenates each group's values in key order
// when emitting (rows with equal keys in arrival order). Its values cannot
// be merged from partial strings, so it runs in single-stage aggregation
// only, like DISTINCT aggregates.
type aggOrderedStringAgg struct {
	cmp    *rowComparator
	rows   [][]orderedValue // per group
	nBatch int32
	bytes  int64
}

// orderedValue is one value of a group with its delimiter and row.
type orderedValue struct {
	val, delim string
	at         kernels.RowRef
}

func newAggOrderedStringAgg(keys []SortKey) (*aggOrderedStringAgg, error) {
	c, err := newRowComparator(keys)
	if err != nil {
		return nil, fmt.Errorf("string_agg: %w", err)
	}
	return &aggOrderedStringAgg{cmp: c}, nil
}

func (s *aggOrderedStringAgg) resize(n int) { s.rows = growSlice(s.rows, n) }

func (s *aggOrderedStringAgg) update([]int32, arrow.Array) error {
	return errors.New("string_agg: ORDER BY needs the order keys")
}

func (s *aggOrderedStringAgg) updateOrdered(gids []int32, va, da arrow.Array, keys []arrow.Array) error {
	s.cmp.addBatch(keys)
	b := s.nBatch
	s.nBatch++
	for _, k := range keys {
		for _, buf := range k.Data().Buffers() {
			if buf != nil {
				s.bytes += int64(buf.Len())
			}
		}
	}
	v, ok1 := va.(*array.String)
	d, ok2 := da.(*array.String)
	if !ok1 || !ok2 {
		return fmt.Errorf("string_agg: unexpected argument types %s, %s", va.DataType(), da.DataType())
	}
	for i, g := range gids {
		if v.IsNull(i) {
			continue
		}
		delim := ""
		if d.IsValid(i) {
			delim = d.Value(i)
		}
		// Copy: the strings point into the batch's buffers.
		ov := orderedValue{val: string([]byte(v.Value(i))), delim: string([]byte(delim)), at: kernels.RowRef{Batch: b, Row: int32(i)}}
		s.rows[g] = append(s.rows[g], ov)
		s.bytes += int64(len(ov.val)+len(ov.delim)) + 40
	}
	return nil
}

func (s *aggOrderedStringAgg) merge([]int32, []arrow.Array) error {
	return errors.New("string_agg with ORDER BY cannot merge partial states")
}

func (s *aggOrderedStringAgg) stateTypes() []arrow.DataType {
	return []arrow.DataType{plan.Utf8, plan.Utf8}
}

func (s *aggOrderedStringAgg) emitStates(int, int, memory.Allocator) ([]arrow.Array, error) {
	return nil, errors.New("string_agg with ORDER BY has no partial state")
}

func (s *aggOrderedStringAgg) emitFinal(start, end int, mem memory.Allocator) (arrow.Array, error) {
	b := array.NewStringBuilder(mem)
	defer b.Release()
	var buf []byte
	for g := start; g < end; g++ {
		rows := s.rows[g]
		if len(rows) == 0 {
			b.AppendNull()
			continue
		}
		sort.SliceStable(rows, func(i, j int) bool { return s.cmp.compare(rows[i].at, rows[j].at) < 0 })
		buf = append(buf[:0], rows[0].val...)
		for _, r := range rows[1:] {
			buf = append(append(buf, r.delim...), r.val...)
		}
		b.BinaryBuilder.Append(buf)
	}
	return b.NewArray(), nil
}

func (s *aggOrderedStringAgg) memSize() int64 { return int64(cap(s.rows))*24 + s.bytes }

func (s *aggOrderedStringAgg) evalKeys(b arrow.RecordBatch, mem memory.Allocator) ([]arrow.Array, error) {
	return s.cmp.evalKeys(b, mem)
}

func (s *aggOrderedStringAgg) release() { s.cmp.release() }
