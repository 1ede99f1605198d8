package plan

import "testing"

func TestPreAggregateGroupingSetsGolden(t *testing.T) {
	runGolden(t, "preagg.txt", []goldenCase{
		{name: "rollup_sums_and_extremes_finest_level_first", apply: PreAggregateGroupingSets, build: func(b *tb) Node {
			f := b.scanStats("fact")
			return b.rollup(f, []Expr{col(f, "f_cat"), col(f, "f_key")},
				sum(col(f, "f_amount")), minOf(col(f, "f_qty")), maxOf(col(f, "f_qty")))
		}},
		{name: "count_without_grand_total", apply: PreAggregateGroupingSets, build: func(b *tb) Node {
			// GROUPING SETS ((f_cat, f_key), (f_cat)): no empty set, so a
			// combined count is never a sum over no rows.
			f := b.scanStats("fact")
			a := b.rollup(f, []Expr{col(f, "f_cat"), col(f, "f_key")}, countStar(), countOf(col(f, "f_qty")))
			e := a.Input.(*Expand)
			e.Sets = e.Sets[:2]
			a.GrandTotals = nil
			return a
		}},
		{name: "count_under_a_grand_total_untouched", apply: PreAggregateGroupingSets, build: func(b *tb) Node {
			f := b.scanStats("fact")
			return b.rollup(f, []Expr{col(f, "f_cat")}, countStar())
		}},
		{name: "avg_as_sum_and_count", apply: PreAggregateGroupingSets, build: func(b *tb) Node {
			f := b.scanStats("fact")
			return b.rollup(f, []Expr{col(f, "f_cat")}, avg(col(f, "f_qty")))
		}},
		{name: "distinct_untouched", apply: PreAggregateGroupingSets, build: func(b *tb) Node {
			f := b.scanStats("fact")
			c := sum(col(f, "f_amount"))
			c.Distinct = true
			return b.rollup(f, []Expr{col(f, "f_cat")}, c)
		}},
	})
}
