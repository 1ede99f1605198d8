package sql

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"

	"sluice/plan"
)

// customStatement is a statement PostgreSQL's grammar does not know
// (CREATE EXTERNAL TABLE, DESCRIBE), parsed by the front-end into its bound form.
type customStatement = Bound

// token is one lexical token of the front-end tokenizer.
type token struct {
	kind byte   // 'i' identifier, 'q' quoted identifier, 's' string, 'n' number, 'p' punctuation, 0 end
	text string // identifier (as written), unquoted string, number, or punctuation
	off  int    // byte offset in the statement
	raw  string // source text of the token
}

// tokenize splits a front-end statement into tokens.
func tokenize(s string, p position) ([]token, error) {
	var out []token
	i := 0
	for {
		i += skipSpaceAndComments(s[i:])
		if i >= len(s) {
			out = append(out, token{kind: 0, off: len(s)})
			return out, nil
		}
		start := i
		c := s[i]
		switch {
		case c == '\'' || c == '"':
			var b strings.Builder
			i++
			closed := false
			for i < len(s) {
				if s[i] == c {
					if i+1 < len(s) && s[i+1] == c {
						b.WriteByte(c)
						i += 2
						continue
					}
					i++
					closed = true
					break
				}
				b.WriteByte(s[i])
				i++
			}
			if !closed {
				line, col := p.at(s, start)
				return nil, &Error{Kind: "syntax", Msg: "unterminated quoted string", Line: line, Column: col, Near: s[start:]}
			}
			kind := byte('s')
			if c == '"' {
				kind = 'q'
			}
			out = append(out, token{kind: kind, text: b.String(), off: start, raw: s[start:i]})
		case c >= '0' && c <= '9':
			for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
				i++
			}
			out = append(out, token{kind: 'n', text: s[start:i], off: start, raw: s[start:i]})
		case isIdentByte(c):
			for i < len(s) && (isIdentByte(s[i]) || s[i] == '.') {
				i++
			}
			out = append(out, token{kind: 'i', text: s[start:i], off: start, raw: s[start:i]})
		default:
			_, n := utf8.DecodeRuneInString(s[i:])
			i += n
			out = append(out, token{kind: 'p', text: s[start:i], off: start, raw: s[start:i]})
		}
	}
}

// isCustom reports whether a statement is handled by the front-end parser:
// DESCRIBE, CREATE EXTERNAL TABLE and every CREATE [OR REPLACE] TABLE (a
// table is files, written by CREATE TABLE AS or made empty from a column
// list, which the front-end reads with its file clauses).
func isCustom(sql string) bool {
	words := strings.Fields(strings.ToLower(sql))
	if len(words) == 0 {
		return false
	}
	switch words[0] {
	case "describe", "desc", "summarize":
		return true
	case "create":
		for _, w := range words[1:] {
			switch w {
			case "or", "replace", "unbounded":
				continue
			case "external":
				return true
			case "table":
				return true
			}
			return false
		}
	}
	return false
}

// frontParser is a recursive-descent parser over front-end tokens.
type frontParser struct {
	sql  string
	pos  position
	toks []token
	i    int
}

func (f *frontParser) peek() token { return f.toks[f.i] }

// errAt builds a syntax error pointing at token t.
func (f *frontParser) errAt(t token, format string, args ...any) error {
	line, col := f.pos.at(f.sql, t.off)
	near := t.raw
	msg := fmt.Sprintf(format, args...)
	if t.kind == 0 {
		msg += " at end of input"
	}
	return &Error{Kind: "syntax", Msg: msg, Line: line, Column: col, Near: near}
}

// isWord reports whether the next token is the keyword w (case-insensitive).
func (f *frontParser) isWord(w string) bool {
	t := f.peek()
	return t.kind == 'i' && strings.EqualFold(t.text, w)
}

func (f *frontParser) acceptWord(w string) bool {
	if f.isWord(w) {
		f.i++
		return true
	}
	return false
}

func (f *frontParser) expectWord(w string) error {
	if !f.acceptWord(w) {
		return f.errAt(f.peek(), "expected %s", strings.ToUpper(w))
	}
	return nil
}

func (f *frontParser) acceptPunct(p string) bool {
	if t := f.peek(); t.kind == 'p' && t.text == p {
		f.i++
		return true
	}
	return false
}

func (f *frontParser) expectPunct(p string) error {
	if !f.acceptPunct(p) {
		return f.errAt(f.peek(), "expected %q", p)
	}
	return nil
}

// name parses an identifier; unquoted identifiers are lower-cased as in
// PostgreSQL.
func (f *frontParser) name(what string) (string, error) {
	t := f.peek()
	switch t.kind {
	case 'i':
		f.i++
		return strings.ToLower(t.text), nil
	case 'q':
		f.i++
		return t.text, nil
	}
	return "", f.errAt(t, "expected %s", what)
}

func (f *frontParser) str(what string) (string, error) {
	t := f.peek()
	if t.kind != 's' {
		return "", f.errAt(t, "expected %s as a quoted string", what)
	}
	f.i++
	return t.text, nil
}

func (f *frontParser) end() error {
	if t := f.peek(); t.kind != 0 {
		return f.errAt(t, "unexpected text after statement")
	}
	return nil
}

// parseCustom parses a front-end statement.
func parseCustom(sql string, p position) (Bound, error) {
	toks, err := tokenize(sql, p)
	if err != nil {
		return nil, err
	}
	f := &frontParser{sql: sql, pos: p, toks: toks}
	if f.acceptWord("summarize") {
		if f.isWord("select") || f.isWord("with") || f.isWord("values") || f.isWord("from") || f.peek().kind == 'p' && f.peek().text == "(" {
			// SUMMARIZE query: the query is checked by binding it, and
			// summarized as a subquery.
			start := f.peek().off
			d, err := f.describeQuery()
			if err != nil {
				return nil, err
			}
			return &summarize{query: strings.TrimRight(strings.TrimSpace(f.sql[start:]), ";"), described: d.(*Describe)}, nil
		}
		name, err := f.name("table or view name")
		if err != nil {
			return nil, err
		}
		if err := f.end(); err != nil {
			return nil, err
		}
		return &summarize{name: name}, nil
	}
	if f.acceptWord("describe") || f.acceptWord("desc") {
		if f.isWord("select") || f.isWord("with") || f.isWord("values") || f.isWord("from") || f.peek().kind == 'p' && f.peek().text == "(" {
			return f.describeQuery()
		}
		first := f.peek()
		name, err := f.name("table name")
		if err != nil {
			return nil, err
		}
		if t := f.peek(); t.kind != 0 && first.kind == 'i' {
			switch strings.ToLower(first.text) {
			case "insert", "update", "delete", "copy", "create", "drop", "set", "explain":
				err := f.errAt(first, "DESCRIBE of %s is not supported: DESCRIBE takes a table or view name, or a query (SELECT, WITH, VALUES)", strings.ToUpper(first.text)).(*Error)
				err.Hint = "EXPLAIN shows the plan of any statement"
				return nil, err
			}
		}
		if err := f.end(); err != nil {
			return nil, err
		}
		return &Describe{Name: name}, nil
	}
	if isCreateTable(toks) {
		return f.createTableAs()
	}
	return f.createExternal()
}

// isCreateTable says whether the tokens start CREATE [OR REPLACE] TABLE.
func isCreateTable(toks []token) bool {
	for _, t := range toks[1:] {
		if t.kind != 'i' {
			return false
		}
		switch strings.ToLower(t.text) {
		case "or", "replace":
			continue
		case "table":
			return true
		}
		return false
	}
	return false
}

// createExternal parses DataFusion's CREATE EXTERNAL TABLE:
//
//	CREATE [OR REPLACE] [UNBOUNDED] EXTERNAL TABLE [IF NOT EXISTS] name [(col type, ...)]
//	  STORED AS PARQUET|CSV [WITH HEADER ROW] [DELIMITER 'c']
//	  [OPTIONS ('key' 'value', ...)] LOCATION 'path'
//
// The clauses after the column list may come in any order.
func (f *frontParser) createExternal() (Bound, error) {
	c := &CreateExternalTable{Delimiter: ','}
	if err := f.expectWord("create"); err != nil {
		return nil, err
	}
	if f.acceptWord("or") {
		if err := f.expectWord("replace"); err != nil {
			return nil, err
		}
		c.OrReplace = true
	}
	f.acceptWord("unbounded")
	if err := f.expectWord("external"); err != nil {
		return nil, err
	}
	if err := f.expectWord("table"); err != nil {
		return nil, err
	}
	if f.acceptWord("if") {
		if err := f.expectWord("not"); err != nil {
			return nil, err
		}
		if err := f.expectWord("exists"); err != nil {
			return nil, err
		}
		c.IfNotExists = true
	}
	var err error
	if c.Name, err = f.name("table name"); err != nil {
		return nil, err
	}
	if f.acceptPunct("(") {
		if c.Columns, err = f.columnDefs(); err != nil {
			return nil, err
		}
	}
	haveLoc := false
	for f.peek().kind != 0 {
		t := f.peek()
		switch {
		case f.isWord("stored") || f.isWord("with") || f.isWord("delimiter"):
			if err := f.fileClause(&c.Format, &c.Header, &c.Delimiter); err != nil {
				return nil, err
			}
		case f.acceptWord("location"):
			if c.Location, err = f.str("location"); err != nil {
				return nil, err
			}
			haveLoc = true
		case f.acceptWord("options"):
			if err := f.options(c); err != nil {
				return nil, err
			}
		default:
			return nil, f.errAt(t, "expected STORED AS, WITH HEADER ROW, DELIMITER, OPTIONS or LOCATION")
		}
	}
	if c.Format == "" {
		return nil, f.errAt(f.peek(), "missing STORED AS PARQUET|CSV")
	}
	if !haveLoc {
		return nil, f.errAt(f.peek(), "missing LOCATION 'path'")
	}
	return c, nil
}

// columnDefs parses a column list after its "(": col type [NOT NULL |
// NULL], ..., up to and including the ")".
func (f *frontParser) columnDefs() ([]ColumnDef, error) {
	var cols []ColumnDef
	for {
		var col ColumnDef
		var err error
		nameTok := f.peek()
		if col.Name, err = f.name("column name"); err != nil {
			return nil, err
		}
		for _, prev := range cols {
			if prev.Name == col.Name {
				return nil, f.errAt(nameTok, "duplicate column %q", col.Name)
			}
		}
		if col.Type, err = f.columnType(); err != nil {
			return nil, err
		}
		// Nullability constraints are accepted and ignored: columns of
		// files are always nullable.
		if f.acceptWord("not") {
			if err := f.expectWord("null"); err != nil {
				return nil, err
			}
		} else {
			f.acceptWord("null")
		}
		cols = append(cols, col)
		if f.acceptPunct(")") {
			return cols, nil
		}
		if err := f.expectPunct(","); err != nil {
			return nil, err
		}
	}
}

// options parses OPTIONS ('key' 'value', ...), understanding the CSV keys
// format.has_header and format.delimiter.
func (f *frontParser) options(c *CreateExternalTable) error {
	return f.optionList(func(key, val string, kt, vt token) error {
		switch strings.ToLower(key) {
		case "format.has_header", "has_header":
			b, err := strconv.ParseBool(strings.ToLower(val))
			if err != nil {
				return f.errAt(vt, "option %s wants true or false", key)
			}
			c.Header = b
		case "format.delimiter", "delimiter":
			if utf8.RuneCountInString(val) != 1 {
				return f.errAt(vt, "delimiter must be a single character")
			}
			c.Delimiter, _ = utf8.DecodeRuneInString(val)
		default:
			return f.errAt(kt, "unknown option %q", key)
		}
		return nil
	})
}

// optionList parses a parenthesized list of options, each a key (a name or
// a string) and a value (a string, a name or a number), and hands each to
// set with the tokens of its key and value, for errors.
func (f *frontParser) optionList(set func(key, val string, kt, vt token) error) error {
	if err := f.expectPunct("("); err != nil {
		return err
	}
	for {
		kt := f.peek()
		var key string
		var err error
		if kt.kind == 's' {
			key, err = f.str("option key")
		} else {
			key, err = f.name("option key")
		}
		if err != nil {
			return err
		}
		vt := f.peek()
		if vt.kind != 's' && vt.kind != 'i' && vt.kind != 'n' {
			return f.errAt(vt, "expected option value")
		}
		f.i++
		if err := set(key, vt.text, kt, vt); err != nil {
			return err
		}
		if f.acceptPunct(")") {
			return nil
		}
		if err := f.expectPunct(","); err != nil {
			return err
		}
	}
}

// columnType parses a column type name with optional (p[, s]) modifiers.
func (f *frontParser) columnType() (arrow.DataType, error) {
	t := f.peek()
	if t.kind != 'i' {
		return nil, f.errAt(t, "expected column type")
	}
	f.i++
	name := strings.ToLower(t.text)
	if name == "double" {
		f.acceptWord("precision")
	}
	if name == "character" && f.acceptWord("varying") {
		name = "varchar"
	}
	var mods []int
	if f.acceptPunct("(") {
		for {
			nt := f.peek()
			if nt.kind != 'n' {
				return nil, f.errAt(nt, "expected a number")
			}
			f.i++
			n, err := strconv.Atoi(nt.text)
			if err != nil {
				return nil, f.errAt(nt, "expected an integer")
			}
			mods = append(mods, n)
			if f.acceptPunct(")") {
				break
			}
			if err := f.expectPunct(","); err != nil {
				return nil, err
			}
		}
	}
	typ, err := typeFromName(name, mods)
	if err != nil {
		return nil, f.errAt(t, "%v", err)
	}
	return typ, nil
}

// typeFromName maps a SQL type name (lower case, PostgreSQL internal names
// included) and its modifiers to a sluice type.
func typeFromName(name string, mods []int) (arrow.DataType, error) {
	switch name {
	case "int", "integer", "int4", "smallint", "int2", "tinyint":
		return plan.Int32, nil
	case "bigint", "int8":
		return plan.Int64, nil
	case "hugeint", "int128":
		// DuckDB's 128-bit integer: a decimal of 38 digits holds it
		// exactly, up to 10^38.
		return plan.Decimal(plan.MaxDecimalPrecision, 0), nil
	case "double", "float", "float8", "float4", "real":
		return plan.Float64, nil
	case "decimal", "numeric":
		switch len(mods) {
		case 0:
			return plan.Decimal(plan.MaxDecimalPrecision, 10), nil
		case 1:
			if mods[0] < 1 || mods[0] > plan.MaxDecimalPrecision {
				return nil, fmt.Errorf("decimal precision %d out of range 1..38", mods[0])
			}
			return plan.Decimal(int32(mods[0]), 0), nil
		case 2:
			if mods[0] < 1 || mods[0] > plan.MaxDecimalPrecision {
				return nil, fmt.Errorf("decimal precision %d out of range 1..38", mods[0])
			}
			if mods[1] < 0 || mods[1] > mods[0] {
				return nil, fmt.Errorf("decimal scale %d out of range 0..%d", mods[1], mods[0])
			}
			return plan.Decimal(int32(mods[0]), int32(mods[1])), nil
		}
		return nil, fmt.Errorf("DECIMAL takes at most two modifiers")
	case "varchar", "char", "bpchar", "text", "string", "character", "json", "jsonb":
		// JSON is kept as its text (a cast to json checks it).
		return plan.Utf8, nil
	case "date":
		return plan.Date32, nil
	case "timestamp":
		return plan.Timestamp, nil
	case "boolean", "bool":
		return plan.Bool, nil
	case "interval":
		return plan.Interval, nil
	}
	return nil, fmt.Errorf("unknown type %s", strings.ToUpper(name))
}

// fileClause parses one of the clauses that say how a table's files are
// written, shared by CREATE EXTERNAL TABLE and CREATE TABLE ... AS:
// STORED AS PARQUET|CSV, WITH HEADER ROW, DELIMITER 'c'.
func (f *frontParser) fileClause(format *string, header *bool, delimiter *rune) error {
	switch {
	case f.acceptWord("stored"):
		if err := f.expectWord("as"); err != nil {
			return err
		}
		ft := f.peek()
		name, err := f.name("file format")
		if err != nil {
			return err
		}
		if name != "parquet" && name != "csv" {
			return f.errAt(ft, "unsupported file format %s (want PARQUET or CSV)", strings.ToUpper(name))
		}
		*format = name
	case f.acceptWord("with"):
		if err := f.expectWord("header"); err != nil {
			return err
		}
		if err := f.expectWord("row"); err != nil {
			return err
		}
		*header = true
	case f.acceptWord("delimiter"):
		dt := f.peek()
		d, err := f.str("delimiter")
		if err != nil {
			return err
		}
		if utf8.RuneCountInString(d) != 1 {
			return f.errAt(dt, "delimiter must be a single character")
		}
		*delimiter, _ = utf8.DecodeRuneInString(d)
	}
	return nil
}

// describeQuery parses the query of DESCRIBE query, the rest of the
// statement.
func (f *frontParser) describeQuery() (Bound, error) {
	start := f.peek().off
	text := f.sql[start:]
	line, col := f.pos.at(f.sql, start)
	sel, st, err := parseQuery(text, position{line: line, col: col})
	if err != nil {
		return nil, err
	}
	if sel == nil {
		return nil, f.errAt(f.peek(), "DESCRIBE needs a table name or a query")
	}
	return &Describe{query: sel, text: st.text, orig: text, ins: st.ins, duck: st.duck, pos: st.pos}, nil
}
