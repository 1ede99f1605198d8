package sql

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// TestBindWrites checks what COPY and CREATE TABLE AS carry besides their
// query (the query's binding is the binder's, tested elsewhere).
func TestBindWrites(t *testing.T) {
	tests := []struct {
		sql   string
		want  Write
		names []string
	}{
		{"COPY (SELECT n_nationkey, n_name FROM nation) TO '/out/n' (FORMAT parquet, PARTITION_BY (n_name), OVERWRITE true)",
			Write{Kind: WriteCopy, Location: "/out/n", Format: "parquet", Header: true, Delimiter: ',', PartitionBy: []string{"n_name"}, Overwrite: true},
			[]string{"n_nationkey", "n_name"}},
		{"copy region (r_name, r_regionkey) to 'rel/dir' (format csv, header false, delimiter '|')",
			Write{Kind: WriteCopy, Location: "rel/dir", Format: "csv", Delimiter: '|'},
			[]string{"r_name", "r_regionkey"}},
		{"COPY region TO '/r' (FORMAT 'csv', PARTITION_BY r_name)",
			Write{Kind: WriteCopy, Location: "/r", Format: "csv", Header: true, Delimiter: ',', PartitionBy: []string{"r_name"}},
			[]string{"r_regionkey", "r_name", "r_comment"}},
		{"create or replace table Big stored as csv delimiter ';' partitioned by (k) location '/b' as select n_regionkey as k, count(*) as n from nation group by 1",
			Write{Kind: WriteCreate, Location: "/b", Format: "csv", Header: true, Delimiter: ';', PartitionBy: []string{"k"}, Table: "big", OrReplace: true},
			[]string{"k", "n"}},
		{"create table o stored as csv options ('has_header' 'false', 'overwrite' 'true', delimiter '|') location '/o' as select 1 as one",
			Write{Kind: WriteCreate, Location: "/o", Format: "csv", Delimiter: '|', Table: "o", Overwrite: true},
			[]string{"one"}},
		{"CREATE TABLE IF NOT EXISTS nation STORED AS PARQUET LOCATION '/n'\n  AS (SELECT 1 AS one)",
			Write{Kind: WriteCreate, Location: "/n", Format: "parquet", Header: true, Delimiter: ',', Table: "nation", IfNotExists: true},
			[]string{"one"}},
		{"CREATE TABLE plain AS SELECT 1 AS x",
			Write{Kind: WriteCreate, Format: "parquet", Header: true, Delimiter: ',', Table: "plain", Managed: true},
			[]string{"x"}},
		{"create or replace table Plain stored as csv as select 1 as x",
			Write{Kind: WriteCreate, Format: "csv", Header: true, Delimiter: ',', Table: "plain", Managed: true, OrReplace: true},
			[]string{"x"}},
	}
	cat := testCatalog(t)
	for _, tc := range tests {
		got, err := bindOne(t, cat, tc.sql)
		if err != nil {
			t.Errorf("%q: %v", tc.sql, err)
			continue
		}
		w, ok := got.(*Write)
		if !ok {
			t.Errorf("%q: got %T", tc.sql, got)
			continue
		}
		if !reflect.DeepEqual(w.Query.Names, tc.names) {
			t.Errorf("%q: columns %v, want %v", tc.sql, w.Query.Names, tc.names)
		}
		w.Query = nil
		if !reflect.DeepEqual(*w, tc.want) {
			t.Errorf("%q:\ngot  %+v\nwant %+v", tc.sql, *w, tc.want)
		}
	}
}

func TestWriteErrors(t *testing.T) {
	tests := []struct{ sql, msg string }{
		{"COPY nation TO STDOUT", "COPY TO STDOUT is not supported"},
		{"COPY nation FROM '/x'", "is not backed by Parquet or CSV files"},
		{"COPY nation FROM STDIN", "COPY FROM takes a file path"},
		{"COPY nation TO '/x' (FORMAT orc)", `COPY format "orc" is not supported`},
		{"COPY nation TO '/x' (COMPRESSION zstd)", "COPY option COMPRESSION is not supported"},
		{"COPY nation TO '/x' (HEADER maybe)", "takes a boolean"},
		{"COPY nation TO '/x' (PARTITION_BY (nope))", `PARTITION_BY column "nope" is not a column`},
		{"COPY nation TO '/x' (PARTITION_BY (n_name, n_name))", "PARTITION_BY names column \"n_name\" twice"},
		{"COPY (SELECT INTERVAL '1 day' AS i) TO '/x'", "INTERVAL"},
		{"COPY (SELECT NULL AS n) TO '/x'", "has no type"},
		{"CREATE TABLE nation STORED AS PARQUET LOCATION '/n' AS SELECT 1 AS x", `table "nation" already exists`},
		{"CREATE TABLE t AS SELECT 1", `table "t" already exists`},
		{`CREATE TABLE "a/b" AS SELECT 1`, "holds a path separator"},
		{`CREATE TABLE "x..y" (a int)`, `holds ".."`},
		{`CREATE TABLE ".." AS SELECT 1`, "cannot name a directory"},
		{"CREATE TABLE t (a interval)", "INTERVAL"},
		{"CREATE TABLE t OPTIONS ('overwrite' 'true') AS SELECT 1", "overwrite needs a LOCATION"},
		{"CREATE TEMPORARY TABLE t (a int)", "this form of CREATE TABLE is not supported"},
		{"INSERT INTO nation VALUES (1)", "not backed by Parquet or CSV files"},
		{"INSERT INTO nosuch VALUES (1)", `table "nosuch" does not exist`},
	}
	cat := testCatalog(t)
	for _, tc := range tests {
		_, err := bindOne(t, cat, tc.sql)
		var e *Error
		if !errors.As(err, &e) || !strings.Contains(e.Msg, tc.msg) {
			t.Errorf("%q: got %v, want an error containing %q", tc.sql, err, tc.msg)
		}
	}
}

func TestCreateTableAsParseErrors(t *testing.T) {
	tests := []struct {
		sql       string
		line, col int
		msg       string
	}{
		{"create table t stored as parquet location 'x' partitioned", 1, 58, "expected BY"},
		{"create table t (a int) as select 1", 1, 24, "takes no column types"},
		{"create table t (a int) stored as csv", 1, 37, "missing LOCATION"},
		{"create table t (a int) partitioned by (a) location 'x'", 1, 24, "expected STORED AS, WITH HEADER ROW, DELIMITER or LOCATION"},
		{"create table t (a int, a text)", 1, 24, `duplicate column "a"`},
		{"create table t (a nosuchtype)", 1, 19, "unknown type NOSUCHTYPE"},
		{"create or replace table if not exists t (a int)", 1, 39, "cannot also say IF NOT EXISTS"},
		{"create table t stored as orc location 'x' as select 1", 1, 26, "unsupported file format ORC"},
		{"create table t stored as csv location 'x' as\n  select from from", 2, 15, "syntax error"},
		{"create table t stored as csv location 'x'", 1, 42, "expected (columns) or AS query"},
	}
	for _, tc := range tests {
		_, err := Parse(tc.sql)
		var e *Error
		if !errors.As(err, &e) || e.Line != tc.line || e.Column != tc.col || !strings.Contains(e.Msg, tc.msg) {
			t.Errorf("%q: got %v (line %d col %d), want line %d col %d, %q", tc.sql, err, lineOf(e), colOf(e), tc.line, tc.col, tc.msg)
		}
	}
}

// TestBindCreateTable checks CREATE TABLE name (columns): an empty managed
// table of the declared columns, nullable whatever they say.
func TestBindCreateTable(t *testing.T) {
	cat := testCatalog(t)
	got, err := bindOne(t, cat, "CREATE TABLE IF NOT EXISTS Events (id BIGINT NOT NULL, Name varchar(20), amount decimal(10, 2), at timestamp, ok boolean)")
	if err != nil {
		t.Fatal(err)
	}
	c, ok := got.(*CreateTable)
	if !ok {
		t.Fatalf("got %T, want *CreateTable", got)
	}
	if c.Name != "events" || !c.IfNotExists || c.OrReplace {
		t.Errorf("got %+v", c)
	}
	ext, err := bindOne(t, cat, "create or replace table logs (line text) stored as csv location '/var/logs'")
	if err != nil {
		t.Fatal(err)
	}
	if e, ok := ext.(*CreateExternalTable); !ok || e.Name != "logs" || e.Format != "csv" || e.Location != "/var/logs" || !e.OrReplace || len(e.Columns) != 1 {
		t.Errorf("CREATE TABLE (columns) LOCATION: got %#v", ext)
	}
	var cols []string
	for _, col := range c.Columns {
		cols = append(cols, col.Name+" "+col.Type.String())
	}
	want := "id int64, name utf8, amount decimal(10, 2), at timestamp[us], ok bool"
	if strings.Join(cols, ", ") != want {
		t.Errorf("columns %s, want %s", strings.Join(cols, ", "), want)
	}
}

func lineOf(e *Error) int {
	if e == nil {
		return 0
	}
	return e.Line
}

func colOf(e *Error) int {
	if e == nil {
		return 0
	}
	return e.Column
}
