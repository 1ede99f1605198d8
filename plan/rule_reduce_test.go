package plan

import "testing"

func TestReduceAggregatesGolden(t *testing.T) {
	// The q17 shape: a filtered part scan joined with an aggregate of all
	// lineitem by part key.
	partAgg := func(b *tb) (*Project, *Aggregate, *Scan) {
		p := b.scan("part", "")
		p.Filters = []Expr{eq(col(p, "p_brand"), str("Brand#23"))}
		pp := b.project(p, nil, col(p, "p_partkey"))
		l := b.scan("lineitem", "")
		a := b.agg(l, []Expr{col(l, "l_partkey")}, sum(col(l, "l_quantity")))
		return pp, a, l
	}
	runGolden(t, "reduce.txt", []goldenCase{
		{name: "aggregate_read_only_for_joined_keys", apply: ReduceAggregates, build: func(b *tb) Node {
			pp, a, _ := partAgg(b)
			ap := b.project(a, []string{"", "total"}, a.Cols[0].Ref(), a.Cols[1].Ref())
			j := &Join{Kind: JoinInner, Left: pp, Right: ap, Cond: eq(pp.Cols[0].Ref(), ap.Cols[0].Ref())}
			return b.project(j, nil, ap.Cols[1].Ref())
		}},
		{name: "left_join_untouched", apply: ReduceAggregates, build: func(b *tb) Node {
			// A LEFT join keeps unmatched aggregate rows: nothing to narrow.
			pp, a, _ := partAgg(b)
			j := &Join{Kind: JoinLeft, Left: a, Right: pp, Cond: eq(pp.Cols[0].Ref(), a.Cols[0].Ref())}
			return b.project(j, nil, a.Cols[1].Ref())
		}},
		{name: "join_on_an_aggregate_value_untouched", apply: ReduceAggregates, build: func(b *tb) Node {
			// The join key is the sum, not a group key.
			p, l := b.scan("part", ""), b.scan("lineitem", "")
			a := b.agg(l, []Expr{col(l, "l_partkey")}, countStar())
			j := &Join{Kind: JoinInner, Left: p, Right: a, Cond: eq(col(p, "p_size"), a.Cols[1].Ref())}
			return b.project(j, nil, col(p, "p_name"))
		}},
		{name: "key_narrowed_through_a_semi_join", apply: ReduceAggregates, build: func(b *tb) Node {
			// The q20 shape: partsupp rows of some parts (a semi join) are
			// not cheap to read again, but their part keys all come from the
			// filtered part scan, which narrows the aggregate instead.
			p, s := b.scan("part", ""), b.scan("partsupp", "")
			p.Filters = []Expr{eq(col(p, "p_brand"), str("Brand#23"))}
			ps := &Join{Kind: JoinSemi, Left: s, Right: p, Cond: eq(col(s, "ps_partkey"), col(p, "p_partkey"))}
			l := b.scan("lineitem", "")
			a := b.agg(l, []Expr{col(l, "l_partkey"), col(l, "l_suppkey")}, sum(col(l, "l_quantity")))
			j := &Join{Kind: JoinInner, Left: a, Right: ps, Cond: Conjunction([]Expr{
				eq(col(s, "ps_partkey"), a.Cols[0].Ref()), eq(col(s, "ps_suppkey"), a.Cols[1].Ref())})}
			return b.project(j, nil, col(s, "ps_suppkey"))
		}},
		{name: "aggregate_used_twice_untouched", apply: ReduceAggregates, build: func(b *tb) Node {
			// The q2/q59 shape: one aggregate (a CTE) read twice, once
			// joined with a filtered scan. Narrowing that copy would make
			// the two differ, so the aggregate could not be computed once
			// for both.
			pp, a, _ := partAgg(b)
			l2 := b.scan("lineitem", "")
			a2 := b.agg(l2, []Expr{col(l2, "l_partkey")}, sum(col(l2, "l_quantity")))
			j := &Join{Kind: JoinInner, Left: pp, Right: a, Cond: eq(pp.Cols[0].Ref(), a.Cols[0].Ref())}
			j2 := &Join{Kind: JoinInner, Left: j, Right: a2, Cond: eq(a.Cols[0].Ref(), a2.Cols[0].Ref())}
			return b.project(j2, nil, a.Cols[1].Ref(), a2.Cols[1].Ref())
		}},
		{name: "other_side_with_a_join_untouched", apply: ReduceAggregates, build: func(b *tb) Node {
			// Computing a join twice may cost more than it saves.
			p, s := b.scan("part", ""), b.scan("partsupp", "")
			ps := &Join{Kind: JoinInner, Left: p, Right: s, Cond: eq(col(p, "p_partkey"), col(s, "ps_partkey"))}
			l := b.scan("lineitem", "")
			a := b.agg(l, []Expr{col(l, "l_partkey")}, countStar())
			j := &Join{Kind: JoinInner, Left: ps, Right: a, Cond: eq(col(p, "p_partkey"), a.Cols[0].Ref())}
			return b.project(j, nil, a.Cols[1].Ref())
		}},
	})
}
