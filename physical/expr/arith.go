package expr

import (
	"fmt"
	"math"
	"math/bits"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/plan"
)

// errIntOverflow reports an integer result out of its type's range.
var errIntOverflow = NewDataError("integer overflow")

// arith evaluates l op r producing type rt. Neither operand is all-NULL.
// A decimal result computed in int64 comes with a bound on its magnitude
// (EvalBound).
func arith(op plan.BinaryOp, l, r operand, rt arrow.DataType, n int, mem memory.Allocator) (arrow.Array, uint64, bool, error) {
	if rt.ID() == arrow.DECIMAL128 {
		return decimalArith(op, l, r, rt.(*arrow.Decimal128Type), n, mem)
	}
	out, err := otherArith(op, l, r, rt, n, mem)
	return out, 0, false, err
}

// decimalArith is arith for a decimal result.
func decimalArith(op plan.BinaryOp, l, r operand, dt *arrow.Decimal128Type, n int, mem memory.Allocator) (arrow.Array, uint64, bool, error) {
	valid, nulls := andValidity(mem, n, l.arr, r.arr)
	v := validity{}
	if valid != nil {
		v.bits = valid.Bytes()
	}
	fail := func(err error) (arrow.Array, uint64, bool, error) {
		if valid != nil {
			valid.Release()
		}
		return nil, 0, false, err
	}
	a, sa, as, err := decView(l)
	if err != nil {
		return fail(err)
	}
	b, sb, bs, err := decView(r)
	if err != nil {
		return fail(err)
	}
	buf, out := allocValues[decimal128.Num](mem, n)
	bound, bounded, err := decArith(op, decOperand{a, sa, as, l.bound, l.bounded}, decOperand{b, sb, bs, r.bound, r.bounded}, dt, out, v)
	if err != nil {
		buf.Release()
		return fail(err)
	}
	return makeArray(dt, n, valid, nulls, buf), bound, bounded, nil
}

// otherArith is arith for integer, float and temporal results.
func otherArith(op plan.BinaryOp, l, r operand, rt arrow.DataType, n int, mem memory.Allocator) (arrow.Array, error) {
	lt, rtp := operandType(l), operandType(r)
	if plan.IsTemporal(lt) || plan.IsTemporal(rtp) || lt.ID() == arrow.INTERVAL_MONTH_DAY_NANO ||
		rtp.ID() == arrow.INTERVAL_MONTH_DAY_NANO {
		return temporalArith(op, l, r, rt, n, mem)
	}
	valid, nulls := andValidity(mem, n, l.arr, r.arr)
	v := validity{}
	if valid != nil {
		v.bits = valid.Bytes()
	}
	fail := func(err error) (arrow.Array, error) {
		if valid != nil {
			valid.Release()
		}
		return nil, err
	}
	switch rt.ID() {
	case arrow.INT32:
		a, sa, err := i32View(l)
		if err != nil {
			return fail(err)
		}
		b, sb, err := i32View(r)
		if err != nil {
			return fail(err)
		}
		buf, out := allocValues[int32](mem, n)
		if err := intArith(op, a, sa, b, sb, out, v); err != nil {
			buf.Release()
			return fail(err)
		}
		return makeArray(rt, n, valid, nulls, buf), nil
	case arrow.INT64:
		a, sa, err := i64View(l)
		if err != nil {
			return fail(err)
		}
		b, sb, err := i64View(r)
		if err != nil {
			return fail(err)
		}
		buf, out := allocValues[int64](mem, n)
		if err := intArith(op, a, sa, b, sb, out, v); err != nil {
			buf.Release()
			return fail(err)
		}
		return makeArray(rt, n, valid, nulls, buf), nil
	case arrow.FLOAT64:
		a, sa, err := f64View(l)
		if err != nil {
			return fail(err)
		}
		b, sb, err := f64View(r)
		if err != nil {
			return fail(err)
		}
		buf, out := allocValues[float64](mem, n)
		if err := floatArith(op, a, sa, b, sb, out, v); err != nil {
			buf.Release()
			return fail(err)
		}
		return makeArray(rt, n, valid, nulls, buf), nil
	}
	return fail(fmt.Errorf("internal: arithmetic producing %s is not supported", rt))
}

// intArith computes out[i] = a[i*sa] op b[i*sb] with overflow and
// division-by-zero checks; errors are raised only for non-NULL rows (the
// values under NULL rows are arbitrary).
func intArith[T int32 | int64](op plan.BinaryOp, a []T, sa int, b []T, sb int, out []T, v validity) error {
	n := len(out)
	var z T
	wide := unsafe.Sizeof(z) == 8
	minT := T(-1) << (8*unsafe.Sizeof(z) - 1)
	switch op {
	case plan.OpAdd:
		for i := 0; i < n; i++ {
			x, y := a[i*sa], b[i*sb]
			s := x + y
			if (x^s)&(y^s) < 0 && v.valid(i) {
				return errIntOverflow
			}
			out[i] = s
		}
	case plan.OpSub:
		for i := 0; i < n; i++ {
			x, y := a[i*sa], b[i*sb]
			s := x - y
			if (x^y)&(x^s) < 0 && v.valid(i) {
				return errIntOverflow
			}
			out[i] = s
		}
	case plan.OpMul:
		for i := 0; i < n; i++ {
			x, y := a[i*sa], b[i*sb]
			var bad bool
			if wide {
				hi, lo := bits.Mul64(uint64(absI64(int64(x))), uint64(absI64(int64(y))))
				bad = hi != 0 || lo > math.MaxInt64 || x == minT || y == minT
				out[i] = x * y
			} else {
				p := int64(x) * int64(y)
				bad = p != int64(T(p))
				out[i] = T(p)
			}
			if bad && v.valid(i) {
				// Exact int64 MinInt64 products (e.g. MinInt64*1) are
				// reported as overflow too; they are not worth a slow path.
				return errIntOverflow
			}
		}
	case plan.OpDiv, plan.OpMod:
		for i := 0; i < n; i++ {
			x, y := a[i*sa], b[i*sb]
			if y == 0 {
				if v.valid(i) {
					return errDivByZero
				}
				continue
			}
			if y == -1 {
				if op == plan.OpMod {
					out[i] = 0
					continue
				}
				if x == minT && v.valid(i) {
					return errIntOverflow
				}
				out[i] = -x
				continue
			}
			if op == plan.OpDiv {
				out[i] = x / y
			} else {
				out[i] = x % y
			}
		}
	default:
		return fmt.Errorf("internal: %s is not arithmetic", op)
	}
	return nil
}

// floatArith computes out[i] = a[i*sa] op b[i*sb] for float64.
func floatArith(op plan.BinaryOp, a []float64, sa int, b []float64, sb int, out []float64, v validity) error {
	n := len(out)
	switch op {
	case plan.OpAdd:
		for i := 0; i < n; i++ {
			out[i] = a[i*sa] + b[i*sb]
		}
	case plan.OpSub:
		for i := 0; i < n; i++ {
			out[i] = a[i*sa] - b[i*sb]
		}
	case plan.OpMul:
		for i := 0; i < n; i++ {
			out[i] = a[i*sa] * b[i*sb]
		}
	case plan.OpDiv, plan.OpMod:
		for i := 0; i < n; i++ {
			y := b[i*sb]
			if y == 0 {
				if v.valid(i) {
					return errDivByZero
				}
				continue
			}
			if op == plan.OpDiv {
				out[i] = a[i*sa] / y
			} else {
				out[i] = math.Mod(a[i*sa], y)
			}
		}
	default:
		return fmt.Errorf("internal: %s is not arithmetic", op)
	}
	return nil
}

// decArith computes exact decimal arithmetic into out at dt's scale,
// checking that every non-NULL result fits dt's precision.
func decArith(op plan.BinaryOp, x, y decOperand, dt *arrow.Decimal128Type, out []decimal128.Num, v validity) (uint64, bool, error) {
	a, sa, as, b, sb, bs := x.vals, x.stride, x.scale, y.vals, y.stride, y.scale
	n := len(out)
	rs, rp := dt.Scale, dt.Precision
	if (op == plan.OpAdd || op == plan.OpSub) && as <= rs && bs <= rs && (as != rs || bs != rs) {
		// Bring both sides to the result scale once (cheap for a constant,
		// one pass for a column) so the fast loop below applies.
		var ok bool
		if a, ok = upscaleAll(a, as, rs, v); !ok {
			return 0, false, errDecimalOverflow
		}
		if b, ok = upscaleAll(b, bs, rs, v); !ok {
			return 0, false, errDecimalOverflow
		}
		// The values changed; their bounds no longer hold.
		x.bounded = x.bounded && as == rs
		y.bounded = y.bounded && bs == rs
		as, bs = rs, rs
	}
	// Fastest path: operands whose largest magnitudes bound every sum or
	// product within int64 are computed in int64 (checked once per batch,
	// or known from the operands' own arithmetic).
	if (op == plan.OpAdd || op == plan.OpSub || op == plan.OpMul) && rp >= 19 &&
		((op == plan.OpMul && as+bs == rs) || (op != plan.OpMul && as == rs && bs == rs)) {
		if bound, ok := int64ResultBound(op, a, x.bound, x.bounded, b, y.bound, y.bounded); ok {
			decArith64(op, a, sa, b, sb, out)
			return bound, true, nil
		}
	}
	// Fast paths: operands already at the scales the result needs.
	switch {
	case (op == plan.OpAdd || op == plan.OpSub) && as == rs && bs == rs:
		for i := 0; i < n; i++ {
			var s decimal128.Num
			if op == plan.OpAdd {
				s = a[i*sa].Add(b[i*sb])
			} else {
				s = a[i*sa].Sub(b[i*sb])
			}
			if !fitsPrecision(s, rp) && v.valid(i) {
				return 0, false, errDecimalOverflow
			}
			out[i] = s
		}
		return 0, false, nil
	case op == plan.OpMul && as+bs == rs:
		for i := 0; i < n; i++ {
			p, ok := mulChecked(a[i*sa], b[i*sb])
			if (!ok || !fitsPrecision(p, rp)) && v.valid(i) {
				return 0, false, errDecimalOverflow
			}
			out[i] = p
		}
		return 0, false, nil
	}
	for i := 0; i < n; i++ {
		if !v.valid(i) {
			continue
		}
		r, err := decOp(op, a[i*sa], as, b[i*sb], bs, rs)
		if err != nil {
			return 0, false, err
		}
		if !fitsPrecision(r, rp) {
			return 0, false, errDecimalOverflow
		}
		out[i] = r
	}
	return 0, false, nil
}

// decOp computes one decimal result at scale rs.
func decOp(op plan.BinaryOp, x decimal128.Num, xs int32, y decimal128.Num, ys int32, rs int32) (decimal128.Num, error) {
	switch op {
	case plan.OpAdd, plan.OpSub, plan.OpMod:
		s := max(xs, ys)
		x1, ok1 := rescale(x, xs, s)
		y1, ok2 := rescale(y, ys, s)
		if !ok1 || !ok2 {
			return decimal128.Num{}, errDecimalOverflow
		}
		var r decimal128.Num
		switch op {
		case plan.OpAdd:
			r = x1.Add(y1)
		case plan.OpSub:
			r = x1.Sub(y1)
		default:
			var err error
			if r, err = decRem(x1, y1); err != nil {
				return r, err
			}
		}
		r, ok := rescale(r, s, rs)
		if !ok {
			return r, errDecimalOverflow
		}
		return r, nil
	case plan.OpMul:
		p, ok := mulChecked(x, y)
		if !ok {
			return p, errDecimalOverflow
		}
		if p, ok = rescale(p, xs+ys, rs); !ok {
			return p, errDecimalOverflow
		}
		return p, nil
	case plan.OpDiv:
		return decDivide(x, y, xs, ys, rs)
	}
	return decimal128.Num{}, fmt.Errorf("internal: %s is not arithmetic", op)
}

// upscaleAll multiplies every value by 10^(to-from); ok is false if a
// non-NULL value overflows.
func upscaleAll(vs []decimal128.Num, from, to int32, v validity) ([]decimal128.Num, bool) {
	if from == to {
		return vs, true
	}
	out := make([]decimal128.Num, len(vs))
	m := pow10[to-from]
	for i, x := range vs {
		y, ok := mulChecked(x, m)
		if !ok && (len(vs) == 1 || v.valid(i)) {
			return nil, false
		}
		out[i] = y
	}
	return out, true
}

// maxAbs64 returns the largest magnitude in vs and whether every value
// fits int64. Invalid (NULL) slots hold zero or a value written for them,
// both harmless: the result at those slots is ignored.
func maxAbs64(vs []decimal128.Num) (uint64, bool) {
	// Two interleaved maxima halve the chain of dependent comparisons;
	// the sign test is on the word itself, without a branch.
	var bad0, bad1 int64
	var m0, m1 uint64
	i := 0
	for ; i+1 < len(vs); i += 2 {
		x, y := vs[i], vs[i+1]
		v, w := int64(x.LowBits()), int64(y.LowBits())
		bad0 |= x.HighBits() ^ (v >> 63)
		bad1 |= y.HighBits() ^ (w >> 63)
		m0 = max(m0, uint64((v^(v>>63))-(v>>63)))
		m1 = max(m1, uint64((w^(w>>63))-(w>>63)))
	}
	for ; i < len(vs); i++ {
		v := int64(vs[i].LowBits())
		bad0 |= vs[i].HighBits() ^ (v >> 63)
		m0 = max(m0, uint64((v^(v>>63))-(v>>63)))
	}
	return max(m0, m1), bad0|bad1 == 0
}

// decOperand is a decimal operand as decArith reads it: values, stride (0
// for a constant), scale, and a magnitude bound when known (EvalBound).
type decOperand struct {
	vals    []decimal128.Num
	stride  int
	scale   int32
	bound   uint64
	bounded bool
}

// int64ResultBound reports whether a op b, element by element, stays within
// int64 for every pair, judged by the operands' largest magnitudes (the
// given bounds, or a scan), and returns the bound of the results.
func int64ResultBound(op plan.BinaryOp, a []decimal128.Num, ma uint64, aKnown bool, b []decimal128.Num, mb uint64, bKnown bool) (uint64, bool) {
	ok := true
	if !aKnown {
		ma, ok = maxAbs64(a)
	}
	if !ok {
		return 0, false
	}
	if !bKnown {
		mb, ok = maxAbs64(b)
	}
	if !ok || ma >= 1<<62 || mb >= 1<<62 {
		return 0, false
	}
	if op == plan.OpMul {
		hi, lo := bits.Mul64(ma, mb)
		return lo, hi == 0 && lo < 1<<63
	}
	return ma + mb, ma+mb < 1<<63
}

// decArith64 is decArith for operands at the result's scales (a product's
// scale is the sum of its operands') whose results int64ResultBound bounds
// within int64: exact, and within any precision of 19 digits or more.
func decArith64(op plan.BinaryOp, a []decimal128.Num, sa int, b []decimal128.Num, sb int, out []decimal128.Num) {
	n := len(out)
	switch op {
	case plan.OpAdd:
		for i := 0; i < n; i++ {
			out[i] = decimal128.FromI64(int64(a[i*sa].LowBits()) + int64(b[i*sb].LowBits()))
		}
	case plan.OpSub:
		for i := 0; i < n; i++ {
			out[i] = decimal128.FromI64(int64(a[i*sa].LowBits()) - int64(b[i*sb].LowBits()))
		}
	default: // OpMul
		for i := 0; i < n; i++ {
			out[i] = decimal128.FromI64(int64(a[i*sa].LowBits()) * int64(b[i*sb].LowBits()))
		}
	}
}
