package plan

import "testing"

func distinctOf(c *AggCall) *AggCall {
	c.Distinct = true
	return c
}

func TestSplitDistinctAggregatesGolden(t *testing.T) {
	runGolden(t, "distinct.txt", []goldenCase{
		{name: "grouped_one_argument_every_plain_function", apply: SplitDistinctAggregates, build: func(b *tb) Node {
			f := b.scanStats("fact")
			return b.agg(f, []Expr{col(f, "f_cat")},
				countDistinct(col(f, "f_key")), distinctOf(sum(col(f, "f_key"))), distinctOf(avg(col(f, "f_key"))),
				sum(col(f, "f_amount")), countStar(), countOf(col(f, "f_qty")), avg(col(f, "f_amount")),
				minOf(col(f, "f_qty")), maxOf(col(f, "f_qty")))
		}},
		{name: "global_counts_coalesced", apply: SplitDistinctAggregates, build: func(b *tb) Node {
			f := b.scanStats("fact")
			return b.agg(f, nil, countDistinct(col(f, "f_key")), sum(col(f, "f_amount")), countStar(), countOf(col(f, "f_qty")))
		}},
		{name: "expression_argument", apply: SplitDistinctAggregates, build: func(b *tb) Node {
			f := b.scanStats("fact")
			return b.agg(f, []Expr{col(f, "f_cat")}, countDistinct(bin(OpAdd, col(f, "f_key"), i64(1))), maxOf(col(f, "f_qty")))
		}},
		{name: "several_arguments_expand", apply: SplitDistinctAggregates, build: func(b *tb) Node {
			f := b.scanStats("fact")
			return b.agg(f, []Expr{col(f, "f_cat")},
				countDistinct(col(f, "f_key")), distinctOf(sum(col(f, "f_qty"))), countDistinct(col(f, "f_qty")),
				sum(col(f, "f_amount")), avg(col(f, "f_amount")), countStar())
		}},
		{name: "several_arguments_global", apply: SplitDistinctAggregates, build: func(b *tb) Node {
			f := b.scanStats("fact")
			return b.agg(f, nil, countDistinct(col(f, "f_key")), countDistinct(col(f, "f_qty")), countStar())
		}},
		{name: "rollup_grand_total_count_coalesced", apply: SplitDistinctAggregates, build: func(b *tb) Node {
			f := b.scanStats("fact")
			return b.rollup(f, []Expr{col(f, "f_cat")}, countDistinct(col(f, "f_key")), countOf(col(f, "f_qty")))
		}},
		{name: "only_distinct_one_argument", apply: SplitDistinctAggregates, build: func(b *tb) Node {
			f := b.scanStats("fact")
			return b.agg(f, nil, countDistinct(col(f, "f_key")), distinctOf(maxOf(col(f, "f_key"))))
		}},
		{name: "only_distinct_grouped_untouched", apply: SplitDistinctAggregates, build: func(b *tb) Node {
			f := b.scanStats("fact")
			return b.agg(f, []Expr{col(f, "f_cat")}, countDistinct(col(f, "f_key")))
		}},
		{name: "only_distinct_several_arguments_untouched", apply: SplitDistinctAggregates, build: func(b *tb) Node {
			f := b.scanStats("fact")
			return b.agg(f, []Expr{col(f, "f_cat")}, countDistinct(col(f, "f_key")), countDistinct(col(f, "f_qty")))
		}},
		{name: "plain_variance_untouched", apply: SplitDistinctAggregates, build: func(b *tb) Node {
			f := b.scanStats("fact")
			v := &AggCall{Func: AggVarSamp, Arg: cast(col(f, "f_qty"), Float64), Typ: Float64}
			return b.agg(f, nil, countDistinct(col(f, "f_key")), v)
		}},
		{name: "ordered_call_untouched", apply: SplitDistinctAggregates, build: func(b *tb) Node {
			f := b.scanStats("fact")
			s := &AggCall{Func: AggStringAgg, Arg: cast(col(f, "f_key"), Utf8), Arg2: str(","), Typ: Utf8,
				OrderBy: []SortKey{{Expr: col(f, "f_key")}}}
			return b.agg(f, nil, countDistinct(col(f, "f_key")), s)
		}},
	})
}
