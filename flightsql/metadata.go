package flightsql

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	afsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql/schema_ref"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/sql"
)

// sluice has one namespace of tables and views; Flight SQL clients see it
// as one catalog holding one schema. Queries name tables without either
// (a qualified name resolves by its last part).
const (
	catalogName = "sluice"
	schemaName  = "public"
)

// Table types GetTables reports.
const (
	typeTable = "TABLE"
	typeView  = "VIEW"
)

// GetFlightInfoCatalogs implements afsql.Server.
func (s *Server) GetFlightInfoCatalogs(_ context.Context, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return s.flightInfo(desc, schema_ref.Catalogs, desc.Cmd), nil
}

// DoGetCatalogs lists the one catalog.
func (s *Server) DoGetCatalogs(context.Context) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	return oneBatch(schema_ref.Catalogs, [][]any{{catalogName}})
}

// GetFlightInfoSchemas implements afsql.Server.
func (s *Server) GetFlightInfoSchemas(_ context.Context, _ afsql.GetDBSchemas, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return s.flightInfo(desc, schema_ref.DBSchemas, desc.Cmd), nil
}

// DoGetDBSchemas lists the one schema, if it passes the filters.
func (s *Server) DoGetDBSchemas(_ context.Context, cmd afsql.GetDBSchemas) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	var rows [][]any
	if catalogMatches(cmd.GetCatalog()) && likeMatches(cmd.GetDBSchemaFilterPattern(), schemaName) {
		rows = append(rows, []any{catalogName, schemaName})
	}
	return oneBatch(schema_ref.DBSchemas, rows)
}

// GetFlightInfoTables implements afsql.Server.
func (s *Server) GetFlightInfoTables(_ context.Context, cmd afsql.GetTables, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	schema := schema_ref.Tables
	if cmd.GetIncludeSchema() {
		schema = schema_ref.TablesWithIncludedSchema
	}
	return s.flightInfo(desc, schema, desc.Cmd), nil
}

// DoGetTables lists the catalog's tables and views that pass the filters,
// with each one's Arrow schema when asked (a view's is its query's,
// bound now).
func (s *Server) DoGetTables(_ context.Context, cmd afsql.GetTables) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	schema := schema_ref.Tables
	if cmd.GetIncludeSchema() {
		schema = schema_ref.TablesWithIncludedSchema
	}
	var rows [][]any
	if catalogMatches(cmd.GetCatalog()) && likeMatches(cmd.GetDBSchemaFilterPattern(), schemaName) {
		types := map[string]bool{}
		for _, t := range cmd.GetTableTypes() {
			types[strings.ToUpper(t)] = true
		}
		for _, name := range s.cfg.Catalog.Names() {
			if !likeMatches(cmd.GetTableNameFilterPattern(), name) {
				continue
			}
			kind := typeTable
			if _, ok := s.cfg.Catalog.View(name); ok {
				kind = typeView
			}
			if len(types) > 0 && !types[kind] {
				continue
			}
			row := []any{catalogName, schemaName, name, kind}
			if cmd.GetIncludeSchema() {
				ts, err := s.tableSchema(name)
				if err != nil {
					// A view over a dropped table no longer binds: it is
					// listed, with no columns.
					ts = emptySchema
				}
				row = append(row, flight.SerializeSchema(ts, memory.DefaultAllocator))
			}
			rows = append(rows, row)
		}
	}
	return oneBatch(schema, rows)
}

// tableSchema is the Arrow schema of a table, or of a view's query.
func (s *Server) tableSchema(name string) (*arrow.Schema, error) {
	if t, ok := s.cfg.Catalog.Table(name); ok {
		return t.Schema(), nil
	}
	stmts, err := sql.Parse(`SELECT * FROM "` + strings.ReplaceAll(name, `"`, `""`) + `"`)
	if err != nil {
		return nil, err
	}
	b := &sql.Binder{Catalog: s.cfg.Catalog}
	bound, err := b.Bind(stmts[0])
	if err != nil {
		return nil, err
	}
	q, ok := bound.(*sql.Query)
	if !ok {
		return nil, fmt.Errorf("%s is not a query", name)
	}
	cols := q.Plan.Schema()
	fields := make([]arrow.Field, len(cols))
	for i, c := range cols {
		fields[i] = arrow.Field{Name: q.Names[i], Type: c.Type, Nullable: c.Nullable}
	}
	return arrow.NewSchema(fields, nil), nil
}

// GetFlightInfoTableTypes implements afsql.Server.
func (s *Server) GetFlightInfoTableTypes(_ context.Context, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return s.flightInfo(desc, schema_ref.TableTypes, desc.Cmd), nil
}

// DoGetTableTypes lists TABLE and VIEW.
func (s *Server) DoGetTableTypes(context.Context) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	return oneBatch(schema_ref.TableTypes, [][]any{{typeTable}, {typeView}})
}

// catalogMatches applies a catalog filter: none, the catalog's name, or
// "" (objects without a catalog, of which there are none).
func catalogMatches(c *string) bool { return c == nil || *c == catalogName }

// likeMatches applies a Flight SQL filter pattern (SQL LIKE: % any
// string, _ one character, \ escaping either); nil or "" matches all.
func likeMatches(pattern *string, s string) bool {
	if pattern == nil || *pattern == "" {
		return true
	}
	var b strings.Builder
	b.WriteString("(?s)^")
	p := *pattern
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case c == '\\' && i+1 < len(p):
			i++
			b.WriteString(regexp.QuoteMeta(string(p[i])))
		case c == '%':
			b.WriteString(".*")
		case c == '_':
			b.WriteString(".")
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteString("$")
	re, err := regexp.Compile(b.String())
	return err == nil && re.MatchString(s)
}

// oneBatch streams rows (strings and byte slices, in schema order) as one
// batch.
func oneBatch(schema *arrow.Schema, rows [][]any) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	bld := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer bld.Release()
	for _, row := range rows {
		for i, v := range row {
			switch f := bld.Field(i).(type) {
			case *array.StringBuilder:
				f.Append(v.(string))
			case *array.BinaryBuilder:
				f.Append(v.([]byte))
			default:
				return nil, nil, fmt.Errorf("internal: metadata column of type %s", f.Type())
			}
		}
	}
	ch := make(chan flight.StreamChunk, 1)
	ch <- flight.StreamChunk{Data: bld.NewRecordBatch()}
	close(ch)
	return schema, ch, nil
}
