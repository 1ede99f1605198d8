package plan

import "testing"

func TestPushDownGolden(t *testing.T) {
	runGolden(t, "pushdown.txt", []goldenCase{
		{name: "comma_join_becomes_equi_join", apply: PushDownPredicates, build: func(b *tb) Node {
			t, u := b.tu()
			return b.star(filter(cross(t, u), eq(col(t, "a"), col(u, "x")), eq(col(u, "z"), str("k")), gt(col(t, "b"), col(u, "y"))))
		}},
		{name: "q5_comma_join", apply: PushDownPredicates, build: tpchQ5},
		{name: "through_project_substitutes_cheap_columns", apply: PushDownPredicates, build: func(b *tb) Node {
			t := b.scan("t", "")
			p := b.project(t, []string{"", "aa", "b2"}, col(t, "a"), cast(col(t, "a"), Float64), bin(OpAdd, col(t, "b"), i64(1)))
			return b.star(filter(p, eq(p.Cols[0].Ref(), i64(1)), gt(p.Cols[1].Ref(), &Literal{Typ: Float64, Val: 2.0}), lt(p.Cols[2].Ref(), i64(9))))
		}},
		{name: "through_aggregate_only_group_columns", apply: PushDownPredicates, build: func(b *tb) Node {
			t := b.scan("t", "")
			a := b.agg(t, []Expr{col(t, "a")}, countStar())
			return filter(a, eq(a.Cols[0].Ref(), i64(3)), gt(a.Cols[1].Ref(), i64(10)))
		}},
		{name: "into_both_inputs_of_except", apply: PushDownPredicates, build: func(b *tb) Node {
			t, u := b.tu()
			l, r := b.project(t, nil, col(t, "a")), b.project(u, nil, col(u, "x"))
			s := &SetOp{Kind: SetExcept, All: true, Left: l, Right: r,
				Cols: Schema{{ID: b.ids.Next(), Name: "a", Type: l.Cols[0].Type, Nullable: true}}}
			return filter(s, gt(s.Cols[0].Ref(), i64(1)))
		}},
		{name: "not_below_limit", apply: PushDownPredicates, build: func(b *tb) Node {
			t := b.scan("t", "")
			return filter(&Limit{Input: filter(sortBy(t, col(t, "a")), eq(col(t, "c"), str("q"))), Count: 10}, eq(col(t, "b"), i64(2)))
		}},
		{name: "left_join_null_rejecting_where_becomes_inner", apply: PushDownPredicates, build: func(b *tb) Node {
			t, u := b.tu()
			j := &Join{Kind: JoinLeft, Left: t, Right: u, Cond: eq(col(t, "a"), col(u, "x"))}
			return filter(j, eq(col(u, "z"), str("k")), eq(col(t, "c"), str("m")))
		}},
		{name: "left_join_is_null_stays_above", apply: PushDownPredicates, build: func(b *tb) Node {
			t, u := b.tu()
			j := &Join{Kind: JoinLeft, Left: t, Right: u, Cond: and(eq(col(t, "a"), col(u, "x")), eq(col(u, "y"), i64(5)), eq(col(t, "b"), i64(6)))}
			return filter(j, &IsNull{X: col(u, "x")}, eq(col(t, "c"), str("m")))
		}},
		{name: "semi_join_sides", apply: PushDownPredicates, build: func(b *tb) Node {
			t, u := b.tu()
			j := &Join{Kind: JoinSemi, Left: t, Right: u, Cond: and(eq(col(t, "a"), col(u, "x")), eq(col(u, "y"), i64(5)), eq(col(t, "b"), i64(6)))}
			return filter(j, eq(col(t, "c"), str("m")))
		}},
		{name: "anti_join_keeps_left_only_condition", apply: PushDownPredicates, build: func(b *tb) Node {
			t, u := b.tu()
			j := &Join{Kind: JoinAnti, Left: t, Right: u, Cond: and(eq(col(t, "a"), col(u, "x")), eq(col(t, "b"), i64(6)))}
			return filter(j, eq(col(t, "c"), str("m")))
		}},
		{name: "key_conjunct_derived_for_other_side", apply: PushDownPredicates, build: func(b *tb) Node {
			// Inner: both ways. Left: only into the right side, from the
			// WHERE and from a left-only ON conjunct. The non-constant
			// conjunct (t.b = t.c) is not carried.
			t, u := b.tu()
			inner := filter(&Join{Kind: JoinInner, Left: t, Right: u, Cond: eq(col(t, "a"), col(u, "x"))},
				eq(col(t, "a"), i64(1)), &InList{X: col(u, "x"), List: []Expr{i64(1), i64(2)}}, eq(col(t, "b"), col(t, "c")))
			t2, u2 := b.scan("t", "t2"), b.scan("u", "u2")
			left := filter(&Join{Kind: JoinLeft, Left: t2, Right: u2, Cond: and(eq(col(t2, "a"), col(u2, "x")), gt(col(t2, "b"), i64(5)), eq(col(t2, "b"), col(u2, "y")))},
				lt(col(t2, "a"), i64(9)), &IsNull{X: col(u2, "z")})
			return &Join{Kind: JoinInner, Left: inner, Right: left}
		}},
		{name: "join_condition_rejecting_padded_rows_makes_left_join_inner", apply: PushDownPredicates, build: func(b *tb) Node {
			// (t LEFT JOIN u) JOIN t2 ON u.y = t2.b: the padded rows
			// have u.y NULL and never match. A condition that accepts
			// NULLs (u.z IS NULL OR ...) leaves the second left join be.
			t, u, t2 := b.scan("t", ""), b.scan("u", ""), b.scan("t", "t2")
			lj := &Join{Kind: JoinLeft, Left: t, Right: u, Cond: eq(col(t, "a"), col(u, "x"))}
			inner := &Join{Kind: JoinInner, Left: b.star(lj), Right: t2, Cond: eq(col(u, "y"), col(t2, "b"))}
			u3 := b.scan("u", "u3")
			kept := &Join{Kind: JoinLeft, Left: inner, Right: u3, Cond: eq(col(t, "a"), col(u3, "x"))}
			t4 := b.scan("t", "t4")
			return &Join{Kind: JoinInner, Left: kept, Right: t4, Cond: bin(OpOr, &IsNull{X: col(u3, "z")}, eq(col(u3, "y"), col(t4, "c")))}
		}},
		{name: "null_aware_anti_join_derives_nothing", apply: PushDownPredicates, build: func(b *tb) Node {
			t, u := b.tu()
			return filter(&Join{Kind: JoinAnti, Left: t, Right: u, Cond: eq(col(t, "a"), col(u, "x")), NullAware: true}, eq(col(t, "a"), i64(1)))
		}},
		{name: "filter_goes_into_each_union_input", apply: PushDownPredicates, build: func(b *tb) Node {
			t, u := b.tu()
			un := &Union{Inputs: []Node{b.project(t, nil, col(t, "a")), b.project(u, nil, col(u, "x"))}, Cols: Schema{{ID: b.ids.Next(), Name: "a", Type: Int64}}}
			return filter(un, eq(un.Cols[0].Ref(), i64(1)))
		}},
		{name: "union_input_ruled_out_by_a_constant", apply: pushThenFold, build: func(b *tb) Node {
			// TPC-DS q4's year_total: each branch tags its rows with a
			// constant, and a reference that wants one tag reads one
			// branch. The grouped aggregate over the empty branch folds
			// away with it.
			t, u := b.tu()
			ta := b.agg(t, []Expr{col(t, "a")}, sum(col(t, "b")))
			st := b.project(ta, []string{"", "kind"}, ta.Cols[0].Ref(), str("s"))
			ua := b.agg(u, []Expr{col(u, "x")}, sum(col(u, "y")))
			cu := b.project(ua, []string{"", "kind"}, ua.Cols[0].Ref(), str("c"))
			un := &Union{Inputs: []Node{st, cu}, Cols: Schema{{ID: b.ids.Next(), Name: "a", Type: Int64}, {ID: b.ids.Next(), Name: "kind", Type: Utf8}}}
			return filter(un, eq(un.Cols[1].Ref(), str("s")), eq(un.Cols[0].Ref(), i64(1)))
		}},
		{name: "grouping_sets_aggregate_keeps_filters_above", apply: PushDownPredicates, build: func(b *tb) Node {
			// The grand total of ROLLUP(a) over empty input must still
			// meet the a IS NOT NULL above it; the WHERE conjunct below
			// the Expand reaches the scan.
			t := b.scan("t", "")
			a := b.rollup(filter(t, eq(col(t, "c"), str("k"))), []Expr{col(t, "a")}, sum(col(t, "b")))
			return filter(a, &IsNull{X: a.Cols[0].Ref(), Negated: true})
		}},
		{name: "global_aggregate_keeps_constant_filter", apply: PushDownPredicates, build: func(b *tb) Node {
			t := b.scan("t", "")
			a := b.agg(t, nil, countStar())
			return filter(a, &Literal{Typ: Bool, Val: false})
		}},
	})
}

func TestRejectsNulls(t *testing.T) {
	x := &ColRef{ID: 1, Name: "x", Typ: Int64}
	y := &ColRef{ID: 2, Name: "y", Typ: Int64}
	right := ColumnSet{1: {}}
	tests := []struct {
		pred Expr
		want bool
	}{
		{eq(x, i64(1)), true},
		{eq(x, y), true},
		{&IsNull{X: x}, false},
		{&IsNull{X: x, Negated: true}, true},
		{or(eq(x, i64(1)), eq(y, i64(1))), false},
		{and(eq(x, i64(1)), eq(y, i64(1))), true},
		{eq(&Func{Name: "coalesce", Args: []Expr{x, i64(0)}, Typ: Int64}, i64(0)), false},
		{eq(y, i64(1)), false},
		{or(eq(x, i64(1)), gt(x, y)), true},
		{&Not{X: eq(x, i64(1))}, true},
		{&Case{Whens: []When{{Cond: &IsNull{X: x}, Then: boolean(true)}}, Else: boolean(false), Typ: Bool}, false},
	}
	for _, tc := range tests {
		if got := rejectsNulls(tc.pred, right); got != tc.want {
			t.Errorf("rejectsNulls(%s) = %v, want %v", tc.pred, got, tc.want)
		}
	}
}

// pushThenFold is the optimizer's pushdown followed by its second folding.
func pushThenFold(n Node, ctx *OptContext) (Node, error) {
	n, err := PushDownPredicates(n, ctx)
	if err != nil {
		return nil, err
	}
	return FoldConstants(n, ctx)
}
