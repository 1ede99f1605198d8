package repl

import (
	"context"
	"regexp"
	"sort"
	"strings"
	"time"
	"unicode"
)

// keywords offered by tab completion.
var keywords = strings.Fields(`SELECT FROM WHERE GROUP BY HAVING ORDER LIMIT OFFSET JOIN LEFT RIGHT FULL OUTER INNER CROSS ON USING
AS AND OR NOT IN EXISTS BETWEEN LIKE IS NULL CASE WHEN THEN ELSE END CAST DISTINCT UNION ALL WITH ASC DESC NULLS FIRST LAST
COUNT SUM AVG MIN MAX COALESCE EXTRACT SUBSTRING INTERVAL DATE YEAR MONTH DAY TRUE FALSE
CREATE EXTERNAL TABLE VIEW REPLACE STORED PARQUET CSV HEADER ROW DELIMITER LOCATION DROP IF SHOW TABLES DESCRIBE EXPLAIN SET
RESET FUNCTIONS ILIKE GENERATE_SERIES`)

// completer offers keywords, table and column names, dot commands and
// setting names for the word before the cursor, case-insensitively.
type completer struct{ r *Runner }

func (c *completer) candidates(line string, word string) []string {
	if strings.HasPrefix(strings.TrimSpace(line), ".") && !strings.Contains(strings.TrimSpace(line), " ") {
		return DotCommandNames()
	}
	var out []string
	upper := word != "" && strings.ToUpper(word) == word && strings.ToLower(word) != word
	for _, k := range keywords {
		if upper {
			out = append(out, k)
		} else {
			out = append(out, strings.ToLower(k))
		}
	}
	s := c.r.Session
	out = append(out, s.Settings.Keys()...)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	names, _ := s.TableNames(ctx)
	for _, name := range names {
		out = append(out, name)
		cols, _ := s.ColumnNames(ctx, name)
		out = append(out, cols...)
	}
	return out
}

// Do implements readline.AutoCompleter. A word with a qualifier (emp.sa,
// e.sa where the statement says FROM emp e) completes to that table's
// columns; a single match gets a space after it, as in psql and duckdb.
func (c *completer) Do(line []rune, pos int) ([][]rune, int) {
	start := pos
	for start > 0 && isWordRune(line[start-1]) {
		start--
	}
	word := string(line[start:pos])
	if word == "" {
		return nil, 0
	}
	var cands []string
	if q, col, ok := strings.Cut(word, "."); ok && !strings.HasPrefix(word, ".") {
		cands = c.qualifiedColumns(c.r.pending+"\n"+string(line), q)
		word = col
	} else {
		cands = c.candidates(string(line[:pos]), word)
	}
	seen := map[string]bool{}
	var matches []string
	for _, cand := range cands {
		if len(cand) >= len(word) && strings.EqualFold(cand[:len(word)], word) && !seen[cand] {
			seen[cand] = true
			matches = append(matches, cand)
		}
	}
	sort.Strings(matches)
	out := make([][]rune, len(matches))
	for i, m := range matches {
		out[i] = []rune(m[len(word):])
		if len(matches) == 1 {
			out[i] = append(out[i], ' ')
		}
	}
	return out, len([]rune(word))
}

// tableRef finds "FROM t", "JOIN t", ", t", each with an optional alias.
var tableRef = regexp.MustCompile(`(?i)(?:\bfrom|\bjoin|,)\s+([a-z_][\w]*)(?:\s+(?:as\s+)?([a-z_][\w]*))?`)

// qualifiedColumns returns the columns of the table q names in text: a
// table's own name, or an alias the statement gives one.
func (c *completer) qualifiedColumns(text, q string) []string {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	names, _ := c.r.Session.TableNames(ctx)
	table := ""
	for _, n := range names {
		if strings.EqualFold(n, q) {
			table = n
		}
	}
	for _, m := range tableRef.FindAllStringSubmatch(text, -1) {
		if m[2] != "" && strings.EqualFold(m[2], q) {
			for _, n := range names {
				if strings.EqualFold(n, m[1]) {
					table = n
				}
			}
		}
	}
	if table == "" {
		return nil
	}
	cols, _ := c.r.Session.ColumnNames(ctx, table)
	return cols
}

func isWordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' || r == '.'
}
