package sql

import (
	"errors"
	"testing"
)

// TestUnsupportedFeaturesFailCleanly binds statements the binder does not
// support: each must return an *Error, never panic or bind silently.
func TestUnsupportedFeaturesFailCleanly(t *testing.T) {
	queries := []string{
		"select percentile_cont(a) within group (order by a) from t",
		"select percentile_cont(array[0.5, 0.9]) within group (order by a) from t",
		"select percentile_cont(0.5) within group (order by a, b) from t",
		"select median(distinct a) from t",
		"select sum(a) within group (order by a) from t",
		"select a from t where a is true",
		"select sum(a) over (order by a groups 1 preceding) from t",
		"select sum(a) over (order by a rows current row exclude ties) from t",
		"select count(distinct a) over () from t",
		"select * from generate_series(1, 3) with ordinality",
		"select * from t, generate_series(1, t.a)",
		"select * from lower('x')",
		"select * from t, lateral generate_series(1, a) x",
		"select $1",
		"select a from t for update",
		"select a from t where a > all (select a from u)",
		"select a from t where (a, b) in (select a, c from u)",
		"select distinct on (a) a from t order by b",
		"select a from t group by rollup (a, grouping sets (a))",
		"select grouping(b) from t group by rollup (a)",
		"explain (verbose) select 1",
		"explain (analyze maybe) select 1",
		"select count(t.*) from t",
		"select cast(d as boolean) from t",
		"select interval 'soon'",
		"select 1 from t limit 1 + a",
		"with recursive r(n) as (select 1 union all select n + 1 from r order by n) select * from r",
		"with recursive r(n) as (select n + 1 from r) select * from r",
		"select * from t x(p, q, r, s2, t2, u2, v2, w2)",
	}
	cat := testCatalog(t)
	for _, q := range queries {
		_, err := bindOne(t, cat, q)
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("%q: got %v, want *Error", q, err)
		}
	}
}
