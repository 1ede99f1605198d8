// Package sql turns SQL text into bound logical plans. Parsing uses
// PostgreSQL's own grammar (pg_query_go); the few statements PostgreSQL does
// not know (DataFusion's CREATE EXTERNAL TABLE, DESCRIBE) are parsed by a
// small front-end of our own. The Binder resolves names against a catalog,
// assigns column IDs, types every expression and builds plan.Node trees.
//
// Plan shapes the binder produces, which later stages rely on:
//   - every table reference is a Scan of all its columns (the optimizer prunes);
//   - aggregation is Aggregate (group keys and aggregate arguments appear
//     directly as expressions; a group key that is a plain column keeps its
//     column ID) followed by Filter (HAVING) and Project (select list);
//   - ORDER BY is a Sort over the select list's Project, with Limit directly
//     above it and, when ORDER BY used expressions outside the select list,
//     a final Project dropping them;
//   - subqueries stay as plan.Subquery expressions (not decorrelated).
package sql

import (
	"github.com/apache/arrow-go/v18/arrow"
	pg "github.com/pganalyze/pg_query_go/v6"

	"sluice/plan"
)

// Bound is a bound statement: one of *Query, *Explain, *CreateExternalTable,
// *CreateView, *Drop, *ShowTables, *Describe, *Set, *Show, *ShowFunctions,
// *Reset.
type Bound interface{ bound() }

// Query is a bound SELECT (or VALUES, or set operation).
type Query struct {
	Plan  plan.Node
	Names []string // output column names as the user sees them
	IDs   *plan.IDGen
}

// Explain is EXPLAIN of a query. With Analyze (EXPLAIN ANALYZE) the query
// runs to completion, its rows discarded, and the plan is shown with what
// each operator did.
//
// EXPLAIN of a write (COPY TO, CREATE TABLE AS, INSERT) sets Write instead
// of Query: it shows the write's plan and writes nothing. EXPLAIN ANALYZE
// of a write is refused, since it would write.
type Explain struct {
	Query   *Query
	Write   *Write
	Analyze bool
}

// CreateExternalTable registers a Parquet or CSV file (or directory) as a table.
type CreateExternalTable struct {
	Name                   string
	Format                 string // "parquet" or "csv"
	Header                 bool
	Delimiter              rune
	Location               string
	Columns                []ColumnDef // empty: infer from the files
	OrReplace, IfNotExists bool
}

// CreateTable is CREATE [OR REPLACE] TABLE [IF NOT EXISTS] name (col type,
// ...) without a query or a LOCATION: an empty managed table of those
// columns, whose files the engine keeps under its warehouse directory.
type CreateTable struct {
	Name                   string
	Columns                []ColumnDef
	OrReplace, IfNotExists bool
}

// ColumnDef is one declared column of CREATE [EXTERNAL] TABLE.
type ColumnDef struct {
	Name string
	Type arrow.DataType
}

// CreateView is CREATE [OR REPLACE] VIEW name [(cols)] AS select.
type CreateView struct {
	Name      string
	Columns   []string
	SQL       string // the SELECT text
	OrReplace bool
}

// Drop is DROP TABLE|VIEW [IF EXISTS] name.
type Drop struct {
	View     bool
	Name     string
	IfExists bool
}

// ShowTables is SHOW TABLES.
type ShowTables struct{}

// Describe is DESCRIBE name, or DESCRIBE query (DuckDB's): then Query is
// the bound query, whose output columns are described.
type Describe struct {
	Name  string
	Query *Query

	query *pg.SelectStmt // the query, parsed, before binding
	text  string         // its text as parsed
	orig  string         // its text as written
	ins   []insertion    // what the path rewrite inserted
	duck  *dialect       // the DuckDB constructs taken out (dialect.go)
	pos   position       // where it starts in the input
}

// Set is SET key = value (or SET key TO value).
type Set struct{ Key, Value string }

// Show is SHOW key; SHOW ALL has Key "all".
type Show struct{ Key string }

// ShowFunctions is SHOW FUNCTIONS.
type ShowFunctions struct{}

// Reset is RESET key, or RESET ALL (Key "all"): back to the session's
// defaults.
type Reset struct{ Key string }

func (*Query) bound()               {}
func (*Explain) bound()             {}
func (*CreateExternalTable) bound() {}
func (*CreateView) bound()          {}
func (*CreateTable) bound()         {}
func (*Drop) bound()                {}
func (*ShowTables) bound()          {}
func (*Describe) bound()            {}
func (*Set) bound()                 {}
func (*Show) bound()                {}
func (*ShowFunctions) bound()       {}
func (*Reset) bound()               {}
