package physical

import (
	"cmp"
	"errors"
	"fmt"
	"math/bits"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/physical/expr"
	"sluice/plan"
)

// errDecimalOverflow is returned (wrapped) when a decimal sum or average does
// not fit in DECIMAL(38).
var errDecimalOverflow = expr.NewDataError("decimal overflow")

// errSumOverflow is a data error: the same on every executor, so the
// cluster fails the query at once instead of retrying the task.
var errSumOverflow = expr.NewDataError("integer overflow in sum (sum a wider type: sum(x::DECIMAL(38,0)))")

// aggAccumulator holds one aggregate's per-group state in typed slices,
// indexed by group id. update and merge take the group id of every row of
// the batch; they never see a group id >= the last resize.
type aggAccumulator interface {
	// resize makes room for n groups (n never shrinks).
	resize(n int)
	// update folds raw argument values in (arg is nil for count(*)).
	update(gids []int32, arg arrow.Array) error
	// merge folds partial states in (the columns stateTypes describes).
	merge(gids []int32, states []arrow.Array) error
	// stateTypes are the types of the partial state columns.
	stateTypes() []arrow.DataType
	// emitStates returns the state columns of groups [start, end).
	emitStates(start, end int, mem memory.Allocator) ([]arrow.Array, error)
	// emitFinal returns the final values of groups [start, end).
	emitFinal(start, end int, mem memory.Allocator) (arrow.Array, error)
	// memSize estimates the bytes held.
	memSize() int64
}

// newAggAccumulator returns the accumulator for a (distinct handled by the
// caller). argType is the argument's type (nil for count(*)).
func newAggAccumulator(a AggregateExpr, argType arrow.DataType) (aggAccumulator, error) {
	switch a.Func {
	case plan.AggCountStar:
		return &aggCount{star: true}, nil
	case plan.AggCount:
		return &aggCount{}, nil
	case plan.AggSum:
		return newAggSum(argType)
	case plan.AggAvg:
		sum, err := newAggSum(argType)
		if err != nil {
			return nil, err
		}
		return &aggAvg{sum: sum, argType: argType, resultType: plan.AvgType(argType)}, nil
	case plan.AggAvgMerge:
		// argType is the partial sums' type, whose sum state it is.
		sum, err := newAggSum(argType)
		if err != nil {
			return nil, err
		}
		return &aggAvgMerge{aggAvg{sum: sum, argType: argType, resultType: plan.AvgType(argType)}}, nil
	case plan.AggMin, plan.AggMax:
		return newAggMinMax(argType, a.Func == plan.AggMax)
	case plan.AggBoolAnd, plan.AggBoolOr:
		// false < true: every is the minimum, any the maximum.
		if argType.ID() != arrow.BOOL {
			return nil, fmt.Errorf("%s of %s is not supported", a.Func, argType)
		}
		return newAggMinMax(argType, a.Func == plan.AggBoolOr)
	case plan.AggStddevSamp, plan.AggStddevPop, plan.AggVarSamp, plan.AggVarPop:
		if argType.ID() != arrow.FLOAT64 {
			return nil, fmt.Errorf("%s of %s is not supported (the planner casts to float64)", a.Func, argType)
		}
		return &aggVariance{fn: a.Func}, nil
	case plan.AggCorr, plan.AggCovarPop, plan.AggCovarSamp:
		if argType.ID() != arrow.FLOAT64 || a.Arg2 == nil || a.Arg2.DataType().ID() != arrow.FLOAT64 {
			return nil, fmt.Errorf("%s needs two float64 arguments", a.Func)
		}
		return &aggCovar{fn: a.Func}, nil
	case plan.AggStringAgg:
		if argType.ID() != arrow.STRING || a.Arg2 == nil || a.Arg2.DataType().ID() != arrow.STRING {
			return nil, fmt.Errorf("string_agg needs two text arguments")
		}
		return &aggStringAgg{}, nil
	case plan.AggPercentileCont, plan.AggPercentileDisc, plan.AggMode:
		return newAggPercentile(a)
	case plan.AggArrayAgg:
		return newAggArrayAgg(a, argType)
	case plan.AggArgMax, plan.AggArgMin:
		if a.Arg2 == nil {
			return nil, fmt.Errorf("%s needs two arguments", a.Func)
		}
		return newAggArgMinMax(argType, a.Arg2.DataType(), a.Func == plan.AggArgMax)
	case plan.AggSingleValue:
		if argType.ID() == arrow.NULL {
			return &aggSingleValue{val: aggNulls{}}, nil
		}
		val, err := newAggMinMax(argType, true)
		if err != nil {
			return nil, fmt.Errorf("scalar subquery of type %s is not supported", argType)
		}
		return &aggSingleValue{val: val}, nil
	}
	return nil, fmt.Errorf("aggregate function %v is not supported", a.Func)
}

func newAggSum(argType arrow.DataType) (aggAccumulator, error) {
	switch argType.ID() {
	case arrow.INT32, arrow.INT64:
		return &aggSumInt{}, nil
	case arrow.FLOAT64:
		return &aggSumFloat{}, nil
	case arrow.DECIMAL128:
		return &aggSumDecimal{typ: plan.SumType(argType).(*arrow.Decimal128Type)}, nil
	case arrow.INTERVAL_MONTH_DAY_NANO:
		return &aggSumInterval{}, nil
	}
	return nil, fmt.Errorf("sum of %s is not supported", argType)
}

// ---- sum of intervals ----

// errIntervalSum is PostgreSQL's error for a sum of intervals that does
// not fit an interval.
var errIntervalSum = expr.NewDataError("interval out of range in sum")

// aggSumInterval sums intervals field by field (months, days, time), as
// PostgreSQL does; its state is an interval.
type aggSumInterval struct {
	months, days, nanos []int64
	seen                []bool
}

func (s *aggSumInterval) resize(n int) {
	s.months = growSlice(s.months, n)
	s.days = growSlice(s.days, n)
	s.nanos = growSlice(s.nanos, n)
	s.seen = growSlice(s.seen, n)
}

func (s *aggSumInterval) update(gids []int32, arg arrow.Array) error {
	a, ok := arg.(*array.MonthDayNanoInterval)
	if !ok {
		return fmt.Errorf("sum: unexpected argument type %s", arg.DataType())
	}
	v := a.MonthDayNanoIntervalValues()
	for i, g := range gids {
		if a.IsNull(i) {
			continue
		}
		x := v[i]
		s.months[g] += int64(x.Months)
		s.days[g] += int64(x.Days)
		n, ok := expr.AddSigned(s.nanos[g], x.Nanoseconds, 1)
		if !ok {
			return errIntervalSum
		}
		s.nanos[g] = n
		s.seen[g] = true
		if s.months[g] != int64(int32(s.months[g])) || s.days[g] != int64(int32(s.days[g])) {
			return errIntervalSum
		}
	}
	return nil
}

func (s *aggSumInterval) merge(gids []int32, states []arrow.Array) error {
	return s.update(gids, states[0])
}

func (s *aggSumInterval) stateTypes() []arrow.DataType { return []arrow.DataType{plan.Interval} }

func (s *aggSumInterval) emitStates(start, end int, mem memory.Allocator) ([]arrow.Array, error) {
	a, err := s.emitFinal(start, end, mem)
	return []arrow.Array{a}, err
}

// value is group g's sum (its fields fit int32: update checks).
func (s *aggSumInterval) value(g int) arrow.MonthDayNanoInterval {
	return arrow.MonthDayNanoInterval{Months: int32(s.months[g]), Days: int32(s.days[g]), Nanoseconds: s.nanos[g]}
}

func (s *aggSumInterval) emitFinal(start, end int, mem memory.Allocator) (arrow.Array, error) {
	b := array.NewMonthDayNanoIntervalBuilder(mem)
	defer b.Release()
	for g := start; g < end; g++ {
		if s.seen[g] {
			b.Append(s.value(g))
		} else {
			b.AppendNull()
		}
	}
	return b.NewArray(), nil
}

func (s *aggSumInterval) memSize() int64 { return int64(cap(s.months)) * 25 }

// ---- count ----

// aggCount counts rows (count(*)) or non-null values; its state is an int64.
type aggCount struct {
	star   bool
	counts []int64
	// hist, when set, is the stream's per-group row count of the batch
	// being consumed, shared by its count accumulators (countHist).
	hist *countHist
}

// countHist is the number of rows per group of the batch a stream is
// consuming, computed once for all its accumulators that count every row
// (count(*), and counts and averages of an argument without NULLs in the
// batch): each then adds one number per group instead of walking the rows
// again (q1 counts its rows four times: count(*) and three averages).
type countHist struct {
	batch int // batch being consumed (bumped by the stream)
	done  int // batch hist was computed for
	hist  []int64
}

// get returns the histogram of gids over ng groups for the current batch.
func (h *countHist) get(gids []int32, ng int) []int64 {
	if h.done != h.batch || len(h.hist) != ng {
		h.hist = growSlice(h.hist[:0], ng)
		for _, g := range gids {
			h.hist[g]++
		}
		h.done = h.batch
	}
	return h.hist
}

func (c *aggCount) resize(n int) { c.counts = growStates(c.counts, n) }

// release gives the counts back to mempool.
func (c *aggCount) release() { c.counts = freePooled(c.counts) }

func (c *aggCount) update(gids []int32, arg arrow.Array) error {
	counts := c.counts
	if !c.star && arg.DataType().ID() == arrow.NULL {
		return nil // count(NULL): no value is counted
	}
	if c.star || arg.NullN() == 0 {
		if c.hist != nil && len(counts) <= len(gids) {
			for g, k := range c.hist.get(gids, len(counts)) {
				counts[g] += k
			}
			return nil
		}
		for _, g := range gids {
			counts[g]++
		}
		return nil
	}
	if len(counts) == 1 && arg.Len() == len(gids) {
		// One group (a global aggregate): every row is in it.
		counts[0] += int64(len(gids) - arg.NullN())
		return nil
	}
	bm, off := arg.NullBitmapBytes(), arg.Data().Offset()
	if bm == nil {
		for i, g := range gids {
			if arg.IsValid(i) {
				counts[g]++
			}
		}
		return nil
	}
	// Add each row's validity bit, without a branch on it.
	for i, g := range gids {
		j := off + i
		counts[g] += int64(bm[j>>3] >> (j & 7) & 1)
	}
	return nil
}

func (c *aggCount) merge(gids []int32, states []arrow.Array) error {
	st := states[0].(*array.Int64)
	v := st.Int64Values()
	for i, g := range gids {
		if st.IsValid(i) {
			c.counts[g] += v[i]
		}
	}
	return nil
}

func (c *aggCount) stateTypes() []arrow.DataType { return []arrow.DataType{plan.Int64} }

func (c *aggCount) emitStates(start, end int, mem memory.Allocator) ([]arrow.Array, error) {
	a, err := c.emitFinal(start, end, mem)
	return []arrow.Array{a}, err
}

func (c *aggCount) emitFinal(start, end int, mem memory.Allocator) (arrow.Array, error) {
	b := array.NewInt64Builder(mem)
	defer b.Release()
	b.AppendValues(c.counts[start:end], nil)
	return b.NewArray(), nil
}

func (c *aggCount) memSize() int64 { return int64(cap(c.counts)) * 8 }

// ---- sum of integers ----

// aggSumInt sums int32/int64 into int64, failing on overflow.
type aggSumInt struct {
	sums []int64
	seen []bool
}

func (s *aggSumInt) resize(n int) {
	s.sums = growStates(s.sums, n)
	s.seen = growStates(s.seen, n)
}

// release gives the sums back to mempool.
func (s *aggSumInt) release() {
	s.sums = freePooled(s.sums)
	s.seen = freePooled(s.seen)
}

func (s *aggSumInt) update(gids []int32, arg arrow.Array) error {
	overflow := false
	switch a := arg.(type) {
	case *array.Int64:
		overflow = sumInt64Into(s.sums, s.seen, gids, a.Int64Values(), a)
	case *array.Int32:
		v32 := a.Int32Values()
		noNulls := a.NullN() == 0
		for i, g := range gids {
			if noNulls || a.IsValid(i) {
				x, v := s.sums[g], int64(v32[i])
				r := x + v
				overflow = overflow || ((x^r)&(v^r)) < 0
				s.sums[g] = r
				s.seen[g] = true
			}
		}
	default:
		return fmt.Errorf("sum: unexpected argument type %s", arg.DataType())
	}
	if overflow {
		return errSumOverflow
	}
	return nil
}

// sumInt64Into adds vals into sums[gids[i]]; it reports signed overflow.
func sumInt64Into(sums []int64, seen []bool, gids []int32, vals []int64, a arrow.Array) bool {
	var ov int64
	if a.NullN() == 0 {
		for i, g := range gids {
			x, v := sums[g], vals[i]
			r := x + v
			ov |= (x ^ r) & (v ^ r)
			sums[g] = r
			seen[g] = true
		}
		return ov < 0
	}
	for i, g := range gids {
		if a.IsValid(i) {
			x, v := sums[g], vals[i]
			r := x + v
			ov |= (x ^ r) & (v ^ r)
			sums[g] = r
			seen[g] = true
		}
	}
	return ov < 0
}

func (s *aggSumInt) merge(gids []int32, states []arrow.Array) error {
	st := states[0].(*array.Int64)
	if sumInt64Into(s.sums, s.seen, gids, st.Int64Values(), st) {
		return errSumOverflow
	}
	return nil
}

func (s *aggSumInt) stateTypes() []arrow.DataType { return []arrow.DataType{plan.Int64} }

func (s *aggSumInt) emitStates(start, end int, mem memory.Allocator) ([]arrow.Array, error) {
	a, err := s.emitFinal(start, end, mem)
	return []arrow.Array{a}, err
}

func (s *aggSumInt) emitFinal(start, end int, mem memory.Allocator) (arrow.Array, error) {
	b := array.NewInt64Builder(mem)
	defer b.Release()
	b.AppendValues(s.sums[start:end], s.seen[start:end])
	return b.NewArray(), nil
}

func (s *aggSumInt) memSize() int64 { return int64(cap(s.sums)) * 9 }

// ---- sum of float64 ----

// aggSumFloat sums float64 values.
type aggSumFloat struct {
	sums []float64
	seen []bool
}

func (s *aggSumFloat) resize(n int) {
	s.sums = growStates(s.sums, n)
	s.seen = growStates(s.seen, n)
}

// release gives the sums back to mempool.
func (s *aggSumFloat) release() {
	s.sums = freePooled(s.sums)
	s.seen = freePooled(s.seen)
}

func (s *aggSumFloat) update(gids []int32, arg arrow.Array) error {
	a, ok := arg.(*array.Float64)
	if !ok {
		return fmt.Errorf("sum: unexpected argument type %s", arg.DataType())
	}
	v := a.Float64Values()
	noNulls := a.NullN() == 0
	for i, g := range gids {
		if noNulls || a.IsValid(i) {
			s.sums[g] += v[i]
			s.seen[g] = true
		}
	}
	return nil
}

func (s *aggSumFloat) merge(gids []int32, states []arrow.Array) error {
	return s.update(gids, states[0])
}

func (s *aggSumFloat) stateTypes() []arrow.DataType { return []arrow.DataType{plan.Float64} }

func (s *aggSumFloat) emitStates(start, end int, mem memory.Allocator) ([]arrow.Array, error) {
	a, err := s.emitFinal(start, end, mem)
	return []arrow.Array{a}, err
}

func (s *aggSumFloat) emitFinal(start, end int, mem memory.Allocator) (arrow.Array, error) {
	b := array.NewFloat64Builder(mem)
	defer b.Release()
	b.AppendValues(s.sums[start:end], s.seen[start:end])
	return b.NewArray(), nil
}

func (s *aggSumFloat) memSize() int64 { return int64(cap(s.sums)) * 9 }

// ---- sum of decimal128 ----

// aggI128 is a two's-complement 128-bit integer kept as plain words so the
// hot loop adds with bits.Add64 and detects overflow without branches.
type aggI128 struct {
	lo uint64
	hi int64
}

// aggSumDecimal sums decimal128 values exactly; the state and result are
// DECIMAL(38, s). A sum that leaves 128 bits, or 38 digits at the end, is a
// "decimal overflow" error.
type aggSumDecimal struct {
	typ  *arrow.Decimal128Type
	sums []aggI128
	seen []bool
}

func (s *aggSumDecimal) resize(n int) {
	s.sums = growStates(s.sums, n)
	s.seen = growStates(s.seen, n)
}

// release gives the sums back to mempool.
func (s *aggSumDecimal) release() {
	s.sums = freePooled(s.sums)
	s.seen = freePooled(s.seen)
}

func (s *aggSumDecimal) update(gids []int32, arg arrow.Array) error {
	a, ok := arg.(*array.Decimal128)
	if !ok {
		return fmt.Errorf("sum: unexpected argument type %s", arg.DataType())
	}
	vals := a.Values()
	sums, seen := s.sums, s.seen
	var ov int64
	if a.NullN() == 0 && len(sums) <= fewGroups {
		return s.updateFew(gids, vals)
	}
	if a.NullN() == 0 {
		for i, g := range gids {
			x := &sums[g]
			v := vals[i]
			vh := v.HighBits()
			lo, c := bits.Add64(x.lo, v.LowBits(), 0)
			hi := x.hi + vh + int64(c)
			ov |= (x.hi ^ hi) & (vh ^ hi)
			x.lo, x.hi = lo, hi
			seen[g] = true
		}
	} else {
		for i, g := range gids {
			if a.IsNull(i) {
				continue
			}
			x := &sums[g]
			v := vals[i]
			vh := v.HighBits()
			lo, c := bits.Add64(x.lo, v.LowBits(), 0)
			hi := x.hi + vh + int64(c)
			ov |= (x.hi ^ hi) & (vh ^ hi)
			x.lo, x.hi = lo, hi
			seen[g] = true
		}
	}
	if ov < 0 {
		return fmt.Errorf("sum: %w", errDecimalOverflow)
	}
	return nil
}

// fewGroups is the most groups updateFew keeps local sums for.
const fewGroups = 64

// updateFew is update for a batch without NULLs into at most fewGroups
// groups (q1 has four). With few groups consecutive rows mostly add to the
// same sum, and each add waits for the one before it to be stored; here
// even and odd rows add to two separate local sums, two independent chains,
// folded into the group's sum once per batch.
func (s *aggSumDecimal) updateFew(gids []int32, vals []decimal128.Num) error {
	var acc [2][fewGroups]aggI128
	var ov int64
	add := func(x *aggI128, v decimal128.Num) {
		vh := v.HighBits()
		lo, c := bits.Add64(x.lo, v.LowBits(), 0)
		hi := x.hi + vh + int64(c)
		ov |= (x.hi ^ hi) & (vh ^ hi)
		x.lo, x.hi = lo, hi
	}
	n := len(gids)
	vals = vals[:n]
	i := 0
	for ; i+1 < n; i += 2 {
		g0, g1 := gids[i], gids[i+1]
		add(&acc[0][g0], vals[i])
		add(&acc[1][g1], vals[i+1])
		s.seen[g0], s.seen[g1] = true, true
	}
	if i < n {
		add(&acc[0][gids[i]], vals[i])
		s.seen[gids[i]] = true
	}
	for g := range s.sums {
		for k := range acc {
			a := acc[k][g]
			add(&s.sums[g], decimal128.New(a.hi, a.lo))
		}
	}
	if ov < 0 {
		return fmt.Errorf("sum: %w", errDecimalOverflow)
	}
	return nil
}

func (s *aggSumDecimal) merge(gids []int32, states []arrow.Array) error {
	return s.update(gids, states[0])
}

func (s *aggSumDecimal) stateTypes() []arrow.DataType { return []arrow.DataType{s.typ} }

func (s *aggSumDecimal) emitStates(start, end int, mem memory.Allocator) ([]arrow.Array, error) {
	a, err := s.emitFinal(start, end, mem)
	return []arrow.Array{a}, err
}

func (s *aggSumDecimal) value(g int) decimal128.Num {
	return decimal128.New(s.sums[g].hi, s.sums[g].lo)
}

func (s *aggSumDecimal) emitFinal(start, end int, mem memory.Allocator) (arrow.Array, error) {
	b := array.NewDecimal128Builder(mem, s.typ)
	defer b.Release()
	b.Reserve(end - start)
	for g := start; g < end; g++ {
		if !s.seen[g] {
			b.UnsafeAppendBoolToBitmap(false)
			continue
		}
		v := s.value(g)
		if !v.FitsInPrecision(plan.MaxDecimalPrecision) {
			return nil, fmt.Errorf("sum: %w", errDecimalOverflow)
		}
		b.UnsafeAppend(v)
	}
	return b.NewArray(), nil
}

func (s *aggSumDecimal) memSize() int64 { return int64(cap(s.sums)) * 17 }

// ---- avg ----

// aggAvg keeps a sum (of plan.SumType(arg)) and a count of non-null values;
// its partial state is those two columns, in that order.
type aggAvg struct {
	sum        aggAccumulator
	cnt        aggCount
	argType    arrow.DataType
	resultType arrow.DataType
	// sharedSum: sum is a sum(x) aggregate's accumulator, which that
	// aggregate updates (shareAvgSums).
	sharedSum bool
}

// aggAvgMerge is an AVG whose raw input is already partial: sums (Arg) and
// counts (Arg2) of groups of values, which it merges as it would merge its
// own partial states.
type aggAvgMerge struct{ aggAvg }

func (a *aggAvgMerge) update(gids []int32, arg arrow.Array) error { return errNeedsTwoArgs }

func (a *aggAvgMerge) update2(gids []int32, sums, counts arrow.Array) error {
	return a.aggAvg.merge(gids, []arrow.Array{sums, counts})
}

func (a *aggAvg) resize(n int) {
	a.sum.resize(n)
	a.cnt.resize(n)
}

// release gives the count, and the sum unless another aggregate's
// accumulator it shares releases it, back to mempool.
func (a *aggAvg) release() {
	a.cnt.release()
	if r, ok := a.sum.(interface{ release() }); ok && !a.sharedSum {
		r.release()
	}
}

func (a *aggAvg) update(gids []int32, arg arrow.Array) error {
	if !a.sharedSum {
		if err := a.sum.update(gids, arg); err != nil {
			return fmt.Errorf("avg: %w", err)
		}
	}
	return a.cnt.update(gids, arg)
}

func (a *aggAvg) merge(gids []int32, states []arrow.Array) error {
	if err := a.sum.merge(gids, states[:1]); err != nil {
		return fmt.Errorf("avg: %w", err)
	}
	return a.cnt.merge(gids, states[1:2])
}

func (a *aggAvg) stateTypes() []arrow.DataType {
	return append(a.sum.stateTypes(), plan.Int64)
}

func (a *aggAvg) emitStates(start, end int, mem memory.Allocator) ([]arrow.Array, error) {
	s, err := a.sum.emitStates(start, end, mem)
	if err != nil {
		return nil, err
	}
	c, _ := a.cnt.emitFinal(start, end, mem)
	return append(s, c), nil
}

func (a *aggAvg) emitFinal(start, end int, mem memory.Allocator) (arrow.Array, error) {
	counts := a.cnt.counts
	switch s := a.sum.(type) {
	case *aggSumInt:
		b := array.NewFloat64Builder(mem)
		defer b.Release()
		for g := start; g < end; g++ {
			if counts[g] == 0 {
				b.AppendNull()
			} else {
				b.Append(float64(s.sums[g]) / float64(counts[g]))
			}
		}
		return b.NewArray(), nil
	case *aggSumFloat:
		b := array.NewFloat64Builder(mem)
		defer b.Release()
		for g := start; g < end; g++ {
			if counts[g] == 0 {
				b.AppendNull()
			} else {
				b.Append(s.sums[g] / float64(counts[g]))
			}
		}
		return b.NewArray(), nil
	case *aggSumDecimal:
		rt := a.resultType.(*arrow.Decimal128Type)
		k := rt.Scale - s.typ.Scale
		b := array.NewDecimal128Builder(mem, rt)
		defer b.Release()
		for g := start; g < end; g++ {
			if counts[g] == 0 {
				b.AppendNull()
				continue
			}
			v, err := decimalAvg(s.value(g), counts[g], k)
			if err != nil {
				return nil, fmt.Errorf("avg: %w", err)
			}
			b.Append(v)
		}
		return b.NewArray(), nil
	case *aggSumInterval:
		// PostgreSQL's avg of intervals: the sum divided by the count.
		b := array.NewMonthDayNanoIntervalBuilder(mem)
		defer b.Release()
		for g := start; g < end; g++ {
			if counts[g] == 0 {
				b.AppendNull()
				continue
			}
			v, ok := expr.DivideInterval(s.value(g), float64(counts[g]))
			if !ok {
				return nil, errIntervalSum
			}
			b.Append(v)
		}
		return b.NewArray(), nil
	}
	return nil, fmt.Errorf("avg of %s is not supported", a.argType)
}

func (a *aggAvg) memSize() int64 {
	if a.sharedSum {
		return a.cnt.memSize()
	}
	return a.sum.memSize() + a.cnt.memSize()
}

// decimalAvg returns sum*10^k / count rounded half away from zero, exactly:
// the magnitude is widened to 192 bits for the scaling multiply and divided
// word by word, so no intermediate can overflow. The result must fit in 38
// digits.
func decimalAvg(sum decimal128.Num, count int64, k int32) (decimal128.Num, error) {
	neg := sum.Sign() < 0
	mag := sum
	if neg {
		mag = sum.Negate()
	}
	w0, w1 := mag.LowBits(), uint64(mag.HighBits())
	var w2 uint64
	for i := int32(0); i < k; i++ {
		// Multiply the 192-bit (w2, w1, w0) by 10.
		h0, l0 := bits.Mul64(w0, 10)
		h1, l1 := bits.Mul64(w1, 10)
		_, l2 := bits.Mul64(w2, 10)
		w0 = l0
		var c uint64
		w1, c = bits.Add64(l1, h0, 0)
		w2 = l2 + h1 + c
	}
	c := uint64(count)
	q2, r := bits.Div64(0, w2, c)
	q1, r := bits.Div64(r, w1, c)
	q0, r := bits.Div64(r, w0, c)
	// Round half away from zero: r >= c/2 rounded up, i.e. 2r >= c.
	if r >= c-r {
		var carry uint64
		q0, carry = bits.Add64(q0, 1, 0)
		q1, carry = bits.Add64(q1, 0, carry)
		q2 += carry
	}
	if q2 != 0 || q1>>63 != 0 {
		return decimal128.Num{}, errDecimalOverflow
	}
	res := decimal128.New(int64(q1), q0)
	if !res.FitsInPrecision(plan.MaxDecimalPrecision) {
		return decimal128.Num{}, errDecimalOverflow
	}
	if neg {
		res = res.Negate()
	}
	return res, nil
}

// ---- min / max ----

// aggMinMax keeps the smallest (or largest) value per group; its state is one
// column of the argument's type.
type aggMinMax[T any] struct {
	typ   arrow.DataType
	isMax bool
	vals  []T
	seen  []bool
	value func(a arrow.Array, i int) T
	less  func(a, b T) bool
	app   func(b array.Builder, v T)
	width int64
}

func newAggMinMax(t arrow.DataType, isMax bool) (aggAccumulator, error) {
	switch t.ID() {
	case arrow.INT32:
		return &aggMinMax[int32]{typ: t, isMax: isMax, width: 4, less: cmp.Less[int32],
			value: func(a arrow.Array, i int) int32 { return a.(*array.Int32).Value(i) },
			app:   func(b array.Builder, v int32) { b.(*array.Int32Builder).Append(v) }}, nil
	case arrow.DATE32:
		return &aggMinMax[arrow.Date32]{typ: t, isMax: isMax, width: 4, less: cmp.Less[arrow.Date32],
			value: func(a arrow.Array, i int) arrow.Date32 { return a.(*array.Date32).Value(i) },
			app:   func(b array.Builder, v arrow.Date32) { b.(*array.Date32Builder).Append(v) }}, nil
	case arrow.INT64:
		return &aggMinMax[int64]{typ: t, isMax: isMax, width: 8, less: cmp.Less[int64],
			value: func(a arrow.Array, i int) int64 { return a.(*array.Int64).Value(i) },
			app:   func(b array.Builder, v int64) { b.(*array.Int64Builder).Append(v) }}, nil
	case arrow.TIMESTAMP:
		return &aggMinMax[arrow.Timestamp]{typ: t, isMax: isMax, width: 8, less: cmp.Less[arrow.Timestamp],
			value: func(a arrow.Array, i int) arrow.Timestamp { return a.(*array.Timestamp).Value(i) },
			app:   func(b array.Builder, v arrow.Timestamp) { b.(*array.TimestampBuilder).Append(v) }}, nil
	case arrow.FLOAT64:
		return &aggMinMax[float64]{typ: t, isMax: isMax, width: 8, less: func(a, b float64) bool { return expr.CompareFloats(a, b) < 0 },
			value: func(a arrow.Array, i int) float64 { return a.(*array.Float64).Value(i) },
			app:   func(b array.Builder, v float64) { b.(*array.Float64Builder).Append(v) }}, nil
	case arrow.DECIMAL128:
		return &aggMinMax[decimal128.Num]{typ: t, isMax: isMax, width: 16,
			less:  func(a, b decimal128.Num) bool { return a.Less(b) },
			value: func(a arrow.Array, i int) decimal128.Num { return a.(*array.Decimal128).Value(i) },
			app:   func(b array.Builder, v decimal128.Num) { b.(*array.Decimal128Builder).Append(v) }}, nil
	case arrow.STRING:
		return &aggMinMax[string]{typ: t, isMax: isMax, width: 24, less: cmp.Less[string],
			// Copy: the batch's buffers are released after update.
			value: func(a arrow.Array, i int) string { return a.(*array.String).Value(i) },
			app:   func(b array.Builder, v string) { b.(*array.StringBuilder).Append(v) }}, nil
	case arrow.INTERVAL_MONTH_DAY_NANO:
		return &aggMinMax[arrow.MonthDayNanoInterval]{typ: t, isMax: isMax, width: 16,
			less:  func(a, b arrow.MonthDayNanoInterval) bool { return expr.CompareIntervals(a, b) < 0 },
			value: func(a arrow.Array, i int) arrow.MonthDayNanoInterval { return a.(*array.MonthDayNanoInterval).Value(i) },
			app: func(b array.Builder, v arrow.MonthDayNanoInterval) {
				b.(*array.MonthDayNanoIntervalBuilder).Append(v)
			}}, nil
	case arrow.BOOL:
		return &aggMinMax[bool]{typ: t, isMax: isMax, width: 1,
			less:  func(a, b bool) bool { return !a && b },
			value: func(a arrow.Array, i int) bool { return a.(*array.Boolean).Value(i) },
			app:   func(b array.Builder, v bool) { b.(*array.BooleanBuilder).Append(v) }}, nil
	}
	return nil, fmt.Errorf("min/max of %s is not supported", t)
}

func (m *aggMinMax[T]) resize(n int) {
	m.vals = growSlice(m.vals, n)
	m.seen = growSlice(m.seen, n)
}

func (m *aggMinMax[T]) update(gids []int32, arg arrow.Array) error {
	_, isString := any(m.vals).([]string)
	for i, g := range gids {
		if arg.IsNull(i) {
			continue
		}
		v := m.value(arg, i)
		if !m.seen[g] || (m.isMax && m.less(m.vals[g], v)) || (!m.isMax && m.less(v, m.vals[g])) {
			if isString {
				// Copy: the string points into the batch's buffer.
				v = any(string([]byte(any(v).(string)))).(T)
			}
			m.vals[g] = v
			m.seen[g] = true
		}
	}
	return nil
}

// offer takes value i of a as group g's when the group has none yet or it
// is larger (max) or smaller (min) than the group's, and reports whether
// it did; a must not be NULL at i.
func (m *aggMinMax[T]) offer(g int32, a arrow.Array, i int) bool {
	v := m.value(a, i)
	if m.seen[g] && !(m.isMax && m.less(m.vals[g], v)) && !(!m.isMax && m.less(v, m.vals[g])) {
		return false
	}
	m.store(g, v)
	return true
}

// put sets group g's value to value i of a, or to none when it is NULL.
func (m *aggMinMax[T]) put(g int32, a arrow.Array, i int) {
	if a.IsNull(i) {
		var zero T
		m.vals[g], m.seen[g] = zero, false
		return
	}
	m.store(g, m.value(a, i))
}

func (m *aggMinMax[T]) store(g int32, v T) {
	if s, ok := any(v).(string); ok {
		// Copy: the string points into the batch's buffer.
		v = any(string([]byte(s))).(T)
	}
	m.vals[g] = v
	m.seen[g] = true
}

func (m *aggMinMax[T]) merge(gids []int32, states []arrow.Array) error {
	return m.update(gids, states[0])
}

func (m *aggMinMax[T]) stateTypes() []arrow.DataType { return []arrow.DataType{m.typ} }

func (m *aggMinMax[T]) emitStates(start, end int, mem memory.Allocator) ([]arrow.Array, error) {
	a, err := m.emitFinal(start, end, mem)
	return []arrow.Array{a}, err
}

func (m *aggMinMax[T]) emitFinal(start, end int, mem memory.Allocator) (arrow.Array, error) {
	b := array.NewBuilder(mem, m.typ)
	defer b.Release()
	b.Reserve(end - start)
	for g := start; g < end; g++ {
		if !m.seen[g] {
			b.AppendNull()
		} else {
			m.app(b, m.vals[g])
		}
	}
	return b.NewArray(), nil
}

func (m *aggMinMax[T]) memSize() int64 { return int64(cap(m.vals)) * (m.width + 1) }

// ---- single value ----

// ErrSubqueryRows is PostgreSQL's error for a scalar subquery that returns
// more than one row (for one outer row, when correlated).
var ErrSubqueryRows = expr.NewDataError("more than one row returned by a subquery used as an expression")

// aggSingleValue counts each group's rows and fails at the second one; the
// value is kept by a max accumulator, which for at most one row is that
// row's value (NULL for none, or a NULL value). Its states are the value
// and the row count, so partial states from several partitions merge into
// a count that still catches two rows of one group.
type aggSingleValue struct {
	val    aggAccumulator
	counts []int64
}

func (a *aggSingleValue) resize(n int) {
	a.val.resize(n)
	a.counts = growSlice(a.counts, n)
}

func (a *aggSingleValue) update(gids []int32, arg arrow.Array) error {
	for _, g := range gids {
		a.counts[g]++
		if a.counts[g] > 1 {
			return ErrSubqueryRows
		}
	}
	return a.val.update(gids, arg)
}

func (a *aggSingleValue) merge(gids []int32, states []arrow.Array) error {
	st := states[1].(*array.Int64)
	for i, g := range gids {
		if st.IsValid(i) {
			a.counts[g] += st.Value(i)
			if a.counts[g] > 1 {
				return ErrSubqueryRows
			}
		}
	}
	return a.val.merge(gids, states[:1])
}

func (a *aggSingleValue) stateTypes() []arrow.DataType {
	return append(a.val.stateTypes(), plan.Int64)
}

func (a *aggSingleValue) emitStates(start, end int, mem memory.Allocator) ([]arrow.Array, error) {
	vals, err := a.val.emitStates(start, end, mem)
	if err != nil {
		return nil, err
	}
	b := array.NewInt64Builder(mem)
	defer b.Release()
	b.AppendValues(a.counts[start:end], nil)
	return append(vals, b.NewArray()), nil
}

func (a *aggSingleValue) emitFinal(start, end int, mem memory.Allocator) (arrow.Array, error) {
	return a.val.emitFinal(start, end, mem)
}

func (a *aggSingleValue) memSize() int64 { return a.val.memSize() + int64(cap(a.counts))*8 }

// aggNulls is the value of an untyped NULL column (SELECT NULL): always
// NULL, with no state but the NULL column itself.
type aggNulls struct{}

func (aggNulls) resize(int)                         {}
func (aggNulls) update([]int32, arrow.Array) error  { return nil }
func (aggNulls) merge([]int32, []arrow.Array) error { return nil }
func (aggNulls) stateTypes() []arrow.DataType       { return []arrow.DataType{arrow.Null} }
func (aggNulls) memSize() int64                     { return 0 }
func (aggNulls) emitFinal(start, end int, _ memory.Allocator) (arrow.Array, error) {
	return array.NewNull(end - start), nil
}
func (a aggNulls) emitStates(start, end int, mem memory.Allocator) ([]arrow.Array, error) {
	v, err := a.emitFinal(start, end, mem)
	return []arrow.Array{v}, err
}

// ---- distinct ----

// aggDistinct feeds each (group, value) pair to the inner accumulator only
// the first time it is seen; NULL values are skipped. Only single-stage
// aggregation uses it (partial states of distinct aggregates cannot merge).
type aggDistinct struct {
	inner aggAccumulator
	seen  *groupTable
	mem   memory.Allocator
	// scratch
	newRows []bool
	pairIDs []int32
}

func newAggDistinct(inner aggAccumulator, argType arrow.DataType, mem memory.Allocator) (*aggDistinct, error) {
	t, err := newGroupTable([]arrow.DataType{plan.Int64, argType})
	if err != nil {
		return nil, fmt.Errorf("distinct aggregate: %w", err)
	}
	return &aggDistinct{inner: inner, seen: t, mem: mem}, nil
}

func (d *aggDistinct) resize(n int) { d.inner.resize(n) }

func (d *aggDistinct) update(gids []int32, arg arrow.Array) error {
	n := len(gids)
	gb := array.NewInt64Builder(d.mem)
	defer gb.Release()
	gb.Reserve(n)
	for _, g := range gids {
		gb.UnsafeAppend(int64(g))
	}
	garr := gb.NewArray()
	defer garr.Release()
	d.newRows = growSlice(d.newRows[:0], n)
	d.pairIDs = growSlice(d.pairIDs[:0], n)
	if err := d.seen.lookup([]arrow.Array{garr, arg}, n, d.pairIDs, d.newRows); err != nil {
		return fmt.Errorf("distinct aggregate: %w", err)
	}
	var rows []int32
	var subGids []int32
	for i := 0; i < n; i++ {
		if d.newRows[i] && arg.IsValid(i) {
			rows = append(rows, int32(i))
			subGids = append(subGids, gids[i])
		}
	}
	if len(rows) == 0 {
		return nil
	}
	sub, err := joinTakeArray(arg, rows, d.mem)
	if err != nil {
		return fmt.Errorf("distinct aggregate: %w", err)
	}
	defer sub.Release()
	return d.inner.update(subGids, sub)
}

// release frees what the inner accumulator retains.
func (d *aggDistinct) release() {
	if r, ok := d.inner.(interface{ release() }); ok {
		r.release()
	}
}

func (d *aggDistinct) merge([]int32, []arrow.Array) error {
	return errors.New("distinct aggregates cannot merge partial states")
}

func (d *aggDistinct) stateTypes() []arrow.DataType { return d.inner.stateTypes() }

func (d *aggDistinct) emitStates(int, int, memory.Allocator) ([]arrow.Array, error) {
	return nil, errors.New("distinct aggregates have no partial state")
}

func (d *aggDistinct) emitFinal(start, end int, mem memory.Allocator) (arrow.Array, error) {
	return d.inner.emitFinal(start, end, mem)
}

func (d *aggDistinct) memSize() int64 { return d.inner.memSize() + d.seen.memSize() }

// growSlice extends s with zero values to length n.
func growSlice[T any](s []T, n int) []T {
	if n <= len(s) {
		return s[:n]
	}
	if n <= cap(s) {
		old := len(s)
		s = s[:n]
		clear(s[old:])
		return s
	}
	ns := make([]T, n, max(n, 2*cap(s)))
	copy(ns, s)
	return ns
}

// growStates is growSlice for the per-group states of the hot
// accumulators (sums, counts), which are pointer-free: their slices come
// from mempool through growKeys, as group-key stores' do, and go back to it
// as they grow and when the accumulator is released (freePooled), instead
// of fresh zeroed pages from the Go heap at every doubling; new groups are
// cleared. Emitting copies the states (builders), so nothing refers to a
// slice once it is given back.
func growStates[T any](s []T, n int) []T {
	if n <= cap(s) {
		return growSlice(s, n)
	}
	old := len(s)
	s = growKeys(s, n-old)[:n]
	clear(s[old:])
	return s
}

// ---- arg_max(arg, val), arg_min(arg, val) ----

// minMaxCells is what aggArgMinMax needs of aggMinMax: offer a value to a
// group, or put one there unconditionally.
type minMaxCells interface {
	aggAccumulator
	offer(g int32, a arrow.Array, i int) bool
	put(g int32, a arrow.Array, i int)
}

// aggArgMinMax is DuckDB's arg_max(arg, val) (max_by) and arg_min (min_by):
// per group, the arg of the row with the largest (smallest) val, rows with
// a NULL val skipped; a NULL arg of that row is the result. The best val
// and its arg are kept as a min/max accumulator each, and are also the
// partial state, so partial aggregates merge (a state with a NULL val is a
// group without rows). Of rows with equal vals, the first seen wins.
type aggArgMinMax struct {
	val, arg minMaxCells
}

func newAggArgMinMax(argType, valType arrow.DataType, isMax bool) (aggAccumulator, error) {
	val, err := newAggMinMax(valType, isMax)
	if err != nil {
		return nil, fmt.Errorf("arg_max/arg_min ordering by %s is not supported", valType)
	}
	arg, err := newAggMinMax(argType, true)
	if err != nil {
		return nil, fmt.Errorf("arg_max/arg_min returning %s is not supported", argType)
	}
	return &aggArgMinMax{val: val.(minMaxCells), arg: arg.(minMaxCells)}, nil
}

func (s *aggArgMinMax) resize(n int) {
	s.val.resize(n)
	s.arg.resize(n)
}

func (s *aggArgMinMax) update([]int32, arrow.Array) error {
	return errors.New("arg_max/arg_min needs two arguments")
}

func (s *aggArgMinMax) update2(gids []int32, arg, val arrow.Array) error {
	for i, g := range gids {
		if val.IsNull(i) {
			continue
		}
		if s.val.offer(g, val, i) {
			s.arg.put(g, arg, i)
		}
	}
	return nil
}

func (s *aggArgMinMax) merge(gids []int32, states []arrow.Array) error {
	return s.update2(gids, states[1], states[0])
}

func (s *aggArgMinMax) stateTypes() []arrow.DataType {
	return []arrow.DataType{s.val.stateTypes()[0], s.arg.stateTypes()[0]}
}

func (s *aggArgMinMax) emitStates(start, end int, mem memory.Allocator) ([]arrow.Array, error) {
	v, err := s.val.emitFinal(start, end, mem)
	if err != nil {
		return nil, err
	}
	a, err := s.arg.emitFinal(start, end, mem)
	if err != nil {
		v.Release()
		return nil, err
	}
	return []arrow.Array{v, a}, nil
}

func (s *aggArgMinMax) emitFinal(start, end int, mem memory.Allocator) (arrow.Array, error) {
	return s.arg.emitFinal(start, end, mem)
}

func (s *aggArgMinMax) memSize() int64 { return s.val.memSize() + s.arg.memSize() }
