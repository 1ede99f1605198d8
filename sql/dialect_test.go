package sql

import (
	"strings"
	"testing"
)

// TestRewriteDialect checks the text PostgreSQL is given for each DuckDB
// construct, and that look-alikes in strings, quoted identifiers, comments
// and PostgreSQL's own syntax are left alone.
func TestRewriteDialect(t *testing.T) {
	cases := []struct{ in, want string }{
		// Untouched: no rewrite at all.
		{`SELECT 'qualify', "exclude", 'try_cast(' FROM t`, ""},
		{`SELECT a FROM t -- QUALIFY x = 1
WHERE a > 0 /* ORDER BY ALL */`, ""},
		{`SELECT "qualify" FROM t AS qualify`, ""},
		{`SELECT * FROM t qualify WHERE a = 1`, ""},
		{`SELECT a[1], (x)[2:3], f(y)[1], '{1}'::int[], CAST(z AS text[]) FROM t`, ""},
		{`SELECT a FROM t GROUP BY ALL a, b`, ""},
		{`SELECT substring(s FROM 2), extract(year FROM d), trim(FROM s), trim(both 'x' FROM s) FROM t`, ""},
		{`SELECT a * b, count(*) FROM t`, ""},
		{`SELECT "try_cast"(a) FROM t`, ""},

		{`SELECT a FROM t QUALIFY row_number() OVER (ORDER BY a) = 1 ORDER BY a`,
			`SELECT a FROM t ` + strings.Repeat(" ", len(`QUALIFY row_number() OVER (ORDER BY a) = 1`)) + ` ORDER BY a`},
		{`SELECT * EXCLUDE (a, "B") FROM t`, `SELECT *                  FROM t`},
		{`SELECT t.* EXCLUDE a, u.c FROM t, u`, `SELECT t.*          , u.c FROM t, u`},
		{`SELECT * REPLACE (a + 1 AS a) FROM t`, `SELECT *                      FROM t`},
		{`SELECT a, count(*) FROM t GROUP BY ALL HAVING count(*) > 1`, `SELECT a, count(*) FROM t GROUP BY ()  HAVING count(*) > 1`},
		{`SELECT a FROM t ORDER BY ALL DESC NULLS LAST`, `SELECT a FROM t ORDER BY 1   DESC NULLS LAST`},
		{`SELECT try_cast(s AS int), TRY_CAST(s AS date) FROM t`, `SELECT CAST    (s AS int), CAST    (s AS date) FROM t`},
		{`FROM t`, `SELECT * FROM t`},
		{`FROM t SELECT a, b WHERE a > 1`, `SELECT a, b FROM t  WHERE a > 1`},
		{`SELECT x FROM (FROM t) AS s UNION ALL FROM u`, `SELECT x FROM (SELECT * FROM t) AS s UNION ALL SELECT * FROM u`},
		{`WITH c AS (FROM t SELECT a) FROM c`, `WITH c AS (SELECT a FROM t ) SELECT * FROM c`},
		{`SELECT [1, 2], [[a], []], [1, 2][1] FROM t`, `SELECT (ARRAY[1, 2]), (ARRAY[(ARRAY[a]), (ARRAY[])]), (ARRAY[1, 2])[1] FROM t`},
		{`SELECT a FROM t WHERE a = ANY([1, 2])`, `SELECT a FROM t WHERE a = ANY((ARRAY[1, 2]))`},
		{`SELECT d + INTERVAL 3 DAYS, INTERVAL 1.5 hour FROM t`, `SELECT d + INTERVAL '3 DAYS', INTERVAL '1.5 hour' FROM t`},
		{`SELECT INTERVAL '3' DAY, INTERVAL 3 parsecs`, ""},
	}
	for _, c := range cases {
		got, d, err := rewriteDialect(c.in, nil)
		if err != nil {
			t.Errorf("%s: %v", c.in, err)
			continue
		}
		if c.want == "" {
			if d != nil || got != c.in {
				t.Errorf("%s: rewritten to %s", c.in, got)
			}
			continue
		}
		if got != c.want {
			t.Errorf("%s:\n got: %q\nwant: %q", c.in, got, c.want)
		}
	}
}

// TestDialectRecords checks what the rewrite keeps for the binder.
func TestDialectRecords(t *testing.T) {
	in := `SELECT t.* EXCLUDE (s) REPLACE (a * 2 AS a), rank() OVER w AS r FROM t QUALIFY r < try_cast('3' AS int) WINDOW w AS (ORDER BY a) ORDER BY ALL`
	out, d, err := rewriteDialect(in, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != len(in) {
		t.Fatalf("same-length pass changed the length: %q", out)
	}
	q := d.qualify[d.selectOf(strings.Index(in, "t.*"))]
	if q == nil || q.cond.GetAExpr() == nil || int(q.cond.GetAExpr().Location) != strings.Index(in, "<") {
		t.Fatalf("QUALIFY condition %v", q)
	}
	m := d.stars[strings.Index(in, "t.*")]
	if m == nil || len(m.exclude) != 1 || len(m.replace) != 1 || m.replace[0].GetResTarget().Name != "a" {
		t.Fatalf("star modifiers %+v", m)
	}
	if !d.tryCast[strings.Index(in, "try_cast")] {
		t.Fatalf("try_cast not recorded: %v", d.tryCast)
	}
	if _, ok := d.orderAll[strings.Index(in, "ALL")]; !ok {
		t.Fatalf("ORDER BY ALL not recorded: %v", d.orderAll)
	}
}

// TestDialectErrorPositions checks that syntax errors after and inside
// rewritten text point at the user's text.
func TestDialectErrorPositions(t *testing.T) {
	cases := []struct {
		in        string
		line, col int
		near, msg string
	}{
		// After a FROM-first move and a list literal (text inserted).
		{"FROM t SELECT [1, 2] AS l,\n  b WHERE a = = 1", 2, 15, "=", "syntax error"},
		{"FROM t\nWHERE a = = 1", 2, 11, "=", "syntax error"},
		// After blanked QUALIFY / EXCLUDE and try_cast.
		{"SELECT * EXCLUDE (a) FROM t\nQUALIFY a = 1\nORDER BY ALL LIMIT 1 2", 3, 22, "2", "syntax error"},
		{"SELECT try_cast(a AS int), [a] FROM t WHERE )", 1, 45, ")", "syntax error"},
		// Inside a piece parsed apart.
		{"SELECT a FROM t\nQUALIFY (a +)", 2, 13, ")", "syntax error"},
		{"SELECT * EXCLUDE (a, ) FROM t", 1, 22, ")", "syntax error"},
		{"SELECT * REPLACE (a + 1) FROM t", 1, 19, "a", "REPLACE needs expression AS column"},
		{"SELECT * EXCLUDE (a + 1) FROM t", 1, 19, "a", "EXCLUDE takes column names"},
		{"SELECT a FROM t QUALIFY a +", 1, 28, "", "syntax error at end of input"},
		{"SELECT a FROM t QUALIFY a = 1 QUALIFY a = 2", 1, 31, "QUALIFY", "only one QUALIFY"},
		// After the path rewrite and the DuckDB one together.
		{"FROM 'f.csv' SELECT [1] AS l, a WHERE = 1", 1, 39, "=", "syntax error"},
		// After an unquoted interval was quoted.
		{"SELECT INTERVAL 2 DAYS + INTERVAL 1 HOUR FROM t WHERE )", 1, 55, ")", "syntax error"},
		// The rewrite in a later statement of a script.
		{"SELECT 1;\n\nFROM t SELECT a WHERE", 3, 22, "", "syntax error at end of input"},
	}
	for _, c := range cases {
		_, err := Parse(c.in)
		e, ok := err.(*Error)
		if !ok {
			t.Errorf("%q: error %v, want a syntax error", c.in, err)
			continue
		}
		if e.Line != c.line || e.Column != c.col || e.Near != c.near || !strings.Contains(e.Msg, c.msg) {
			t.Errorf("%q: got line %d col %d near %q: %s; want line %d col %d near %q: %s", c.in, e.Line, e.Column, e.Near, e.Msg, c.line, c.col, c.near, c.msg)
		}
	}
}

// TestDialectBindErrors checks the binder's errors for the constructs,
// positioned in the user's text.
func TestDialectBindErrors(t *testing.T) {
	cat := testCatalog(t)
	cases := []struct {
		in, msg string
		col     int
	}{
		{"SELECT * EXCLUDE (zz) FROM t", `column "zz" in EXCLUDE list not found`, 19},
		{"SELECT * EXCLUDE (a, A) FROM t", `duplicate entry "a" in EXCLUDE list`, 22},
		{"SELECT u.* EXCLUDE (b) FROM t, u", `column "b" in EXCLUDE list not found`, 21},
		{"SELECT * REPLACE (1 AS zz) FROM t", `column "zz" in REPLACE list not found`, 19},
		{"SELECT sum(a) OVER (ORDER BY ALL) FROM t", "ORDER BY ALL is not supported here", 30},
		{"SELECT FROM t QUALIFY a = 1", "QUALIFY is not supported here", 15},
		{"FROM t SELECT a, b QUALIFY zz = 1", `column "zz" does not exist`, 28},
		{"SELECT try_cast(d AS int) FROM t", "cannot cast DATE to INT", 8},
		{"SELECT a, sum(b) OVER () FROM t GROUP BY ALL", `column "b" must appear in the GROUP BY clause`, 0},
	}
	for _, c := range cases {
		_, err := bindOne(t, cat, c.in)
		e, ok := err.(*Error)
		if !ok {
			t.Errorf("%q: error %v, want a bind error", c.in, err)
			continue
		}
		if !strings.Contains(e.Msg, c.msg) || c.col > 0 && e.Column != c.col {
			t.Errorf("%q: got col %d: %s; want col %d: %s", c.in, e.Column, e.Msg, c.col, c.msg)
		}
	}
}
