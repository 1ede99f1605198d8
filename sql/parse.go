package sql

import (
	"errors"
	"regexp"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"
	pgparser "github.com/pganalyze/pg_query_go/v6/parser"
)

// Statement is one parsed statement with its source text.
type Statement struct {
	SQL  string // the statement text, without the trailing semicolon
	Line int    // 1-based line where it starts in the input

	pos    position
	text   string          // what was parsed: SQL with quoted paths in FROM rewritten (rewritePaths)
	ins    []insertion     // what the rewrite inserted
	duck   *dialect        // DuckDB syntax rewritten after the paths (dialect.go); nil when none
	tree   *pg.Node        // PostgreSQL parse tree; nil for front-end statements
	custom customStatement // CREATE EXTERNAL TABLE / DESCRIBE; nil for pg statements
	// explain marks EXPLAIN [ANALYZE] of a statement PostgreSQL's grammar
	// cannot explain (COPY, CREATE TABLE ... STORED AS): the words are
	// blanked from text, which holds the statement explained.
	explain int
}

// Values of Statement.explain.
const (
	explainNone = iota
	explainPlain
	explainAnalyze
)

// explainedWrite reports whether body is EXPLAIN [ANALYZE] followed by
// COPY or a CREATE TABLE ... STORED AS, and how many bytes the EXPLAIN
// words take.
func explainedWrite(body string) (n, kind int) {
	rest := body
	word := func() string {
		rest = strings.TrimLeftFunc(rest, isSpace)
		end := strings.IndexFunc(rest, func(r rune) bool { return isSpace(r) || r == '(' })
		if end < 0 {
			end = len(rest)
		}
		w := strings.ToLower(rest[:end])
		return w
	}
	if word() != "explain" {
		return 0, explainNone
	}
	rest = rest[len("explain"):]
	kind = explainPlain
	if word() == "analyze" {
		rest = strings.TrimLeftFunc(rest, isSpace)[len("analyze"):]
		kind = explainAnalyze
	}
	inner := strings.TrimLeftFunc(rest, isSpace)
	if w := word(); w != "copy" && !(w == "create" && isCustom(inner)) {
		return 0, explainNone
	}
	return len(body) - len(inner), kind
}

// Parse splits a multi-statement text and parses each statement. Syntax
// errors are returned as *Error with line and column in text.
func Parse(text string) ([]Statement, error) {
	if err := checkSize(text); err != nil {
		return nil, err
	}
	pieces, err := splitStatements(text)
	if err != nil {
		return nil, err
	}
	var out []Statement
	for _, pc := range pieces {
		if err := checkDepth(text, pc.tokens, position{line: 1, col: 1}); err != nil {
			return nil, err
		}
		off, piece := pc.off, pc.text
		lead := skipSpaceAndComments(piece)
		body := strings.TrimRightFunc(piece[lead:], isSpace)
		body = strings.TrimSuffix(body, ";")
		body = strings.TrimRightFunc(body, isSpace)
		if body == "" {
			continue
		}
		start := off + lead
		p := position{line: 1, col: 1}
		p.line, p.col = p.at(text, start)
		st := Statement{SQL: body, Line: p.line, pos: p, text: body}
		if n, kind := explainedWrite(body); kind != explainNone {
			// Blanked, not cut: every position in the statement stays
			// where it is in the user's text.
			body = strings.Repeat(" ", n) + body[n:]
			st.text, st.explain = body, kind
		}
		if isCustom(body) {
			c, err := parseCustom(body, p)
			if err != nil {
				return nil, err
			}
			st.custom = c
		} else {
			res, err := st.rewriteAndParse(pc.tokens, start)
			if err != nil {
				return nil, err
			}
			if len(res.Stmts) != 1 {
				return nil, &Error{Kind: "syntax", Msg: "expected exactly one statement", Line: p.line, Column: p.col}
			}
			st.tree = res.Stmts[0].Stmt
		}
		out = append(out, st)
	}
	return out, nil
}

// rewriteAndParse rewrites st.text (quoted paths in FROM, then DuckDB
// syntax) and parses it with PostgreSQL's grammar. scanned are the text's
// tokens, with offsets from base. Errors point at the user's text.
func (st *Statement) rewriteAndParse(scanned []*pg.ScanToken, base int) (*pg.ParseResult, error) {
	body := st.text
	st.text, st.ins = rewritePaths(body, base, scanned)
	var toks []tok
	if st.ins == nil && st.explain == explainNone {
		// The text is the user's: its tokens are at hand.
		toks = toToks(st.text, scanned, base)
	}
	var derr error
	st.text, st.duck, derr = rewriteDialect(st.text, toks)
	res, err := pg.Parse(st.text)
	if derr != nil {
		// The text still holds the construct that failed, which
		// PostgreSQL cannot read either: the rewrite's error says what
		// is wrong.
		err = derr
	}
	if err != nil {
		if st.ins != nil || st.duck != nil {
			// Positions are re-read from the user's text.
			return nil, pgErrorMapped(err, *st, st.pos)
		}
		return nil, pgError(err, body, st.pos)
	}
	return res, nil
}

// parseQuery parses the query of a front-end statement (DESCRIBE query,
// CREATE TABLE ... AS query), which starts at p, rewritten as any
// statement is. sel is nil when the text is not one query.
func parseQuery(text string, p position) (sel *pg.SelectStmt, st Statement, err error) {
	scanned, err := pg.Scan(text)
	if err != nil {
		return nil, st, pgError(err, text, p)
	}
	st = Statement{SQL: text, Line: p.line, pos: p, text: text}
	res, err := st.rewriteAndParse(scanned.Tokens, 0)
	if err != nil {
		return nil, st, err
	}
	if len(res.Stmts) != 1 {
		return nil, st, nil
	}
	st.tree = res.Stmts[0].Stmt
	return st.tree.GetSelectStmt(), st, nil
}

func isSpace(r rune) bool {
	return r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\f' || r == '\v'
}

// piece is one statement's raw text and its byte offset in the input.
type piece struct {
	off    int
	text   string
	tokens []*pg.ScanToken // offsets relative to the whole input
}

// splitStatements cuts text at top-level semicolons using PostgreSQL's own
// scanner, so quotes, comments and dollar quoting are handled exactly.
// (pg_query's SplitWithScanner drops statements that start with a word
// PostgreSQL does not know, such as DESCRIBE, so it cannot be used.)
func splitStatements(text string) ([]piece, error) {
	res, err := pg.Scan(text)
	if err != nil {
		return nil, pgError(err, text, position{line: 1, col: 1})
	}
	var out []piece
	start, first := 0, 0
	for i, t := range res.Tokens {
		if t.Token == pg.Token_ASCII_59 {
			out = append(out, piece{off: start, text: text[start:t.Start], tokens: res.Tokens[first:i]})
			start, first = int(t.End), i+1
		}
	}
	if start < len(text) {
		out = append(out, piece{off: start, text: text[start:], tokens: res.Tokens[first:]})
	}
	return out, nil
}

// skipSpaceAndComments returns the offset of the first byte of s that is
// neither white space nor inside a -- or /* */ comment.
func skipSpaceAndComments(s string) int {
	i := 0
	for i < len(s) {
		switch {
		case isSpace(rune(s[i])):
			i++
		case strings.HasPrefix(s[i:], "--"):
			nl := strings.IndexByte(s[i:], '\n')
			if nl < 0 {
				return len(s)
			}
			i += nl + 1
		case strings.HasPrefix(s[i:], "/*"):
			end := strings.Index(s[i+2:], "*/")
			if end < 0 {
				return len(s)
			}
			i += 2 + end + 2
		default:
			return i
		}
	}
	return i
}

var nearRe = regexp.MustCompile(`at or near "(.*)"$`)

// pgError converts a pg_query error (cursor position: 1-based character
// index into text) to an *Error positioned in the original input.
func pgError(err error, text string, p position) error {
	var pe *pgparser.Error
	if !errors.As(err, &pe) {
		if strings.Contains(err.Error(), "exceeded maximum recursion depth") {
			// Go's protobuf decoder refused pg_query's parse tree.
			return &Error{Kind: "syntax", Msg: "statement too complex: its parse tree nests too deeply",
				Hint: "split long operator chains or deeply nested expressions", Line: p.line, Column: p.col}
		}
		return &Error{Kind: "syntax", Msg: err.Error()}
	}
	e := &Error{Kind: "syntax", Msg: pe.Message}
	if strings.HasPrefix(pe.Message, "memory exhausted") {
		// Bison's parse stack (YYMAXDEPTH) overflowed: the statement
		// nests too deeply, it is not malformed.
		e.Msg = "statement too complex: it nests too deeply for the parser"
		e.Hint = "reduce the nesting of parentheses, function calls, CASE expressions or subqueries"
	}
	if pe.Cursorpos > 0 {
		off := runeOffset(text, pe.Cursorpos-1)
		e.Line, e.Column = p.at(text, off)
		e.Near = tokenAt(text, off)
	}
	if m := nearRe.FindStringSubmatch(pe.Message); m != nil {
		e.Near = m[1]
	} else if strings.HasSuffix(pe.Message, "at end of input") {
		e.Near = ""
		e.Line, e.Column = p.at(text, len(text))
	}
	return e
}

// runeOffset converts a character index to a byte offset.
func runeOffset(s string, n int) int {
	i := 0
	for off := range s {
		if i == n {
			return off
		}
		i++
	}
	return len(s)
}

// pgErrorMapped is pgError for a statement whose text was rewritten:
// the cursor is mapped back to the user's text.
func pgErrorMapped(err error, st Statement, p position) error {
	var de *dialectError
	if errors.As(err, &de) {
		off := st.originalOffset(de.at)
		e := &Error{Kind: "syntax", Msg: de.msg, Near: tokenAt(st.SQL, off)}
		e.Line, e.Column = p.at(st.SQL, off)
		if m := nearRe.FindStringSubmatch(de.msg); m != nil {
			e.Near = m[1]
		}
		return e
	}
	var pe *pgparser.Error
	if !errors.As(err, &pe) || pe.Cursorpos <= 0 {
		return pgError(err, st.SQL, p)
	}
	off := st.originalOffset(runeToByte(st.text, int(pe.Cursorpos)-1))
	c := *pe
	c.Cursorpos = int(byteToRune(st.SQL, off)) + 1
	return pgError(&c, st.SQL, p)
}

// originalOffset maps a byte offset of the parsed text back to the user's
// statement text, through the DuckDB rewrite and then the path rewrite.
func (st Statement) originalOffset(off int) int {
	return mapBack(off, st.duck, st.ins)
}

// mapBack maps an offset of a rewritten statement to the user's text.
func mapBack(off int, d *dialect, ins []insertion) int {
	if d != nil {
		off = d.original(off)
	}
	if ins != nil {
		off = originalOffset(off, ins)
	}
	return off
}

// runeToByte converts a character index of s to a byte offset.
func runeToByte(s string, n int) int { return runeOffset(s, n) }

// byteToRune converts a byte offset of s to a character index.
func byteToRune(s string, off int) int {
	if off > len(s) {
		off = len(s)
	}
	return len([]rune(s[:off]))
}
