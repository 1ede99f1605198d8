package sql

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	pg "github.com/pganalyze/pg_query_go/v6"

	"sluice/catalog"
	"sluice/plan"
)

// Write kinds: the statement a Write comes from, named as the status line
// and errors name it.
const (
	WriteCopy   = "COPY"
	WriteCreate = "CREATE TABLE"
	WriteInsert = "INSERT"
	WriteDelete = "DELETE"
	WriteUpdate = "UPDATE"
)

// Write is a statement that writes a query's rows to files under a
// directory: COPY ... TO, CREATE TABLE ... STORED AS ... AS SELECT, or
// INSERT INTO an external table, DELETE and UPDATE (which rewrite a
// table). Query's columns are exactly the columns written, in order, with
// the types written; a DELETE's and an UPDATE's have one more, last: the
// boolean that marks the rows the statement deletes or changes.
type Write struct {
	Kind     string // WriteCopy, WriteCreate, WriteInsert, WriteDelete or WriteUpdate
	Query    *Query
	Location string // the target directory, as written
	Format   string // "parquet" or "csv"
	// Header and Delimiter lay out CSV files.
	Header    bool
	Delimiter rune
	// PartitionBy names output columns: rows are written under
	// col=value/ directories, one level per column.
	PartitionBy []string
	// Overwrite lets COPY and CREATE TABLE replace a non-empty directory's
	// contents.
	Overwrite bool
	// Table is the table CREATE TABLE registers, or the one INSERT appends
	// to (reopened afterwards so it sees the new files).
	Table                  string
	OrReplace, IfNotExists bool
	// Managed marks a CREATE TABLE without LOCATION: the engine sets the
	// location to the table's directory under its warehouse, and the
	// catalog owns the files (DROP TABLE removes them).
	Managed bool
	// Target is the table a DELETE or UPDATE rewrites, as bound: its
	// files are the ones the statement replaces.
	Target catalog.Table
}

func (*Write) bound() {}

// copyStmt binds COPY (query) TO 'dir' (options) and COPY table TO 'dir'.
func (b *binder) copyStmt(c *pg.CopyStmt) (Bound, error) {
	if c.IsFrom {
		return b.copyFrom(c)
	}
	if c.IsProgram {
		return nil, &Error{Kind: "bind", Msg: "COPY TO PROGRAM is not supported"}
	}
	if c.Filename == "" {
		return nil, &Error{Kind: "bind", Msg: "COPY TO STDOUT is not supported: COPY writes files",
			Hint: "COPY (SELECT ...) TO 'directory' (FORMAT parquet)"}
	}
	w := &Write{Kind: WriteCopy, Location: c.Filename, Format: "parquet", Header: true, Delimiter: ','}
	var q *Query
	var err error
	switch {
	case c.Query != nil:
		sel, ok := c.Query.Node.(*pg.Node_SelectStmt)
		if !ok {
			return nil, &Error{Kind: "bind", Msg: "COPY (...) TO takes a query"}
		}
		q, err = b.query(sel.SelectStmt)
	case c.Relation != nil:
		q, err = b.tableQuery(c.Relation, stringList(c.Attlist))
	default:
		return nil, &Error{Kind: "bind", Msg: "COPY needs a table or a (query)"}
	}
	if err != nil {
		return nil, err
	}
	w.Query = q
	if err := copyOptions(w, c.Options); err != nil {
		return nil, err
	}
	return w, w.check()
}

// copyFrom binds COPY table [(cols)] FROM 'path' (options): the rows of
// the file (a directory or glob too) appended as INSERT appends them. A
// CSV file is read as the columns it fills, by position, with their
// types, so '007' stays text in a text column (inferring a number first
// would drop the zeros); a Parquet file's columns are assigned by
// position with INSERT's casts. FORMAT (csv or parquet; else from the
// extension), HEADER (else detected) and DELIMITER as for read_csv.
func (b *binder) copyFrom(c *pg.CopyStmt) (Bound, error) {
	if c.IsProgram || c.Filename == "" {
		return nil, &Error{Kind: "bind", Msg: "COPY FROM takes a file path: COPY FROM PROGRAM and STDIN are not supported"}
	}
	if c.Relation == nil || c.Query != nil {
		return nil, &Error{Kind: "bind", Msg: "COPY FROM needs a table to copy into"}
	}
	if c.WhereClause != nil {
		return nil, &Error{Kind: "bind", Msg: "COPY FROM ... WHERE is not supported",
			Hint: "INSERT INTO table SELECT * FROM 'path' WHERE ..."}
	}
	w, t, err := b.targetTable(c.Relation.GetRelname(), WriteInsert)
	if err != nil {
		return nil, err
	}
	target, err := b.insertColumns(t, w.Table, c.Attlist)
	if err != nil {
		return nil, err
	}
	var format catalog.FileFormat
	opts := catalog.CSVOptions{}
	headerKnown := false
	list, err := copyOpts(c.Options)
	if err != nil {
		return nil, err
	}
	for _, o := range list {
		switch o.name {
		case "format":
			switch strings.ToLower(o.val) {
			case "csv":
				format = catalog.FormatCSV
			case "parquet":
				format = catalog.FormatParquet
			default:
				return nil, &Error{Kind: "bind", Msg: fmt.Sprintf("COPY FROM reads csv or parquet, not %q", o.val)}
			}
		case "header":
			if opts.Header, err = o.boolean(); err != nil {
				return nil, err
			}
			headerKnown = true
		case "delimiter", "delim", "sep":
			var ok bool
			if opts.Delimiter, ok = readDelimiter(o.val); !ok {
				return nil, &Error{Kind: "bind", Msg: "COPY option DELIMITER must be a single character other than a quote or line break"}
			}
		default:
			return nil, &Error{Kind: "bind", Msg: fmt.Sprintf("COPY FROM option %s is not supported (it knows FORMAT, HEADER and DELIMITER)", strings.ToUpper(o.name))}
		}
	}
	if format == "" {
		if format, err = catalog.FormatOf(catalog.AbsLocation(c.Filename)); err != nil {
			return nil, &Error{Kind: "bind", Msg: err.Error(), Hint: "name the format: COPY t FROM 'path' (FORMAT csv)"}
		}
	}
	var csvSchema *arrow.Schema
	if format == catalog.FormatCSV {
		fields := make([]arrow.Field, len(target))
		for i, ti := range target {
			f := t.Schema().Field(ti)
			fields[i] = arrow.Field{Name: f.Name, Type: f.Type, Nullable: true}
		}
		csvSchema = arrow.NewSchema(fields, nil)
	}
	file, err := catalog.OpenPathAs(c.Filename, format, opts, headerKnown, csvSchema)
	if err != nil {
		return nil, &Error{Kind: "bind", Msg: err.Error()}
	}
	return b.insertRows(w, t, target, b.fileScan(c.Filename, file, ""))
}

// tableQuery binds SELECT cols FROM rel (every column when cols is empty).
func (b *binder) tableQuery(rel *pg.RangeVar, cols []string) (*Query, error) {
	list := "*"
	if len(cols) > 0 {
		quoted := make([]string, len(cols))
		for i, c := range cols {
			quoted[i] = quoteIdent(c)
		}
		list = strings.Join(quoted, ", ")
	}
	name := quoteIdent(rel.Relname)
	if rel.Schemaname != "" {
		name = quoteIdent(rel.Schemaname) + "." + name
	}
	res, err := pg.Parse("SELECT " + list + " FROM " + name)
	if err != nil {
		return nil, pgError(err, b.text, b.pos)
	}
	return b.query(res.Stmts[0].Stmt.GetSelectStmt())
}

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// copyOptions reads COPY's generic options: FORMAT parquet|csv,
// PARTITION_BY (cols), HEADER, DELIMITER and OVERWRITE.
func copyOptions(w *Write, opts []*pg.Node) error {
	list, err := copyOpts(opts)
	if err != nil {
		return err
	}
	for _, o := range list {
		switch o.name {
		case "format":
			f := strings.ToLower(o.val)
			if f != "parquet" && f != "csv" {
				return &Error{Kind: "bind", Msg: fmt.Sprintf("COPY format %q is not supported (want parquet or csv)", o.val)}
			}
			w.Format = f
		case "partition_by":
			cols := o.list
			if cols == nil && o.val != "" {
				cols = []string{o.val}
			}
			if len(cols) == 0 {
				return &Error{Kind: "bind", Msg: "PARTITION_BY needs a list of columns: PARTITION_BY (col, ...)"}
			}
			w.PartitionBy = cols
		case "header":
			w.Header, err = o.boolean()
		case "overwrite", "overwrite_or_ignore":
			w.Overwrite, err = o.boolean()
		case "delimiter", "delim", "sep":
			if utf8.RuneCountInString(o.val) != 1 {
				return &Error{Kind: "bind", Msg: "COPY option DELIMITER must be a single character"}
			}
			w.Delimiter, _ = utf8.DecodeRuneInString(o.val)
		default:
			return &Error{Kind: "bind", Msg: fmt.Sprintf("COPY option %s is not supported", strings.ToUpper(o.name)),
				Hint: "COPY takes FORMAT parquet|csv, PARTITION_BY (cols), HEADER, DELIMITER and OVERWRITE"}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// copyOpt is one of COPY's generic options: its name in lower case and
// its value as text (a list of names for PARTITION_BY (a, b)); bare is an
// option given without a value (HEADER alone).
type copyOpt struct {
	name, val string
	list      []string
	bare      bool
}

// copyOpts reads COPY's generic options.
func copyOpts(opts []*pg.Node) ([]copyOpt, error) {
	out := make([]copyOpt, 0, len(opts))
	for _, o := range opts {
		d := o.GetDefElem()
		if d == nil {
			return nil, &Error{Kind: "bind", Msg: "unexpected COPY option"}
		}
		c := copyOpt{name: strings.ToLower(d.Defname), bare: d.Arg == nil}
		if d.Arg != nil {
			switch a := d.Arg.Node.(type) {
			case *pg.Node_String_:
				c.val = a.String_.Sval
			case *pg.Node_Integer:
				c.val = strconv.Itoa(int(a.Integer.Ival))
			case *pg.Node_Boolean:
				c.val = strconv.FormatBool(a.Boolean.Boolval)
			case *pg.Node_List:
				c.list = stringList(a.List.Items)
			default:
				return nil, &Error{Kind: "bind", Msg: fmt.Sprintf("COPY option %s: unsupported value", strings.ToUpper(c.name))}
			}
		}
		out = append(out, c)
	}
	return out, nil
}

// boolean reads the option as PostgreSQL reads a boolean option: true,
// on, 1, false, off, 0, or true when given bare.
func (o copyOpt) boolean() (bool, error) {
	if o.bare {
		return true, nil
	}
	switch strings.ToLower(o.val) {
	case "true", "on", "1":
		return true, nil
	case "false", "off", "0":
		return false, nil
	}
	return false, &Error{Kind: "bind", Msg: fmt.Sprintf("COPY option %s takes a boolean, not %q", strings.ToUpper(o.name), o.val)}
}

// check validates what every write needs: supported column types, unique
// column names, partition columns that exist and leave a column to write.
func (w *Write) check() error {
	names := w.Query.Names
	seen := map[string]bool{}
	for i, c := range w.Query.Plan.Schema() {
		n := names[i]
		if seen[n] {
			return &Error{Kind: "bind", Msg: fmt.Sprintf("%s: the query has two columns named %q", w.Kind, n),
				Hint: "give the columns distinct names with AS"}
		}
		seen[n] = true
		if err := writableType(w.Format, n, c.Type); err != nil {
			return err
		}
	}
	pseen := map[string]bool{}
	for _, p := range w.PartitionBy {
		if !seen[p] {
			return &Error{Kind: "bind", Msg: fmt.Sprintf("PARTITION_BY column %q is not a column of the query (it has %s)", p, strings.Join(names, ", "))}
		}
		if pseen[p] {
			return &Error{Kind: "bind", Msg: fmt.Sprintf("PARTITION_BY names column %q twice", p)}
		}
		pseen[p] = true
	}
	if w.Location == "" && !w.Managed {
		return &Error{Kind: "bind", Msg: fmt.Sprintf("%s needs a directory to write to", w.Kind)}
	}
	return nil
}

// writableType refuses the column types a format cannot hold.
func writableType(format, name string, t arrowType) error {
	switch {
	case t.ID() == plan.Interval.ID():
		return &Error{Kind: "type", Msg: fmt.Sprintf("column %q is an INTERVAL, which %s files cannot hold", name, strings.ToUpper(format)),
			Hint: "cast it to VARCHAR"}
	case t.ID() == plan.Null.ID():
		return &Error{Kind: "type", Msg: fmt.Sprintf("column %q has no type (it is always NULL)", name),
			Hint: "cast it: CAST(NULL AS type)"}
	case plan.IsArray(t):
		// Parquet can hold lists, but sluice's Parquet scan does not read
		// them back: a write must not produce files its own tables cannot
		// read.
		return &Error{Kind: "type", Msg: fmt.Sprintf("column %q is an array (%s), which sluice does not write to files", name, plan.TypeName(t)),
			Hint: "turn it into text with array_to_string(col, ',') or CAST(col AS VARCHAR)"}
	}
	return nil
}

// insertStmt binds INSERT INTO table [(cols)] query: the query's columns
// are assigned to the named columns (all of them, in order, by default)
// with PostgreSQL's assignment casts, and the table's other columns are
// NULL.
func (b *binder) insertStmt(ins *pg.InsertStmt) (Bound, error) {
	if ins.OnConflictClause != nil || len(ins.ReturningList) > 0 {
		return nil, &Error{Kind: "bind", Msg: "INSERT ... ON CONFLICT and RETURNING are not supported"}
	}
	if err := readOnly(ins.Relation, WriteInsert); err != nil {
		return nil, err
	}
	w, t, err := b.targetTable(ins.Relation.GetRelname(), WriteInsert)
	if err != nil {
		return nil, err
	}
	if ins.SelectStmt == nil {
		return nil, &Error{Kind: "bind", Msg: "INSERT ... DEFAULT VALUES is not supported"}
	}
	sel := ins.SelectStmt.GetSelectStmt()
	if sel == nil {
		return nil, &Error{Kind: "bind", Msg: "INSERT needs VALUES or a query"}
	}
	if ins.WithClause != nil {
		if sel.WithClause != nil {
			return nil, &Error{Kind: "bind", Msg: "INSERT has two WITH clauses"}
		}
		sel.WithClause = ins.WithClause
	}
	target, err := b.insertColumns(t, w.Table, ins.Cols)
	if err != nil {
		return nil, err
	}
	r, err := b.selectStmt(sel, nil)
	if err != nil {
		return nil, err
	}
	return b.insertRows(w, t, target, r)
}

// targetTable checks that table name can take an INSERT (or COPY FROM),
// a DELETE or an UPDATE (kind): an external or managed table over a
// directory of Parquet or CSV files. The Write (of that kind) writes to
// it in its format.
func (b *binder) targetTable(name, kind string) (*Write, catalog.Table, error) {
	t, ok := b.cat.Table(name)
	if !ok {
		if _, isView := b.cat.View(name); isView {
			return nil, nil, &Error{Kind: "bind", Msg: fmt.Sprintf("cannot %s view %q", kind, name), Near: name,
				Hint: "write to the tables the view reads"}
		}
		e := &Error{Kind: "bind", Msg: fmt.Sprintf("table %q does not exist", name), Near: name}
		if c := closest(name, b.cat.Names()); c != "" {
			e.Hint = fmt.Sprintf("did you mean %q?", c)
		}
		return nil, nil, e
	}
	does := "INSERT adds files to"
	if kind != WriteInsert {
		does = kind + " rewrites the files of"
	}
	w := &Write{Kind: kind, Table: name, Delimiter: ','}
	switch tt := t.(type) {
	case *catalog.ParquetTable:
		w.Format, w.Location = "parquet", tt.Path()
	case *catalog.CSVTable:
		w.Format, w.Location = "csv", tt.Path()
		w.Header = tt.Options().Header
		if d := tt.Options().Delimiter; d != 0 {
			w.Delimiter = d
		}
	default:
		return nil, nil, &Error{Kind: "bind", Msg: fmt.Sprintf("table %q is not backed by Parquet or CSV files; %s a table's directory", name, does)}
	}
	if !insertableDir(t, w.Location) {
		return nil, nil, &Error{Kind: "bind", Msg: fmt.Sprintf("table %q is backed by the single file %s; %s a directory", name, w.Location, does),
			Hint: "create the table over a directory (LOCATION 'dir/'), or copy it into one with CREATE TABLE ... AS SELECT"}
	}
	return w, t, nil
}

// insertColumns resolves an INSERT's (or COPY's) column list, ResTargets
// or plain names, to the table columns the rows fill, in order; every
// column when the list is empty.
func (b *binder) insertColumns(t catalog.Table, name string, cols []*pg.Node) ([]int, error) {
	tcols := t.Schema().Fields()
	target := make([]int, 0, len(tcols)) // table column of each query column
	if len(cols) == 0 {
		for i := range tcols {
			target = append(target, i)
		}
		return target, nil
	}
	used := map[int]bool{}
	for _, c := range cols {
		col, loc := "", int32(-1)
		if rt := c.GetResTarget(); rt != nil && len(rt.Indirection) == 0 {
			col, loc = rt.Name, rt.Location
		} else if s := c.GetString_(); s != nil {
			col = s.Sval
		} else {
			return nil, &Error{Kind: "bind", Msg: "INSERT column list must name plain columns"}
		}
		idx := -1
		for i, f := range tcols {
			if strings.EqualFold(f.Name, col) {
				idx = i
				break
			}
		}
		if idx < 0 {
			return nil, b.errAt("bind", loc, "column %q of table %q does not exist", col, name)
		}
		if used[idx] {
			return nil, b.errAt("bind", loc, "column %q specified more than once", col)
		}
		used[idx] = true
		target = append(target, idx)
	}
	return target, nil
}

// insertRows makes w's query: the rows of r, one column per target table
// column (target[i] is the table column of r's column i), assigned with
// PostgreSQL's assignment casts; the other columns NULL.
func (b *binder) insertRows(w *Write, t catalog.Table, target []int, r relation) (Bound, error) {
	if err := checkArrayUse(r.node); err != nil {
		return nil, err
	}
	tcols := t.Schema().Fields()
	schema := r.node.Schema()
	if len(schema) > len(target) {
		return nil, &Error{Kind: "bind", Msg: fmt.Sprintf("%s has more expressions than target columns", w.Kind)}
	}
	if len(schema) < len(target) {
		return nil, &Error{Kind: "bind", Msg: fmt.Sprintf("%s has more target columns than expressions", w.Kind)}
	}
	exprs, names, err := assign(tcols, target, r)
	if err != nil {
		return nil, err
	}
	w.Query = &Query{Plan: b.project(r.node, exprs, names), Names: names, IDs: b.ids}
	return w, w.check()
}

// assign returns the table columns' expressions over r (target[i] is the
// table column r's column i fills), with PostgreSQL's assignment casts,
// NULL for a column no column of r fills, and the columns' names.
func assign(tcols []arrow.Field, target []int, r relation) ([]plan.Expr, []string, error) {
	schema := r.node.Schema()
	exprs := make([]plan.Expr, len(tcols))
	names := make([]string, len(tcols))
	for i, f := range tcols {
		names[i] = f.Name
		exprs[i] = &plan.Literal{Typ: f.Type}
	}
	values, _ := r.node.(*plan.Values)
	for qi, ti := range target {
		c := schema[qi]
		want := tcols[ti].Type
		var src plan.Expr = refName(c, r.names[qi])
		if !typeEq(c.Type, want) {
			if !assignable(c.Type, want, literalColumn(values, qi)) {
				return nil, nil, &Error{Kind: "type", Msg: fmt.Sprintf("column %q is of type %s but expression is of type %s",
					tcols[ti].Name, plan.TypeName(want), plan.TypeName(c.Type)),
					Hint: "rewrite or cast the expression"}
			}
			src = castExpr(src, want)
		}
		exprs[ti] = src
	}
	return exprs, names, nil
}

// assignable reports whether PostgreSQL assigns a value of type from to a
// column of type to without an explicit cast: numbers to numbers, dates
// and timestamps to each other, anything to text, and text literals
// (untyped in PostgreSQL) to whatever they parse as.
func assignable(from, to arrowType, literal bool) bool {
	switch {
	case from.ID() == plan.Null.ID():
		return true
	case plan.IsNumeric(from) && plan.IsNumeric(to):
		return true
	case plan.IsTemporal(from) && plan.IsTemporal(to):
		return true
	case to.ID() == plan.Utf8.ID():
		return !plan.IsArray(from)
	case from.ID() == plan.Utf8.ID():
		return literal && castAllowed(from, to)
	}
	return false
}

// literalColumn says whether column c of a VALUES list holds only
// literals (PostgreSQL's untyped constants).
func literalColumn(v *plan.Values, c int) bool {
	if v == nil {
		return false
	}
	for _, row := range v.Rows {
		if _, ok := row[c].(*plan.Literal); !ok {
			return false
		}
	}
	return true
}

// createTableAs is CREATE TABLE ... STORED AS ... LOCATION ... AS query as
// the front-end parsed it; Bind binds the query.
type createTableAs struct {
	w     *Write
	query *pg.SelectStmt
	text  string      // the query's text as parsed
	orig  string      // the query's text as written
	ins   []insertion // what the path rewrite inserted
	duck  *dialect    // the DuckDB constructs taken out (dialect.go)
	pos   position    // where it starts in the input
}

func (*createTableAs) bound() {}

// bindCreateTableAs binds the query of a CREATE TABLE AS.
func (b *Binder) bindCreateTableAs(c *createTableAs) (Bound, error) {
	st := &binder{cat: b.Catalog, ids: &plan.IDGen{}, text: c.text, orig: c.orig, ins: c.ins, duck: c.duck, pos: c.pos, clock: &stmtClock{now: b.Now}, views: new(int)}
	q, err := st.query(c.query)
	if err == nil {
		err = st.dialectApplied()
	}
	if err != nil {
		return nil, err
	}
	w := *c.w
	w.Query = q
	if !w.OrReplace && !w.IfNotExists {
		if err := st.checkNameFree(w.Table); err != nil {
			return nil, err
		}
	}
	return &w, w.check()
}

// checkNameFree refuses a table name already taken.
func (b *binder) checkNameFree(name string) error {
	if _, ok := b.cat.Table(name); ok {
		return &Error{Kind: "bind", Msg: fmt.Sprintf("table %q already exists", name), Hint: "use CREATE OR REPLACE TABLE, or DROP TABLE first"}
	}
	if _, ok := b.cat.View(name); ok {
		return &Error{Kind: "bind", Msg: fmt.Sprintf("%q already exists as a view", name)}
	}
	return nil
}

// createTableRefused explains the CREATE TABLE forms PostgreSQL's grammar
// knows and sluice does not (TEMPORARY, UNLOGGED, ...).
func createTableRefused() error {
	return &Error{Kind: "bind", Msg: "this form of CREATE TABLE is not supported",
		Hint: "CREATE TABLE name (col type, ...), CREATE TABLE name AS SELECT ..., or CREATE TABLE name STORED AS PARQUET LOCATION 'dir' AS SELECT ..."}
}

// writeOptions parses CREATE TABLE AS's OPTIONS ('key' 'value', ...):
// CREATE EXTERNAL TABLE's CSV keys, and overwrite.
func (f *frontParser) writeOptions(w *Write) error {
	return f.optionList(func(key, val string, kt, vt token) error {
		switch strings.ToLower(key) {
		case "format.has_header", "has_header", "header", "overwrite":
			b, err := strconv.ParseBool(strings.ToLower(val))
			if err != nil {
				return f.errAt(vt, "option %s wants true or false", key)
			}
			if strings.EqualFold(key, "overwrite") {
				w.Overwrite = b
			} else {
				w.Header = b
			}
		case "format.delimiter", "delimiter":
			if utf8.RuneCountInString(val) != 1 {
				return f.errAt(vt, "delimiter must be a single character")
			}
			w.Delimiter, _ = utf8.DecodeRuneInString(val)
		default:
			return f.errAt(kt, "unknown option %q (CREATE TABLE AS takes has_header, delimiter and overwrite)", key)
		}
		return nil
	})
}

// createTableAs parses CREATE [OR REPLACE] TABLE [IF NOT EXISTS] name,
// either with a query:
//
//	[STORED AS PARQUET|CSV] [WITH HEADER ROW] [DELIMITER 'c']
//	[PARTITIONED BY (cols)] [OPTIONS (...)] [LOCATION 'dir'] AS query
//
// or with columns and nothing else: (col type, ...), an empty managed
// table. Without LOCATION the table is managed: the engine writes it, as
// Parquet unless STORED AS says otherwise, under its warehouse directory.
func (f *frontParser) createTableAs() (Bound, error) {
	w := &Write{Kind: WriteCreate, Delimiter: ',', Header: true}
	if err := f.expectWord("create"); err != nil {
		return nil, err
	}
	if f.acceptWord("or") {
		if err := f.expectWord("replace"); err != nil {
			return nil, err
		}
		w.OrReplace = true
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
		w.IfNotExists = true
	}
	nameTok := f.peek()
	var err error
	if w.Table, err = f.name("table name"); err != nil {
		return nil, err
	}
	if f.acceptPunct("(") {
		cols, err := f.columnDefs()
		if err != nil {
			return nil, err
		}
		if f.peek().kind != 0 {
			return f.declaredExternal(w, cols)
		}
		if err := catalogName(w.Table); err != nil {
			return nil, f.errAt(nameTok, "%v", err)
		}
		for _, c := range cols {
			if err := writableType("parquet", c.Name, c.Type); err != nil {
				return nil, err
			}
		}
		if w.OrReplace && w.IfNotExists {
			return nil, f.errAt(nameTok, "CREATE OR REPLACE TABLE cannot also say IF NOT EXISTS")
		}
		return &CreateTable{Name: w.Table, Columns: cols, OrReplace: w.OrReplace, IfNotExists: w.IfNotExists}, nil
	}
	haveLoc := false
	for !f.isWord("as") {
		t := f.peek()
		switch {
		case t.kind == 0:
			return nil, f.errAt(t, "expected (columns) or AS query")
		case f.isWord("stored") || f.isWord("with") || f.isWord("delimiter"):
			if err := f.fileClause(&w.Format, &w.Header, &w.Delimiter); err != nil {
				return nil, err
			}
		case f.acceptWord("partitioned"):
			if err := f.expectWord("by"); err != nil {
				return nil, err
			}
			if err := f.expectPunct("("); err != nil {
				return nil, err
			}
			for {
				c, err := f.name("column name")
				if err != nil {
					return nil, err
				}
				w.PartitionBy = append(w.PartitionBy, c)
				if f.acceptPunct(")") {
					break
				}
				if err := f.expectPunct(","); err != nil {
					return nil, err
				}
			}
		case f.acceptWord("options"):
			if err := f.writeOptions(w); err != nil {
				return nil, err
			}
		case f.acceptWord("location"):
			if w.Location, err = f.str("location"); err != nil {
				return nil, err
			}
			haveLoc = true
		default:
			return nil, f.errAt(t, "expected STORED AS, WITH HEADER ROW, DELIMITER, PARTITIONED BY, OPTIONS, LOCATION or AS")
		}
	}
	asTok := f.peek()
	f.i++
	if w.OrReplace && w.IfNotExists {
		return nil, f.errAt(nameTok, "CREATE OR REPLACE TABLE cannot also say IF NOT EXISTS")
	}
	if !haveLoc {
		if err := catalogName(w.Table); err != nil {
			return nil, f.errAt(nameTok, "%v", err)
		}
		w.Managed = true
		if w.Overwrite {
			return nil, f.errAt(asTok, "option overwrite needs a LOCATION: a managed table is replaced with CREATE OR REPLACE TABLE")
		}
	}
	if w.Format == "" {
		if haveLoc {
			return nil, f.errAt(asTok, "missing STORED AS PARQUET|CSV")
		}
		w.Format = "parquet"
	}
	start := f.peek().off
	text := f.sql[start:]
	line, col := f.pos.at(f.sql, start)
	sel, st, err := parseQuery(text, position{line: line, col: col})
	if err != nil {
		return nil, err
	}
	if sel == nil {
		return nil, f.errAt(f.peek(), "CREATE TABLE ... AS needs a query")
	}
	return &createTableAs{w: w, query: sel, text: st.text, orig: text, ins: st.ins, duck: st.duck, pos: st.pos}, nil
}

// declaredExternal parses the rest of CREATE TABLE name (columns) [STORED
// AS PARQUET|CSV] [WITH HEADER ROW] [DELIMITER 'c'] LOCATION 'dir': with a
// LOCATION the table is external, as CREATE EXTERNAL TABLE makes it
// (Spark's CREATE TABLE ... LOCATION), Parquet unless STORED AS says
// otherwise.
func (f *frontParser) declaredExternal(w *Write, cols []ColumnDef) (Bound, error) {
	c := &CreateExternalTable{Name: w.Table, Columns: cols, Delimiter: ',', OrReplace: w.OrReplace, IfNotExists: w.IfNotExists}
	haveLoc := false
	for f.peek().kind != 0 {
		t := f.peek()
		switch {
		case f.isWord("stored") || f.isWord("with") || f.isWord("delimiter"):
			if err := f.fileClause(&c.Format, &c.Header, &c.Delimiter); err != nil {
				return nil, err
			}
		case f.acceptWord("location"):
			var err error
			if c.Location, err = f.str("location"); err != nil {
				return nil, err
			}
			haveLoc = true
		case f.isWord("as"):
			return nil, f.errAt(t, "CREATE TABLE ... AS takes no column types: the query's columns are the table's")
		default:
			return nil, f.errAt(t, "expected STORED AS, WITH HEADER ROW, DELIMITER or LOCATION after the columns")
		}
	}
	if !haveLoc {
		return nil, f.errAt(f.peek(), "missing LOCATION 'dir' (without the file clauses, CREATE TABLE name (columns) makes an empty managed table)")
	}
	if c.Format == "" {
		c.Format = "parquet"
	}
	return c, nil
}

// catalogName refuses a managed table's name that cannot be its
// directory under the warehouse.
func catalogName(name string) error {
	if err := catalog.CheckManagedName(name); err != nil {
		return &Error{Kind: "bind", Msg: err.Error(), Hint: "give the table another name, or a LOCATION 'dir'"}
	}
	return nil
}

// insertableDir reports whether a table's location is a directory (an
// s3:// folder) that INSERT can add files to, rather than one file.
func insertableDir(t catalog.Table, loc string) bool {
	if catalog.IsS3(loc) {
		lister, ok := t.(interface{ FileInfos() []catalog.FileInfo })
		if !ok || catalog.IsGlob(loc) {
			return false
		}
		files := lister.FileInfos()
		return !(len(files) == 1 && files[0].Path == loc)
	}
	st, err := os.Stat(loc)
	return err == nil && st.IsDir()
}
