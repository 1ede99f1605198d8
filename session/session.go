// Package session is the client side of a sluice connection: it holds the
// session's settings, runs statements and hands results to the renderer as a
// stream of record batches.
//
// Today statements run on an in-process engine: the session parses, binds,
// optimizes and plans each query, then pulls the physical plan's partitions.
package session

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/catalog"
	"sluice/physical"
	"sluice/plan"
	"sluice/sql"
)

// Session runs statements against a catalog with its own settings. A
// Session is used by one goroutine at a time.
type Session struct {
	Catalog  *catalog.Catalog
	Settings *Settings
	// Alloc allocates query memory; memory.DefaultAllocator when nil.
	Alloc memory.Allocator
}

// New returns a session over cat with default settings.
func New(cat *catalog.Catalog) *Session {
	return &Session{Catalog: cat, Settings: NewSettings()}
}

// Execute runs one statement (text may hold exactly one). The caller must
// Close the result.
func (s *Session) Execute(ctx context.Context, text string) (*Result, error) {
	stmts, err := sql.Parse(text)
	if err != nil {
		return nil, err
	}
	if len(stmts) != 1 {
		return nil, fmt.Errorf("expected one statement, got %d", len(stmts))
	}
	b := &sql.Binder{Catalog: s.Catalog}
	bound, err := b.Bind(stmts[0])
	if err != nil {
		return nil, err
	}
	switch st := bound.(type) {
	case *sql.Query:
		return s.runQuery(ctx, st)
	case *sql.Explain:
		return s.explain(st)
	case *sql.CreateExternalTable:
		return s.createExternalTable(st)
	case *sql.CreateView:
		v := &catalog.View{Name: st.Name, SQL: st.SQL, Columns: st.Columns}
		if err := s.Catalog.RegisterView(v, st.OrReplace); err != nil {
			return nil, err
		}
		return messageResult("CREATE VIEW"), nil
	case *sql.Drop:
		return s.drop(st)
	case *sql.ShowTables:
		names := s.Catalog.Names()
		rows := make([][]string, len(names))
		for i, n := range names {
			kind := "table"
			if _, ok := s.Catalog.View(n); ok {
				kind = "view"
			}
			rows[i] = []string{n, kind}
		}
		return stringsResult([]string{"table_name", "table_type"}, rows), nil
	case *sql.Describe:
		return s.describe(st)
	case *sql.Set:
		if err := s.Settings.Set(st.Key, st.Value); err != nil {
			return nil, err
		}
		return messageResult("SET"), nil
	case *sql.Show:
		return s.show(st)
	}
	return nil, fmt.Errorf("internal: unhandled statement %T", bound)
}

// Plan binds, optimizes and physically plans a query.
func (s *Session) plan(q *sql.Query) (plan.Node, physical.Operator, error) {
	opt, err := plan.Optimize(q.Plan, q.IDs)
	if err != nil {
		return nil, nil, err
	}
	cfg := physical.PlannerConfig{TargetPartitions: int(s.Settings.Int("execution.target_partitions"))}
	op, err := physical.Plan(opt, cfg)
	if err != nil {
		return nil, nil, err
	}
	return opt, op, nil
}

func (s *Session) runQuery(ctx context.Context, q *sql.Query) (*Result, error) {
	_, op, err := s.plan(q)
	if err != nil {
		return nil, err
	}
	if op.OutputPartitioning().Count > 1 {
		op = physical.NewCoalescePartitions(op)
	}
	alloc := s.Alloc
	if alloc == nil {
		alloc = memory.DefaultAllocator
	}
	tc := &physical.TaskContext{
		Alloc:     alloc,
		Memory:    physical.NewMemoryPool("query", s.Settings.Int("execution.memory_limit"), nil),
		BatchSize: int(s.Settings.Int("execution.batch_size")),
	}
	stream, err := op.Execute(ctx, 0, tc)
	if err != nil {
		return nil, err
	}
	// Present the user's column names (the plan's may be internal).
	fields := make([]arrow.Field, len(q.Names))
	for i, f := range op.Schema().Fields() {
		f.Name = q.Names[i]
		fields[i] = f
	}
	return &Result{Schema: arrow.NewSchema(fields, nil), stream: &renamed{Stream: stream, schema: arrow.NewSchema(fields, nil)}}, nil
}

func (s *Session) explain(e *sql.Explain) (*Result, error) {
	opt, op, err := s.plan(e.Query)
	if err != nil {
		return nil, err
	}
	return stringsResult([]string{"plan_type", "plan"}, [][]string{
		{"logical_plan", strings.TrimRight(plan.Format(opt), "\n")},
		{"physical_plan", strings.TrimRight(physical.Format(op), "\n")},
	}), nil
}

func (s *Session) createExternalTable(st *sql.CreateExternalTable) (*Result, error) {
	if st.IfNotExists {
		if _, ok := s.Catalog.Table(st.Name); ok {
			return messageResult("CREATE EXTERNAL TABLE"), nil
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
	var t catalog.Table
	var err error
	switch st.Format {
	case "parquet":
		var pt *catalog.ParquetTable
		pt, err = catalog.OpenParquet(st.Location)
		if err == nil && schema != nil && !schemaCompatible(pt.Schema(), schema) {
			err = fmt.Errorf("declared columns do not match the Parquet schema %s", pt.Schema())
		}
		t = pt
	case "csv":
		t, err = catalog.OpenCSV(st.Location, catalog.CSVOptions{Header: st.Header, Delimiter: st.Delimiter}, schema)
	default:
		err = fmt.Errorf("unsupported format %q (expected PARQUET or CSV)", st.Format)
	}
	if err != nil {
		return nil, fmt.Errorf("CREATE EXTERNAL TABLE %s: %w", st.Name, err)
	}
	if err := s.Catalog.RegisterTable(st.Name, t, st.OrReplace); err != nil {
		return nil, err
	}
	return messageResult("CREATE EXTERNAL TABLE"), nil
}

func schemaCompatible(have, want *arrow.Schema) bool {
	if have.NumFields() != want.NumFields() {
		return false
	}
	for i := range have.Fields() {
		if !strings.EqualFold(have.Field(i).Name, want.Field(i).Name) || !arrow.TypeEqual(have.Field(i).Type, want.Field(i).Type) {
			return false
		}
	}
	return true
}

func (s *Session) drop(st *sql.Drop) (*Result, error) {
	kind := "TABLE"
	ok := false
	if st.View {
		kind = "VIEW"
		ok = s.Catalog.DropView(st.Name)
	} else {
		ok = s.Catalog.DropTable(st.Name)
	}
	if !ok && !st.IfExists {
		return nil, fmt.Errorf("%s %q does not exist (use DROP %s IF EXISTS to ignore)", strings.ToLower(kind), st.Name, kind)
	}
	return messageResult("DROP " + kind), nil
}

func (s *Session) describe(st *sql.Describe) (*Result, error) {
	var schema plan.Schema
	if t, ok := s.Catalog.Table(st.Name); ok {
		for _, f := range t.Schema().Fields() {
			schema = append(schema, plan.Column{Name: f.Name, Type: f.Type, Nullable: f.Nullable})
		}
	} else if _, ok := s.Catalog.View(st.Name); ok {
		stmts, err := sql.Parse("SELECT * FROM " + st.Name)
		if err != nil {
			return nil, err
		}
		b := &sql.Binder{Catalog: s.Catalog}
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
	return stringsResult([]string{"column_name", "data_type", "is_nullable"}, rows), nil
}

func (s *Session) show(st *sql.Show) (*Result, error) {
	if st.Key == "all" {
		keys := s.Settings.Keys()
		rows := make([][]string, len(keys))
		for i, k := range keys {
			v, _ := s.Settings.Get(k)
			rows[i] = []string{k, v}
		}
		return stringsResult([]string{"name", "value"}, rows), nil
	}
	v, ok := s.Settings.Get(st.Key)
	if !ok {
		return nil, fmt.Errorf("unknown setting %q (SHOW ALL lists the settings)", st.Key)
	}
	return stringsResult([]string{"name", "value"}, [][]string{{strings.ToLower(st.Key), v}}), nil
}

// renamed presents a stream's batches under another schema (same types).
type renamed struct {
	physical.Stream
	schema *arrow.Schema
}

func (r *renamed) Next(ctx context.Context) (arrow.RecordBatch, error) {
	b, err := r.Stream.Next(ctx)
	if err != nil {
		return nil, err
	}
	out := arrowRecord(r.schema, b)
	b.Release()
	return out, nil
}
