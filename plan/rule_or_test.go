package plan

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

func TestFactorDisjunctions(t *testing.T) {
	a := &ColRef{ID: 1, Name: "a", Typ: Int64}
	b := &ColRef{ID: 2, Name: "b", Typ: Int64}
	c := &ColRef{ID: 3, Name: "c", Typ: Int64}
	eq := func(l, r Expr) Expr { return &Binary{Op: OpEq, L: l, R: r, Typ: Bool} }
	lit := func(v int64) Expr { return &Literal{Typ: Int64, Val: v} }
	and := func(l, r Expr) Expr { return &Binary{Op: OpAnd, L: l, R: r, Typ: Bool} }
	or := func(l, r Expr) Expr { return &Binary{Op: OpOr, L: l, R: r, Typ: Bool} }
	tests := []struct {
		in   Expr
		want string
	}{
		{or(and(eq(a, b), eq(c, lit(1))), and(eq(a, b), eq(c, lit(2)))), "(c IN (1, 2) AND ((a = b) AND ((c = 1) OR (c = 2))))"},
		{or(eq(c, lit(1)), eq(c, lit(2))), "c IN (1, 2)"},
		{or(eq(c, lit(1)), eq(a, lit(2))), "((c = 1) OR (a = 2))"},
		{or(eq(a, b), and(eq(a, b), eq(c, lit(2)))), "(a = b)"},
		{or(or(and(eq(a, b), eq(c, lit(1))), and(eq(c, lit(2)), eq(a, b))), and(eq(a, b), eq(c, lit(3)))),
			"(c IN (1, 2, 3) AND ((a = b) AND (((c = 1) OR (c = 2)) OR (c = 3))))"},
	}
	for _, tt := range tests {
		if got := factorExpr(tt.in).String(); got != tt.want {
			t.Errorf("factor %s = %s, want %s", tt.in, got, tt.want)
		}
	}
}

// TestImpliedRanges: an OR whose every branch bounds a column by constants
// implies the loosest bounds; a branch without a bound on the column, a
// bound on another column, or a non-constant bound gives none; a bound
// every branch shares is factored out, not repeated.
func TestImpliedRanges(t *testing.T) {
	a := &ColRef{ID: 1, Name: "a", Typ: Int64}
	b := &ColRef{ID: 2, Name: "b", Typ: Int64}
	p := &ColRef{ID: 3, Name: "p", Typ: Decimal(7, 2)}
	cmp := func(op BinaryOp, l, r Expr) Expr { return &Binary{Op: op, L: l, R: r, Typ: Bool} }
	and := func(l, r Expr) Expr { return cmp(OpAnd, l, r) }
	or := func(l, r Expr) Expr { return cmp(OpOr, l, r) }
	lit := func(v int64) Expr { return &Literal{Typ: Int64, Val: v} }
	dec := func(v int64) Expr { return &Literal{Typ: Decimal(7, 2), Val: decimal128.FromI64(v * 100)} }
	between := func(x, lo, hi Expr) Expr { return and(cmp(OpGtEq, x, lo), cmp(OpLtEq, x, hi)) }
	tests := []struct {
		in   Expr
		want string
	}{
		// TPC-DS q48's shape: a pin and a price range per branch.
		{or(or(and(cmp(OpEq, b, lit(1)), between(p, dec(100), dec(150))),
			and(cmp(OpEq, b, lit(2)), between(p, dec(50), dec(100)))),
			and(cmp(OpEq, b, lit(3)), between(p, dec(150), dec(200)))),
			"(((b IN (1, 2, 3) AND (p >= 50.00)) AND (p <= 200.00)) AND ((((b = 1) AND ((p >= 100.00) AND (p <= 150.00))) OR ((b = 2) AND ((p >= 50.00) AND (p <= 100.00)))) OR ((b = 3) AND ((p >= 150.00) AND (p <= 200.00)))))"},
		// Strict bounds, the literal on the left, the tightest of two bounds
		// in one branch; only one branch has an upper bound.
		{or(and(cmp(OpGt, a, lit(5)), cmp(OpGtEq, a, lit(7))), cmp(OpLt, lit(2), a)),
			"((a >= 2) AND (((a > 5) AND (a >= 7)) OR (2 < a)))"},
		{or(and(cmp(OpLtEq, a, lit(10)), cmp(OpEq, b, lit(1))), cmp(OpLt, a, lit(20))),
			"((a <= 20) AND (((a <= 10) AND (b = 1)) OR (a < 20)))"},
		// No bound on a in the second branch; bounds on different columns.
		{or(cmp(OpGt, a, lit(5)), cmp(OpEq, b, lit(1))), "((a > 5) OR (b = 1))"},
		{or(cmp(OpGt, a, lit(5)), cmp(OpGt, b, lit(1))), "((a > 5) OR (b > 1))"},
		// A column bound: not a constant.
		{or(cmp(OpGt, a, b), cmp(OpGt, a, lit(1))), "((a > b) OR (a > 1))"},
		// Shared by both branches: factored out once.
		{or(and(cmp(OpGtEq, a, lit(1)), cmp(OpEq, b, lit(1))), and(cmp(OpGtEq, a, lit(1)), cmp(OpEq, b, lit(2)))),
			"(b IN (1, 2) AND ((a >= 1) AND ((b = 1) OR (b = 2))))"},
	}
	for _, tt := range tests {
		if got := factorExpr(tt.in).String(); got != tt.want {
			t.Errorf("factor %s\n got %s\nwant %s", tt.in, got, tt.want)
		}
	}
}
