package sql

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// deepShapes build statements nesting n levels in the ways the parser
// handles differently: left-associative chains (which once overflowed the C
// stack), right-nested groups (bounded by bison's stack) and flat lists.
var deepShapes = map[string]func(n int) string{
	"plus":     func(n int) string { return "SELECT 1" + strings.Repeat("+1", n) },
	"concat":   func(n int) string { return "SELECT 'a'" + strings.Repeat("||'a'", n) },
	"cast":     func(n int) string { return "SELECT 1" + strings.Repeat("::int", n) },
	"paren":    func(n int) string { return "SELECT " + strings.Repeat("(", n) + "1" + strings.Repeat(")", n) },
	"rplus":    func(n int) string { return "SELECT " + strings.Repeat("1+(", n) + "1" + strings.Repeat(")", n) },
	"func":     func(n int) string { return "SELECT " + strings.Repeat("abs(", n) + "1" + strings.Repeat(")", n) },
	"subquery": func(n int) string { return "SELECT " + strings.Repeat("(SELECT ", n) + "1" + strings.Repeat(")", n) },
	"neg":      func(n int) string { return "SELECT " + strings.Repeat("- ", n) + "1" },
	"not":      func(n int) string { return "SELECT " + strings.Repeat("NOT ", n) + "true" },
	"case": func(n int) string {
		return "SELECT " + strings.Repeat("CASE WHEN true THEN ", n) + "1" + strings.Repeat(" END", n)
	},
	"union":    func(n int) string { return "SELECT 1" + strings.Repeat(" UNION ALL SELECT 1", n) },
	"unclosed": func(n int) string { return "SELECT " + strings.Repeat("(", n) + "1" },
}

// TestDeepStatementsFailCleanly parses statements far deeper than the
// limit: each must be refused with "statement too complex" (before this
// check some killed the process with SIGSEGV inside the C parser).
func TestDeepStatementsFailCleanly(t *testing.T) {
	for name, build := range deepShapes {
		for _, n := range []int{MaxExprDepth + 10, 10_000, 30_000} {
			_, err := Parse(build(n))
			var e *Error
			if !errors.As(err, &e) || !strings.Contains(e.Msg, "statement too complex") {
				t.Errorf("%s with %d levels: got %v, want a statement too complex error", name, n, err)
			}
		}
	}
}

// TestDepthLimitAdmitsNormalStatements checks the estimate is not a
// false alarm: statements a little under the limit, flat lists of any
// length and every TPC-H query parse.
func TestDepthLimitAdmitsNormalStatements(t *testing.T) {
	for name, build := range deepShapes {
		if name == "unclosed" {
			continue
		}
		n := MaxExprDepth - 10
		if name == "rplus" {
			// Each level is an operator and a parenthesis, and the
			// estimate counts both.
			n = MaxExprDepth/2 - 10
		}
		if _, err := Parse(build(n)); err != nil {
			t.Errorf("%s with %d levels: %v", name, n, err)
		}
	}
	flat := []string{
		"SELECT 1 WHERE true" + strings.Repeat(" AND 1 = 1", 20_000),
		"SELECT 1 WHERE false" + strings.Repeat(" OR 1 + 1 = 2", 20_000),
		"SELECT 1 WHERE 1 IN (" + strings.Repeat("1, ", 50_000) + "2)",
		"SELECT " + strings.Repeat("1 + 1, ", 20_000) + "1",
		"SELECT CASE" + strings.Repeat(" WHEN 1 = 2 THEN 1 + 1", 5_000) + " END",
	}
	for _, q := range flat {
		if _, err := Parse(q); err != nil {
			t.Errorf("%.60s...: %v", q, err)
		}
	}
	files, _ := filepath.Glob("../testdata/tpch/*.sql")
	if len(files) == 0 {
		t.Fatal("no TPC-H queries found")
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Parse(string(b)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// TestStatementSizeAndNUL checks the statement size limit and that a NUL
// byte, which the C parser would treat as the end of the text, is refused
// with its position instead of silently cutting the statement.
func TestStatementSizeAndNUL(t *testing.T) {
	big := "SELECT '" + strings.Repeat("x", MaxStatementBytes) + "'"
	_, err := Parse(big)
	var e *Error
	if !errors.As(err, &e) || !strings.Contains(e.Msg, "statement too large") {
		t.Errorf("a statement over 1 MiB: got %v", err)
	}
	_, err = Parse("SELECT count(*)\nFROM t\x00 WHERE a = 1")
	if !errors.As(err, &e) || e.Msg != "NUL byte at line 2 column 7" {
		t.Errorf("a NUL byte: got %v", err)
	}
}
