package plan

import "testing"

func TestMergeGlobalAggregatesGolden(t *testing.T) {
	// filtered scans one of eagerTables with filters.
	filtered := func(b *tb, table string, filters func(*Scan) []Expr) *Scan {
		s := b.scanStats(table)
		if filters != nil {
			s.Filters = filters(s)
		}
		return s
	}
	qtyBetween := func(lo, hi int64) func(*Scan) []Expr {
		return func(s *Scan) []Expr { return []Expr{ge(col(s, "f_qty"), i64(lo)), lt(col(s, "f_qty"), i64(hi))} }
	}
	runGolden(t, "merge_global_aggregates.txt", []goldenCase{
		{name: "scalar_subqueries_over_one_table", apply: MergeGlobalAggregates, build: func(b *tb) Node {
			// The q9 shape: a count and an average over each of two
			// ranges, and a count over the second range again.
			f1, f2, f3 := filtered(b, "fact", qtyBetween(1, 20)), filtered(b, "fact", qtyBetween(1, 20)), filtered(b, "fact", qtyBetween(20, 40))
			return cross(b.agg(f1, nil, countStar()), b.agg(f2, nil, avg(col(f2, "f_amount"))), b.agg(f3, nil, countStar(), sum(col(f3, "f_amount"))))
		}},
		{name: "one_scan_unfiltered", apply: MergeGlobalAggregates, build: func(b *tb) Node {
			// The unfiltered scan keeps every row; its aggregate needs no
			// condition, the other one keeps its own.
			f1, f2 := filtered(b, "fact", nil), filtered(b, "fact", qtyBetween(1, 20))
			return cross(b.agg(f1, nil, maxOf(col(f1, "f_amount"))), b.agg(f2, nil, minOf(col(f2, "f_amount"))))
		}},
		{name: "same_filters_need_no_condition", apply: MergeGlobalAggregates, build: func(b *tb) Node {
			f1, f2 := filtered(b, "fact", qtyBetween(1, 20)), filtered(b, "fact", qtyBetween(1, 20))
			return cross(b.agg(f1, nil, countStar()), b.agg(f2, nil, sum(col(f2, "f_amount"))))
		}},
		{name: "joins_differing_in_a_dimension_filter", apply: MergeGlobalAggregates, build: func(b *tb) Node {
			// The q88 shape: the same join, another region each time.
			agg := func(region int64) Node {
				f := filtered(b, "fact", nil)
				d := filtered(b, "dim", func(s *Scan) []Expr { return []Expr{eq(col(s, "d_region"), i64(region))} })
				return b.agg(&Join{Kind: JoinInner, Left: f, Right: d, Cond: eq(col(f, "f_key"), col(d, "d_key"))}, nil, countStar())
			}
			return cross(agg(1), agg(2), agg(3))
		}},
		{name: "distinct_grouped_and_other_tables_untouched", apply: MergeGlobalAggregates, build: func(b *tb) Node {
			f1, f2, f3, u := filtered(b, "fact", qtyBetween(1, 20)), filtered(b, "fact", qtyBetween(20, 40)), filtered(b, "fact", nil), filtered(b, "unique", nil)
			return cross(b.agg(f1, nil, countDistinct(col(f1, "f_cat"))), b.agg(f2, []Expr{col(f2, "f_cat")}, countStar()),
				b.agg(f3, nil, countStar()), b.agg(u, nil, countStar()))
		}},
		{name: "different_join_conditions_untouched", apply: MergeGlobalAggregates, build: func(b *tb) Node {
			f1, d1, f2, d2 := filtered(b, "fact", nil), filtered(b, "dim", nil), filtered(b, "fact", nil), filtered(b, "dim", nil)
			return cross(b.agg(&Join{Kind: JoinInner, Left: f1, Right: d1, Cond: eq(col(f1, "f_key"), col(d1, "d_key"))}, nil, countStar()),
				b.agg(&Join{Kind: JoinInner, Left: f2, Right: d2, Cond: eq(col(f2, "f_cat"), col(d2, "d_key"))}, nil, countStar()))
		}},
		{name: "grouped_by_the_differing_filter_column", apply: MergeGlobalAggregates, build: func(b *tb) Node {
			// The q31 shape: a CTE grouped by region, read for two
			// regions; the merged groups are filtered by each one's own.
			agg := func(region int64) Node {
				f := filtered(b, "fact", nil)
				d := filtered(b, "dim", func(s *Scan) []Expr { return []Expr{eq(col(s, "d_region"), i64(region))} })
				return b.agg(&Join{Kind: JoinInner, Left: f, Right: d, Cond: eq(col(f, "f_key"), col(d, "d_key"))},
					[]Expr{col(d, "d_name"), col(d, "d_region")}, sum(col(f, "f_amount")))
			}
			return cross(agg(1), agg(2))
		}},
		{name: "grouped_reader_with_a_filter_off_its_keys_left_out", apply: MergeGlobalAggregates, build: func(b *tb) Node {
			// Regions 1 and 2 merge; the third reader's filter is on
			// f_qty, no group key, so it keeps its own aggregate.
			agg := func(region int64, qty bool) Node {
				f := filtered(b, "fact", nil)
				if qty {
					f.Filters = []Expr{gt(col(f, "f_qty"), i64(5))}
				}
				d := filtered(b, "dim", func(s *Scan) []Expr { return []Expr{eq(col(s, "d_region"), i64(region))} })
				return b.agg(&Join{Kind: JoinInner, Left: f, Right: d, Cond: eq(col(f, "f_key"), col(d, "d_key"))},
					[]Expr{col(d, "d_name"), col(d, "d_region")}, sum(col(f, "f_amount")))
			}
			return cross(agg(1, false), agg(2, false), agg(1, true))
		}},
		{name: "equal_readers_untouched", apply: MergeGlobalAggregates, build: func(b *tb) Node {
			// The same aggregate twice is already one subtree to the
			// planners: nothing to merge.
			f1, f2 := filtered(b, "fact", qtyBetween(1, 20)), filtered(b, "fact", qtyBetween(1, 20))
			return cross(b.agg(f1, []Expr{col(f1, "f_cat")}, sum(col(f1, "f_amount"))), b.agg(f2, []Expr{col(f2, "f_cat")}, sum(col(f2, "f_amount"))))
		}},
		{name: "grouped_without_the_differing_filter_column_untouched", apply: MergeGlobalAggregates, build: func(b *tb) Node {
			// d_region is not a group key: the merged groups could not be
			// told apart.
			agg := func(region int64) Node {
				f := filtered(b, "fact", nil)
				d := filtered(b, "dim", func(s *Scan) []Expr { return []Expr{eq(col(s, "d_region"), i64(region))} })
				return b.agg(&Join{Kind: JoinInner, Left: f, Right: d, Cond: eq(col(f, "f_key"), col(d, "d_key"))},
					[]Expr{col(d, "d_name")}, sum(col(f, "f_amount")))
			}
			return cross(agg(1), agg(2))
		}},
	})
}
