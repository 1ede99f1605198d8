package sql

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sluice/catalog"
)

// TestRewritePaths checks which quoted strings become FROM items: only
// those standing where a query's FROM list expects a relation.
func TestRewritePaths(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"SELECT * FROM 'a.parquet'", "SELECT * FROM __sluice_path('a.parquet')"},
		{"select 1 from 'a.csv' x join 'b.csv' y on true, 'c.csv'", "select 1 from __sluice_path('a.csv') x join __sluice_path('b.csv') y on true, __sluice_path('c.csv')"},
		{"SELECT * FROM (SELECT 1 FROM 'a.csv') s", "SELECT * FROM (SELECT 1 FROM __sluice_path('a.csv')) s"},
		{"SELECT substring(s FROM 'x') FROM t", ""},
		{"SELECT extract(year FROM '2020-01-01') FROM t", ""},
		{"SELECT 'a', 'b' FROM t ORDER BY 1, 'c'", ""},
		{"SELECT a FROM t WHERE a IN ('x', 'y')", ""},
		{"SELECT 1 UNION SELECT 'x'", ""},
		{"COPY t FROM 'file.csv'", ""},
		{"SELECT a IS DISTINCT FROM 'x', 'y' IS NOT DISTINCT FROM a FROM t", ""},
		{"SELECT 1 FROM 'a.csv' x JOIN t ON x.a IS NOT DISTINCT FROM 'b', 'c.csv'", "SELECT 1 FROM __sluice_path('a.csv') x JOIN t ON x.a IS NOT DISTINCT FROM 'b', __sluice_path('c.csv')"},
	} {
		toks, err := splitStatements(c.in)
		if err != nil {
			t.Fatal(err)
		}
		got, ins := rewritePaths(c.in, 0, toks[0].tokens)
		want := c.want
		if want == "" {
			want = c.in
			if ins != nil {
				t.Errorf("%s: insertions %v for an unchanged text", c.in, ins)
			}
		}
		if got != want {
			t.Errorf("%s:\n got %s\nwant %s", c.in, got, want)
		}
	}
}

// TestPathErrorPositions checks that errors after a rewritten path point
// at the user's text, not at the rewritten one.
func TestPathErrorPositions(t *testing.T) {
	_, err := Parse("SELECT * FROM 'a.parquet' WHERE WHERE")
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("got %v, want a syntax error", err)
	}
	if e.Line != 1 || e.Column != 33 || e.Near != "WHERE" {
		t.Errorf("syntax error at %d:%d near %q, want 1:33 near WHERE", e.Line, e.Column, e.Near)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "t.csv"), []byte("a,b\n1,2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	q := "SELECT nope FROM '" + filepath.Join(dir, "t.csv") + "'"
	_, err = bindOne(t, catalog.New(), q)
	if !errors.As(err, &e) || e.Column != 8 || e.Near != "nope" {
		t.Errorf("bind error %v at column %d near %q, want column 8 near nope", err, e.Column, e.Near)
	}
	q = "SELECT a FROM '" + filepath.Join(dir, "missing.csv") + "'"
	_, err = bindOne(t, catalog.New(), q)
	if !errors.As(err, &e) || e.Column != 15 || !strings.Contains(e.Msg, "missing.csv does not exist") {
		t.Errorf("got %v at column %d, want a missing-file error at column 15", err, e.Column)
	}
}
