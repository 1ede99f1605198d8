package physical

import (
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/physical/expr"
	"sluice/physical/kernels"
	"sluice/plan"
)

// windowAggregator computes one aggregate over a moving set of rows: the
// rows of the current frame. Rows are given as a row of a prepared
// argument column (winAggArg): the in-memory window has one for its
// batch, a spilled window partition one per block it reads back, so the
// set may hold rows of several columns. Results are the same as the
// GROUP BY accumulators' (same types, overflow errors and rounding).
type windowAggregator interface {
	// outputs starts n new results (emit's i indexes them), keeping the
	// set.
	outputs(n int)
	// reset empties the set.
	reset()
	add(a *winAggArg, r int) error
	// remove takes row r of a out again; only called when invertible.
	remove(a *winAggArg, r int) error
	// invertible reports whether remove is supported exactly.
	invertible() bool
	// emit records the aggregate of the current set as result i.
	emit(i int) error
	// finish returns the results since outputs (not for a winPicker).
	finish(mem memory.Allocator) (arrow.Array, error)
	// release drops the columns the aggregator still refers to.
	release()
}

// winPicker is an aggregator whose results are rows of its argument (min
// and max): its caller gathers them.
type winPicker interface {
	// picks returns, per result since outputs, the partition row (its
	// column's base plus its row) whose value it is, or -1 for NULL.
	picks() []int64
}

// winDropper is an aggregator that, though not invertible, may let rows
// leave the set without starting it over in some states: a min or max
// whose extreme row stays.
type winDropper interface {
	// keeps reports whether the aggregate of the set without its rows
	// before partition row s is the aggregate of the set.
	keeps(s int64) bool
}

// winAggArg is an aggregate's argument column (nil for count(*)) prepared
// for reading rows; base is the partition row its row 0 is.
type winAggArg struct {
	arr  arrow.Array
	base int64
	null bool // arr is of the NULL type: every value is NULL
	i64  []int64
	f64  *array.Float64
	dec  []decimal128.Num
	iv   []arrow.MonthDayNanoInterval
}

// newWinAggArg prepares arr for the aggregate fn.
func newWinAggArg(fn plan.AggFunc, arr arrow.Array, base int64) (*winAggArg, error) {
	a := &winAggArg{arr: arr, base: base, null: arr != nil && arr.DataType().ID() == arrow.NULL}
	if arr == nil || (fn != plan.AggSum && fn != plan.AggAvg) {
		return a, nil
	}
	switch x := arr.(type) {
	case *array.Int64:
		a.i64 = x.Int64Values()
	case *array.Int32:
		a.i64 = make([]int64, x.Len())
		for i, v := range x.Int32Values() {
			a.i64[i] = int64(v)
		}
	case *array.Float64:
		a.f64 = x
	case *array.Decimal128:
		a.dec = arrow.GetValues[decimal128.Num](x.Data(), 1)
	case *array.MonthDayNanoInterval:
		a.iv = x.MonthDayNanoIntervalValues()
	default:
		return nil, fmt.Errorf("%s: unexpected argument type %s", fn, arr.DataType())
	}
	return a, nil
}

// newWindowAggregator returns the aggregator for fn over argType (nil for
// count(*)) producing resultType.
func newWindowAggregator(fn plan.AggFunc, argType, resultType arrow.DataType) (windowAggregator, error) {
	switch fn {
	case plan.AggCountStar:
		return &winCount{star: true}, nil
	case plan.AggCount:
		return &winCount{}, nil
	case plan.AggSum, plan.AggAvg:
		avg := fn == plan.AggAvg
		switch argType.ID() {
		case arrow.INT32, arrow.INT64:
			return &winSumInt{avg: avg}, nil
		case arrow.FLOAT64:
			return &winSumFloat{avg: avg}, nil
		case arrow.DECIMAL128:
			rt, ok := resultType.(*arrow.Decimal128Type)
			if !ok {
				return nil, fmt.Errorf("%s of %s cannot produce %s", fn, argType, resultType)
			}
			return &winSumDecimal{avg: avg, typ: rt, k: rt.Scale - argType.(*arrow.Decimal128Type).Scale}, nil
		case arrow.INTERVAL_MONTH_DAY_NANO:
			return &winSumInterval{avg: avg}, nil
		}
		return nil, fmt.Errorf("%s of %s is not supported", fn, argType)
	case plan.AggMin, plan.AggMax:
		if argType.ID() == arrow.NULL {
			return nil, fmt.Errorf("%s of null is not supported", fn)
		}
		m, err := newWinMinMax(fn == plan.AggMax, argType)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", fn, err)
		}
		return m, nil
	}
	return nil, fmt.Errorf("aggregate %s is not supported as a window function", fn)
}

// ---- count ----

type winCount struct {
	star bool
	n    int64
	out  []int64
}

func (c *winCount) outputs(n int)    { c.out = make([]int64, n) }
func (c *winCount) reset()           { c.n = 0 }
func (c *winCount) release()         {}
func (c *winCount) invertible() bool { return true }

// counts reports whether row r counts; count(NULL) counts nothing (a
// NULL-typed array has no validity bitmap, so it reports its values as
// valid).
func (c *winCount) counts(a *winAggArg, r int) bool {
	return c.star || (!a.null && a.arr.IsValid(r))
}
func (c *winCount) add(a *winAggArg, r int) error {
	if c.counts(a, r) {
		c.n++
	}
	return nil
}
func (c *winCount) remove(a *winAggArg, r int) error {
	if c.counts(a, r) {
		c.n--
	}
	return nil
}
func (c *winCount) emit(i int) error { c.out[i] = c.n; return nil }
func (c *winCount) finish(mem memory.Allocator) (arrow.Array, error) {
	b := array.NewInt64Builder(mem)
	defer b.Release()
	b.AppendValues(c.out, nil)
	return b.NewArray(), nil
}

// ---- sum and avg of integers ----

// winSumInt sums int32/int64 into int64, failing on overflow; as avg it
// divides in float64, as the GROUP BY accumulator does.
type winSumInt struct {
	avg    bool
	sum    int64
	cnt    int64
	out    []int64
	outF   []float64
	outSet []bool
}

func (s *winSumInt) outputs(n int) {
	s.outSet = make([]bool, n)
	if s.avg {
		s.outF = make([]float64, n)
	} else {
		s.out = make([]int64, n)
	}
}
func (s *winSumInt) reset()           { s.sum, s.cnt = 0, 0 }
func (s *winSumInt) release()         {}
func (s *winSumInt) invertible() bool { return true }
func (s *winSumInt) add(a *winAggArg, r int) error {
	if a.arr.IsNull(r) {
		return nil
	}
	if a.i64 == nil {
		return fmt.Errorf("sum: unexpected argument type %s", a.arr.DataType())
	}
	x, v := s.sum, a.i64[r]
	s.sum = x + v
	s.cnt++
	if ((x ^ s.sum) & (v ^ s.sum)) < 0 {
		return errSumOverflow
	}
	return nil
}
func (s *winSumInt) remove(a *winAggArg, r int) error {
	if a.arr.IsNull(r) {
		return nil
	}
	x, v := s.sum, a.i64[r]
	s.sum = x - v
	s.cnt--
	if ((x ^ v) & (x ^ s.sum)) < 0 {
		return errSumOverflow
	}
	return nil
}
func (s *winSumInt) emit(i int) error {
	if s.cnt == 0 {
		return nil
	}
	s.outSet[i] = true
	if s.avg {
		s.outF[i] = float64(s.sum) / float64(s.cnt)
	} else {
		s.out[i] = s.sum
	}
	return nil
}
func (s *winSumInt) finish(mem memory.Allocator) (arrow.Array, error) {
	if s.avg {
		b := array.NewFloat64Builder(mem)
		defer b.Release()
		b.AppendValues(s.outF, s.outSet)
		return b.NewArray(), nil
	}
	b := array.NewInt64Builder(mem)
	defer b.Release()
	b.AppendValues(s.out, s.outSet)
	return b.NewArray(), nil
}

// ---- sum and avg of float64 ----

// winSumFloat is not invertible: subtracting floats back out would not give
// the sum of the remaining rows exactly.
type winSumFloat struct {
	avg    bool
	sum    float64
	cnt    int64
	out    []float64
	outSet []bool
}

func (s *winSumFloat) outputs(n int)    { s.out, s.outSet = make([]float64, n), make([]bool, n) }
func (s *winSumFloat) reset()           { s.sum, s.cnt = 0, 0 }
func (s *winSumFloat) release()         {}
func (s *winSumFloat) invertible() bool { return false }
func (s *winSumFloat) add(a *winAggArg, r int) error {
	if a.f64 == nil {
		return fmt.Errorf("sum: unexpected argument type %s", a.arr.DataType())
	}
	if a.f64.IsValid(r) {
		s.sum += a.f64.Value(r)
		s.cnt++
	}
	return nil
}
func (s *winSumFloat) remove(*winAggArg, int) error {
	return errors.New("internal: float sums cannot remove rows")
}
func (s *winSumFloat) emit(i int) error {
	if s.cnt == 0 {
		return nil
	}
	s.outSet[i] = true
	s.out[i] = s.sum
	if s.avg {
		s.out[i] = s.sum / float64(s.cnt)
	}
	return nil
}
func (s *winSumFloat) finish(mem memory.Allocator) (arrow.Array, error) {
	b := array.NewFloat64Builder(mem)
	defer b.Release()
	b.AppendValues(s.out, s.outSet)
	return b.NewArray(), nil
}

// ---- sum and avg of intervals ----

// winSumInterval sums intervals field by field and averages with
// expr.DivideInterval, as GROUP BY does (aggSumInterval).
type winSumInterval struct {
	avg                 bool
	months, days, nanos int64
	cnt                 int64
	out                 []arrow.MonthDayNanoInterval
	outSet              []bool
}

func (s *winSumInterval) outputs(n int) {
	s.out, s.outSet = make([]arrow.MonthDayNanoInterval, n), make([]bool, n)
}
func (s *winSumInterval) reset()           { s.months, s.days, s.nanos, s.cnt = 0, 0, 0, 0 }
func (s *winSumInterval) release()         {}
func (s *winSumInterval) invertible() bool { return true }

// step adds (sign 1) or removes (sign -1) row r's interval.
func (s *winSumInterval) step(a *winAggArg, r int, sign int64) error {
	if a.iv == nil {
		return fmt.Errorf("sum: unexpected argument type %s", a.arr.DataType())
	}
	if !a.arr.IsValid(r) {
		return nil
	}
	x := a.iv[r]
	n, ok := expr.AddSigned(s.nanos, x.Nanoseconds, sign)
	if !ok {
		return errIntervalSum
	}
	s.months += sign * int64(x.Months)
	s.days += sign * int64(x.Days)
	s.nanos = n
	s.cnt += sign
	return nil
}

func (s *winSumInterval) add(a *winAggArg, r int) error    { return s.step(a, r, 1) }
func (s *winSumInterval) remove(a *winAggArg, r int) error { return s.step(a, r, -1) }

func (s *winSumInterval) emit(i int) error {
	if s.cnt == 0 {
		return nil
	}
	if s.months != int64(int32(s.months)) || s.days != int64(int32(s.days)) {
		return errIntervalSum
	}
	v := arrow.MonthDayNanoInterval{Months: int32(s.months), Days: int32(s.days), Nanoseconds: s.nanos}
	if s.avg {
		var ok bool
		if v, ok = expr.DivideInterval(v, float64(s.cnt)); !ok {
			return errIntervalSum
		}
	}
	s.out[i], s.outSet[i] = v, true
	return nil
}

func (s *winSumInterval) finish(mem memory.Allocator) (arrow.Array, error) {
	b := array.NewMonthDayNanoIntervalBuilder(mem)
	defer b.Release()
	b.AppendValues(s.out, s.outSet)
	return b.NewArray(), nil
}

// ---- sum and avg of decimals ----

// winSumDecimal sums exactly in 128 bits (failing on overflow, and when the
// sum does not fit DECIMAL(38)); avg divides with decimalAvg, as GROUP BY
// does. typ is the result type, k the scale avg adds.
type winSumDecimal struct {
	avg    bool
	typ    *arrow.Decimal128Type
	k      int32
	sum    decimal128.Num
	cnt    int64
	out    []decimal128.Num
	outSet []bool
}

func (s *winSumDecimal) outputs(n int) {
	s.out, s.outSet = make([]decimal128.Num, n), make([]bool, n)
}
func (s *winSumDecimal) reset()           { s.sum, s.cnt = decimal128.Num{}, 0 }
func (s *winSumDecimal) release()         {}
func (s *winSumDecimal) invertible() bool { return true }

// addNum adds v to the sum, failing on two's-complement overflow.
func (s *winSumDecimal) addNum(v decimal128.Num) error {
	r := s.sum.Add(v)
	if s.sum.Sign() == v.Sign() && v.Sign() != 0 && r.Sign() != v.Sign() {
		return fmt.Errorf("sum: %w", errDecimalOverflow)
	}
	s.sum = r
	return nil
}
func (s *winSumDecimal) add(a *winAggArg, r int) error {
	if a.arr.IsNull(r) {
		return nil
	}
	if a.dec == nil {
		return fmt.Errorf("sum: unexpected argument type %s", a.arr.DataType())
	}
	s.cnt++
	return s.addNum(a.dec[r])
}
func (s *winSumDecimal) remove(a *winAggArg, r int) error {
	if a.arr.IsNull(r) {
		return nil
	}
	s.cnt--
	return s.addNum(a.dec[r].Negate())
}
func (s *winSumDecimal) emit(i int) error {
	if s.cnt == 0 {
		return nil
	}
	if s.avg {
		v, err := decimalAvg(s.sum, s.cnt, s.k)
		if err != nil {
			return fmt.Errorf("avg: %w", err)
		}
		s.out[i] = v
	} else {
		if !s.sum.FitsInPrecision(s.typ.Precision) {
			return fmt.Errorf("sum: %w", errDecimalOverflow)
		}
		s.out[i] = s.sum
	}
	s.outSet[i] = true
	return nil
}
func (s *winSumDecimal) finish(mem memory.Allocator) (arrow.Array, error) {
	b := array.NewDecimal128Builder(mem, s.typ)
	defer b.Release()
	b.AppendValues(s.out, s.outSet)
	return b.NewArray(), nil
}

// ---- min and max ----

// winMinMax keeps the row holding the extreme value; its results are
// picks, gathered from the argument by its caller. The best row's column
// is kept (retained) while it is best, as a spilled partition's block
// may be read past meanwhile.
type winMinMax struct {
	isMax bool
	col   keyColumn // slot 0: the best row's column; slot 1: a candidate's
	best  *winAggArg
	row   int // the best row of best, -1 for none
	cand  *winAggArg
	out   []int64
}

func newWinMinMax(isMax bool, argType arrow.DataType) (*winMinMax, error) {
	col, err := newKeyColumn(argType)
	if err != nil {
		return nil, err
	}
	col.add(nil)
	col.add(nil)
	return &winMinMax{isMax: isMax, col: col, row: -1}, nil
}

func (m *winMinMax) outputs(n int)    { m.out = make([]int64, n) }
func (m *winMinMax) reset()           { m.row = -1 }
func (m *winMinMax) invertible() bool { return false }
func (m *winMinMax) add(a *winAggArg, r int) error {
	if a.arr.IsNull(r) {
		return nil
	}
	if m.row >= 0 {
		if m.cand != a {
			m.col.set(1, a.arr)
			m.cand = a
		}
		c := m.col.compare(kernels.RowRef{Batch: 1, Row: int32(r)}, kernels.RowRef{Batch: 0, Row: int32(m.row)})
		if (m.isMax && c <= 0) || (!m.isMax && c >= 0) {
			return nil
		}
	}
	if m.best != a {
		a.arr.Retain()
		m.release()
		m.best = a
		m.col.set(0, a.arr)
	}
	m.row = r
	return nil
}
func (m *winMinMax) remove(*winAggArg, int) error {
	return errors.New("internal: min/max cannot remove rows")
}
func (m *winMinMax) emit(i int) error {
	m.out[i] = -1
	if m.row >= 0 {
		m.out[i] = m.best.base + int64(m.row)
	}
	return nil
}
func (m *winMinMax) picks() []int64 { return m.out }

// keeps: the extreme row is the first with its value, so it stays the
// extreme (and the first) once the rows before it are gone.
func (m *winMinMax) keeps(s int64) bool {
	return m.row < 0 || m.best.base+int64(m.row) >= s
}
func (m *winMinMax) finish(memory.Allocator) (arrow.Array, error) {
	return nil, errors.New("internal: min/max results are picks")
}
func (m *winMinMax) release() {
	if m.best != nil {
		m.best.arr.Release()
		m.best = nil
		m.col.set(0, nil)
	}
}
