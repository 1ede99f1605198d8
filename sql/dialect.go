package sql

import (
	"errors"
	"slices"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"
	pgparser "github.com/pganalyze/pg_query_go/v6/parser"
)

// DuckDB's friendlier SQL on PostgreSQL's grammar. pg_query_go parses
// PostgreSQL 17, which knows none of QUALIFY, * EXCLUDE / REPLACE, GROUP BY
// ALL, ORDER BY ALL, try_cast, FROM-first queries, [a, b] list literals or
// INTERVAL 3 DAYS. rewriteDialect recognises them on the scanner's tokens (so never inside
// string literals, quoted identifiers or comments) and rewrites the text
// into something PostgreSQL parses, in three passes:
//
//  1. FROM-first: FROM t [SELECT list] ... becomes SELECT list FROM t ...
//     (SELECT * when there is no SELECT), one query at a time, moving text.
//  2. List literals: [a, b] in expression position becomes (ARRAY[a, b]);
//     then unquoted interval literals, INTERVAL 3 DAYS, are quoted:
//     INTERVAL '3 DAYS'.
//  3. Same-length edits: try_cast becomes CAST, the ALL of GROUP BY ALL and
//     ORDER BY ALL becomes () and 1, and QUALIFY cond and the EXCLUDE /
//     REPLACE lists after a star are blanked out. The blanked pieces are
//     parsed on their own and kept in the dialect, keyed by offset, for the
//     binder to apply.
//
// Every pass records a layer mapping its output back to its input, so
// positions in errors (from the parser or the binder) point at the user's
// text. The binder fails on any recorded construct it did not apply, so a
// construct in a place it is not supported is an error, never ignored.

// segment is a run of a rewritten text: n bytes starting at at, copied from
// orig in the pass's input, or inserted (then orig is where).
type segment struct {
	at, n, orig int
	inserted    bool
}

// layer maps the output of one rewrite pass back to its input.
type layer []segment

// back maps an offset of the pass's output to its input.
func (l layer) back(off int) int {
	for _, s := range l {
		if off < s.at+s.n {
			if s.inserted {
				return s.orig
			}
			return s.orig + off - s.at
		}
	}
	if len(l) == 0 {
		return off
	}
	s := l[len(l)-1]
	if s.inserted {
		return s.orig
	}
	return s.orig + off - s.at
}

// editor builds a pass's output from pieces of its input.
type editor struct {
	src  string
	out  strings.Builder
	segs layer
}

// copy appends src[start:end].
func (e *editor) copy(start, end int) {
	if end <= start {
		return
	}
	e.segs = append(e.segs, segment{at: e.out.Len(), n: end - start, orig: start})
	e.out.WriteString(e.src[start:end])
}

// insert appends text that stands for position anchor of src.
func (e *editor) insert(text string, anchor int) {
	e.segs = append(e.segs, segment{at: e.out.Len(), n: len(text), orig: anchor, inserted: true})
	e.out.WriteString(text)
}

// tok is one scanner token of a statement.
type tok struct {
	t          pg.Token
	kind       pg.KeywordKind
	start, end int
	word       string // lower-cased text of an unquoted identifier or keyword, else ""
}

// scanTokens scans text, dropping comments.
func scanTokens(text string) ([]tok, error) {
	res, err := pg.Scan(text)
	if err != nil {
		return nil, err
	}
	return toToks(text, res.Tokens, 0), nil
}

// toToks converts scanner tokens of text whose offsets start at base,
// dropping comments.
func toToks(text string, scanned []*pg.ScanToken, base int) []tok {
	out := make([]tok, 0, len(scanned))
	for _, t := range scanned {
		if t.Token == pg.Token_SQL_COMMENT || t.Token == pg.Token_C_COMMENT {
			continue
		}
		k := tok{t: t.Token, kind: t.KeywordKind, start: int(t.Start) - base, end: int(t.End) - base}
		if k.start < 0 || k.end > len(text) {
			continue
		}
		if (t.Token == pg.Token_IDENT || t.KeywordKind != pg.KeywordKind_NO_KEYWORD) && k.start < k.end && text[k.start] != '"' {
			k.word = strings.ToLower(text[k.start:k.end])
		}
		out = append(out, k)
	}
	return out
}

// dialect is what rewriteDialect did to one statement: how to map offsets
// back, and the DuckDB constructs it took out of the text, keyed by offsets
// in the rewritten text (where the parse tree's locations point).
type dialect struct {
	layers []layer // in the order the passes ran

	selects  []int                  // offset of every SELECT keyword, ascending
	qualify  map[int]*qualifyClause // by the offset of its query's SELECT
	stars    map[int]*starMods      // by the offset of the star target's first token
	groupAll map[int]int            // offset of the () that stands for ALL -> offset of ALL
	orderAll map[int]int            // offset of the 1 that stands for ALL -> offset of ALL
	tryCast  map[int]bool           // offset of the CAST that stands for try_cast
}

// qualifyClause is one QUALIFY condition.
type qualifyClause struct {
	at   int      // the QUALIFY keyword
	cond *pg.Node // the condition, locations in the rewritten text
}

// starMods are the EXCLUDE and REPLACE lists of one * or t.*.
type starMods struct {
	at      int        // the first modifier keyword
	exclude []*pg.Node // ColumnRefs
	replace []*pg.Node // ResTargets, each with a name
	excAt   int        // the EXCLUDE keyword, -1 when none
}

// original maps an offset of the rewritten text back to the pass-1 input.
func (d *dialect) original(off int) int {
	for i := len(d.layers) - 1; i >= 0; i-- {
		off = d.layers[i].back(off)
	}
	return off
}

// empty reports whether the dialect recorded nothing to apply.
func (d *dialect) empty() bool {
	return len(d.qualify) == 0 && len(d.stars) == 0 && len(d.groupAll) == 0 && len(d.orderAll) == 0 && len(d.tryCast) == 0
}

// selectOf returns the offset of the SELECT keyword that opens the select
// list whose first entry is at loc.
func (d *dialect) selectOf(loc int) int {
	i, _ := slices.BinarySearch(d.selects, loc)
	if i == 0 {
		return -1
	}
	return d.selects[i-1]
}

// unused finds the first recorded construct whose key is not in used
// (those the binder applied): its offset and its name.
func (d *dialect) unused(used map[int]bool) (at int, what string, ok bool) {
	at = -1
	consider := func(key, pos int, name string) {
		if !used[key] && (at < 0 || pos < at) {
			at, what = pos, name
		}
	}
	for k, q := range d.qualify {
		consider(k, q.at, "QUALIFY")
	}
	for k, s := range d.stars {
		consider(k, s.at, "EXCLUDE/REPLACE")
	}
	for k, p := range d.groupAll {
		consider(k, p, "GROUP BY ALL")
	}
	for k, p := range d.orderAll {
		consider(k, p, "ORDER BY ALL")
	}
	for k := range d.tryCast {
		consider(k, k, "try_cast")
	}
	return at, what, at >= 0
}

// dialectError is a syntax error of the rewrite itself, at an offset of
// the text the pass read.
type dialectError struct {
	at  int
	msg string
}

func (e *dialectError) Error() string { return e.msg }

// maxFromFirst bounds the FROM-first rewrites of one statement (each is a
// pass of its own).
const maxFromFirst = 64

// rewriteDialect rewrites text's DuckDB constructs into PostgreSQL; toks
// are its tokens when the caller has them (nil: scan text). It returns
// nil when there was nothing to rewrite. A parse error in a piece
// parsed apart (a QUALIFY condition, an EXCLUDE or REPLACE list) is a
// *dialectError positioned in the returned text; the returned dialect
// maps it back.
func rewriteDialect(text string, toks []tok) (string, *dialect, error) {
	var err error
	if toks == nil {
		if toks, err = scanTokens(text); err != nil {
			return text, nil, nil // PostgreSQL's parser reports it
		}
	}
	if !mayHaveDialect(toks) {
		return text, nil, nil
	}
	d := &dialect{}
	for range maxFromFirst {
		out, l, ok := fromFirst(text, toks)
		if !ok {
			break
		}
		d.layers = append(d.layers, l)
		text = out
		if toks, err = scanTokens(text); err != nil {
			return text, d, nil
		}
	}
	if out, l, ok := listLiterals(text, toks); ok {
		d.layers = append(d.layers, l)
		text = out
		if toks, err = scanTokens(text); err != nil {
			return text, d, nil
		}
	}
	if out, l, ok := intervalLiterals(text, toks); ok {
		d.layers = append(d.layers, l)
		text = out
		if toks, err = scanTokens(text); err != nil {
			return text, d, nil
		}
	}
	text, err = d.clauses(text, toks)
	if len(d.layers) == 0 && d.empty() && err == nil {
		return text, nil, nil
	}
	return text, d, err
}

// mayHaveDialect is a quick look for anything rewriteDialect rewrites, so
// statements without any (no FROM, [ or DuckDB word) are left at once.
func mayHaveDialect(toks []tok) bool {
	for i, t := range toks {
		switch {
		case t.t == pg.Token_ASCII_91, t.t == pg.Token_FROM:
			return true
		case t.word == "qualify", t.word == "exclude", t.word == "replace", t.word == "try_cast":
			return true
		case t.t == pg.Token_INTERVAL && i+1 < len(toks) && (toks[i+1].t == pg.Token_ICONST || toks[i+1].t == pg.Token_FCONST):
			return true
		case t.t == pg.Token_ALL && i > 0 && toks[i-1].t == pg.Token_BY:
			return true
		}
	}
	return false
}

// isClauseEnd reports whether t ends an expression list at its level: a
// clause keyword, a set operation or the end of the statement.
func isClauseEnd(t tok) bool {
	switch t.t {
	case pg.Token_WHERE, pg.Token_GROUP_P, pg.Token_HAVING, pg.Token_WINDOW, pg.Token_ORDER, pg.Token_LIMIT,
		pg.Token_OFFSET, pg.Token_FETCH, pg.Token_UNION, pg.Token_INTERSECT, pg.Token_EXCEPT, pg.Token_ASCII_59,
		pg.Token_FOR, pg.Token_RETURNING:
		return true
	}
	return t.word == "qualify"
}

// sameLevel returns the index of the first token from i on, at the
// parenthesis depth of toks[i], for which stop is true, or the index of
// the ) closing that level, or len(toks).
func sameLevel(toks []tok, i int, stop func(tok) bool) int {
	depth := 0
	for ; i < len(toks); i++ {
		switch toks[i].t {
		case pg.Token_ASCII_40, pg.Token_ASCII_91:
			depth++
			continue
		case pg.Token_ASCII_41, pg.Token_ASCII_93:
			if depth == 0 {
				return i
			}
			depth--
			continue
		}
		if depth == 0 && stop(toks[i]) {
			return i
		}
	}
	return i
}

// fromFirst rewrites the first query written FROM-first: FROM t SELECT a
// WHERE ... becomes SELECT a FROM t WHERE ..., and FROM t WHERE ...
// becomes SELECT * FROM t WHERE .... A FROM opens a query when it is the
// first word of its level, follows a set operation, the WITH list, EXPLAIN,
// or the AS of a CREATE ... AS.
func fromFirst(text string, toks []tok) (string, layer, bool) {
	type level struct{ query, with bool }
	levels := []level{{}}
	at := -1
	for i, t := range toks {
		top := &levels[len(levels)-1]
		var prev tok
		if i > 0 {
			prev = toks[i-1]
		}
		switch t.t {
		case pg.Token_ASCII_40:
			levels = append(levels, level{})
			continue
		case pg.Token_ASCII_41:
			if len(levels) > 1 {
				levels = levels[:len(levels)-1]
			}
			continue
		case pg.Token_SELECT, pg.Token_DELETE_P, pg.Token_VALUES, pg.Token_INSERT, pg.Token_UPDATE, pg.Token_COPY, pg.Token_TABLE:
			top.query = true
		case pg.Token_UNION, pg.Token_INTERSECT, pg.Token_EXCEPT:
			top.query = false
		case pg.Token_WITH:
			top.with = true
		case pg.Token_FROM:
			// trim(FROM s) is PostgreSQL's, not a query.
			opens := i == 0 || prev.t == pg.Token_ASCII_40 && !(i > 1 && toks[i-2].t == pg.Token_TRIM) ||
				prev.t == pg.Token_UNION || prev.t == pg.Token_INTERSECT || prev.t == pg.Token_EXCEPT ||
				prev.t == pg.Token_EXPLAIN || prev.t == pg.Token_ANALYZE || prev.t == pg.Token_ANALYSE ||
				(prev.t == pg.Token_ALL || prev.t == pg.Token_DISTINCT) && i > 1 &&
					(toks[i-2].t == pg.Token_UNION || toks[i-2].t == pg.Token_INTERSECT || toks[i-2].t == pg.Token_EXCEPT) ||
				top.with && prev.t == pg.Token_ASCII_41 ||
				prev.t == pg.Token_AS && len(levels) == 1 && toks[0].t == pg.Token_CREATE
			if !top.query && opens {
				at = i
			}
		}
		if at >= 0 {
			break
		}
	}
	if at < 0 {
		return text, nil, false
	}
	from := toks[at].start
	e := &editor{src: text}
	e.copy(0, from)
	sel := sameLevel(toks, at+1, func(t tok) bool { return t.t == pg.Token_SELECT || isClauseEnd(t) })
	if sel < len(toks) && toks[sel].t == pg.Token_SELECT {
		end := sameLevel(toks, sel+1, isClauseEnd)
		listEnd := toks[end-1].end
		e.copy(toks[sel].start, listEnd)
		e.insert(" ", from)
		e.copy(from, toks[sel].start)
		e.copy(listEnd, len(text))
	} else {
		e.insert("SELECT * ", from)
		e.copy(from, len(text))
	}
	return e.out.String(), e.segs, true
}

// listLiterals turns every [ ... ] that is a list rather than a subscript
// or an array type's brackets into (ARRAY[ ... ]): a [ after an operator,
// an opening parenthesis, a comma, another [ or a reserved word such as
// SELECT or WHEN. The parentheses let a subscript follow, as DuckDB's
// [1, 2][1] does (PostgreSQL takes none directly after ARRAY[...]).
func listLiterals(text string, toks []tok) (string, layer, bool) {
	type ins struct {
		at   int
		text string
	}
	var adds []ins
	for i, t := range toks {
		if t.t != pg.Token_ASCII_91 || i > 0 && !opensList(toks[i-1]) {
			continue
		}
		closeAt := sameLevel(toks, i+1, func(tok) bool { return false })
		if closeAt >= len(toks) || toks[closeAt].t != pg.Token_ASCII_93 {
			continue // unbalanced: PostgreSQL reports it
		}
		adds = append(adds, ins{t.start, "(ARRAY"}, ins{toks[closeAt].end, ")"})
	}
	if len(adds) == 0 {
		return text, nil, false
	}
	slices.SortStableFunc(adds, func(a, b ins) int {
		if a.at != b.at {
			return a.at - b.at
		}
		if a.text == ")" && b.text != ")" {
			return -1
		}
		if b.text == ")" && a.text != ")" {
			return 1
		}
		return 0
	})
	e := &editor{src: text}
	last := 0
	for _, a := range adds {
		e.copy(last, a.at)
		e.insert(a.text, a.at)
		last = a.at
	}
	e.copy(last, len(text))
	return e.out.String(), e.segs, true
}

// intervalUnitWords are the units DuckDB's INTERVAL 3 DAYS may name.
var intervalUnitWords = map[string]bool{
	"year": true, "years": true, "month": true, "months": true, "week": true, "weeks": true,
	"day": true, "days": true, "hour": true, "hours": true, "minute": true, "minutes": true,
	"second": true, "seconds": true, "millisecond": true, "milliseconds": true,
	"microsecond": true, "microseconds": true, "decade": true, "decades": true,
	"century": true, "centuries": true, "millennium": true, "millennia": true,
}

// intervalLiterals quotes DuckDB's unquoted interval literals, INTERVAL 3
// DAY(S), into PostgreSQL's INTERVAL '3 DAYS' (pass 2b): a quote before
// the number and one after the unit.
func intervalLiterals(text string, toks []tok) (string, layer, bool) {
	var quotes []int
	for i := 0; i+2 < len(toks); i++ {
		if toks[i].t != pg.Token_INTERVAL || toks[i+1].t != pg.Token_ICONST && toks[i+1].t != pg.Token_FCONST ||
			!intervalUnitWords[toks[i+2].word] {
			continue
		}
		quotes = append(quotes, toks[i+1].start, toks[i+2].end)
	}
	if len(quotes) == 0 {
		return text, nil, false
	}
	e := &editor{src: text}
	last := 0
	for _, at := range quotes {
		e.copy(last, at)
		e.insert("'", at)
		last = at
	}
	e.copy(last, len(text))
	return e.out.String(), e.segs, true
}

// opensList reports whether a [ after prev starts a list literal.
func opensList(prev tok) bool {
	switch prev.t {
	case pg.Token_ASCII_40, pg.Token_ASCII_44, pg.Token_ASCII_91, pg.Token_Op,
		pg.Token_ASCII_43, pg.Token_ASCII_45, pg.Token_ASCII_42, pg.Token_ASCII_47, pg.Token_ASCII_37, pg.Token_ASCII_94,
		pg.Token_ASCII_60, pg.Token_ASCII_61, pg.Token_ASCII_62, pg.Token_LESS_EQUALS, pg.Token_GREATER_EQUALS, pg.Token_NOT_EQUALS,
		pg.Token_EQUALS_GREATER, pg.Token_COLON_EQUALS,
		pg.Token_BETWEEN, pg.Token_LIKE, pg.Token_ILIKE, pg.Token_IS, pg.Token_IN_P:
		return true
	case pg.Token_ARRAY, pg.Token_END_P, pg.Token_NULL_P, pg.Token_TRUE_P, pg.Token_FALSE_P,
		pg.Token_CURRENT_DATE, pg.Token_CURRENT_TIME, pg.Token_CURRENT_TIMESTAMP, pg.Token_CURRENT_USER,
		pg.Token_CURRENT_ROLE, pg.Token_CURRENT_CATALOG, pg.Token_SESSION_USER, pg.Token_USER,
		pg.Token_LOCALTIME, pg.Token_LOCALTIMESTAMP:
		return false
	}
	return prev.kind == pg.KeywordKind_RESERVED_KEYWORD || prev.word == "qualify"
}

// edit is one same-length change of pass 3: the bytes [start, end) become
// repl (blanks when repl is ""); parse, when set, is called first with the
// text of [fs, fe) as it stands with the edits inside it applied.
type edit struct {
	start, end int
	repl       string
	fs, fe     int
	parse      func(frag string) error
}

// clauses is pass 3. It records what it takes out in d and returns the
// text PostgreSQL parses.
func (d *dialect) clauses(text string, toks []tok) (string, error) {
	type level struct {
		selectAt int    // offset of this level's SELECT, -1 before one
		clause   string // the clause the scan is in
	}
	d.qualify, d.stars = map[int]*qualifyClause{}, map[int]*starMods{}
	d.groupAll, d.orderAll, d.tryCast = map[int]int{}, map[int]int{}, map[int]bool{}
	var edits []edit
	levels := []level{{selectAt: -1}}
	at := func(i int) tok {
		if i < 0 || i >= len(toks) {
			return tok{t: pg.Token_ASCII_59, start: len(text), end: len(text)}
		}
		return toks[i]
	}
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		top := &levels[len(levels)-1]
		switch {
		case t.t == pg.Token_ASCII_40:
			levels = append(levels, level{selectAt: -1})
		case t.t == pg.Token_ASCII_41:
			if len(levels) > 1 {
				levels = levels[:len(levels)-1]
			}
		case t.t == pg.Token_SELECT:
			top.selectAt, top.clause = t.start, "select"
			d.selects = append(d.selects, t.start)
		case t.t == pg.Token_FROM:
			if !(at(i-1).t == pg.Token_DISTINCT && (at(i-2).t == pg.Token_IS || at(i-2).t == pg.Token_NOT)) && top.selectAt >= 0 {
				top.clause = "from"
			}
		case t.t == pg.Token_WHERE, t.t == pg.Token_GROUP_P, t.t == pg.Token_HAVING, t.t == pg.Token_WINDOW,
			t.t == pg.Token_ORDER, t.t == pg.Token_LIMIT, t.t == pg.Token_OFFSET, t.t == pg.Token_FETCH:
			top.clause = t.word
		case t.t == pg.Token_UNION, t.t == pg.Token_INTERSECT, t.t == pg.Token_EXCEPT:
			top.selectAt, top.clause = -1, ""

		case t.word == "qualify" && top.selectAt >= 0 && slices.Contains([]string{"from", "where", "group", "having", "window", "qualify"}, top.clause) &&
			!endsQualifyAlias(at(i+1)):
			end := sameLevel(toks, i+1, func(t tok) bool {
				switch t.t {
				case pg.Token_ORDER, pg.Token_LIMIT, pg.Token_OFFSET, pg.Token_FETCH, pg.Token_UNION, pg.Token_INTERSECT,
					pg.Token_EXCEPT, pg.Token_WINDOW, pg.Token_ASCII_59:
					return true
				}
				return t.word == "qualify"
			})
			if _, dup := d.qualify[top.selectAt]; dup {
				return text, &dialectError{at: t.start, msg: "a query can have only one QUALIFY clause"}
			}
			q := &qualifyClause{at: t.start}
			d.qualify[top.selectAt] = q
			fs, fe := toks[i+1].start, toks[end-1].end
			edits = append(edits, edit{start: t.start, end: fe, fs: fs, fe: fe, parse: func(frag string) error {
				stop := -1
				if end < len(toks) {
					stop = toks[end].start
				}
				targets, err := parseFragment(frag, fs, stop)
				if err != nil {
					return err
				}
				if len(targets) != 1 || targets[0].GetResTarget().GetName() != "" {
					return &dialectError{at: fs, msg: "QUALIFY takes one condition"}
				}
				q.cond = targets[0].GetResTarget().GetVal()
				return nil
			}})
			top.clause = "qualify"

		case t.t == pg.Token_ASCII_42 && top.clause == "select" && isStarTarget(at(i-1)) &&
			(at(i+1).word == "exclude" || at(i+1).word == "replace"):
			first := i
			for first >= 2 && toks[first-1].t == pg.Token_ASCII_46 && (toks[first-2].t == pg.Token_IDENT || toks[first-2].kind != pg.KeywordKind_NO_KEYWORD) {
				first -= 2
			}
			m := &starMods{at: toks[i+1].start, excAt: -1}
			d.stars[toks[first].start] = m
			j := i + 1
			for at(j).word == "exclude" || at(j).word == "replace" {
				kw := toks[j]
				var fs, fe, stop int
				if at(j+1).t == pg.Token_ASCII_40 {
					closeAt := sameLevel(toks, j+2, func(tok) bool { return false })
					if closeAt >= len(toks) || closeAt == j+2 {
						return text, &dialectError{at: kw.start, msg: strings.ToUpper(kw.word) + " needs a list of columns"}
					}
					fs, fe, stop = toks[j+2].start, toks[closeAt-1].end, closeAt
				} else if kw.word == "exclude" && (at(j+1).t == pg.Token_IDENT || at(j+1).kind == pg.KeywordKind_UNRESERVED_KEYWORD) {
					fs, fe, stop = toks[j+1].start, toks[j+1].end, j+1
				} else {
					return text, &dialectError{at: kw.start, msg: strings.ToUpper(kw.word) + " needs a parenthesized list"}
				}
				exclude := kw.word == "exclude"
				if exclude && m.excAt >= 0 || !exclude && m.replace != nil {
					return text, &dialectError{at: kw.start, msg: "duplicate " + strings.ToUpper(kw.word) + " list"}
				}
				if exclude {
					m.excAt = kw.start
				}
				edits = append(edits, edit{start: kw.start, end: toks[stop].end, fs: fs, fe: fe, parse: func(frag string) error {
					targets, err := parseFragment(frag, fs, toks[stop].start)
					if err != nil {
						return err
					}
					for _, n := range targets {
						rt := n.GetResTarget()
						if exclude {
							if rt.GetName() != "" || rt.GetVal().GetColumnRef() == nil || rt.GetVal().GetColumnRef().Fields[len(rt.GetVal().GetColumnRef().Fields)-1].GetAStar() != nil {
								return &dialectError{at: int(rt.GetLocation()), msg: "EXCLUDE takes column names"}
							}
							m.exclude = append(m.exclude, rt.Val)
							continue
						}
						if rt.GetName() == "" {
							return &dialectError{at: int(rt.GetLocation()), msg: "REPLACE needs expression AS column"}
						}
						m.replace = append(m.replace, n)
					}
					return nil
				}})
				j = stop + 1
			}
			i = j - 1

		case t.t == pg.Token_ALL && at(i-1).t == pg.Token_BY && at(i-2).t == pg.Token_GROUP_P && endsGroupAll(at(i+1)):
			edits = append(edits, edit{start: t.start, end: t.end, repl: "()"})
			d.groupAll[t.start] = t.start
		case t.t == pg.Token_ALL && at(i-1).t == pg.Token_BY && at(i-2).t == pg.Token_ORDER && endsOrderAll(at(i+1)):
			edits = append(edits, edit{start: t.start, end: t.end, repl: "1"})
			d.orderAll[t.start] = t.start
		case t.word == "try_cast" && at(i+1).t == pg.Token_ASCII_40:
			edits = append(edits, edit{start: t.start, end: t.end, repl: "CAST"})
			d.tryCast[t.start] = true
		}
	}
	if len(edits) == 0 {
		return text, nil
	}
	// Inner edits first, so a piece parsed apart sees the edits inside it.
	slices.SortStableFunc(edits, func(a, b edit) int { return (a.end - a.start) - (b.end - b.start) })
	buf := []byte(text)
	for _, e := range edits {
		if e.parse != nil {
			if err := e.parse(string(buf[e.fs:e.fe])); err != nil {
				return string(buf), err
			}
		}
		n := copy(buf[e.start:e.end], e.repl)
		for k := e.start + n; k < e.end; k++ {
			if buf[k] != '\n' {
				buf[k] = ' '
			}
		}
	}
	return string(buf), nil
}

// parseFragment parses text that stands at offset off of the statement as
// a select list, so its locations are offsets in the statement. stop is
// the offset of the token after it, where an error at the fragment's end
// points (-1: the statement's end).
func parseFragment(frag string, off, stop int) ([]*pg.Node, error) {
	const head = "SELECT"
	padded := head + strings.Repeat(" ", off-len(head)) + frag
	res, err := pg.Parse(padded)
	if err != nil {
		var pe *pgparser.Error
		if !errors.As(err, &pe) {
			return nil, err
		}
		if strings.HasSuffix(pe.Message, " at end of input") {
			if stop < 0 {
				return nil, &dialectError{at: off + len(frag), msg: pe.Message}
			}
			// The fragment's end is the token after it in the statement.
			return nil, &dialectError{at: stop, msg: strings.TrimSuffix(pe.Message, " at end of input")}
		}
		at := off
		if pe.Cursorpos > 0 {
			at = runeToByte(padded, int(pe.Cursorpos)-1)
		}
		return nil, &dialectError{at: at, msg: pe.Message}
	}
	if len(res.Stmts) != 1 {
		return nil, &dialectError{at: off, msg: "unexpected ;"}
	}
	sel := res.Stmts[0].Stmt.GetSelectStmt()
	if sel == nil || len(sel.FromClause) > 0 || sel.WhereClause != nil || len(sel.GroupClause) > 0 || sel.HavingClause != nil ||
		len(sel.SortClause) > 0 || sel.LimitCount != nil || sel.Op != pg.SetOperation_SETOP_NONE || len(sel.WindowClause) > 0 {
		return nil, &dialectError{at: off, msg: "unexpected clause"}
	}
	return sel.TargetList, nil
}

// isStarTarget reports whether a * after prev is a select-list star (not a
// multiplication).
func isStarTarget(prev tok) bool {
	switch prev.t {
	case pg.Token_SELECT, pg.Token_ASCII_44, pg.Token_ASCII_46, pg.Token_DISTINCT, pg.Token_ALL:
		return true
	}
	return false
}

// endsQualifyAlias reports whether the token after the word qualify shows
// it to be a table or column alias rather than the clause.
func endsQualifyAlias(next tok) bool {
	if isClauseEnd(next) {
		return true
	}
	switch next.t {
	case pg.Token_ASCII_44, pg.Token_ASCII_41, pg.Token_JOIN, pg.Token_INNER_P, pg.Token_LEFT, pg.Token_RIGHT, pg.Token_FULL,
		pg.Token_CROSS, pg.Token_NATURAL, pg.Token_ON, pg.Token_USING, pg.Token_AS:
		return true
	}
	return false
}

// endsGroupAll reports whether ALL after GROUP BY stands alone (GROUP BY
// ALL a, b is PostgreSQL's set quantifier).
func endsGroupAll(next tok) bool {
	return isClauseEnd(next) || next.t == pg.Token_ASCII_41
}

// endsOrderAll reports whether ALL after ORDER BY stands alone.
func endsOrderAll(next tok) bool {
	switch next.t {
	case pg.Token_ASC, pg.Token_DESC, pg.Token_NULLS_P, pg.Token_NULLS_LA, pg.Token_ASCII_41:
		return true
	}
	return isClauseEnd(next)
}
