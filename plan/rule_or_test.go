package plan

import "testing"

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
