package sql

import (
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"
)

// pathFunc is the table function a quoted path in FROM is rewritten to:
// PostgreSQL's grammar has no FROM 'file.parquet', so the front-end turns
// the string into a call before parsing. Users never see the name: errors
// point at the path as written.
const pathFunc = "__sluice_path"

// insertion is text the rewrite added: n bytes starting at byte at of the
// rewritten statement.
type insertion struct{ at, n int }

// rewritePaths turns every quoted string that stands as a FROM item
// (after FROM, after JOIN, or after a comma in a FROM list) into a call of
// pathFunc, as DuckDB and DataFusion read SELECT * FROM 'trips.parquet'.
// A FROM counts only where a SELECT (or DELETE) opened the clause at the
// same parenthesis depth, so substring(s FROM 'x'), EXTRACT(... FROM '...')
// and COPY ... FROM 'file' are left alone. toks are the statement's scanner
// tokens, with offsets from base. It returns the text unchanged and no
// insertions when there is nothing to rewrite.
func rewritePaths(text string, base int, toks []*pg.ScanToken) (string, []insertion) {
	type level struct {
		query  bool // a SELECT or DELETE was seen at this depth
		inFrom bool // inside that query's FROM list
	}
	levels := []level{{}}
	var spans [][2]int // [start, end) of each path literal in text
	prev, prev2 := pg.Token(0), pg.Token(0)
	for _, t := range toks {
		top := &levels[len(levels)-1]
		switch t.Token {
		case pg.Token_ASCII_40:
			levels = append(levels, level{})
		case pg.Token_ASCII_41:
			if len(levels) > 1 {
				levels = levels[:len(levels)-1]
			}
		case pg.Token_SELECT, pg.Token_DELETE_P:
			top.query, top.inFrom = true, false
		case pg.Token_FROM:
			// The FROM of x IS [NOT] DISTINCT FROM y is an operator's,
			// not a clause's: it neither opens a FROM list nor makes the
			// string after it a FROM item.
			if prev == pg.Token_DISTINCT && (prev2 == pg.Token_IS || prev2 == pg.Token_NOT) {
				prev2, prev = prev, pg.Token_OPERATOR
				continue
			}
			// A FROM that opens its level starts a FROM-first query
			// (dialect.go), whose FROM list takes paths too; that of
			// trim(FROM s) does not.
			top.inFrom = top.query || prev == 0 || prev == pg.Token_ASCII_40 && prev2 != pg.Token_TRIM
		case pg.Token_WHERE, pg.Token_GROUP_P, pg.Token_HAVING, pg.Token_WINDOW, pg.Token_ORDER, pg.Token_LIMIT,
			pg.Token_OFFSET, pg.Token_UNION, pg.Token_INTERSECT, pg.Token_EXCEPT, pg.Token_FETCH, pg.Token_FOR, pg.Token_RETURNING:
			top.inFrom = false
		case pg.Token_SCONST:
			if top.inFrom && (prev == pg.Token_FROM || prev == pg.Token_JOIN || prev == pg.Token_ASCII_44) {
				start, end := int(t.Start)-base, int(t.End)-base
				if start >= 0 && end <= len(text) && strings.HasPrefix(text[start:], "'") {
					spans = append(spans, [2]int{start, end})
				}
			}
		}
		prev2, prev = prev, t.Token
	}
	if len(spans) == 0 {
		return text, nil
	}
	var b strings.Builder
	var ins []insertion
	last := 0
	for _, s := range spans {
		b.WriteString(text[last:s[0]])
		ins = append(ins, insertion{at: b.Len(), n: len(pathFunc) + 1})
		b.WriteString(pathFunc + "(")
		b.WriteString(text[s[0]:s[1]])
		ins = append(ins, insertion{at: b.Len(), n: 1})
		b.WriteString(")")
		last = s[1]
	}
	b.WriteString(text[last:])
	return b.String(), ins
}

// originalOffset maps a byte offset of the rewritten text back to the
// user's text: inserted bytes map to where they were inserted.
func originalOffset(off int, ins []insertion) int {
	shift := 0
	for _, in := range ins {
		switch {
		case off >= in.at+in.n:
			shift += in.n
		case off >= in.at:
			return in.at - shift
		}
	}
	return off - shift
}
