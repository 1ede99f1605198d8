package expr

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/plan"
)

// The math functions. The transcendental ones (sqrt, ln, sin, ...) work in
// double precision: the binder casts their arguments to DOUBLE. ceil,
// floor, trunc and sign keep their argument's kind (integer, DOUBLE or
// DECIMAL); gcd and lcm take integers. Errors on bad input use
// PostgreSQL's wording.

// opKernel is a function computed from its evaluated operands whole.
type opKernel func(e *Func, ops []operand, n int, mem memory.Allocator) (arrow.Array, error)

// opFuncs maps function names to kernels that take their operands whole.
var opFuncs = map[string]opKernel{}

func init() {
	for name, ar := range mathArity {
		funcArity[name] = ar
	}
	for name, f := range floatFuncs {
		opFuncs[name] = floatUnary(f)
	}
	for name, f := range floatFuncs2 {
		opFuncs[name] = floatBinary(f)
	}
	for _, name := range []string{"ceil", "floor", "trunc"} {
		opFuncs[name] = roundDown
	}
	opFuncs["sign"] = signKernel
	opFuncs["gcd"] = gcdLcm
	opFuncs["lcm"] = gcdLcm
	opFuncs["factorial"] = factorial
	opFuncs["random"] = randomKernel
}

// mathArity lists the math functions with their argument counts.
var mathArity = map[string][2]int{
	"sqrt": {1, 1}, "cbrt": {1, 1}, "exp": {1, 1}, "ln": {1, 1}, "log10": {1, 1}, "log2": {1, 1},
	"sin": {1, 1}, "cos": {1, 1}, "tan": {1, 1}, "cot": {1, 1}, "asin": {1, 1}, "acos": {1, 1},
	"atan": {1, 1}, "degrees": {1, 1}, "radians": {1, 1}, "power": {2, 2}, "atan2": {2, 2},
	"log": {2, 2}, "ceil": {1, 1}, "floor": {1, 1}, "trunc": {1, 2}, "sign": {1, 1},
	"gcd": {2, 2}, "lcm": {2, 2}, "factorial": {1, 1}, "random": {0, 0},
}

var (
	errSqrtNegative = NewDataError("cannot take square root of a negative number")
	errLogZero      = NewDataError("cannot take logarithm of zero")
	errLogNegative  = NewDataError("cannot take logarithm of a negative number")
	errOverflow     = NewDataError("value out of range: overflow")
	errUnderflow    = NewDataError("value out of range: underflow")
	errInputRange   = NewDataError("input is out of range")
)

// checkFloat is PostgreSQL's float8 result check: an infinite result from
// finite input overflows, a zero from non-zero input underflows.
func checkFloat(r, x float64, zeroOK bool) (float64, error) {
	if math.IsInf(r, 0) && !math.IsInf(x, 0) {
		return 0, errOverflow
	}
	if r == 0 && x != 0 && !zeroOK {
		return 0, errUnderflow
	}
	return r, nil
}

func logArg(x float64) error {
	switch {
	case x == 0:
		return errLogZero
	case x < 0:
		return errLogNegative
	}
	return nil
}

// floatFuncs are the DOUBLE → DOUBLE functions of one argument.
var floatFuncs = map[string]func(x float64) (float64, error){
	"sqrt": func(x float64) (float64, error) {
		if x < 0 {
			return 0, errSqrtNegative
		}
		return math.Sqrt(x), nil
	},
	"cbrt": func(x float64) (float64, error) { return math.Cbrt(x), nil },
	"exp": func(x float64) (float64, error) {
		r := math.Exp(x)
		if math.IsInf(r, 0) && !math.IsInf(x, 0) {
			return 0, errOverflow
		}
		if r == 0 && !math.IsInf(x, 0) {
			return 0, errUnderflow
		}
		return r, nil
	},
	"ln":    logOf(math.Log),
	"log10": logOf(math.Log10),
	"log2":  logOf(math.Log2),
	"sin":   func(x float64) (float64, error) { return trig(math.Sin, x) },
	"cos":   func(x float64) (float64, error) { return trig(math.Cos, x) },
	"tan":   func(x float64) (float64, error) { return trig(math.Tan, x) },
	"cot": func(x float64) (float64, error) {
		if math.IsInf(x, 0) {
			return 0, errInputRange
		}
		return 1 / math.Tan(x), nil
	},
	"asin": func(x float64) (float64, error) { return inverseTrig(math.Asin, x) },
	"acos": func(x float64) (float64, error) { return inverseTrig(math.Acos, x) },
	"atan": func(x float64) (float64, error) { return math.Atan(x), nil },
	"degrees": func(x float64) (float64, error) {
		return checkFloat(x*(180/math.Pi), x, false)
	},
	"radians": func(x float64) (float64, error) {
		return checkFloat(x*(math.Pi/180), x, false)
	},
}

func logOf(f func(float64) float64) func(x float64) (float64, error) {
	return func(x float64) (float64, error) {
		if err := logArg(x); err != nil {
			return 0, err
		}
		return f(x), nil
	}
}

func trig(f func(float64) float64, x float64) (float64, error) {
	if math.IsInf(x, 0) {
		return 0, errInputRange
	}
	return f(x), nil
}

func inverseTrig(f func(float64) float64, x float64) (float64, error) {
	if x < -1 || x > 1 {
		return 0, errInputRange
	}
	return f(x), nil
}

// floatFuncs2 are the DOUBLE, DOUBLE → DOUBLE functions.
var floatFuncs2 = map[string]func(x, y float64) (float64, error){
	"power": power,
	"atan2": func(y, x float64) (float64, error) { return math.Atan2(y, x), nil },
	// log(b, x) is the logarithm of x to base b.
	"log": func(b, x float64) (float64, error) {
		if err := logArg(b); err != nil {
			return 0, err
		}
		if err := logArg(x); err != nil {
			return 0, err
		}
		lb := math.Log(b)
		if lb == 0 {
			return 0, errDivByZero
		}
		return math.Log(x) / lb, nil
	},
}

// power is PostgreSQL's float8 pow, with its errors for results that are
// undefined or complex.
func power(x, y float64) (float64, error) {
	if x == 0 && y < 0 {
		return 0, NewDataError("zero raised to a negative power is undefined")
	}
	if x < 0 && y != math.Trunc(y) && !math.IsInf(y, 0) {
		return 0, NewDataError("a negative number raised to a non-integer power yields a complex result")
	}
	r := math.Pow(x, y)
	if math.IsInf(r, 0) && !math.IsInf(x, 0) && !math.IsInf(y, 0) {
		return 0, errOverflow
	}
	if r == 0 && x != 0 && !math.IsInf(y, 0) {
		return 0, errUnderflow
	}
	return r, nil
}

// fixedRows builds a fixed-width result of type dt: NULL where an array
// operand is NULL, f(i) elsewhere. (A NULL constant operand never gets
// here: Eval answers NULL for it.)
func fixedRows[T any](dt arrow.DataType, ops []operand, n int, mem memory.Allocator, f func(i int) (T, error)) (arrow.Array, error) {
	arrs := make([]arrow.Array, 0, len(ops))
	for _, o := range ops {
		arrs = append(arrs, o.arr)
	}
	valid, nulls := andValidity(mem, n, arrs...)
	v := validity{}
	if valid != nil {
		v.bits = valid.Bytes()
	}
	buf, out := allocValues[T](mem, n)
	for i := range out {
		if !v.valid(i) {
			continue
		}
		r, err := f(i)
		if err != nil {
			buf.Release()
			releaseBuf(valid)
			return nil, err
		}
		out[i] = r
	}
	return makeArray(dt, n, valid, nulls, buf), nil
}

func floatUnary(f func(float64) (float64, error)) opKernel {
	return func(e *Func, ops []operand, n int, mem memory.Allocator) (arrow.Array, error) {
		x, xs, err := f64View(ops[0])
		if err != nil {
			return nil, err
		}
		return fixedRows(plan.Float64, ops, n, mem, func(i int) (float64, error) { return f(x[i*xs]) })
	}
}

func floatBinary(f func(x, y float64) (float64, error)) opKernel {
	return func(e *Func, ops []operand, n int, mem memory.Allocator) (arrow.Array, error) {
		x, xs, err := f64View(ops[0])
		if err != nil {
			return nil, err
		}
		y, ys, err := f64View(ops[1])
		if err != nil {
			return nil, err
		}
		return fixedRows(plan.Float64, ops, n, mem, func(i int) (float64, error) { return f(x[i*xs], y[i*ys]) })
	}
}

// randomKernel is random(): a value in [0, 1) drawn anew for every row.
func randomKernel(e *Func, ops []operand, n int, mem memory.Allocator) (arrow.Array, error) {
	return fixedRows(plan.Float64, nil, n, mem, func(int) (float64, error) { return rand.Float64(), nil })
}

// roundDown is ceil(x), floor(x) and trunc(x [, digits]): integers are
// their own ceiling and floor (trunc with negative digits zeroes the low
// digits), doubles round in double, decimals round exactly at the scale
// digits (0 without) and come back in the result type's scale.
func roundDown(e *Func, ops []operand, n int, mem memory.Allocator) (arrow.Array, error) {
	digits, ds := []int64{0}, 0
	if len(ops) > 1 {
		var err error
		if digits, ds, err = i64View(ops[1]); err != nil {
			return nil, err
		}
	}
	// dir says which way a value with dropped digits moves: +1 up
	// (ceil), -1 down (floor), 0 toward zero (trunc).
	dir := map[string]int{"ceil": 1, "floor": -1}[e.Name]
	switch dt := operandType(ops[0]); dt.ID() {
	case arrow.INT32, arrow.INT64:
		x, xs, err := i64View(ops[0])
		if err != nil {
			return nil, err
		}
		out, err := fixedRows(plan.Int64, ops, n, mem, func(i int) (int64, error) {
			d := digits[i*ds]
			v := x[i*xs]
			if d >= 0 {
				return v, nil
			}
			if d < -18 {
				return 0, nil
			}
			p := int64(1)
			for range -d {
				p *= 10
			}
			return v / p * p, nil
		})
		if err != nil {
			return nil, err
		}
		return castResult(out, e.Type, mem)
	case arrow.FLOAT64:
		x, xs, err := f64View(ops[0])
		if err != nil {
			return nil, err
		}
		return fixedRows(plan.Float64, ops, n, mem, func(i int) (float64, error) {
			v := x[i*xs]
			p := math.Pow(10, float64(digits[i*ds]))
			switch dir {
			case 1:
				return math.Ceil(v*p) / p, nil
			case -1:
				return math.Floor(v*p) / p, nil
			}
			return math.Trunc(v*p) / p, nil
		})
	case arrow.DECIMAL128:
		rt, ok := e.Type.(*arrow.Decimal128Type)
		if !ok {
			return nil, fmt.Errorf("internal: %s of DECIMAL declared as %s", e.Name, plan.TypeName(e.Type))
		}
		x, xs, s, err := decView(ops[0])
		if err != nil {
			return nil, err
		}
		return fixedRows(e.Type, ops, n, mem, func(i int) (decimal128.Num, error) {
			d := int32(max(min(digits[i*ds], 38), -38))
			r := x[i*xs]
			if d < s {
				k := s - d
				if k > 38 {
					r = decimal128.Num{}
				} else {
					q, rem := r.Div(pow10[k])
					if rem.Sign() != 0 && rem.Sign() == dir {
						q = q.Add(decimal128.FromI64(int64(dir)))
					}
					var ok bool
					if r, ok = mulChecked(q, pow10[k]); !ok {
						return decimal128.Num{}, errDecimalOverflow
					}
				}
			}
			r, ok := rescale(r, s, rt.Scale)
			if !ok || !fitsPrecision(r, rt.Precision) {
				return decimal128.Num{}, errDecimalOverflow
			}
			return r, nil
		})
	}
	return nil, fmt.Errorf("cannot take %s of %s", e.Name, plan.TypeName(operandType(ops[0])))
}

// signKernel is sign(x): -1, 0 or 1 in the result type (NaN stays NaN).
func signKernel(e *Func, ops []operand, n int, mem memory.Allocator) (arrow.Array, error) {
	switch operandType(ops[0]).ID() {
	case arrow.INT32, arrow.INT64:
		x, xs, err := i64View(ops[0])
		if err != nil {
			return nil, err
		}
		out, err := fixedRows(plan.Int64, ops, n, mem, func(i int) (int64, error) {
			v := x[i*xs]
			return int64(min(max(v, -1), 1)), nil
		})
		if err != nil {
			return nil, err
		}
		return castResult(out, e.Type, mem)
	case arrow.FLOAT64:
		x, xs, err := f64View(ops[0])
		if err != nil {
			return nil, err
		}
		return fixedRows(plan.Float64, ops, n, mem, func(i int) (float64, error) {
			v := x[i*xs]
			switch {
			case v > 0:
				return 1, nil
			case v < 0:
				return -1, nil
			}
			return v, nil
		})
	case arrow.DECIMAL128:
		x, xs, _, err := decView(ops[0])
		if err != nil {
			return nil, err
		}
		rt, ok := e.Type.(*arrow.Decimal128Type)
		if !ok {
			return nil, fmt.Errorf("internal: sign of DECIMAL declared as %s", plan.TypeName(e.Type))
		}
		return fixedRows(e.Type, ops, n, mem, func(i int) (decimal128.Num, error) {
			r, _ := rescale(decimal128.FromI64(int64(x[i*xs].Sign())), 0, rt.Scale)
			return r, nil
		})
	}
	return nil, fmt.Errorf("cannot take sign of %s", plan.TypeName(operandType(ops[0])))
}

// gcdLcm is gcd(a, b) and lcm(a, b) on integers of the result type. Like
// PostgreSQL's, the results are never negative, and a result that does not
// fit the type (gcd(minint, 0)) is an error.
func gcdLcm(e *Func, ops []operand, n int, mem memory.Allocator) (arrow.Array, error) {
	a, as, err := i64View(ops[0])
	if err != nil {
		return nil, err
	}
	b, bs, err := i64View(ops[1])
	if err != nil {
		return nil, err
	}
	hi := uint64(math.MaxInt64)
	if e.Type.ID() == arrow.INT32 {
		hi = math.MaxInt32
	}
	out, err := fixedRows(plan.Int64, ops, n, mem, func(i int) (int64, error) {
		x, y := a[i*as], b[i*bs]
		var r uint64
		if e.Name == "gcd" {
			r = gcdU(absU(x), absU(y))
		} else if x != 0 && y != 0 {
			g := gcdU(absU(x), absU(y))
			q := absU(x) / g
			hiBits, loBits := mul64(q, absU(y))
			if hiBits != 0 {
				return 0, errIntRange
			}
			r = loBits
		}
		if r > hi {
			return 0, errIntRange
		}
		return int64(r), nil
	})
	if err != nil {
		return nil, err
	}
	return castResult(out, e.Type, mem)
}

func absU(x int64) uint64 {
	if x < 0 {
		return uint64(-(x + 1)) + 1
	}
	return uint64(x)
}

func gcdU(a, b uint64) uint64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

func mul64(a, b uint64) (hi, lo uint64) {
	if a == 0 || b == 0 {
		return 0, 0
	}
	lo = a * b
	if lo/b != a {
		return 1, lo
	}
	return 0, lo
}

// factorial is factorial(n) as DECIMAL(38,0): 33! is the largest that
// fits; a negative n is PostgreSQL's error.
func factorial(e *Func, ops []operand, n int, mem memory.Allocator) (arrow.Array, error) {
	x, xs, err := i64View(ops[0])
	if err != nil {
		return nil, err
	}
	return fixedRows(e.Type, ops, n, mem, func(i int) (decimal128.Num, error) {
		v := x[i*xs]
		if v < 0 {
			return decimal128.Num{}, NewDataError("factorial of a negative number is undefined")
		}
		if v > 33 {
			return decimal128.Num{}, NewDataError("value overflows numeric format")
		}
		r := decimal128.FromI64(1)
		for k := int64(2); k <= v; k++ {
			r = r.Mul(decimal128.FromI64(k))
		}
		return r, nil
	})
}
