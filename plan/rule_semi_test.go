package plan

import "testing"

func TestPushDownSemiJoins(t *testing.T) {
	col := func(id ColumnID, name string) Column { return Column{ID: id, Name: name, Type: Int64} }
	a := &Values{Cols: Schema{col(1, "a")}}
	b := &Values{Cols: Schema{col(2, "b")}}
	s := &Values{Cols: Schema{col(3, "s")}}
	eq := func(l, r Column) Expr { return &Binary{Op: OpEq, L: l.Ref(), R: r.Ref(), Typ: Bool} }
	inner := &Join{Kind: JoinInner, Left: a, Right: b, Cond: eq(a.Cols[0], b.Cols[0])}
	tests := []struct {
		name string
		in   Node
		want string
	}{
		{"onto the left input", &Join{Kind: JoinSemi, Left: inner, Right: s, Cond: eq(a.Cols[0], s.Cols[0])},
			"Inner Join: (a = b)\n  Semi Join: (a = s)\n    Values: 0 rows\n    Values: 0 rows\n  Values: 0 rows\n"},
		{"onto the right input", &Join{Kind: JoinAnti, Left: inner, Right: s, Cond: eq(b.Cols[0], s.Cols[0])},
			"Inner Join: (a = b)\n  Values: 0 rows\n  Anti Join: (b = s)\n    Values: 0 rows\n    Values: 0 rows\n"},
		{"stays when it needs both", &Join{Kind: JoinSemi, Left: inner, Right: s,
			Cond: Conjunction([]Expr{eq(a.Cols[0], s.Cols[0]), eq(b.Cols[0], s.Cols[0])})},
			"Semi Join: ((a = s) AND (b = s))\n  Inner Join: (a = b)\n    Values: 0 rows\n    Values: 0 rows\n  Values: 0 rows\n"},
		{"stays above a left join", &Join{Kind: JoinSemi, Left: &Join{Kind: JoinLeft, Left: a, Right: b, Cond: eq(a.Cols[0], b.Cols[0])}, Right: s, Cond: eq(b.Cols[0], s.Cols[0])},
			"Semi Join: (b = s)\n  Left Join: (a = b)\n    Values: 0 rows\n    Values: 0 rows\n  Values: 0 rows\n"},
	}
	for _, tt := range tests {
		out, err := PushDownSemiJoins(tt.in, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := Format(out); got != tt.want {
			t.Errorf("%s:\n%s\nwant\n%s", tt.name, got, tt.want)
		}
	}
}
