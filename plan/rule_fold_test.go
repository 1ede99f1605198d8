package plan

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

func TestFoldExpr(t *testing.T) {
	x := &ColRef{ID: 1, Name: "x", Typ: Int64}
	p := &ColRef{ID: 2, Name: "p", Typ: Bool}
	d := &ColRef{ID: 3, Name: "d", Typ: money}
	null := boolean(nil)
	tests := []struct {
		name string
		in   Expr
		want string
	}{
		{"int add", bin(OpAdd, i64(2), i64(3)), "5"},
		{"int32 overflow left alone", bin(OpMul, i32(1<<30), i32(4)), "(1073741824 * 4)"},
		{"int64 overflow left alone", bin(OpMul, i64(1<<62), i64(4)), "(4611686018427387904 * 4)"},
		{"int division truncates", bin(OpDiv, i64(-7), i64(2)), "-3"},
		{"division by zero left alone", bin(OpDiv, i64(1), i64(0)), "(1 / 0)"},
		{"float", bin(OpMul, &Literal{Typ: Float64, Val: 1.5}, &Literal{Typ: Float64, Val: 2.0}), "3"},
		{"decimal add rescales", bin(OpAdd, dec("1.5", 2, 1), dec("2.25", 3, 2)), "3.75"},
		{"decimal mul", bin(OpMul, dec("0.2", 2, 1), dec("1.25", 3, 2)), "0.250"},
		{"int minus decimal", bin(OpSub, cast(i64(1), money), dec("0.05", 3, 2)), "0.95"},
		{"decimal exact division", bin(OpDiv, dec("1.0", 2, 1), dec("4.0", 2, 1)), "0.250000"},
		{"decimal inexact division left alone", bin(OpDiv, dec("1.0", 2, 1), dec("3.0", 2, 1)), "(1.0 / 3.0)"},
		{"null arithmetic", bin(OpAdd, x, &Literal{Typ: Int64}), "NULL"},
		{"date plus months", bin(OpAdd, date("1993-07-01"), months(3)), "DATE '1993-10-01'"},
		{"date plus year", bin(OpAdd, date("1994-01-01"), months(12)), "DATE '1995-01-01'"},
		{"month end clamps", bin(OpAdd, date("1995-01-31"), months(1)), "DATE '1995-02-28'"},
		{"leap month end", bin(OpAdd, date("1996-01-31"), months(1)), "DATE '1996-02-29'"},
		{"date minus days interval", bin(OpSub, date("1998-12-01"), &Literal{Typ: Interval, Val: intervalDays(90)}), "DATE '1998-09-02'"},
		{"date minus months across year", bin(OpSub, date("1995-02-15"), months(3)), "DATE '1994-11-15'"},
		{"date plus int", bin(OpAdd, date("1995-12-31"), i32(1)), "DATE '1996-01-01'"},
		{"compare ints", lt(i64(1), i64(2)), "true"},
		{"compare strings", eq(str("a"), str("b")), "false"},
		{"compare decimals of different scale", eq(dec("1.50", 3, 2), dec("1.5", 2, 1)), "true"},
		{"compare dates", ge(date("1994-01-01"), date("1993-12-31")), "true"},
		{"compare with null", eq(x, &Literal{Typ: Int64}), "NULL"},
		{"x and true", and(p, boolean(true)), "p"},
		{"false and x", and(boolean(false), p), "false"},
		{"null and false", and(null, boolean(false)), "false"},
		{"null and x stays", and(null, p), "(NULL AND p)"},
		{"null and null", and(null, null), "NULL"},
		{"x or true", or(p, boolean(true)), "true"},
		{"false or x", or(boolean(false), p), "p"},
		{"null or true", or(null, boolean(true)), "true"},
		{"not null", &Not{X: null}, "NULL"},
		{"not not", &Not{X: &Not{X: p}}, "p"},
		{"is null", &IsNull{X: &Literal{Typ: Int64}}, "true"},
		{"is not null", &IsNull{X: i64(1), Negated: true}, "true"},
		{"negate decimal", &Negate{X: dec("1.25", 3, 2)}, "-1.25"},
		{"cast string to date", cast(str("1995-03-15"), Date32), "DATE '1995-03-15'"},
		{"cast bad string left alone", cast(str("nope"), Date32), "CAST('nope' AS DATE)"},
		{"cast int to decimal", cast(i64(7), money), "7.00"},
		{"cast decimal losing digits left alone", cast(dec("1.25", 3, 2), Decimal(3, 1)), "CAST(1.25 AS DECIMAL(3,1))"},
		{"cast decimal too big left alone", cast(i64(1000), Decimal(3, 1)), "CAST(1000 AS DECIMAL(3,1))"},
		{"cast string to decimal", cast(str("0.05"), money), "0.05"},
		{"cast null", cast(&Literal{Typ: Null}, Int64), "NULL"},
		{"case true arm", &Case{Whens: []When{{Cond: boolean(false), Then: i64(1)}, {Cond: boolean(true), Then: i64(2)}}, Else: i64(3), Typ: Int64}, "2"},
		{"case drops dead arms", &Case{Whens: []When{{Cond: null, Then: i64(1)}, {Cond: p, Then: i64(2)}}, Else: i64(3), Typ: Int64}, "CASE WHEN p THEN 2 ELSE 3 END"},
		{"case no arms no else", &Case{Whens: []When{{Cond: boolean(false), Then: i64(1)}}, Typ: Int64}, "NULL"},
		{"case true after open arm becomes else", &Case{Whens: []When{{Cond: p, Then: i64(1)}, {Cond: boolean(true), Then: i64(2)}}, Else: i64(3), Typ: Int64}, "CASE WHEN p THEN 1 ELSE 2 END"},
		{"coalesce skips nulls", &Func{Name: "coalesce", Args: []Expr{&Literal{Typ: Int64}, x, i64(0)}, Typ: Int64}, "coalesce(x, 0)"},
		{"coalesce first literal", &Func{Name: "coalesce", Args: []Expr{i64(4), x}, Typ: Int64}, "4"},
		{"in list hit", inList(i64(2), i64(1), i64(2)), "true"},
		{"in list miss with null", inList(i64(3), i64(1), &Literal{Typ: Int64}), "NULL"},
		{"not in list miss", &InList{X: i64(3), List: []Expr{i64(1)}, Negated: true}, "true"},
		{"nested", and(gt(d, cast(i64(0), money)), lt(i64(1), bin(OpAdd, i64(1), i64(1)))), "(d > 0.00)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := FoldExpr(tc.in).String(); got != tc.want {
				t.Fatalf("FoldExpr(%s) = %s, want %s", tc.in, got, tc.want)
			}
		})
	}
}

func TestFoldConstantsGolden(t *testing.T) {
	runGolden(t, "fold.txt", []goldenCase{
		{name: "filter_true_removed", apply: FoldConstants, build: func(b *tb) Node {
			t := b.scan("t", "")
			return b.star(filter(t, lt(i64(1), i64(2))))
		}},
		{name: "filter_false_becomes_empty_values", apply: FoldConstants, build: func(b *tb) Node {
			t := b.scan("t", "")
			return b.star(filter(t, and(eq(col(t, "a"), i64(1)), eq(i64(1), i64(2)))))
		}},
		{name: "filter_null_becomes_empty_values", apply: FoldConstants, build: func(b *tb) Node {
			t := b.scan("t", "")
			return b.star(filter(t, eq(col(t, "a"), &Literal{Typ: Int64})))
		}},
		{name: "empty_input_empties_inner_join_not_left_join", apply: FoldConstants, build: func(b *tb) Node {
			// Inner join with an empty side is empty; a Left join keeps
			// its left rows when the right side is empty.
			t, u := b.tu()
			v := b.scan("t", "t2")
			inner := &Join{Kind: JoinInner, Left: t, Right: filter(u, &Literal{Typ: Bool, Val: false}), Cond: eq(col(t, "a"), col(u, "x"))}
			left := &Join{Kind: JoinLeft, Left: v, Right: filter(b.scan("u", "u2"), &Literal{Typ: Bool, Val: false})}
			// A filter over the empty join is empty too.
			return &Join{Kind: JoinLeft, Left: left, Right: filter(inner, gt(col(t, "b"), i64(0)))}
		}},
		{name: "tpch_q4_dates", apply: FoldConstants, build: tpchQ4},
		{name: "join_condition_true_dropped", apply: FoldConstants, build: func(b *tb) Node {
			t, u := b.tu()
			return &Join{Kind: JoinLeft, Left: t, Right: u, Cond: and(boolean(true), eq(col(t, "a"), col(u, "x")))}
		}},
	})
}

func intervalDays(n int32) any {
	return arrow.MonthDayNanoInterval{Days: n}
}
