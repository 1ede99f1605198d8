package sql

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	pg "github.com/pganalyze/pg_query_go/v6"

	"sluice/catalog"
	"sluice/plan"
)

// maxViewDepth bounds view expansion so a view defined in terms of itself
// (through OR REPLACE) fails cleanly instead of recursing forever.
const maxViewDepth = 32

// maxViewExpansions bounds the views one statement expands in all: a view
// that joins another with itself doubles at each level, so twenty levels
// of views 32 deep at most still made a million, and the scheduler bound
// them until it ran out of memory.
const maxViewExpansions = 10000

// Binder resolves parsed statements against a catalog.
type Binder struct {
	Catalog *catalog.Catalog
	// Now, when set, replaces the clock behind now() and CURRENT_DATE
	// (tests use it for fixed answers).
	Now func() time.Time
}

// Bind binds one parsed statement. Errors the user can fix are *Error.
func (b *Binder) Bind(s Statement) (Bound, error) {
	if s.explain != explainNone {
		// EXPLAIN of a statement PostgreSQL's EXPLAIN does not take
		// (COPY, CREATE TABLE ... STORED AS): Parse blanked the EXPLAIN
		// and parsed what follows.
		if s.explain == explainAnalyze {
			return nil, explainAnalyzeWrite()
		}
		s.explain = explainNone
		inner, err := b.Bind(s)
		if err != nil {
			return nil, err
		}
		w, ok := inner.(*Write)
		if !ok {
			return nil, &Error{Kind: "bind", Msg: "EXPLAIN supports queries, COPY, CREATE TABLE AS and INSERT"}
		}
		return &Explain{Write: w}, nil
	}
	if s.custom != nil {
		if d, ok := s.custom.(*Describe); ok {
			if d.query != nil {
				q, err := b.describedQuery(d)
				if err != nil {
					return nil, err
				}
				return &Describe{Query: q}, nil
			}
			if err := b.checkRelation(d.Name); err != nil {
				return nil, err
			}
		}
		if c, ok := s.custom.(*createTableAs); ok {
			return b.bindCreateTableAs(c)
		}
		if sm, ok := s.custom.(*summarize); ok {
			return b.bindSummarize(sm)
		}
		return s.custom, nil
	}
	if s.tree == nil {
		return nil, fmt.Errorf("sql: statement was not produced by Parse")
	}
	st := &binder{cat: b.Catalog, ids: &plan.IDGen{}, text: s.text, orig: s.SQL, ins: s.ins, duck: s.duck, pos: s.pos, clock: &stmtClock{now: b.Now}, views: new(int)}
	res, err := st.statement(s)
	if err != nil {
		return nil, err
	}
	if err := st.dialectApplied(); err != nil {
		return nil, err
	}
	return res, nil
}

// dialectApplied fails on a DuckDB construct the rewrite recorded but the
// binder did not apply: it stands where it is not supported (QUALIFY in a
// query without a select list, ORDER BY ALL in a window or an aggregate's
// arguments), and ignoring it would give a wrong answer.
func (b *binder) dialectApplied() error {
	if b.duck == nil {
		return nil
	}
	if at, what, ok := b.duck.unused(b.duckUsed); ok {
		return b.errAt("bind", int32(at), "%s is not supported here", what)
	}
	return nil
}

// statement binds a parsed PostgreSQL statement.
func (st *binder) statement(s Statement) (Bound, error) {
	switch n := s.tree.Node.(type) {
	case *pg.Node_SelectStmt:
		return st.query(n.SelectStmt)
	case *pg.Node_ExplainStmt:
		analyze, err := explainOptions(n.ExplainStmt.Options)
		if err != nil {
			return nil, err
		}
		var bindWrite func() (Bound, error)
		switch q := n.ExplainStmt.Query.Node.(type) {
		case *pg.Node_InsertStmt:
			bindWrite = func() (Bound, error) { return st.insertStmt(q.InsertStmt) }
		case *pg.Node_DeleteStmt:
			bindWrite = func() (Bound, error) { return st.deleteStmt(q.DeleteStmt) }
		case *pg.Node_UpdateStmt:
			bindWrite = func() (Bound, error) { return st.updateStmt(q.UpdateStmt) }
		}
		if bindWrite != nil {
			if analyze {
				return nil, explainAnalyzeWrite()
			}
			b, err := bindWrite()
			if err != nil {
				return nil, err
			}
			w, ok := b.(*Write)
			if !ok {
				return nil, fmt.Errorf("internal: a write bound to %T", b)
			}
			return &Explain{Write: w}, nil
		}
		sel, ok := n.ExplainStmt.Query.Node.(*pg.Node_SelectStmt)
		if !ok {
			return nil, &Error{Kind: "bind", Msg: "EXPLAIN supports queries, COPY, CREATE TABLE AS, INSERT, DELETE and UPDATE"}
		}
		q, err := st.query(sel.SelectStmt)
		if err != nil {
			return nil, err
		}
		return &Explain{Query: q, Analyze: analyze}, nil
	case *pg.Node_CopyStmt:
		return st.copyStmt(n.CopyStmt)
	case *pg.Node_InsertStmt:
		return st.insertStmt(n.InsertStmt)
	case *pg.Node_DeleteStmt:
		return st.deleteStmt(n.DeleteStmt)
	case *pg.Node_UpdateStmt:
		return st.updateStmt(n.UpdateStmt)
	case *pg.Node_TruncateStmt:
		// TRUNCATE t is DELETE FROM t, one table at a time.
		if len(n.TruncateStmt.Relations) != 1 {
			return nil, &Error{Kind: "bind", Msg: "TRUNCATE takes one table"}
		}
		return st.deleteStmt(&pg.DeleteStmt{Relation: n.TruncateStmt.Relations[0].GetRangeVar()})
	case *pg.Node_CreateTableAsStmt:
		if n.CreateTableAsStmt.Objtype == pg.ObjectType_OBJECT_TABLE {
			return nil, createTableRefused()
		}
	case *pg.Node_CreateStmt:
		return nil, createTableRefused()
	case *pg.Node_ViewStmt:
		return st.createView(n.ViewStmt)
	case *pg.Node_DropStmt:
		return st.drop(n.DropStmt)
	case *pg.Node_VariableSetStmt:
		return st.set(n.VariableSetStmt)
	case *pg.Node_VariableShowStmt:
		switch name := strings.ToLower(n.VariableShowStmt.Name); name {
		case "tables":
			return &ShowTables{}, nil
		case "functions":
			return &ShowFunctions{}, nil
		default:
			return &Show{Key: name}, nil
		}
	}
	word := strings.ToUpper(strings.Fields(s.SQL)[0])
	return nil, &Error{Kind: "bind", Msg: fmt.Sprintf("unsupported statement %s", word), Line: s.pos.line, Column: s.pos.col, Near: word}
}

// describedQuery binds the query of DESCRIBE query (or SUMMARIZE query),
// with positions in the user's text.
func (b *Binder) describedQuery(d *Describe) (*Query, error) {
	st := &binder{cat: b.Catalog, ids: &plan.IDGen{}, text: d.text, orig: d.orig, ins: d.ins, duck: d.duck, pos: d.pos, clock: &stmtClock{now: b.Now}, views: new(int)}
	q, err := st.query(d.query)
	if err == nil {
		err = st.dialectApplied()
	}
	if err != nil {
		return nil, err
	}
	return q, nil
}

// checkRelation reports a bind error when name is neither table nor view.
func (b *Binder) checkRelation(name string) error {
	if _, ok := b.Catalog.Table(name); ok {
		return nil
	}
	if _, ok := b.Catalog.View(name); ok {
		return nil
	}
	e := &Error{Kind: "bind", Msg: fmt.Sprintf("table %q does not exist", name), Near: name}
	if c := closest(name, b.Catalog.Names()); c != "" {
		e.Hint = fmt.Sprintf("did you mean %q?", c)
	}
	return e
}

// binder is the per-statement binding state.
type binder struct {
	cat  *catalog.Catalog
	ids  *plan.IDGen
	text string // statement text as parsed; tree locations are offsets into it
	orig string // the user's statement text, for error positions
	ins  []insertion
	duck *dialect // the DuckDB constructs of the statement (dialect.go); nil when none
	// duckUsed holds the keys of the constructs of duck applied so far.
	duckUsed map[int]bool
	pos      position // where text starts in the user's input
	ctes     []*cteDef
	// viewDepth counts nested view expansions.
	viewDepth int
	// views counts the statement's view expansions, shared with the
	// binders of the views it expands (nil: not counted).
	views *int
	// clock is the statement's time, shared with the binders of the views
	// it expands.
	clock *stmtClock
}

// stmtClock reads the clock once per statement, so every now() of a
// statement has the same value.
type stmtClock struct {
	now    func() time.Time
	micros int64
	read   bool
}

// statementTime is the statement's time as microseconds since the epoch.
func (b *binder) statementTime() int64 {
	if b.clock == nil {
		b.clock = &stmtClock{}
	}
	c := b.clock
	if !c.read {
		now := time.Now
		if c.now != nil {
			now = c.now
		}
		c.micros, c.read = now().UnixMicro(), true
	}
	return c.micros
}

// cteDef is one WITH entry; it is bound anew at every reference so each use
// gets fresh column IDs.
type cteDef struct {
	name    string
	query   *pg.SelectStmt
	aliases []string
	visible []*cteDef // CTEs visible to its body (those defined before it)
	// recursive: defined by WITH RECURSIVE, so its body sees itself
	// (recursive.go); rec is its binding in progress.
	recursive bool
	rec       *recursiveState
}

// errAt builds an error of kind positioned at byte offset loc (-1: unknown).
func (b *binder) errAt(kind string, loc int32, format string, args ...any) *Error {
	e := &Error{Kind: kind, Msg: fmt.Sprintf(format, args...)}
	if loc >= 0 && int(loc) <= len(b.text) {
		e.Line, e.Column, e.Near = b.at(loc)
	}
	return e
}

// at locates a tree location (an offset into b.text) in the user's input.
func (b *binder) at(loc int32) (line, col int, near string) {
	text, off := b.text, int(loc)
	if b.ins != nil || b.duck != nil {
		text, off = b.orig, mapBack(off, b.duck, b.ins)
	}
	line, col = b.pos.at(text, off)
	return line, col, tokenAt(text, off)
}

func (b *binder) query(sel *pg.SelectStmt) (*Query, error) {
	r, err := b.selectStmt(sel, nil)
	if err != nil {
		return nil, err
	}
	if err := checkArrayUse(r.node); err != nil {
		return nil, err
	}
	return &Query{Plan: r.node, Names: r.names, IDs: b.ids}, nil
}

// createView validates the view's query and extracts its text.
func (b *binder) createView(v *pg.ViewStmt) (Bound, error) {
	sel, ok := v.Query.Node.(*pg.Node_SelectStmt)
	if !ok {
		return nil, &Error{Kind: "bind", Msg: "CREATE VIEW needs a SELECT"}
	}
	r, err := b.selectStmt(sel.SelectStmt, nil)
	if err != nil {
		return nil, err
	}
	cols := stringList(v.Aliases)
	if len(cols) > len(r.names) {
		return nil, &Error{Kind: "bind", Msg: fmt.Sprintf("CREATE VIEW specifies %d column names but the query has %d columns", len(cols), len(r.names))}
	}
	text := b.text
	if b.duck != nil {
		// The rewritten text lost what the dialect took out (QUALIFY,
		// EXCLUDE): store what the user wrote, parsed again at each use.
		text = b.orig
	}
	body, err := viewBody(text)
	if err != nil {
		return nil, err
	}
	return &CreateView{Name: v.View.Relname, Columns: cols, SQL: body, OrReplace: v.Replace}, nil
}

// viewBody returns the text after the first AS at parenthesis depth 0: the
// view's query.
func viewBody(text string) (string, error) {
	res, err := pg.Scan(text)
	if err != nil {
		return "", fmt.Errorf("scanning view text: %w", err)
	}
	depth := 0
	for _, t := range res.Tokens {
		w := text[t.Start:t.End]
		switch {
		case w == "(":
			depth++
		case w == ")":
			depth--
		case depth == 0 && strings.EqualFold(w, "as"):
			return strings.TrimSpace(text[t.End:]), nil
		}
	}
	return "", errors.New("CREATE VIEW: no AS found")
}

func (b *binder) drop(d *pg.DropStmt) (Bound, error) {
	var view bool
	switch d.RemoveType {
	case pg.ObjectType_OBJECT_VIEW:
		view = true
	case pg.ObjectType_OBJECT_TABLE:
	default:
		return nil, &Error{Kind: "bind", Msg: "only DROP TABLE and DROP VIEW are supported"}
	}
	if len(d.Objects) != 1 {
		return nil, &Error{Kind: "bind", Msg: "DROP takes exactly one name"}
	}
	parts := stringList(d.Objects[0].GetList().GetItems())
	if len(parts) == 0 {
		return nil, &Error{Kind: "bind", Msg: "DROP: missing name"}
	}
	return &Drop{View: view, Name: parts[len(parts)-1], IfExists: d.MissingOk}, nil
}

func (b *binder) set(s *pg.VariableSetStmt) (Bound, error) {
	switch s.Kind {
	case pg.VariableSetKind_VAR_RESET:
		return &Reset{Key: strings.ToLower(s.Name)}, nil
	case pg.VariableSetKind_VAR_RESET_ALL:
		return &Reset{Key: "all"}, nil
	}
	if s.Kind != pg.VariableSetKind_VAR_SET_VALUE {
		return nil, &Error{Kind: "bind", Msg: "only SET key = value is supported"}
	}
	vals := make([]string, 0, len(s.Args))
	for _, a := range s.Args {
		c := a.GetAConst()
		if c == nil {
			return nil, &Error{Kind: "bind", Msg: "SET value must be a constant"}
		}
		switch v := c.Val.(type) {
		case *pg.A_Const_Ival:
			vals = append(vals, strconv.Itoa(int(v.Ival.Ival)))
		case *pg.A_Const_Fval:
			vals = append(vals, v.Fval.Fval)
		case *pg.A_Const_Sval:
			vals = append(vals, v.Sval.Sval)
		case *pg.A_Const_Boolval:
			vals = append(vals, strconv.FormatBool(v.Boolval.Boolval))
		default:
			return nil, &Error{Kind: "bind", Msg: "SET value must be a constant"}
		}
	}
	return &Set{Key: strings.ToLower(s.Name), Value: strings.Join(vals, ", ")}, nil
}

// stringList extracts the values of a list of String nodes.
func stringList(ns []*pg.Node) []string {
	if len(ns) == 0 {
		return nil
	}
	out := make([]string, 0, len(ns))
	for _, n := range ns {
		if s := n.GetString_(); s != nil {
			out = append(out, s.Sval)
		}
	}
	return out
}

// explainOptions reads EXPLAIN's options: ANALYZE, alone or with a
// boolean (EXPLAIN (ANALYZE off) is a plain EXPLAIN). Others are refused.
// explainAnalyzeWrite refuses EXPLAIN ANALYZE of a write.
func explainAnalyzeWrite() error {
	return &Error{Kind: "bind", Msg: "EXPLAIN ANALYZE of a write (COPY, CREATE TABLE AS, INSERT, DELETE, UPDATE) is not supported: it would write the files",
		Hint: "EXPLAIN without ANALYZE shows the write's plan"}
}

func explainOptions(opts []*pg.Node) (analyze bool, err error) {
	for _, o := range opts {
		d := o.GetDefElem()
		if d == nil {
			return false, &Error{Kind: "bind", Msg: "unexpected EXPLAIN option"}
		}
		if name := strings.ToLower(d.Defname); name != "analyze" {
			return false, &Error{Kind: "bind", Msg: fmt.Sprintf("EXPLAIN option %s is not supported (only ANALYZE is)", strings.ToUpper(name))}
		}
		analyze = true
		if d.Arg == nil {
			continue
		}
		var v string
		switch a := d.Arg.Node.(type) {
		case *pg.Node_String_:
			v = strings.ToLower(a.String_.Sval)
		case *pg.Node_Integer:
			v = fmt.Sprint(a.Integer.Ival)
		case *pg.Node_Boolean:
			v = fmt.Sprint(a.Boolean.Boolval)
		}
		switch v {
		case "true", "on", "1":
		case "false", "off", "0":
			analyze = false
		default:
			return false, &Error{Kind: "bind", Msg: "EXPLAIN option ANALYZE takes a boolean"}
		}
	}
	return analyze, nil
}
