package sql

import (
	"errors"
	"strings"
	"testing"

	"sluice/catalog"
	"sluice/plan"
)

// bindOne parses and binds a single statement.
func bindOne(t *testing.T, cat *catalog.Catalog, text string) (Bound, error) {
	t.Helper()
	stmts, err := Parse(text)
	if err != nil {
		return nil, err
	}
	if len(stmts) != 1 {
		t.Fatalf("%q: got %d statements, want 1", text, len(stmts))
	}
	return (&Binder{Catalog: cat}).Bind(stmts[0])
}

func TestBindGolden(t *testing.T) {
	tests := []struct{ name, sql string }{
		{"select_star", "select * from t"},
		{"qualified_alias", "select x.a, x.s as name from t as x where x.b > 10"},
		{"expr_names", "select a + 1, upper(s), cast(a as bigint), a::double, count(*) over_name from t group by a, s"},
		{"int_literal_narrowing", "select a from t where a = 1 and a + 2 > 3"},
		{"decimal_arith", "select m * (1 - m), m + 1, m / 3, f * m from t"},
		{"date_literals", "select d from t where d >= '1995-01-01' and d < date '1995-01-01' + interval '3' month and ts > d"},
		{"interval_text", "select d - interval '90 days', d + interval '1' year from t"},
		{"between_in_like", "select a from t where a between 1 and 5 and s not like 'x%' and b not in (1, 2, 3) and s in ('p', 'q')"},
		{"case_coalesce", "select case when a > 0 then 'pos' when a < 0 then 'neg' end, case a when 1 then m else 0 end, coalesce(a, b, 0), nullif(a, 0) from t"},
		{"functions", "select extract(year from d), extract(month from ts), substring(s from 2 for 3), substring(s, 1), length(s), trim(s), lower(s), abs(m), round(f, 2), s || 'x', -a from t"},
		{"group_by_alias_position", "select a + 1 as k, count(*) from t group by k order by 1"},
		{"group_by_position_expr", "select substring(s, 1, 2), sum(m) from t group by 1"},
		{"having", "select a, sum(b) as total from t group by a having sum(b) > 10 and count(*) > 1"},
		{"agg_in_order_by", "select a from t group by a order by max(b) desc"},
		{"order_by_hidden_column", "select a from t order by b nulls first, s desc nulls last limit 5 offset 2"},
		{"order_by_alias_expr", "select a + b as x from t order by x, a + b"},
		{"distinct", "select distinct a, s from t order by s"},
		{"count_distinct", "select count(distinct a), count(a), avg(a), min(s), max(d) from t"},
		{"rollup_grouping", "select a, s, sum(m), grouping(a, s) from t group by rollup (a, s) having grouping(s) = 1 order by grouping(a)"},
		{"cube_beside_plain_key", "select a, s, b, count(*) from t group by a, cube (s, b)"},
		{"grouping_sets_empty_and_duplicate", "select s, count(*) from t group by grouping sets ((s), (), ())"},
		{"agg_filter", "select count(*) filter (where a > 1), sum(m) filter (where s = 'x'), count(distinct s) filter (where a > 1) from t"},
		{"string_agg_order_by", "select s, string_agg(s, ',' order by a desc, b nulls first), sum(a order by b) from t group by s"},
		{"stats_aggregates", "select stddev(a), var_pop(m), corr(f, a), string_agg(s, ','), bool_and(a > 1), every(b > 1), bool_or(a > 1) from t"},
		{"scalar_agg_no_rows", "select count(*) from t where false"},
		{"joins", "select t.a, u.c from t join u on t.a = u.a left join t as t2 on t2.b = u.c"},
		{"join_using", "select a, t.s, u.s from t join u using (a)"},
		{"right_full_join", "select t.a, u.a from t right join u on t.a = u.a full join t t3 on t3.b = u.c"},
		{"natural_join", "select * from t natural join u"},
		{"cross_comma_join", "select t.a, u.c from t, u where t.a = u.a"},
		{"derived_table", "select x, y from (select a, sum(b) from t group by a) as d(x, y) where y > 0"},
		{"cte_twice", "with c as (select a, b from t where a > 0) select c1.a, c2.b from c c1 join c c2 on c1.a = c2.a"},
		{"cte_chain", "with c1 as (select a from t), c2 (z) as (select a + 1 from c1) select z from c2"},
		{"union", "select a from t union select c from u order by 1 limit 3"},
		{"union_all_cast", "select a, s from t union all select c, s from u"},
		{"values", "values (1, 'a'), (2, null)"},
		{"select_no_from", "select 1 + 2 as three, 'x', true"},
		{"exists_correlated", "select a from t where exists (select 1 from u where u.a = t.a) and not exists (select * from u where u.c = t.b)"},
		{"in_subquery", "select a from t where b in (select c from u) and a not in (select a from u where u.s = t.s)"},
		{"scalar_subquery", "select a, (select max(c) from u where u.a = t.a) as mx from t where b > (select avg(c) from u)"},
		{"shadowing", "select a from t where exists (select a from u where a = 1)"},
		{"limit_all", "select a from t limit all"},
		{"values_in_from", "select x + 1 from (values (1), (2)) as v(x)"},
		{"timestamp_arith", "select ts - interval '1' day, ts + interval '2 hours' from t where ts >= '2020-01-01 10:00:00'"},
		{"group_order_hidden", "select count(*) from t group by a order by a"},
		{"date_in_list", "select a from t where d in ('1995-01-01', date '1996-01-01')"},
		{"cte_shadows_table", "with t as (select c from u) select c from t"},
		{"union_in_derived", "select count(*) from (select a from t union all select a from u) x"},
		{"star_using", "select * from t join u using (a, s)"},
		{"qualified_star", "select u.*, t.a from t, u"},
		{"string_concat_cast", "select a || s, 'n=' || b from t"},
		{"string_compare", "select s from t where s = 'abc' and s < s"},
		{"window_functions", "select a, row_number() over (partition by s order by b desc), sum(b) over w, avg(m) over w, " +
			"lag(s, 2, 'none') over w, percent_rank() over (order by d) from t window w as (order by a rows between 1 preceding and current row)"},
		{"window_over_aggregate", "select s, sum(b), rank() over (order by sum(b) desc), sum(b) * 100 / sum(sum(b)) over () from t group by s order by 3"},
		{"window_range_offset", "select sum(m) over (order by d range between interval '3 days' preceding and current row) from t"},
		{"window_in_order_by", "select a from t order by rank() over (partition by s order by b), a"},
	}
	cat := testCatalog(t)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := bindOne(t, cat, tc.sql)
			if err != nil {
				t.Fatalf("%s: %v", tc.sql, err)
			}
			q, ok := b.(*Query)
			if !ok {
				t.Fatalf("%s: got %T, want *Query", tc.sql, b)
			}
			checkUniqueIDs(t, q.Plan)
			checkGolden(t, tc.name, "sql: "+tc.sql+"\n"+formatQuery(q))
		})
	}
}

// checkUniqueIDs asserts no node's schema repeats a column ID.
func checkUniqueIDs(t *testing.T, n plan.Node) {
	t.Helper()
	seen := map[plan.ColumnID]bool{}
	for _, c := range n.Schema() {
		if seen[c.ID] {
			t.Errorf("duplicate column ID %d in %s", c.ID, n)
		}
		seen[c.ID] = true
	}
	for _, c := range n.Children() {
		checkUniqueIDs(t, c)
	}
}

func TestErrorString(t *testing.T) {
	e := &Error{Kind: "bind", Msg: `column "bb" does not exist`, Line: 2, Column: 5, Near: "bb", Hint: `did you mean "b"?`}
	want := `bind error at line 2, column 5 near "bb": column "bb" does not exist (did you mean "b"?)`
	if e.Error() != want {
		t.Errorf("got %s, want %s", e.Error(), want)
	}
}

func TestBindErrors(t *testing.T) {
	tests := []struct {
		name, sql string
		kind      string
		line, col int
		near      string
		msg, hint string // substrings
	}{
		{"syntax", "select a\nfrom t\nwhere a = = 1", "syntax", 3, 11, "=", "syntax error", ""},
		{"syntax_end", "select a from", "syntax", 1, 14, "", "end of input", ""},
		{"syntax_second_stmt", "select 1;\n  select from from t", "syntax", 2, 15, "from", "syntax error", ""},
		{"unknown_column", "select a, bb from t", "bind", 1, 11, "bb", `column "bb" does not exist`, `did you mean "b"?`},
		{"bind_second_stmt", "select 1; select zz from t", "bind", 1, 18, "zz", `column "zz" does not exist`, ""},
		{"unknown_column_multiline", "select a\n  from t\n  where l_shipdat > 1", "bind", 3, 9, "l_shipdat", `column "l_shipdat" does not exist`, ""},
		{"unknown_qualified", "select t.zz from t", "bind", 1, 8, "t.zz", `column "t.zz" does not exist`, ""},
		{"missing_from_entry", "select v.a from t", "bind", 1, 8, "v.a", `missing FROM-clause entry for table "v"`, ""},
		{"ambiguous", "select a from t, u", "bind", 1, 8, "a", `column reference "a" is ambiguous`, "t.a or u.a"},
		{"unknown_table", "select * from lineitems", "bind", 1, 15, "lineitems", `table "lineitems" does not exist`, `did you mean "lineitem"?`},
		{"type_compare", "select a from t where s = 1", "type", 1, 25, "=", "cannot compare VARCHAR with BIGINT", ""},
		{"type_compare_date", "select a from t where d = true", "type", 1, 25, "=", "cannot compare DATE with BOOLEAN", ""},
		{"type_arith", "select s + 1 from t", "type", 1, 10, "+", "cannot apply + to VARCHAR and BIGINT", ""},
		{"where_not_bool", "select a from t where a", "type", 1, 23, "a", "argument of WHERE must be type BOOLEAN", ""},
		{"bad_date", "select a from t where d = date '1995-13-45'", "type", 1, 32, "'1995-13-45'", "invalid input syntax for type DATE", ""},
		{"unknown_function", "select foo(a) from t", "bind", 1, 8, "foo", "function foo does not exist", ""},
		{"agg_in_where", "select a from t where sum(a) > 1", "bind", 1, 23, "sum", "aggregate functions are not allowed in WHERE", ""},
		{"nested_agg", "select sum(max(a)) from t", "bind", 1, 12, "max", "cannot be nested", ""},
		{"not_grouped", "select a, s from t group by a", "bind", 1, 11, "s", `column "s" must appear in the GROUP BY clause`, ""},
		{"order_not_grouped", "select count(*) from t group by a order by b", "bind", 0, 0, "b", `column "b" must appear in the GROUP BY clause`, ""},
		{"having_not_grouped", "select count(*) from t having a > 1", "bind", 0, 0, "a", `column "a" must appear in the GROUP BY clause`, ""},
		{"intersect_arity", "select a, b from t intersect select a from u", "bind", 0, 0, "", "each INTERSECT query must have the same number of columns", ""},
		{"except_types", "select s from t except all select a from u", "type", 0, 0, "", "EXCEPT types VARCHAR and INT cannot be matched", ""},
		{"union_arity", "select a, b from t union select a from u", "bind", 0, 0, "", "same number of columns", ""},
		{"union_types", "select s from t union select a from u", "type", 0, 0, "", "UNION types VARCHAR and INT cannot be matched", ""},
		{"order_position", "select a from t order by 3", "bind", 1, 26, "3", "ORDER BY position 3 is not in select list", ""},
		{"distinct_order", "select distinct a from t order by b", "bind", 0, 0, "", "ORDER BY expressions must appear in select list", ""},
		{"scalar_subquery_cols", "select (select a, b from t)", "bind", 1, 8, "(", "only one column", ""},
		{"limit_expr", "select a from t limit a", "bind", 1, 23, "a", `column "a" does not exist`, ""},
		{"recursive_cte_base", "with recursive r as (select * from r union all select 1) select * from r", "bind", 1, 36, "r", `recursive reference to query "r" must not appear within its non-recursive term`, ""},
		{"recursive_cte_twice", "with recursive r(n) as (select 1 union all select r.n from r, r s) select * from r", "bind", 1, 63, "r", `recursive reference to query "r" must not appear more than once`, ""},
		{"like_type", "select a from t where a like 'x'", "type", 1, 25, "like", "LIKE needs VARCHAR", ""},
		{"extract_field", "select extract(timezone from d) from t", "bind", 1, 16, "timezone", "EXTRACT field", ""},
		{"unsupported_stmt", "vacuum t", "bind", 1, 1, "VACUUM", "unsupported statement VACUUM", ""},
		{"window_in_where", "select a from t where rank() over () > 1", "bind", 1, 23, "rank", "window functions are not allowed in WHERE", ""},
		{"window_without_over", "select rank() from t", "bind", 1, 8, "rank", "requires an OVER clause", ""},
		{"window_nested", "select sum(rank() over ()) over () from t", "bind", 1, 12, "rank", "window function calls cannot be nested", ""},
		{"window_in_aggregate", "select sum(rank() over ()) from t", "bind", 1, 12, "rank", "window functions are not allowed in aggregate arguments", ""},
		{"window_unknown", "select rank() over w from t", "bind", 1, 20, "w", `window "w" does not exist`, ""},
		{"window_groups", "select rank() over (order by a groups current row) from t", "bind", 1, 20, "(", "GROUPS frames are not supported", ""},
		{"window_range_two_keys", "select sum(a) over (order by a, b range 1 preceding) from t", "bind", 1, 20, "(", "requires exactly one ORDER BY column", ""},
		{"window_range_string", "select sum(a) over (order by s range 1 preceding) from t", "type", 1, 20, "(", "not supported for ORDER BY type VARCHAR", ""},
		{"window_rows_null", "select sum(a) over (order by a rows null preceding) from t", "bind", 1, 37, "null", "must not be null", ""},
		{"window_ntile_type", "select ntile('x') over () from t", "type", 1, 14, "'x'", "must be an integer", ""},
	}
	cat := testCatalog(t)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := bindScript(t, cat, tc.sql)
			if err == nil {
				t.Fatalf("%q: bound without error", tc.sql)
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("%q: error %v is %T, want *Error", tc.sql, err, err)
			}
			if e.Kind != tc.kind || e.Line != tc.line || e.Column != tc.col || !strings.EqualFold(e.Near, tc.near) ||
				!strings.Contains(e.Msg, tc.msg) || !strings.Contains(e.Hint, tc.hint) {
				t.Errorf("%q:\ngot  kind=%s line=%d col=%d near=%q msg=%q hint=%q\nwant kind=%s line=%d col=%d near=%q msg~%q hint~%q",
					tc.sql, e.Kind, e.Line, e.Column, e.Near, e.Msg, e.Hint, tc.kind, tc.line, tc.col, tc.near, tc.msg, tc.hint)
			}
		})
	}
}
