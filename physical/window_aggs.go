package physical

import (
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/physical/kernels"
	"sluice/plan"
)

// windowAggregator computes one aggregate over a moving set of rows of an
// evaluated batch: the rows of the current frame. Results are the same as
// the GROUP BY accumulators' (same types, overflow errors and rounding).
type windowAggregator interface {
	// init binds the argument column (nil for count(*)) of a batch of n rows.
	init(arg arrow.Array, n int) error
	// reset empties the set.
	reset()
	add(r int) error
	// remove takes row r out again; only called when invertible.
	remove(r int) error
	// invertible reports whether remove is supported exactly.
	invertible() bool
	// emit records the aggregate of the current set as row r's result.
	emit(r int) error
	// finish returns the results of every row.
	finish(mem memory.Allocator) (arrow.Array, error)
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
		}
		return nil, fmt.Errorf("%s of %s is not supported", fn, argType)
	case plan.AggMin, plan.AggMax:
		if argType.ID() == arrow.NULL {
			return nil, fmt.Errorf("%s of null is not supported", fn)
		}
		if _, err := newKeyColumn(argType); err != nil {
			return nil, fmt.Errorf("%s: %w", fn, err)
		}
		return &winMinMax{isMax: fn == plan.AggMax}, nil
	}
	return nil, fmt.Errorf("aggregate %s is not supported as a window function", fn)
}

// ---- count ----

type winCount struct {
	star bool
	none bool
	arg  arrow.Array
	n    int64
	out  []int64
}

func (c *winCount) init(arg arrow.Array, n int) error {
	c.arg, c.out = arg, make([]int64, n)
	// count(NULL) counts nothing (a NULL-typed array has no validity
	// bitmap, so it reports its values as valid).
	c.none = arg != nil && arg.DataType().ID() == arrow.NULL
	return nil
}
func (c *winCount) reset()           { c.n = 0 }
func (c *winCount) invertible() bool { return true }
func (c *winCount) counts(r int) bool {
	return c.star || (!c.none && c.arg.IsValid(r))
}
func (c *winCount) add(r int) error {
	if c.counts(r) {
		c.n++
	}
	return nil
}
func (c *winCount) remove(r int) error {
	if c.counts(r) {
		c.n--
	}
	return nil
}
func (c *winCount) emit(r int) error { c.out[r] = c.n; return nil }
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
	arg    arrow.Array
	vals   []int64
	sum    int64
	cnt    int64
	out    []int64
	outF   []float64
	outSet []bool
}

func (s *winSumInt) init(arg arrow.Array, n int) error {
	s.arg = arg
	switch a := arg.(type) {
	case *array.Int64:
		s.vals = a.Int64Values()
	case *array.Int32:
		s.vals = make([]int64, a.Len())
		for i, v := range a.Int32Values() {
			s.vals[i] = int64(v)
		}
	default:
		return fmt.Errorf("sum: unexpected argument type %s", arg.DataType())
	}
	s.outSet = make([]bool, n)
	if s.avg {
		s.outF = make([]float64, n)
	} else {
		s.out = make([]int64, n)
	}
	return nil
}
func (s *winSumInt) reset()           { s.sum, s.cnt = 0, 0 }
func (s *winSumInt) invertible() bool { return true }
func (s *winSumInt) add(r int) error {
	if s.arg.IsNull(r) {
		return nil
	}
	x, v := s.sum, s.vals[r]
	s.sum = x + v
	s.cnt++
	if ((x ^ s.sum) & (v ^ s.sum)) < 0 {
		return errors.New("sum: integer overflow")
	}
	return nil
}
func (s *winSumInt) remove(r int) error {
	if s.arg.IsNull(r) {
		return nil
	}
	x, v := s.sum, s.vals[r]
	s.sum = x - v
	s.cnt--
	if ((x ^ v) & (x ^ s.sum)) < 0 {
		return errors.New("sum: integer overflow")
	}
	return nil
}
func (s *winSumInt) emit(r int) error {
	if s.cnt == 0 {
		return nil
	}
	s.outSet[r] = true
	if s.avg {
		s.outF[r] = float64(s.sum) / float64(s.cnt)
	} else {
		s.out[r] = s.sum
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
	arg    *array.Float64
	sum    float64
	cnt    int64
	out    []float64
	outSet []bool
}

func (s *winSumFloat) init(arg arrow.Array, n int) error {
	a, ok := arg.(*array.Float64)
	if !ok {
		return fmt.Errorf("sum: unexpected argument type %s", arg.DataType())
	}
	s.arg, s.out, s.outSet = a, make([]float64, n), make([]bool, n)
	return nil
}
func (s *winSumFloat) reset()           { s.sum, s.cnt = 0, 0 }
func (s *winSumFloat) invertible() bool { return false }
func (s *winSumFloat) add(r int) error {
	if s.arg.IsValid(r) {
		s.sum += s.arg.Value(r)
		s.cnt++
	}
	return nil
}
func (s *winSumFloat) remove(int) error { return errors.New("internal: float sums cannot remove rows") }
func (s *winSumFloat) emit(r int) error {
	if s.cnt == 0 {
		return nil
	}
	s.outSet[r] = true
	s.out[r] = s.sum
	if s.avg {
		s.out[r] = s.sum / float64(s.cnt)
	}
	return nil
}
func (s *winSumFloat) finish(mem memory.Allocator) (arrow.Array, error) {
	b := array.NewFloat64Builder(mem)
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
	arg    arrow.Array
	vals   []decimal128.Num
	sum    decimal128.Num
	cnt    int64
	out    []decimal128.Num
	outSet []bool
}

func (s *winSumDecimal) init(arg arrow.Array, n int) error {
	if arg.DataType().ID() != arrow.DECIMAL128 {
		return fmt.Errorf("sum: unexpected argument type %s", arg.DataType())
	}
	s.arg, s.vals = arg, arrow.GetValues[decimal128.Num](arg.Data(), 1)
	s.out, s.outSet = make([]decimal128.Num, n), make([]bool, n)
	return nil
}
func (s *winSumDecimal) reset()           { s.sum, s.cnt = decimal128.Num{}, 0 }
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
func (s *winSumDecimal) add(r int) error {
	if s.arg.IsNull(r) {
		return nil
	}
	s.cnt++
	return s.addNum(s.vals[r])
}
func (s *winSumDecimal) remove(r int) error {
	if s.arg.IsNull(r) {
		return nil
	}
	s.cnt--
	return s.addNum(s.vals[r].Negate())
}
func (s *winSumDecimal) emit(r int) error {
	if s.cnt == 0 {
		return nil
	}
	if s.avg {
		v, err := decimalAvg(s.sum, s.cnt, s.k)
		if err != nil {
			return fmt.Errorf("avg: %w", err)
		}
		s.out[r] = v
	} else {
		if !s.sum.FitsInPrecision(s.typ.Precision) {
			return fmt.Errorf("sum: %w", errDecimalOverflow)
		}
		s.out[r] = s.sum
	}
	s.outSet[r] = true
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
// gathered from the argument column at the end.
type winMinMax struct {
	isMax bool
	arg   arrow.Array
	col   keyColumn
	best  int
	out   []int32
	valid []bool
}

func (m *winMinMax) init(arg arrow.Array, n int) error {
	col, err := newKeyColumn(arg.DataType())
	if err != nil {
		return err
	}
	col.add(arg)
	m.arg, m.col, m.best = arg, col, -1
	m.out, m.valid = make([]int32, n), make([]bool, n)
	return nil
}
func (m *winMinMax) reset()           { m.best = -1 }
func (m *winMinMax) invertible() bool { return false }
func (m *winMinMax) add(r int) error {
	if m.arg.IsNull(r) {
		return nil
	}
	if m.best < 0 {
		m.best = r
		return nil
	}
	c := m.col.compare(kernels.RowRef{Batch: 0, Row: int32(r)}, kernels.RowRef{Batch: 0, Row: int32(m.best)})
	if (m.isMax && c > 0) || (!m.isMax && c < 0) {
		m.best = r
	}
	return nil
}
func (m *winMinMax) remove(int) error { return errors.New("internal: min/max cannot remove rows") }
func (m *winMinMax) emit(r int) error {
	if m.best >= 0 {
		m.out[r], m.valid[r] = int32(m.best), true
	}
	return nil
}
func (m *winMinMax) finish(mem memory.Allocator) (arrow.Array, error) {
	vals, err := kernels.TakeArray(mem, m.arg, m.out)
	if err != nil {
		return nil, err
	}
	defer vals.Release()
	// Rows with an empty (or all-NULL) frame are NULL: copy vals with
	// those positions cleared.
	allValid := true
	for _, v := range m.valid {
		allValid = allValid && v
	}
	if allValid {
		vals.Retain()
		return vals, nil
	}
	idx := make([]int32, len(m.out))
	for i := range idx {
		idx[i] = int32(i)
		if !m.valid[i] {
			idx[i] = int32(len(m.out))
		}
	}
	null := array.MakeArrayOfNull(mem, m.arg.DataType(), 1)
	defer null.Release()
	all, err := array.Concatenate([]arrow.Array{vals, null}, mem)
	if err != nil {
		return nil, err
	}
	defer all.Release()
	return kernels.TakeArray(mem, all, idx)
}
