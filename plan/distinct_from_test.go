package plan

import "testing"

func TestFoldDistinctFrom(t *testing.T) {
	col := &ColRef{ID: 1, Name: "x", Typ: Int32}
	i := func(v any) *Literal { return &Literal{Typ: Int32, Val: v} }
	for _, c := range []struct {
		e    Expr
		want string
	}{
		{&DistinctFrom{L: i(1), R: i(1)}, "false"},
		{&DistinctFrom{L: i(1), R: i(2)}, "true"},
		{&DistinctFrom{L: i(nil), R: i(nil)}, "false"},
		{&DistinctFrom{L: i(nil), R: i(nil), Negated: true}, "true"},
		{&DistinctFrom{L: i(1), R: i(nil), Negated: true}, "false"},
		{&DistinctFrom{L: col, R: i(nil)}, "x IS NOT NULL"},
		{&DistinctFrom{L: i(nil), R: col, Negated: true}, "x IS NULL"},
		{&DistinctFrom{L: col, R: i(3), Negated: true}, "(x IS NOT DISTINCT FROM 3)"},
	} {
		if got := FoldExpr(c.e).String(); got != c.want {
			t.Errorf("%s folds to %s, want %s", c.e, got, c.want)
		}
	}
}

func TestNullSafeKeys(t *testing.T) {
	l := &ColRef{ID: 1, Name: "a", Typ: Utf8}
	r := &ColRef{ID: 2, Name: "b", Typ: Utf8}
	lk, rk, ok := NullSafeKeys(l, r)
	if !ok || len(lk) != 2 || len(rk) != 2 {
		t.Fatalf("got %v %v %v", lk, rk, ok)
	}
	if got := lk[0].String() + "; " + lk[1].String(); got != "a IS NULL; coalesce(a, '')" {
		t.Errorf("left keys %s", got)
	}
	if got := rk[0].String() + "; " + rk[1].String(); got != "b IS NULL; coalesce(b, '')" {
		t.Errorf("right keys %s", got)
	}
	if _, _, ok := NullSafeKeys(&ColRef{ID: 3, Typ: TextArray}, &ColRef{ID: 4, Typ: TextArray}); ok {
		t.Error("arrays have no null-safe keys")
	}
}
