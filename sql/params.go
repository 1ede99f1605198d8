package sql

import (
	"fmt"
	"strconv"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"
)

// placeholder is one parameter marker of a statement: $n, or ? (numbered
// in order of appearance).
type placeholder struct {
	start, end int // byte span of the marker in the text
	n          int // 1-based parameter number
}

// comparisonPrefixes are operators PostgreSQL's lexer glues to a following
// '?' (a=? lexes as the one operator "=?"): the '?' is still a marker.
var comparisonPrefixes = []string{"=", "<>", "!=", "<", ">", "<=", ">=", "+", "-", "*", "/", "%", "||"}

// placeholders finds the parameter markers of text with PostgreSQL's
// scanner, so markers inside strings, quoted names and comments are not
// taken for markers. A statement may use $n or ?, not both.
func placeholders(text string) ([]placeholder, error) {
	res, err := pg.Scan(text)
	if err != nil {
		return nil, pgError(err, text, position{line: 1, col: 1})
	}
	var out []placeholder
	dollar, question := false, false
	for _, t := range res.Tokens {
		s, e := int(t.Start), int(t.End)
		switch t.Token {
		case pg.Token_PARAM:
			n, err := strconv.Atoi(text[s+1 : e])
			if err != nil || n < 1 {
				return nil, fmt.Errorf("bad parameter marker %s", text[s:e])
			}
			out = append(out, placeholder{s, e, n})
			dollar = true
		case pg.Token_Op:
			op := text[s:e]
			if !strings.HasSuffix(op, "?") {
				continue
			}
			prefix := strings.TrimSuffix(op, "?")
			if prefix != "" && !contains(comparisonPrefixes, prefix) {
				continue // an operator of its own, such as ?| (not sluice's)
			}
			question = true
			out = append(out, placeholder{e - 1, e, 0})
		}
	}
	if dollar && question {
		return nil, fmt.Errorf("a statement may use $1, $2, ... or ? as parameter markers, not both")
	}
	if question {
		for i := range out {
			out[i].n = i + 1
		}
	}
	return out, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// CountParams is the number of parameters a statement takes: the highest
// $n, or the number of ? markers.
func CountParams(text string) (int, error) {
	ps, err := placeholders(text)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, p := range ps {
		n = max(n, p.n)
	}
	return n, nil
}

// SubstituteParams replaces the parameter markers of text with literals
// (SQL text of constants, literals[0] for $1 or the first ?), as a
// prepared statement's bound values. The literals must be well-formed SQL
// constants; each is put in parentheses so that it stays one operand
// whatever surrounds it (x - $1 with -5 is x - (-5), not a comment).
func SubstituteParams(text string, literals []string) (string, error) {
	ps, err := placeholders(text)
	if err != nil {
		return "", err
	}
	n := 0
	for _, p := range ps {
		n = max(n, p.n)
	}
	if n != len(literals) {
		return "", fmt.Errorf("the statement has %d parameters, %d values were bound", n, len(literals))
	}
	var b strings.Builder
	last := 0
	for _, p := range ps {
		b.WriteString(text[last:p.start])
		b.WriteString("(" + literals[p.n-1] + ")")
		last = p.end
	}
	b.WriteString(text[last:])
	return b.String(), nil
}
