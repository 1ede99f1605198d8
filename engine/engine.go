// Package engine turns one SQL statement into what must happen: a catalog
// change, a setting, a small result computed on the spot (SHOW, DESCRIBE,
// EXPLAIN), or a physical plan to run. The local session runs that plan in
// process; the scheduler cuts it into stages and runs it on executors. The
// catalog lives with the engine, shared by every session using it.
package engine

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/catalog"
	"sluice/physical"
	"sluice/physical/planner"
	"sluice/plan"
	"sluice/sql"
)

// Engine prepares statements against a catalog. Safe for concurrent use.
type Engine struct {
	Catalog *catalog.Catalog
	// DefaultPartitions is the partition count used when the session's
	// execution.target_partitions is 0; nil means the CPU count. A
	// scheduler sets it to its executors' total vcores.
	DefaultPartitions func() int
	// ShareSubplans plans an aggregate the query computes more than once
	// (a view used twice) once, for every use (physical.SharedOutput).
	// Set for queries run in this process; the cluster planner shares
	// such computations as stages.
	ShareSubplans bool
	// Warehouse keeps the files of managed tables (CREATE TABLE without
	// LOCATION) when the session's catalog.warehouse is empty; nil: such
	// tables need catalog.warehouse set.
	Warehouse *Warehouse
}

// New returns an engine over cat.
func New(cat *catalog.Catalog) *Engine { return &Engine{Catalog: cat} }

// Outcome is what a statement amounts to. Exactly one of Message, Rows or
// Query is set (Analyze qualifies Query).
type Outcome struct {
	// Message is the status of a statement without rows ("CREATE VIEW").
	Message string
	// Rows is a small result computed while preparing (SHOW, DESCRIBE,
	// EXPLAIN); the caller releases it.
	Rows arrow.RecordBatch
	// Query is a query to execute.
	Query *Query
	// Analyze: the Query is an EXPLAIN ANALYZE's, to be run to completion
	// (its rows discarded) and answered with its plan and what each
	// operator did.
	Analyze bool
}

// Query is a planned query.
type Query struct {
	Logical  plan.Node
	Physical physical.Operator
	// Schema is the result schema with the user's column names.
	Schema *arrow.Schema
	// Write is set when the query writes files: its runner calls
	// Write.Finish once the query has ended.
	Write *Write
	// Estimates are the physical planner's size guesses, which the
	// distributed planner records per stage.
	Estimates *planner.Estimates
}

// Explain is set on an Outcome's Rows for EXPLAIN; distributed runners
// append their stage plan to it.
type Explain struct {
	Logical  plan.Node
	Physical physical.Operator
}

// Prepare parses, binds and plans one statement (text holds exactly one),
// applying catalog changes and SETs (to settings) as it goes.
func (e *Engine) Prepare(text string, settings *Settings) (*Outcome, error) {
	stmts, err := sql.Parse(text)
	if err != nil {
		return nil, err
	}
	if len(stmts) != 1 {
		return nil, fmt.Errorf("expected one statement, got %d", len(stmts))
	}
	b := &sql.Binder{Catalog: e.Catalog}
	bound, err := b.Bind(stmts[0])
	if err != nil {
		return nil, err
	}
	switch st := bound.(type) {
	case *sql.Query:
		q, err := e.PlanQuery(st, settings)
		if err != nil {
			return nil, err
		}
		return &Outcome{Query: q}, nil
	case *sql.Explain:
		if st.Analyze {
			q, err := e.PlanQuery(st.Query, settings)
			if err != nil {
				return nil, err
			}
			return &Outcome{Query: q, Analyze: true}, nil
		}
		q, logical, err := e.PlanExplained(st, settings)
		if err != nil {
			return nil, err
		}
		return &Outcome{Rows: StringRows([]string{"plan_type", "plan"}, [][]string{
			{"logical_plan", logical},
			{"physical_plan", strings.TrimRight(physical.Format(q.Physical), "\n")},
		})}, nil
	case *sql.Write:
		return e.PlanWrite(st, settings)
	case *sql.CreateExternalTable:
		return e.createExternalTable(st)
	case *sql.CreateTable:
		return e.createTable(st, settings)
	case *sql.CreateView:
		v := &catalog.View{Name: st.Name, SQL: st.SQL, Columns: st.Columns}
		if err := e.Catalog.RegisterView(v, st.OrReplace); err != nil {
			return nil, err
		}
		return &Outcome{Message: "CREATE VIEW"}, nil
	case *sql.Drop:
		return e.drop(st)
	case *sql.ShowTables:
		names := e.Catalog.Names()
		rows := make([][]string, len(names))
		for i, n := range names {
			kind := "table"
			if _, ok := e.Catalog.View(n); ok {
				kind = "view"
			}
			rows[i] = []string{n, kind}
		}
		return &Outcome{Rows: StringRows([]string{"table_name", "table_type"}, rows)}, nil
	case *sql.Describe:
		return e.describe(st)
	case *sql.Set:
		if err := settings.Set(st.Key, st.Value); err != nil {
			return nil, err
		}
		return &Outcome{Message: "SET"}, nil
	case *sql.Show:
		return e.show(st, settings)
	case *sql.ShowFunctions:
		fs := sql.Functions()
		rows := make([][]string, len(fs))
		for i, f := range fs {
			rows[i] = []string{f.Name, f.Kind, f.Args, f.Returns}
		}
		return &Outcome{Rows: StringRows([]string{"name", "kind", "arguments", "return_type"}, rows)}, nil
	case *sql.Reset:
		if err := settings.Reset(st.Key); err != nil {
			return nil, err
		}
		return &Outcome{Message: "RESET"}, nil
	}
	return nil, fmt.Errorf("internal: unhandled statement %T", bound)
}

// PlanQuery optimizes and physically plans a bound query.
func (e *Engine) PlanQuery(q *sql.Query, settings *Settings) (*Query, error) {
	opt, err := plan.Optimize(q.Plan, q.IDs)
	if err != nil {
		return nil, err
	}
	parts := int(settings.Int("execution.target_partitions"))
	if parts == 0 && e.DefaultPartitions != nil {
		parts = e.DefaultPartitions()
	}
	cfg := planner.Config{
		TargetPartitions:   parts, // 0: planner.Plan uses the CPU count
		BroadcastThreshold: settings.Int("optimizer.broadcast_join_threshold_bytes"),
		ShareSubplans:      e.ShareSubplans,
	}
	op, est, err := planner.PlanEstimated(opt, cfg)
	if err != nil {
		return nil, err
	}
	fields := make([]arrow.Field, len(q.Names))
	for i, f := range op.Schema().Fields() {
		f.Name = q.Names[i]
		fields[i] = f
	}
	return &Query{Logical: opt, Physical: op, Schema: arrow.NewSchema(fields, nil), Estimates: est}, nil
}

func (e *Engine) createExternalTable(st *sql.CreateExternalTable) (*Outcome, error) {
	done := &Outcome{Message: "CREATE EXTERNAL TABLE"}
	if st.IfNotExists {
		if _, ok := e.Catalog.Table(st.Name); ok {
			return done, nil
		}
	}
	var schema *arrow.Schema
	if len(st.Columns) > 0 {
		fields := make([]arrow.Field, len(st.Columns))
		for i, c := range st.Columns {
			fields[i] = arrow.Field{Name: c.Name, Type: c.Type, Nullable: true}
		}
		schema = arrow.NewSchema(fields, nil)
	}
	// A relative LOCATION is resolved here, on the scheduler, once: the
	// executors that scan the table get the absolute path, whatever their
	// own working directories.
	loc := catalog.AbsLocation(st.Location)
	var t catalog.Table
	var err error
	switch st.Format {
	case "parquet":
		if schema != nil {
			// Declared columns let the table start from an empty
			// directory, which INSERT then adds files to.
			t, err = catalog.OpenParquetDeclared(loc, schema)
		} else {
			t, err = catalog.OpenParquet(loc)
		}
	case "csv":
		t, err = catalog.OpenCSV(loc, catalog.CSVOptions{Header: st.Header, Delimiter: st.Delimiter}, schema)
	default:
		err = fmt.Errorf("unsupported format %q (expected PARQUET or CSV)", st.Format)
	}
	if err != nil {
		return nil, fmt.Errorf("CREATE EXTERNAL TABLE %s: %w", st.Name, err)
	}
	orphan, err := e.Catalog.RegisterManaged(st.Name, t, "", st.OrReplace)
	if err != nil {
		return nil, err
	}
	removeManaged(orphan)
	return done, nil
}

func (e *Engine) drop(st *sql.Drop) (*Outcome, error) {
	kind := "TABLE"
	var ok bool
	if st.View {
		kind = "VIEW"
		ok = e.Catalog.DropView(st.Name)
	} else {
		var dir string
		dir, ok = e.Catalog.DropTableDir(st.Name)
		if err := removeManaged(dir); err != nil {
			return nil, fmt.Errorf("DROP TABLE %s: the table is dropped, but removing its files failed: %w", st.Name, err)
		}
	}
	if !ok && !st.IfExists {
		return nil, fmt.Errorf("%s %q does not exist (use DROP %s IF EXISTS to ignore)", strings.ToLower(kind), st.Name, kind)
	}
	return &Outcome{Message: "DROP " + kind}, nil
}

func (e *Engine) describe(st *sql.Describe) (*Outcome, error) {
	var schema plan.Schema
	if st.Query != nil {
		for i, c := range st.Query.Plan.Schema() {
			c.Name = st.Query.Names[i]
			schema = append(schema, c)
		}
	} else if t, ok := e.Catalog.Table(st.Name); ok {
		for _, f := range t.Schema().Fields() {
			schema = append(schema, plan.Column{Name: f.Name, Type: f.Type, Nullable: f.Nullable})
		}
	} else if _, ok := e.Catalog.View(st.Name); ok {
		stmts, err := sql.Parse("SELECT * FROM " + st.Name)
		if err != nil {
			return nil, err
		}
		b := &sql.Binder{Catalog: e.Catalog}
		bound, err := b.Bind(stmts[0])
		if err != nil {
			return nil, err
		}
		schema = bound.(*sql.Query).Plan.Schema()
	} else {
		return nil, fmt.Errorf("table or view %q does not exist (SHOW TABLES lists them)", st.Name)
	}
	rows := make([][]string, len(schema))
	for i, c := range schema {
		null := "YES"
		if !c.Nullable {
			null = "NO"
		}
		rows[i] = []string{c.Name, plan.TypeName(c.Type), null}
	}
	return &Outcome{Rows: StringRows([]string{"column_name", "data_type", "is_nullable"}, rows)}, nil
}

func (e *Engine) show(st *sql.Show, settings *Settings) (*Outcome, error) {
	if st.Key == "all" {
		keys := settings.Keys()
		rows := make([][]string, len(keys))
		for i, k := range keys {
			rows[i] = []string{k, e.shown(k, settings)}
		}
		return &Outcome{Rows: StringRows([]string{"name", "value"}, rows)}, nil
	}
	v, ok := settings.Get(st.Key)
	if ok {
		v = e.shown(st.Key, settings)
	}
	if !ok {
		return nil, fmt.Errorf("unknown setting %q (SHOW ALL lists the settings)", st.Key)
	}
	return &Outcome{Rows: StringRows([]string{"name", "value"}, [][]string{{strings.ToLower(st.Key), v}})}, nil
}

// shown is the value SHOW gives a setting: its value, except that an empty
// catalog.warehouse shows the warehouse it stands for.
func (e *Engine) shown(key string, settings *Settings) string {
	v, _ := settings.Get(key)
	if strings.EqualFold(key, "catalog.warehouse") && v == "" {
		if e.Warehouse == nil {
			return "(none: set it, or start the scheduler with --warehouse DIR)"
		}
		return e.Warehouse.Describe()
	}
	return v
}

// StringRows builds a batch of utf8 columns.
func StringRows(cols []string, rows [][]string) arrow.RecordBatch {
	fields := make([]arrow.Field, len(cols))
	for i, c := range cols {
		fields[i] = arrow.Field{Name: c, Type: arrow.BinaryTypes.String, Nullable: true}
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, arrow.NewSchema(fields, nil))
	defer b.Release()
	for _, r := range rows {
		for i, v := range r {
			b.Field(i).(*array.StringBuilder).Append(v)
		}
	}
	return b.NewRecordBatch()
}
