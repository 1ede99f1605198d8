package plan

import (
	"strings"
	"testing"
)

// tu is "from t, u"-style test scaffolding: scans of the small tables t and u.
func (b *tb) tu() (*Scan, *Scan) { return b.scan("t", ""), b.scan("u", "") }

func TestDecorrelateGolden(t *testing.T) {
	var cases []goldenCase
	for _, q := range tpchQueries {
		cases = append(cases, goldenCase{name: q.name, build: q.build, apply: Decorrelate})
	}
	cases = append(cases, []goldenCase{
		{name: "not_of_exists", apply: Decorrelate, build: func(b *tb) Node {
			t, u := b.tu()
			return b.star(filter(t, &Not{X: exists(filter(u, eq(col(u, "x"), col(t, "a"))))}))
		}},
		{name: "in_with_correlation_through_project", apply: Decorrelate, build: func(b *tb) Node {
			t, u := b.tu()
			sub := b.project(filter(u, eq(col(u, "y"), col(t, "b"))), nil, col(u, "x"))
			return b.star(filter(t, in(col(t, "a"), sub)))
		}},
		{name: "correlation_in_inner_join_condition_pulled", apply: Decorrelate, build: func(b *tb) Node {
			t, u := b.tu()
			u2 := b.scan("u", "u2")
			j := &Join{Kind: JoinInner, Left: u, Right: filter(u2, eq(col(u2, "u2.z"), col(t, "c"))),
				Cond: and(eq(col(u, "x"), col(u2, "u2.x")), eq(col(u, "y"), col(t, "a")))}
			return b.star(filter(t, exists(j)))
		}},
		{name: "correlation_in_left_join_right_side_rejected", apply: Decorrelate, build: func(b *tb) Node {
			t, u := b.tu()
			u2 := b.scan("u", "u2")
			j := &Join{Kind: JoinLeft, Left: u, Right: filter(u2, eq(col(u2, "u2.z"), col(t, "c"))),
				Cond: eq(col(u, "x"), col(u2, "u2.x"))}
			return b.star(filter(t, exists(j)))
		}},
		{name: "correlated_count_star_is_coalesced", apply: Decorrelate, build: func(b *tb) Node {
			t, u := b.tu()
			sub := b.agg(filter(u, eq(col(u, "x"), col(t, "a"))), nil, countStar())
			return b.star(filter(t, gt(col(t, "b"), scalar(sub))))
		}},
		{name: "correlated_count_in_expression_rejected", apply: Decorrelate, build: func(b *tb) Node {
			t, u := b.tu()
			a := b.agg(filter(u, eq(col(u, "x"), col(t, "a"))), nil, countStar())
			sub := b.project(a, nil, bin(OpAdd, a.Cols[0].Ref(), i64(1)))
			return b.star(filter(t, gt(col(t, "b"), scalar(sub))))
		}},
		{name: "correlated_scalar_in_select_list_left_join", apply: Decorrelate, build: func(b *tb) Node {
			t, u := b.tu()
			sub := b.agg(filter(u, eq(col(u, "x"), col(t, "a"))), nil, sum(col(u, "y")))
			return b.project(t, []string{"", "s"}, col(t, "a"), scalar(sub))
		}},
		{name: "uncorrelated_scalar_agg_in_select_list", apply: Decorrelate, build: func(b *tb) Node {
			t, u := b.tu()
			sub := b.agg(u, nil, minOf(col(u, "x")))
			return b.project(t, []string{"", "m"}, col(t, "a"), bin(OpAdd, col(t, "b"), scalar(sub)))
		}},
		{name: "uncorrelated_scalar_checked_by_single_value", apply: Decorrelate, build: func(b *tb) Node {
			t, u := b.tu()
			sub := b.project(filter(u, eq(col(u, "y"), i64(1))), nil, col(u, "x"))
			return b.project(t, []string{"", "x"}, col(t, "a"), scalar(sub))
		}},
		{name: "exists_under_or_is_a_mark", apply: Decorrelate, build: func(b *tb) Node {
			t, u := b.tu()
			return b.star(filter(t, or(eq(col(t, "a"), i64(1)), exists(filter(u, eq(col(u, "x"), col(t, "a")))))))
		}},
		{name: "uncorrelated_exists_under_or_counts", apply: Decorrelate, build: func(b *tb) Node {
			t, u := b.tu()
			return b.star(filter(t, or(eq(col(t, "a"), i64(1)), exists(filter(u, eq(col(u, "y"), i64(2)))))))
		}},
		{name: "not_in_under_or_is_a_three_valued_mark", apply: Decorrelate, build: func(b *tb) Node {
			t, u := b.tu()
			sub := b.project(filter(u, eq(col(u, "y"), col(t, "b"))), nil, col(u, "x"))
			return b.star(filter(t, or(eq(col(t, "c"), i64(1)), &Not{X: in(col(t, "a"), sub)})))
		}},
		{name: "in_in_select_list_is_a_mark", apply: Decorrelate, build: func(b *tb) Node {
			t, u := b.tu()
			sub := b.project(u, nil, col(u, "x"))
			return b.project(t, []string{"", "m"}, col(t, "a"), in(col(t, "a"), sub))
		}},
		{name: "lateral_filter_pulled_into_join_condition", apply: Decorrelate, build: func(b *tb) Node {
			t, u := b.tu()
			sub := b.project(filter(u, eq(col(u, "x"), col(t, "a")), lt(col(u, "y"), col(t, "b"))), nil, col(u, "z"))
			return b.star(&Join{Kind: JoinLeft, Left: t, Right: sub})
		}},
		{name: "lateral_count_grouped_and_coalesced", apply: Decorrelate, build: func(b *tb) Node {
			t, u := b.tu()
			sub := b.agg(filter(u, eq(col(u, "x"), col(t, "a"))), nil, countStar())
			return b.star(&Join{Kind: JoinInner, Left: t, Right: sub})
		}},
		{name: "exists_under_or_non_equality_over_domain", apply: Decorrelate, build: func(b *tb) Node {
			t, u := b.tu()
			return b.star(filter(t, or(eq(col(t, "c"), i64(1)), exists(filter(u, eq(col(u, "x"), col(t, "a")), lt(col(u, "y"), col(t, "b")))))))
		}},
		{name: "left_join_on_subquery_filters_right_side", apply: Decorrelate, build: func(b *tb) Node {
			t, u := b.tu()
			u2 := b.scan("u", "u2")
			return b.star(&Join{Kind: JoinLeft, Left: t, Right: u, Cond: and(eq(col(t, "a"), col(u, "x")), in(col(u, "y"), b.project(u2, nil, col(u2, "u2.y"))))})
		}},
		{name: "aggregate_argument_subquery_projected_below", apply: Decorrelate, build: func(b *tb) Node {
			t, u := b.tu()
			sub := b.agg(filter(u, eq(col(u, "x"), col(t, "a"))), nil, countStar())
			return b.agg(t, []Expr{col(t, "b")}, sum(scalar(sub)))
		}},
		{name: "correlated_scalar_row_grouped_by_single_value", apply: Decorrelate, build: func(b *tb) Node {
			t, u := b.tu()
			sub := b.project(filter(u, eq(col(u, "x"), col(t, "a"))), nil, col(u, "y"))
			return b.star(filter(t, eq(col(t, "b"), scalar(sub))))
		}},
		{name: "correlated_scalar_non_equality_over_domain", apply: Decorrelate, build: func(b *tb) Node {
			t, u := b.tu()
			sub := b.agg(filter(u, lt(col(u, "x"), col(t, "a"))), nil, sum(col(u, "y")))
			return b.star(filter(t, eq(col(t, "b"), scalar(sub))))
		}},
		{name: "correlation_below_aggregate_becomes_group_key", apply: Decorrelate, build: func(b *tb) Node {
			t, u := b.tu()
			sub := b.agg(filter(u, eq(col(u, "x"), col(t, "a"))), []Expr{col(u, "y")}, countStar())
			return b.star(filter(t, exists(sub)))
		}},
		{name: "non_equality_below_aggregate_in_exists_rejected", apply: Decorrelate, build: func(b *tb) Node {
			t, u := b.tu()
			sub := b.agg(filter(u, lt(col(u, "x"), col(t, "a"))), []Expr{col(u, "y")}, countStar())
			return b.star(filter(t, exists(sub)))
		}},
	}...)
	runGolden(t, "decorrelate.txt", cases)
}

func TestDecorrelateErrorsAreClear(t *testing.T) {
	tests := []struct {
		name  string
		build func(b *tb) Node
		want  string
	}{
		{"exists under or with a non-equality correlation", func(b *tb) Node {
			t, u := b.tu()
			return filter(t, or(eq(col(t, "a"), i64(1)), exists(filter(u, or(lt(col(u, "x"), col(t, "a")), &IsNull{X: col(t, "a")})))))
		}, "may be NULL without making them fail"},
		{"subquery in sort key", func(b *tb) Node {
			t, u := b.tu()
			return sortBy(t, scalar(b.agg(u, nil, countStar())))
		}, "subquery in Sort is not supported"},
		{"multi-column scalar", func(b *tb) Node {
			t, u := b.tu()
			return filter(t, eq(col(t, "a"), &Subquery{Kind: SubqueryScalar, Plan: u, Typ: Int64}))
		}, "must return one column"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := newTB()
			_, err := Decorrelate(tc.build(b), &OptContext{IDs: b.ids})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want it to mention %q", err, tc.want)
			}
		})
	}
}
