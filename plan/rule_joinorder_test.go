package plan

import (
	"fmt"
	"testing"
)

// pushedThen runs pushdown (which creates the join conditions) then rule.
func pushedThen(rule func(Node, *OptContext) (Node, error)) func(Node, *OptContext) (Node, error) {
	return func(n Node, ctx *OptContext) (Node, error) {
		n, err := PushDownPredicates(n, ctx)
		if err != nil {
			return nil, err
		}
		return rule(n, ctx)
	}
}

func TestReorderJoinsGolden(t *testing.T) {
	runGolden(t, "joinorder.txt", []goldenCase{
		{name: "q5_reordered_without_cross_products", apply: pushedThen(ReorderJoins), build: tpchQ5},
		{name: "q2_outer_five_way", apply: pushedThen(ReorderJoins), build: func(b *tb) Node {
			p, s, ps, n, r := b.scan("part", ""), b.scan("supplier", ""), b.scan("partsupp", ""), b.scan("nation", ""), b.scan("region", "")
			return b.star(filter(cross(p, s, ps, n, r),
				eq(col(p, "p_partkey"), col(ps, "ps_partkey")),
				eq(col(s, "s_suppkey"), col(ps, "ps_suppkey")),
				eq(col(p, "p_size"), i32(15)),
				eq(col(s, "s_nationkey"), col(n, "n_nationkey")),
				eq(col(n, "n_regionkey"), col(r, "r_regionkey")),
				eq(col(r, "r_name"), str("EUROPE"))))
		}},
		{name: "disconnected_input_joined_last", apply: pushedThen(ReorderJoins), build: func(b *tb) Node {
			// region is not connected to the rest: the cross product with it
			// must come after the connected joins, whatever its size.
			r, n, s := b.scan("region", ""), b.scan("nation", ""), b.scan("supplier", "")
			return b.star(filter(cross(r, n, s), eq(col(s, "s_nationkey"), col(n, "n_nationkey"))))
		}},
		{name: "two_way_join_left_alone", apply: pushedThen(ReorderJoins), build: func(b *tb) Node {
			o, l := b.scan("orders", ""), b.scan("lineitem", "")
			return b.star(filter(cross(l, o), eq(col(l, "l_orderkey"), col(o, "o_orderkey"))))
		}},
	})
}

func TestChooseBuildSideGolden(t *testing.T) {
	runGolden(t, "buildside.txt", []goldenCase{
		{name: "smaller_side_moves_left", apply: pushedThen(ChooseBuildSide), build: func(b *tb) Node {
			o, l := b.scan("orders", ""), b.scan("lineitem", "")
			return b.star(filter(cross(l, o), eq(col(l, "l_orderkey"), col(o, "o_orderkey"))))
		}},
		{name: "already_small_left_unchanged", apply: pushedThen(ChooseBuildSide), build: func(b *tb) Node {
			n, s := b.scan("nation", ""), b.scan("supplier", "")
			return b.star(filter(cross(n, s), eq(col(s, "s_nationkey"), col(n, "n_nationkey"))))
		}},
		{name: "root_join_keeps_column_order", apply: pushedThen(ChooseBuildSide), build: func(b *tb) Node {
			o, l := b.scan("orders", ""), b.scan("lineitem", "")
			return filter(cross(l, o), eq(col(l, "l_orderkey"), col(o, "o_orderkey")))
		}},
		{name: "left_join_not_swapped", apply: pushedThen(ChooseBuildSide), build: func(b *tb) Node {
			o, c := b.scan("orders", ""), b.scan("customer", "")
			return b.star(&Join{Kind: JoinLeft, Left: o, Right: c, Cond: eq(col(o, "o_custkey"), col(c, "c_custkey"))})
		}},
	})
}

func TestPruneColumnsGolden(t *testing.T) {
	runGolden(t, "prune.txt", []goldenCase{
		{name: "scan_reads_only_needed_columns", apply: PruneColumns, build: func(b *tb) Node {
			l := b.scan("lineitem", "")
			l.Filters = []Expr{lt(col(l, "l_shipdate"), date("1998-09-02"))}
			return b.project(l, []string{"", "rev"}, col(l, "l_orderkey"), bin(OpMul, col(l, "l_extendedprice"), col(l, "l_discount")))
		}},
		{name: "expand_passes_only_needed_columns", apply: PruneColumns, build: func(b *tb) Node {
			// ROLLUP(o_orderstatus) summing o_totalprice over a join: the
			// Expand carries on only the summed column, and the join below
			// it reads only what it and the Expand need.
			o, c := b.scan("orders", ""), b.scan("customer", "")
			j := &Join{Kind: JoinInner, Left: o, Right: c, Cond: eq(col(o, "o_custkey"), col(c, "c_custkey"))}
			a := b.rollup(j, []Expr{col(o, "o_orderstatus")}, sum(col(o, "o_totalprice")))
			return b.project(a, []string{"", ""}, a.Cols[0].Ref(), a.Cols[2].Ref())
		}},
		{name: "count_star_keeps_one_column", apply: PruneColumns, build: func(b *tb) Node {
			t := b.scan("t", "")
			return b.agg(t, nil, countStar())
		}},
		{name: "unused_project_exprs_and_aggs_dropped", apply: PruneColumns, build: func(b *tb) Node {
			t := b.scan("t", "")
			a := b.agg(t, []Expr{col(t, "a")}, countStar(), sum(col(t, "b")))
			p := b.project(a, []string{"", "n", "s"}, a.Cols[0].Ref(), a.Cols[1].Ref(), a.Cols[2].Ref())
			return b.project(p, nil, p.Cols[0].Ref(), p.Cols[1].Ref())
		}},
		{name: "pass_through_project_removed_below_join", apply: PruneColumns, build: func(b *tb) Node {
			t, u := b.tu()
			pt := b.project(t, nil, col(t, "b"), col(t, "a"))
			j := &Join{Kind: JoinInner, Left: pt, Right: u, Cond: eq(col(t, "a"), col(u, "x"))}
			return b.project(j, nil, col(u, "z"))
		}},
		{name: "union_inputs_keep_all_columns", apply: PruneColumns, build: func(b *tb) Node {
			t, u := b.tu()
			un := &Union{Inputs: []Node{b.project(t, nil, col(t, "a"), col(t, "b")), b.project(u, nil, col(u, "x"), col(u, "y"))},
				Cols: Schema{{ID: b.ids.Next(), Name: "a", Type: Int64}, {ID: b.ids.Next(), Name: "b", Type: Int64}}}
			return b.project(un, nil, un.Cols[1].Ref())
		}},
		{name: "semi_join_right_side_needs_only_condition_columns", apply: PruneColumns, build: func(b *tb) Node {
			t, u := b.tu()
			j := &Join{Kind: JoinSemi, Left: t, Right: u, Cond: eq(col(t, "a"), col(u, "x"))}
			return b.project(j, nil, col(t, "c"))
		}},
		{name: "filter_only_columns_dropped_below_join", apply: PruneColumns, build: func(b *tb) Node {
			// t.c is read for the scan's filter only: a Project drops it
			// before the join, which would otherwise carry it.
			t, u := b.tu()
			t.Filters = []Expr{lt(col(t, "c"), col(t, "b"))}
			j := &Join{Kind: JoinInner, Left: t, Right: u, Cond: eq(col(t, "a"), col(u, "x"))}
			return b.project(j, nil, col(u, "z"), col(t, "a"))
		}},
		{name: "root_scan_untouched", apply: PruneColumns, build: func(b *tb) Node {
			return b.scan("t", "")
		}},
	})
}

// TestReorderJoinsBoundsItsInputs: a tree of more inner joins than
// maxReorderInputs keeps its written order above that many inputs (the
// greedy search is cubic in them: 1024 took minutes), and still orders
// the subtrees within the bound.
func TestReorderJoinsBoundsItsInputs(t *testing.T) {
	b := newTB()
	n := maxReorderInputs + 36
	scans := make([]*Scan, n)
	var tree Node
	for i := range scans {
		scans[i] = b.scan("t", fmt.Sprintf("t%d", i))
		if i == 0 {
			tree = scans[0]
			continue
		}
		tree = &Join{Kind: JoinInner, Left: tree, Right: scans[i], Cond: eq(col(scans[i-1], fmt.Sprintf("t%d.a", i-1)), col(scans[i], fmt.Sprintf("t%d.a", i)))}
	}
	out, err := ReorderJoins(tree, nil)
	if err != nil {
		t.Fatal(err)
	}
	j, ok := out.(*Join)
	if !ok {
		t.Fatalf("top is %T, want the written join", out)
	}
	if j.Right != scans[n-1] {
		t.Errorf("top join's right input is %s, want the last written input", j.Right)
	}
	if got := len(out.Schema()); got != 3*n {
		t.Errorf("%d columns, want %d", got, 3*n)
	}
}
