package sql

import (
	"fmt"
	"sort"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"

	"sluice/plan"
)

// information_schema.tables, .columns, .schemata and .views, as SQL
// users query them in PostgreSQL and DuckDB: tables made on the spot from
// the catalog, so they filter, join and sort like any other. Every table
// and view is in catalog "sluice", schema "main" (DuckDB's name for its
// one schema).

const (
	infoCatalog = "sluice"
	infoSchema  = "main"
)

// infoSchemaTables are the tables and their columns (all text but
// ordinal_position).
var infoSchemaTables = map[string][]string{
	"tables":   {"table_catalog", "table_schema", "table_name", "table_type"},
	"columns":  {"table_catalog", "table_schema", "table_name", "column_name", "ordinal_position", "column_default", "is_nullable", "data_type"},
	"schemata": {"catalog_name", "schema_name"},
	"views":    {"table_catalog", "table_schema", "table_name", "view_definition"},
}

// infoSchema binds information_schema.<name>.
func (b *binder) infoSchema(rv *pg.RangeVar, qual string, aliases []string) (plan.Node, []scopeCol, error) {
	name := strings.ToLower(rv.Relname)
	colNames, ok := infoSchemaTables[name]
	if !ok {
		known := make([]string, 0, len(infoSchemaTables))
		for k := range infoSchemaTables {
			known = append(known, k)
		}
		sort.Strings(known)
		e := b.errAt("bind", rv.Location, "information_schema.%s does not exist", rv.Relname)
		e.Hint = "information_schema has " + strings.Join(known, ", ")
		return nil, nil, e
	}
	var rows [][]any
	names := b.cat.Names()
	sort.Strings(names)
	switch name {
	case "tables":
		for _, n := range names {
			kind := "BASE TABLE"
			if _, isView := b.cat.View(n); isView {
				kind = "VIEW"
			}
			rows = append(rows, []any{infoCatalog, infoSchema, n, kind})
		}
	case "schemata":
		rows = append(rows, []any{infoCatalog, infoSchema})
	case "views":
		for _, n := range names {
			if v, isView := b.cat.View(n); isView {
				rows = append(rows, []any{infoCatalog, infoSchema, n, v.SQL})
			}
		}
	case "columns":
		for _, n := range names {
			cols, err := b.tableColumns(n)
			if err != nil {
				continue // a view that no longer binds has no columns to list
			}
			for i, c := range cols {
				null := "YES"
				if !c.Nullable {
					null = "NO"
				}
				rows = append(rows, []any{infoCatalog, infoSchema, n, c.Name, int64(i + 1), nil, null, plan.TypeName(c.Type)})
			}
		}
	}
	v := &plan.Values{}
	for _, c := range colNames {
		t := plan.Utf8
		if c == "ordinal_position" {
			t = plan.Int64
		}
		v.Cols = append(v.Cols, plan.Column{ID: b.ids.Next(), Name: c, Table: qual, Type: t, Nullable: true})
	}
	for _, r := range rows {
		row := make([]plan.Expr, len(r))
		for i, x := range r {
			row[i] = &plan.Literal{Typ: v.Cols[i].Type, Val: x}
		}
		v.Rows = append(v.Rows, row)
	}
	r, err := renameColumns(relation{node: v, names: colNames}, aliases, qual)
	if err != nil {
		return nil, nil, err
	}
	return v, relationScope(r, qual), nil
}

// tableColumns returns the columns of table or view n, a view's as its
// query binds now.
func (b *binder) tableColumns(n string) ([]plan.Column, error) {
	if t, ok := b.cat.Table(n); ok {
		var cols []plan.Column
		for _, f := range t.Schema().Fields() {
			cols = append(cols, plan.Column{Name: f.Name, Type: f.Type, Nullable: f.Nullable})
		}
		return cols, nil
	}
	v, ok := b.cat.View(n)
	if !ok {
		return nil, fmt.Errorf("%q is neither a table nor a view", n)
	}
	r, err := b.view(v.Name, v.SQL)
	if err != nil {
		return nil, err
	}
	if r, err = renameColumns(r, v.Columns, n); err != nil {
		return nil, err
	}
	cols := append([]plan.Column(nil), r.node.Schema()...)
	for i := range cols {
		cols[i].Name = r.names[i]
	}
	return cols, nil
}
