package expr

import (
	"testing"

	"sluice/plan"
)

// Test columns (see helpers_test.go): i32 = 1, 2, NULL, -4; i64 = 10, 20,
// 30, NULL; f64 = 1.5, NULL, -2.25, 0; d1 = 0.10, 1.00, NULL, -2.50;
// d4 = 1.0000, 0.3333, 2.5000, NULL; z = 0, 1, 0, NULL.

func TestMathFuncs(t *testing.T) {
	dbl := plan.Float64
	runCases(t, []exprCase{
		{"ceil int", fn("ceil", plan.Int32, col("i32")), "1 2 NULL -4", ""},
		{"ceil double", fn("ceil", dbl, col("f64")), "2 NULL -2 0", ""},
		{"floor double", fn("floor", dbl, col("f64")), "1 NULL -3 0", ""},
		{"trunc double", fn("trunc", dbl, col("f64")), "1 NULL -2 0", ""},
		{"ceil decimal", fn("ceil", plan.Decimal(14, 0), col("d1")), "1 1 NULL -2", ""},
		{"floor decimal", fn("floor", plan.Decimal(14, 0), col("d1")), "0 1 NULL -3", ""},
		{"trunc decimal", fn("trunc", plan.Decimal(13, 0), col("d1")), "0 1 NULL -2", ""},
		{"trunc decimal digits", fn("trunc", plan.Decimal(8, 2), col("d4"), i64(2)), "1.00 0.33 2.50 NULL", ""},
		{"trunc decimal padded", fn("trunc", plan.Decimal(16, 3), col("d1"), i64(3)), "0.100 1.000 NULL -2.500", ""},
		{"trunc decimal column digits", fn("trunc", plan.Decimal(10, 4), col("d4"), cast(col("i32"), plan.Int64)), "1.0000 0.3300 NULL NULL", ""},
		{"trunc int negative digits", fn("trunc", plan.Int64, col("i64"), i64(-1)), "10 20 30 NULL", ""},
		{"trunc int tens", fn("trunc", plan.Int64, i64(-1234), i64(-2)), "-1200 -1200 -1200 -1200", ""},
		{"ceil decimal overflow", fn("ceil", plan.Decimal(1, 0), dec("9.5", 2, 1)), "", "decimal overflow"},
		{"sign int", fn("sign", plan.Int32, col("i32")), "1 1 NULL -1", ""},
		{"sign double", fn("sign", dbl, col("f64")), "1 NULL -1 0", ""},
		{"sign decimal", fn("sign", plan.Decimal(1, 0), col("d1")), "1 1 NULL -1", ""},
		{"sqrt", fn("sqrt", dbl, cast(col("i64"), dbl)), "3.1622776601683795 4.47213595499958 5.477225575051661 NULL", ""},
		{"sqrt negative", fn("sqrt", dbl, col("f64")), "", "cannot take square root of a negative number"},
		{"sqrt null row skipped", fn("sqrt", dbl, cast(col("i32"), dbl)), "", "cannot take square root of a negative number"},
		{"cbrt", fn("cbrt", dbl, f64(-27)), "-3 -3 -3 -3", ""},
		{"exp", fn("exp", dbl, cast(col("z"), dbl)), "1 2.718281828459045 1 NULL", ""},
		{"exp overflow", fn("exp", dbl, f64(1000)), "", "value out of range: overflow"},
		{"exp underflow", fn("exp", dbl, f64(-1000)), "", "value out of range: underflow"},
		{"ln zero", fn("ln", dbl, cast(col("z"), dbl)), "", "cannot take logarithm of zero"},
		{"ln negative", fn("ln", dbl, f64(-1)), "", "cannot take logarithm of a negative number"},
		{"log10", fn("log10", dbl, cast(col("i64"), dbl)), "1 1.301029995663981 1.4771212547196624 NULL", ""},
		{"log2", fn("log2", dbl, f64(1024)), "10 10 10 10", ""},
		{"log base", fn("log", dbl, f64(2), cast(col("i64"), dbl)), "3.3219280948873626 4.321928094887363 4.906890595608519 NULL", ""},
		{"log base one", fn("log", dbl, f64(1), f64(8)), "", "division by zero"},
		{"power", fn("power", dbl, cast(col("i32"), dbl), f64(2)), "1 4 NULL 16", ""},
		{"power zero negative", fn("power", dbl, f64(0), f64(-1)), "", "zero raised to a negative power is undefined"},
		{"power complex", fn("power", dbl, f64(-8), f64(0.5)), "", "a negative number raised to a non-integer power yields a complex result"},
		{"power overflow", fn("power", dbl, f64(10), f64(400)), "", "value out of range: overflow"},
		{"trig", fn("atan2", dbl, f64(1), f64(1)), "0.7853981633974483 0.7853981633974483 0.7853981633974483 0.7853981633974483", ""},
		{"asin out of range", fn("asin", dbl, f64(1.5)), "", "input is out of range"},
		{"acos", fn("acos", dbl, f64(-1)), "3.141592653589793 3.141592653589793 3.141592653589793 3.141592653589793", ""},
		{"cot", fn("cot", dbl, f64(0)), "Infinity Infinity Infinity Infinity", ""},
		{"degrees", fn("degrees", dbl, f64(3.141592653589793)), "180 180 180 180", ""},
		{"gcd", fn("gcd", plan.Int64, col("i64"), i64(-4)), "2 4 2 NULL", ""},
		{"lcm", fn("lcm", plan.Int32, col("i32"), i32(6)), "6 6 NULL 12", ""},
		{"lcm zero", fn("lcm", plan.Int32, col("z"), i32(6)), "0 6 0 NULL", ""},
		{"gcd min int", fn("gcd", plan.Int32, i32(-2147483648), i32(0)), "", "integer out of range"},
		{"lcm overflow", fn("lcm", plan.Int32, i32(2147483647), i32(2147483646)), "", "integer out of range"},
		{"factorial", fn("factorial", plan.Decimal(38, 0), cast(col("z"), plan.Int64)), "1 1 1 NULL", ""},
		{"factorial 33", fn("factorial", plan.Decimal(38, 0), i64(33)), "8683317618811886495518194401280000000 8683317618811886495518194401280000000 8683317618811886495518194401280000000 8683317618811886495518194401280000000", ""},
		{"factorial too large", fn("factorial", plan.Decimal(38, 0), i64(34)), "", "value overflows numeric format"},
		{"factorial negative", fn("factorial", plan.Decimal(38, 0), i64(-1)), "", "factorial of a negative number is undefined"},
		{"random in range", bin(plan.OpLt, fn("random", dbl), f64(1)), "true true true true", ""},
	})
}
