package sql

import (
	"os"
	"path/filepath"
	"testing"

	"sluice/difftest"
	"sluice/plan"
)

// FuzzParseBind parses arbitrary text and binds and optimizes each
// statement against the TPC-H and TPC-DS schemas: whatever the input,
// the front end returns an error or a plan, never panics, and an
// optimized query keeps its output columns. The seed corpus is hand-made
// edge cases, the TPC-H queries and generated differential-test queries;
// `make fuzz` mutates it.
func FuzzParseBind(f *testing.F) {
	seeds := []string{
		"", ";", "select 1", "select 1; select 2", "select", "select * from",
		"select a, count(*) from t group by rollup (a, b), cube (s)",
		"select sum(a) over (partition by s order by d rows between 1 preceding and current row) from t",
		"select a from t intersect all select a from u except select c from u",
		"select a from t where not exists (select 1 from u where u.a = t.a) or a in (select c from u)",
		"select (select max(c) from u where u.a = t.a), case when a not in (select a from u) then 1 end from t",
		"select * from t, lateral (select count(*) from u where u.a = t.a) x",
		"select count(*) filter (where a > 1), string_agg(s, ',' order by s), stddev(a), corr(a, b) from t",
		"select grouping(a, s) from t group by grouping sets ((a), (s), ())",
		"CREATE EXTERNAL TABLE x STORED AS PARQUET LOCATION '/nonexistent'",
		"describe t", "show tables", "set execution.mode = 'blocking'", "explain select 1",
		"select 'unterminated", "select \"a\" from \"t\"", "select 1 /* nested /* comment */ */",
		"select $$dollar$$", "select 1e400, -9223372036854775808, 99999999999999999999999.5",
		"select date '2001-02-29'", "select cast('x' as int)", "select 1/0",
		"with a as (select 1 x) select * from a a1, a a2 where a1.x = a2.x",
		"values (1, 'a'), (null, null)", "select * from (values (1)) v(x) order by 1 limit 1 offset 1",
		// DuckDB syntax (dialect.go).
		"select a, rank() over (order by b) r from t qualify r = 1 order by all desc",
		"select * exclude (a) replace (b + 1 as b), t.* exclude s from t group by all",
		"from t select a, [a, b][1], try_cast(s as int) where a > 1 union all from u",
		"with c as (from t) from c qualify row_number() over () = 1",
	}
	for _, s := range seeds {
		f.Add(s)
	}
	if files, err := filepath.Glob("../testdata/tpch/q*.sql"); err == nil {
		for _, p := range files {
			if b, err := os.ReadFile(p); err == nil {
				f.Add(string(b))
			}
		}
	}
	for seed := range uint64(40) {
		f.Add(difftest.New(seed).Query().SQL)
	}
	cat := testCatalog(f)
	for _, tab := range difftest.Tables {
		if tab.Name == "customer" {
			continue // TPC-H has one too
		}
		src, _ := difftest.EmptyCatalog().Table(tab.Name)
		if err := cat.RegisterTable(tab.Name, src, false); err != nil {
			f.Fatal(err)
		}
	}
	f.Fuzz(func(t *testing.T, text string) {
		stmts, err := Parse(text)
		if err != nil {
			return
		}
		for _, st := range stmts {
			b, err := (&Binder{Catalog: cat}).Bind(st)
			if err != nil {
				continue
			}
			if b == nil {
				t.Fatalf("Bind(%q) returned neither a statement nor an error", st.SQL)
			}
			q, ok := b.(*Query)
			if !ok {
				continue
			}
			if len(q.Names) != len(q.Plan.Schema()) {
				t.Fatalf("%q: %d names for %d columns", st.SQL, len(q.Names), len(q.Plan.Schema()))
			}
			out, err := plan.Optimize(q.Plan, q.IDs)
			if err != nil {
				continue
			}
			if len(out.Schema()) != len(q.Plan.Schema()) {
				t.Fatalf("%q: optimizing changed %d columns to %d", st.SQL, len(q.Plan.Schema()), len(out.Schema()))
			}
		}
	})
}
