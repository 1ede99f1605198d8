package expr

import (
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/plan"
)

func interval(months, days int32) *plan.Literal {
	return lit(plan.Interval, arrow.MonthDayNanoInterval{Months: months, Days: days})
}

func cast(x plan.Expr, to arrow.DataType) *plan.Cast { return &plan.Cast{X: x, To: to} }

func TestArithmetic(t *testing.T) {
	runCases(t, []exprCase{
		{"int32 add", bin(plan.OpAdd, col("i32"), col("i32")), "2 4 NULL -8", ""},
		{"int64 add cast", bin(plan.OpAdd, cast(col("i32"), plan.Int64), col("i64")), "11 22 NULL NULL", ""},
		{"int64 mul const", bin(plan.OpMul, col("i64"), i64(3)), "30 60 90 NULL", ""},
		{"int div", bin(plan.OpDiv, col("i64"), cast(col("i32"), plan.Int64)), "10 10 NULL NULL", ""},
		{"int div truncates", bin(plan.OpDiv, col("i32"), i32(3)), "0 0 NULL -1", ""},
		{"div by zero", bin(plan.OpDiv, col("i32"), col("z")), "", "division by zero"},
		{"div by expr", bin(plan.OpDiv, col("i64"), bin(plan.OpAdd, cast(col("z"), plan.Int64), i64(1))), "10 10 30 NULL", ""},
		{"mod", bin(plan.OpMod, col("i64"), i64(7)), "3 6 2 NULL", ""},
		{"scalar left", bin(plan.OpSub, i32(100), col("i32")), "99 98 NULL 104", ""},
		{"int overflow", bin(plan.OpMul, col("i32"), i32(2000000000)), "", "integer overflow"},
		{"float mul", bin(plan.OpMul, col("f64"), f64(2)), "3 NULL -4.5 0", ""},
		{"float div zero", bin(plan.OpDiv, col("f64"), f64(0)), "", "division by zero"},
		{"decimal add exact", bin(plan.OpAdd, col("d1"), col("d2")), "0.30 4.00 NULL NULL", ""},
		{"decimal const add", bin(plan.OpAdd, dec("0.1", 2, 1), dec("0.2", 2, 1)), "0.3 0.3 0.3 0.3", ""},
		{"decimal sub", bin(plan.OpSub, col("d1"), col("d2")), "-0.10 -2.00 NULL NULL", ""},
		{"decimal mul", bin(plan.OpMul, col("d1"), col("d2")), "0.0200 3.0000 NULL NULL", ""},
		{"decimal div", bin(plan.OpDiv, col("d2"), col("d1")),
			"2.000000000000000000 3.000000000000000000 NULL NULL", ""},
		{"decimal 1/3", &plan.Binary{Op: plan.OpDiv, L: dec("1.00", 3, 2), R: dec("3", 1, 0), Typ: plan.Decimal(10, 4)},
			"0.3333 0.3333 0.3333 0.3333", ""},
		{"decimal 2/3 rounds", &plan.Binary{Op: plan.OpDiv, L: dec("2.00", 3, 2), R: dec("3", 1, 0), Typ: plan.Decimal(10, 4)},
			"0.6667 0.6667 0.6667 0.6667", ""},
		{"decimal -2/3 rounds", &plan.Binary{Op: plan.OpDiv, L: dec("-2.00", 3, 2), R: dec("3", 1, 0), Typ: plan.Decimal(10, 4)},
			"-0.6667 -0.6667 -0.6667 -0.6667", ""},
		{"decimal div zero", bin(plan.OpDiv, col("d2"), dec("0", 1, 0)), "", "division by zero"},
		{"int minus decimal", bin(plan.OpSub, i32(1), col("d1")), "0.90 0.00 NULL 3.50", ""},
		{"decimal rescale add", bin(plan.OpAdd, col("d1"), col("d4")), "1.1000 1.3333 NULL NULL", ""},
		{"decimal mod", bin(plan.OpMod, col("d4"), dec("0.3", 1, 1)), "0.1000 0.0333 0.1000 NULL", ""},
		{"decimal times float", bin(plan.OpMul, col("d1"), f64(2)), "0.2 2 NULL -5", ""},
		{"decimal overflow", &plan.Binary{Op: plan.OpMul, L: dec("99999999999999999999999999999999999999", 38, 0),
			R: i64(10), Typ: plan.Decimal(38, 0)}, "", "decimal overflow"},
		{"decimal precision overflow", &plan.Binary{Op: plan.OpAdd, L: col("d2"), R: dec("99.99", 4, 2),
			Typ: plan.Decimal(4, 2)}, "", "decimal overflow"},
		{"decimal wide mul", bin(plan.OpMul, dec("9999999999999.99", 15, 2), dec("9999999999999.99", 15, 2)),
			strings.TrimSpace(strings.Repeat("99999999999999800000000000.0001 ", 4)), ""},
		{"decimal div 128-bit", &plan.Binary{Op: plan.OpDiv, L: dec("1234567890123456789012345.6789012345", 35, 10),
			R: dec("7.1", 2, 1), Typ: plan.Decimal(38, 10)},
			strings.TrimSpace(strings.Repeat("173882801425838984367936.0111128499 ", 4)), ""},
		{"decimal div big", &plan.Binary{Op: plan.OpDiv, L: dec("1234567890123456789012345.6789012345", 35, 10),
			R: dec("7.1", 2, 1), Typ: plan.Decimal(38, 14)},
			strings.TrimSpace(strings.Repeat("173882801425838984367936.01111284992958 ", 4)), ""},
		{"decimal div big negative", &plan.Binary{Op: plan.OpDiv, L: dec("-1234567890123456789012345.6789012345", 35, 10),
			R: dec("7.1", 2, 1), Typ: plan.Decimal(38, 14)},
			strings.TrimSpace(strings.Repeat("-173882801425838984367936.01111284992958 ", 4)), ""},
		// Results of 19 digits or more from operands within ±2^31 take the
		// int64 path; the rest above take the 128-bit ones.
		{"decimal mul int64 path", bin(plan.OpMul, col("d1"), dec("-3.00", 20, 2)), "-0.3000 -3.0000 NULL 7.5000", ""},
		{"decimal add int64 path", bin(plan.OpAdd, col("d1"), dec("-1.00", 20, 2)), "-0.90 0.00 NULL -3.50", ""},
		{"decimal sub int64 path", bin(plan.OpSub, dec("-1.00", 20, 2), col("d1")), "-1.10 -2.00 NULL 1.50", ""},
		{"decimal mul beyond int32", bin(plan.OpMul, col("d1"), dec("21474836.48", 20, 2)), "2147483.6480 21474836.4800 NULL -53687091.2000", ""},
		{"negate int", &plan.Negate{X: col("i32")}, "-1 -2 NULL 4", ""},
		{"negate decimal", &plan.Negate{X: col("d1")}, "-0.10 -1.00 NULL 2.50", ""},
		{"null operand", bin(plan.OpAdd, col("i32"), lit(plan.Int32, nil)), "NULL NULL NULL NULL", ""},
	})
}

func TestTemporal(t *testing.T) {
	runCases(t, []exprCase{
		{"date + 1 month clamps", bin(plan.OpAdd, col("dt"), interval(1, 0)), "2020-02-29 2019-03-28 NULL 1970-02-01", ""},
		{"date - 1 month", bin(plan.OpSub, col("dt"), interval(1, 0)), "2019-12-31 2019-01-28 NULL 1969-12-01", ""},
		{"date + 13 months", bin(plan.OpAdd, col("dt"), interval(13, 0)), "2021-02-28 2020-03-28 NULL 1971-02-01", ""},
		{"date + days", bin(plan.OpAdd, col("dt"), i32(1)), "2020-02-01 2019-03-01 NULL 1970-01-02", ""},
		{"date - date", bin(plan.OpSub, col("dt"), date("2019-01-01")), "395 58 NULL -17897", ""},
		{"interval + date", bin(plan.OpAdd, interval(0, 10), col("dt")), "2020-02-10 2019-03-10 NULL 1970-01-11", ""},
		{"timestamp + interval", bin(plan.OpAdd, col("ts"), interval(1, 1)),
			"2020-03-01 10:00:00 NULL 1970-02-01 23:59:59 2000-03-30 00:00:00.500000", ""},
		{"extract year", &plan.Func{Name: "extract_year", Args: []plan.Expr{col("dt")}, Typ: plan.Int32}, "2020 2019 NULL 1970", ""},
		{"extract month", &plan.Func{Name: "extract_month", Args: []plan.Expr{col("dt")}, Typ: plan.Int32}, "1 2 NULL 1", ""},
		{"extract day ts", &plan.Func{Name: "extract_day", Args: []plan.Expr{col("ts")}, Typ: plan.Int32}, "31 NULL 31 29", ""},
		{"extract year int64", &plan.Func{Name: "extract_year", Args: []plan.Expr{col("dt")}, Typ: plan.Int64}, "2020 2019 NULL 1970", ""},
		// Results outside the type's range are errors: they used to wrap
		// around to dates millions of years BC.
		{"date + days out of range", bin(plan.OpAdd, col("dt"), i64(1<<31)), "", "date out of range"},
		{"date - days out of range", bin(plan.OpSub, col("dt"), i64(-1<<63)), "", "date out of range"},
		{"date + months out of range", bin(plan.OpAdd, col("dt"), interval(1<<31-1, 0)), "", "date out of range"},
		{"timestamp + months out of range", bin(plan.OpAdd, col("ts"), interval(12*300000, 0)), "", "timestamp out of range"},
		{"timestamp - days out of range", bin(plan.OpSub, col("ts"), interval(0, -1<<31)), "", "timestamp out of range"},
		{"date - date out of range", bin(plan.OpSub, col("dt"), lit(plan.Date32, int32(-1<<31+1))), "", "integer overflow"},
		{"timestamp - interval carries hours into days", bin(plan.OpSub, col("ts"), &plan.Literal{Typ: plan.Interval,
			Val: arrow.MonthDayNanoInterval{Days: 1, Nanoseconds: 25 * 3600 * 1e9}}),
			"2020-01-29 09:00:00 NULL 1969-12-29 22:59:59 2000-02-26 23:00:00.500000", ""},
	})
}

func TestCompare(t *testing.T) {
	runCases(t, []exprCase{
		{"int lt const", bin(plan.OpLt, col("i32"), i32(2)), "true false NULL true", ""},
		{"const gt int", bin(plan.OpGt, i32(2), col("i32")), "true false NULL true", ""},
		{"int eq self", bin(plan.OpEq, col("i32"), col("i32")), "true true NULL true", ""},
		{"int64 gteq", bin(plan.OpGtEq, col("i64"), i64(20)), "false true true NULL", ""},
		{"float noteq", bin(plan.OpNotEq, col("f64"), f64(0)), "true NULL true false", ""},
		{"decimal lt", bin(plan.OpLt, col("d1"), col("d2")), "true true NULL NULL", ""},
		{"decimal eq other scale", bin(plan.OpEq, col("d1"), dec("1.0", 2, 1)), "false true NULL false", ""},
		{"decimal lteq const", bin(plan.OpLtEq, col("d1"), dec("0.10", 3, 2)), "true false NULL true", ""},
		{"string eq", bin(plan.OpEq, col("s"), str("abc")), "true false NULL false", ""},
		{"string lt", bin(plan.OpLt, col("s"), str("b")), "true true NULL false", ""},
		{"string cmp cols", bin(plan.OpGtEq, col("s"), col("pat")), "true false NULL NULL", ""},
		{"date lt", bin(plan.OpLt, col("dt"), date("2000-01-01")), "false false NULL true", ""},
		{"bool eq", bin(plan.OpEq, col("b"), lit(plan.Bool, true)), "true false NULL true", ""},
		{"timestamp gt", bin(plan.OpGt, col("ts"), cast(str("2000-01-01"), plan.Timestamp)), "true NULL false true", ""},
		{"null const", bin(plan.OpLt, col("d1"), lit(plan.Decimal(15, 2), nil)), "NULL NULL NULL NULL", ""},
		// Values beyond int64 against a constant that fits it (the clamped
		// fast path) and against one that does not.
		{"wide decimal gt const", bin(plan.OpGt, bin(plan.OpMul, col("d1"), dec("99999999999999999999999", 23, 0)), dec("1", 1, 0)),
			"true true NULL false", ""},
		{"wide decimal lteq const", bin(plan.OpLtEq, bin(plan.OpMul, col("d1"), dec("99999999999999999999999", 23, 0)), dec("-5", 1, 0)),
			"false false NULL true", ""},
		{"wide decimal noteq wide const", bin(plan.OpNotEq, bin(plan.OpMul, col("d1"), dec("99999999999999999999999", 23, 0)),
			dec("99999999999999999999999", 23, 0)), "true false NULL true", ""},
	})
}

func TestLogic(t *testing.T) {
	gt1 := bin(plan.OpGt, col("i32"), i32(1))
	fpos := bin(plan.OpGt, col("f64"), f64(0))
	runCases(t, []exprCase{
		{"and", bin(plan.OpAnd, col("b"), gt1), "false false NULL false", ""},
		{"or", bin(plan.OpOr, col("b"), gt1), "true true NULL true", ""},
		{"false and null", bin(plan.OpAnd, col("b"), fpos), "true false false false", ""},
		{"true or null", bin(plan.OpOr, col("b"), fpos), "true NULL NULL true", ""},
		{"and null const", bin(plan.OpAnd, col("b"), lit(plan.Bool, nil)), "NULL false NULL NULL", ""},
		{"not", &plan.Not{X: col("b")}, "false true NULL false", ""},
		{"is null", &plan.IsNull{X: col("b")}, "false false true false", ""},
		{"is not null", &plan.IsNull{X: col("i64"), Negated: true}, "true true true false", ""},
		{"null is null", &plan.IsNull{X: lit(plan.Null, nil)}, "true true true true", ""},
	})
}

func TestCast(t *testing.T) {
	runCases(t, []exprCase{
		{"int to decimal", cast(col("i32"), plan.Decimal(5, 2)), "1.00 2.00 NULL -4.00", ""},
		{"decimal to int rounds", cast(col("d1"), plan.Int32), "0 1 NULL -3", ""},
		{"decimal rescale", cast(col("d4"), plan.Decimal(10, 2)), "1.00 0.33 2.50 NULL", ""},
		{"decimal upscale", cast(col("d1"), plan.Decimal(20, 5)), "0.10000 1.00000 NULL -2.50000", ""},
		{"decimal overflow", cast(dec("999.99", 5, 2), plan.Decimal(4, 2)), "", "decimal overflow"},
		{"float to int", cast(col("f64"), plan.Int32), "2 NULL -2 0", ""},
		{"float to decimal", cast(col("f64"), plan.Decimal(10, 2)), "1.50 NULL -2.25 0.00", ""},
		{"decimal to float", cast(col("d1"), plan.Float64), "0.1 1 NULL -2.5", ""},
		{"int to float", cast(col("i64"), plan.Float64), "10 20 30 NULL", ""},
		{"int64 to int32 overflow", cast(i64(3000000000), plan.Int32), "", "out of range"},
		{"string to int bad", cast(col("s"), plan.Int32), "", `invalid input syntax for type INT: "abc"`},
		{"string to int", cast(str(" 12 "), plan.Int32), "12 12 12 12", ""},
		{"string to float", cast(str("1e3"), plan.Float64), "1000 1000 1000 1000", ""},
		{"string to decimal rounds", cast(str("1.005"), plan.Decimal(5, 2)), "1.01 1.01 1.01 1.01", ""},
		{"string to decimal bad", cast(str("1.2.3"), plan.Decimal(5, 2)), "", `"1.2.3"`},
		{"string to date", cast(str("2024-02-29"), plan.Date32), "2024-02-29 2024-02-29 2024-02-29 2024-02-29", ""},
		{"string to date bad", cast(str("2023-02-29"), plan.Date32), "", `"2023-02-29"`},
		{"string to bool", cast(str("yes"), plan.Bool), "true true true true", ""},
		{"string to bool bad", cast(str("maybe"), plan.Bool), "", "maybe"},
		{"date to string", cast(col("dt"), plan.Utf8), "2020-01-31 2019-02-28 NULL 1970-01-01", ""},
		{"decimal to string", cast(col("d1"), plan.Utf8), "0.10 1.00 NULL -2.50", ""},
		{"float to string", cast(col("f64"), plan.Utf8), "1.5 NULL -2.25 0", ""},
		{"bool to string", cast(col("b"), plan.Utf8), "true false NULL true", ""},
		{"date to timestamp", cast(col("dt"), plan.Timestamp),
			"2020-01-31 00:00:00 2019-02-28 00:00:00 NULL 1970-01-01 00:00:00", ""},
		{"timestamp to date", cast(col("ts"), plan.Date32), "2020-01-31 NULL 1969-12-31 2000-02-29", ""},
		{"unsupported", cast(col("b"), plan.Date32), "", "cannot cast"},
	})
}

func TestConditional(t *testing.T) {
	caseExpr := &plan.Case{Whens: []plan.When{
		{Cond: bin(plan.OpGt, col("i32"), i32(1)), Then: str("big")},
		{Cond: bin(plan.OpLt, col("i32"), i32(0)), Then: str("neg")},
	}, Else: str("small"), Typ: plan.Utf8}
	guarded := &plan.Case{Whens: []plan.When{
		{Cond: bin(plan.OpNotEq, col("z"), i32(0)), Then: bin(plan.OpDiv, col("i32"), col("z"))},
	}, Else: i32(0), Typ: plan.Int32}
	runCases(t, []exprCase{
		{"case", caseExpr, "small big small neg", ""},
		{"case no else", &plan.Case{Whens: []plan.When{{Cond: col("b"), Then: col("i64")}}, Typ: plan.Int64},
			"10 NULL NULL NULL", ""},
		{"case guards division", guarded, "0 2 0 0", ""},
		// One arm without ELSE (or ELSE NULL) masks the arm's own array.
		{"case strings, else null", &plan.Case{Whens: []plan.When{{Cond: col("b"), Then: col("s")}}, Else: lit(plan.Utf8, nil), Typ: plan.Utf8},
			"abc NULL NULL héllo", ""},
		{"case guards division, no else", &plan.Case{Whens: []plan.When{
			{Cond: bin(plan.OpNotEq, col("z"), i32(0)), Then: bin(plan.OpDiv, col("i32"), col("z"))}}, Typ: plan.Int32},
			"NULL 2 NULL NULL", ""},
		{"case never taken", &plan.Case{Whens: []plan.When{{Cond: bin(plan.OpGt, col("i32"), i32(100)), Then: col("d1")}}, Typ: plan.Decimal(15, 2)},
			"NULL NULL NULL NULL", ""},
		{"case decimal", &plan.Case{Whens: []plan.When{{Cond: col("b"), Then: col("d1")}}, Else: col("d2"),
			Typ: plan.Decimal(15, 2)}, "0.10 3.00 1.00 -2.50", ""},
		{"coalesce", &plan.Func{Name: "coalesce", Args: []plan.Expr{col("i64"), i64(99)}, Typ: plan.Int64}, "10 20 30 99", ""},
		{"coalesce decimals", &plan.Func{Name: "coalesce", Args: []plan.Expr{col("d1"), col("d2")}, Typ: plan.Decimal(15, 2)},
			"0.10 1.00 1.00 -2.50", ""},
		{"coalesce strings", &plan.Func{Name: "coalesce", Args: []plan.Expr{col("pat"), col("s")}, Typ: plan.Utf8},
			"a% % x héllo", ""},
		{"nullif", &plan.Func{Name: "nullif", Args: []plan.Expr{col("i32"), i32(2)}, Typ: plan.Int32}, "1 NULL NULL -4", ""},
		{"in", &plan.InList{X: col("i32"), List: []plan.Expr{i32(1), i32(-4)}}, "true false NULL true", ""},
		{"in with null", &plan.InList{X: col("i32"), List: []plan.Expr{i32(1), lit(plan.Int32, nil)}}, "true NULL NULL NULL", ""},
		{"not in with null", &plan.InList{X: col("i32"), List: []plan.Expr{i32(1), lit(plan.Int32, nil)}, Negated: true},
			"false NULL NULL NULL", ""},
		{"not in", &plan.InList{X: col("i32"), List: []plan.Expr{i32(5)}, Negated: true}, "true true NULL true", ""},
		{"in strings", &plan.InList{X: col("s"), List: []plan.Expr{str("abc"), str("x")}}, "true false NULL false", ""},
	})
}

func like(x, p plan.Expr, neg bool) *plan.Like { return &plan.Like{X: x, Pattern: p, Negated: neg} }

func TestLike(t *testing.T) {
	runCases(t, []exprCase{
		{"prefix", like(col("s"), str("a%"), false), "true false NULL false", ""},
		{"suffix", like(col("s"), str("%c"), false), "true false NULL false", ""},
		{"contains", like(col("s"), str("%b%"), false), "true false NULL false", ""},
		{"exact", like(col("s"), str("abc"), false), "true false NULL false", ""},
		{"empty pattern", like(col("s"), str(""), false), "false true NULL false", ""},
		{"percent", like(col("s"), str("%"), false), "true true NULL true", ""},
		{"underscore", like(col("s"), str("_"), false), "false false NULL false", ""},
		{"multibyte underscore", like(col("s"), str("h_llo"), false), "false false NULL true", ""},
		{"three chars", like(col("s"), str("___"), false), "true false NULL false", ""},
		{"five chars", like(col("s"), str("_____"), false), "false false NULL true", ""},
		{"ordered", like(col("s"), str("%a%c%"), false), "true false NULL false", ""},
		{"ordered wrong order", like(col("s"), str("%c%a%"), false), "false false NULL false", ""},
		{"general", like(col("s"), str("%l%o"), false), "false false NULL true", ""},
		{"general underscore", like(col("s"), str("h%_o"), false), "false false NULL true", ""},
		{"no overlap", like(str("a"), str("a%a"), false), "false false false false", ""},
		{"not like", like(col("s"), str("a%"), true), "false true NULL true", ""},
		{"per-row pattern", like(col("s"), col("pat"), false), "true true NULL NULL", ""},
		{"escaped percent", like(str("a%b"), str(`a\%b`), false), "true true true true", ""},
		{"escaped percent no match", like(str("axb"), str(`a\%b`), false), "false false false false", ""},
		{"escaped underscore", like(str("a_b"), str(`a\_b`), false), "true true true true", ""},
		{"escaped backslash", like(str(`a\b`), str(`a\\b`), false), "true true true true", ""},
		{"trailing escape", like(col("s"), str(`a\`), false), "", "escape"},
		{"null pattern", like(col("s"), lit(plan.Utf8, nil), false), "NULL NULL NULL NULL", ""},
	})
}

func fn(name string, typ arrow.DataType, args ...plan.Expr) *plan.Func {
	return &plan.Func{Name: name, Args: args, Typ: typ}
}

func TestFuncs(t *testing.T) {
	runCases(t, []exprCase{
		{"substring", fn("substring", plan.Utf8, col("s"), i64(2), i64(2)), "bc  NULL él", ""},
		{"substring start 0", fn("substring", plan.Utf8, col("s"), i64(0), i64(2)), "a  NULL h", ""},
		{"substring to end", fn("substring", plan.Utf8, col("s"), i32(3)), "c  NULL llo", ""},
		{"substring past end", fn("substring", plan.Utf8, col("s"), i32(10), i32(2)), "  NULL ", ""},
		{"substring negative len", fn("substring", plan.Utf8, col("s"), i32(1), i32(-1)), "", "negative"},
		{"upper", fn("upper", plan.Utf8, col("s")), "ABC  NULL HÉLLO", ""},
		{"lower", fn("lower", plan.Utf8, str("HÉllo")), "héllo héllo héllo héllo", ""},
		{"length", fn("length", plan.Int32, col("s")), "3 0 NULL 5", ""},
		{"length int64", fn("length", plan.Int64, col("s")), "3 0 NULL 5", ""},
		{"trim", fn("trim", plan.Utf8, str("  x y ")), "x y x y x y x y", ""},
		{"abs int", fn("abs", plan.Int32, col("i32")), "1 2 NULL 4", ""},
		{"abs decimal", fn("abs", plan.Decimal(15, 2), col("d1")), "0.10 1.00 NULL 2.50", ""},
		{"round decimal", fn("round", plan.Decimal(10, 4), col("d4"), i32(2)), "1.0000 0.3300 2.5000 NULL", ""},
		{"round decimal 0", fn("round", plan.Decimal(15, 2), col("d1")), "0.00 1.00 NULL -3.00", ""},
		{"round decimal to scale", fn("round", plan.Decimal(15, 0), col("d1")), "0 1 NULL -3", ""},
		{"round float", fn("round", plan.Float64, col("f64")), "2 NULL -2 0", ""},
		{"round float digits", fn("round", plan.Float64, f64(2.345), i32(2)), "2.35 2.35 2.35 2.35", ""},
		{"concat", bin(plan.OpConcat, col("s"), str("x")), "abcx x NULL héllox", ""},
		{"unknown", fn("frobnicate", plan.Utf8, col("s")), "", "unknown function"},
	})
}

func TestCompileErrors(t *testing.T) {
	runCases(t, []exprCase{
		{"agg", &plan.AggCall{Func: plan.AggSum, Arg: col("i64"), Typ: plan.Int64}, "", "must be planned before compile"},
		{"missing column", &plan.ColRef{ID: 1, Name: "nope", Typ: plan.Int32}, "", "internal: column nope not in input"},
		{"subquery", &plan.Subquery{Kind: plan.SubqueryExists, Typ: plan.Bool}, "", "must be planned before compile"},
	})
}

func TestColumnIndexes(t *testing.T) {
	e := bin(plan.OpAnd, bin(plan.OpLt, col("i64"), i64(3)),
		like(col("s"), str("a%"), false))
	pe, err := Compile(e, testSchema())
	if err != nil {
		t.Fatal(err)
	}
	got := ColumnIndexes(pe)
	if len(got) != 2 || got[0] != 1 || got[1] != 5 {
		t.Fatalf("got %v, want [1 5]", got)
	}
}

// TestLogicNullFree checks AND and OR of boolean arrays without NULLs (a
// bitmap fast path) against row-by-row logic, on arrays sliced at bit
// offsets that are not byte aligned.
func TestLogicNullFree(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	const n = 1000
	mk := func(seed int) *array.Boolean {
		b := array.NewBooleanBuilder(mem)
		defer b.Release()
		for i := range n + 16 {
			b.Append((i*seed)%7 < 3)
		}
		return b.NewBooleanArray()
	}
	fullL, fullR := mk(3), mk(5)
	defer fullL.Release()
	defer fullR.Release()
	l := array.NewSlice(fullL, 3, 3+n).(*array.Boolean)
	r := array.NewSlice(fullR, 11, 11+n).(*array.Boolean)
	defer l.Release()
	defer r.Release()
	schema := plan.Schema{
		{ID: 1, Name: "l", Type: plan.Bool},
		{ID: 2, Name: "r", Type: plan.Bool},
	}
	batch := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "l", Type: plan.Bool}, {Name: "r", Type: plan.Bool}}, nil), []arrow.Array{l, r}, n)
	defer batch.Release()
	for _, op := range []plan.BinaryOp{plan.OpAnd, plan.OpOr} {
		e, err := Compile(&plan.Binary{Op: op, L: &plan.ColRef{ID: 1, Name: "l", Typ: plan.Bool}, R: &plan.ColRef{ID: 2, Name: "r", Typ: plan.Bool}, Typ: plan.Bool}, schema)
		if err != nil {
			t.Fatal(err)
		}
		res, err := e.Eval(batch, mem)
		if err != nil {
			t.Fatal(err)
		}
		got := res.(*array.Boolean)
		if got.NullN() != 0 {
			t.Fatalf("%v: %d NULLs", op, got.NullN())
		}
		for i := range n {
			want := l.Value(i) && r.Value(i)
			if op == plan.OpOr {
				want = l.Value(i) || r.Value(i)
			}
			if got.Value(i) != want {
				t.Fatalf("%v row %d: %v, want %v", op, i, got.Value(i), want)
			}
		}
		res.Release()
	}
}
