package tpch

import (
	"fmt"
	"os"
	"strings"
	"testing"

	pg_query "github.com/pganalyze/pg_query_go/v6"
)

// TestQueryTexts checks the converted query files in testdata/tpch: they
// parse as PostgreSQL, carry the kit's row limits, and none of the Oracle
// forms of the kit's output survived.
func TestQueryTexts(t *testing.T) {
	limits := map[int]string{2: "limit 100;", 3: "limit 10;", 10: "limit 20;", 18: "limit 100;", 21: "limit 100;"}
	for q := 1; q <= 22; q++ {
		t.Run(fmt.Sprintf("q%d", q), func(t *testing.T) {
			b, err := os.ReadFile(fmt.Sprintf("../testdata/tpch/q%d.sql", q))
			if err != nil {
				t.Fatal(err)
			}
			text := string(b)
			for _, bad := range []string{"rownum", "day (3)", "--"} {
				if strings.Contains(text, bad) {
					t.Errorf("contains %q", bad)
				}
			}
			trimmed := strings.TrimSpace(text)
			want, ok := limits[q]
			if strings.Contains(text, "limit") != ok || (ok && !strings.HasSuffix(trimmed, want)) {
				t.Errorf("limit clause wrong: want %q (present=%v), text ends %q", want, ok, trimmed[max(0, len(trimmed)-20):])
			}
			res, err := pg_query.Parse(text)
			if err != nil {
				t.Fatalf("does not parse: %v", err)
			}
			stmts := 1
			if q == 15 {
				stmts = 3 // create view; query; drop view
			}
			if len(res.Stmts) != stmts {
				t.Fatalf("%d statements, want %d", len(res.Stmts), stmts)
			}
		})
	}
}
