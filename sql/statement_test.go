package sql

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"sluice/catalog"
	"sluice/plan"
)

func TestParseSplitsStatements(t *testing.T) {
	text := "-- header comment\nselect 1;\n\n  /* c */ select 'a;b'\n  from t;\nshow tables;\n-- trailing comment\n"
	stmts, err := Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		sql  string
		line int
	}{
		{"select 1", 2},
		{"select 'a;b'\n  from t", 4},
		{"show tables", 6},
	}
	if len(stmts) != len(want) {
		t.Fatalf("got %d statements, want %d", len(stmts), len(want))
	}
	for i, w := range want {
		if stmts[i].SQL != w.sql || stmts[i].Line != w.line {
			t.Errorf("statement %d: got %q at line %d, want %q at line %d", i, stmts[i].SQL, stmts[i].Line, w.sql, w.line)
		}
	}
}

func TestBindStatements(t *testing.T) {
	tests := []struct {
		sql  string
		want Bound
	}{
		{"CREATE EXTERNAL TABLE lineitem STORED AS PARQUET LOCATION '/data/lineitem/'",
			&CreateExternalTable{Name: "lineitem", Format: "parquet", Delimiter: ',', Location: "/data/lineitem/"}},
		{"create external table if not exists Foo (a int, b bigint not null, c double precision, d decimal(15,2), e varchar(10), f char(1), g text, h date, i timestamp, j boolean, k string, l numeric(5), m real, n smallint)\n stored as csv with header row delimiter '|' location 'x.csv'",
			&CreateExternalTable{Name: "foo", Format: "csv", Header: true, Delimiter: '|', Location: "x.csv", IfNotExists: true, Columns: []ColumnDef{
				{"a", plan.Int32}, {"b", plan.Int64}, {"c", plan.Float64}, {"d", plan.Decimal(15, 2)}, {"e", plan.Utf8}, {"f", plan.Utf8},
				{"g", plan.Utf8}, {"h", plan.Date32}, {"i", plan.Timestamp}, {"j", plan.Bool}, {"k", plan.Utf8}, {"l", plan.Decimal(5, 0)},
				{"m", plan.Float64}, {"n", plan.Int32}}}},
		{"create or replace external table t2 stored as csv location 'y' options ('format.has_header' 'true', 'format.delimiter' ';')",
			&CreateExternalTable{Name: "t2", Format: "csv", Header: true, Delimiter: ';', Location: "y", OrReplace: true}},
		{"describe lineitem", &Describe{Name: "lineitem"}},
		{"DESC t", &Describe{Name: "t"}},
		{"show tables", &ShowTables{}},
		{"show all", &Show{Key: "all"}},
		{"SHOW execution.target_partitions", &Show{Key: "execution.target_partitions"}},
		{"set execution.target_partitions = 4", &Set{Key: "execution.target_partitions", Value: "4"}},
		{"SET Datafusion.Execution.Batch_Size TO 8192", &Set{Key: "datafusion.execution.batch_size", Value: "8192"}},
		{"set x.y = 'abc'", &Set{Key: "x.y", Value: "abc"}},
		{"drop view if exists v", &Drop{View: true, Name: "v", IfExists: true}},
		{"drop table lineitem", &Drop{Name: "lineitem"}},
		{"create or replace view v (x, y) as select a, s from t where a > 1",
			&CreateView{Name: "v", Columns: []string{"x", "y"}, SQL: "select a, s from t where a > 1", OrReplace: true}},
		{"create view w as\n  select count(*) as n from t", &CreateView{Name: "w", SQL: "select count(*) as n from t"}},
	}
	cat := testCatalog(t)
	for _, tc := range tests {
		got, err := bindOne(t, cat, tc.sql)
		if err != nil {
			t.Errorf("%q: %v", tc.sql, err)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q:\ngot  %#v\nwant %#v", tc.sql, got, tc.want)
		}
	}
}

func TestFrontEndErrors(t *testing.T) {
	tests := []struct {
		sql       string
		line, col int
		near, msg string
	}{
		{"create external table t stored as orc location 'x'", 1, 35, "orc", "unsupported file format ORC"},
		{"create external table t (a int,\n  b blob) stored as csv location 'x'", 2, 5, "blob", "unknown type BLOB"},
		{"create external table t stored as csv", 1, 38, "", "missing LOCATION"},
		{"create external table t location 'x'", 1, 37, "", "missing STORED AS"},
		{"select 1;\ncreate external table t (a int b int) stored as csv location 'x'", 2, 32, "b", `expected ","`},
		{"create external table t stored as csv location 'x", 1, 48, "'x", "unterminated quoted string"},
		{"create external table t stored as csv delimiter 'ab' location 'x'", 1, 49, "'ab'", "single character"},
		{"describe", 1, 9, "", "expected table name"},
		{"describe insert into t values (1)", 1, 10, "insert", "DESCRIBE of INSERT is not supported"},
	}
	for _, tc := range tests {
		_, err := Parse(tc.sql)
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("%q: got error %v, want *Error", tc.sql, err)
			continue
		}
		if e.Kind != "syntax" || e.Line != tc.line || e.Column != tc.col || e.Near != tc.near || !strings.Contains(e.Msg, tc.msg) {
			t.Errorf("%q: got %s line=%d col=%d near=%q msg=%q; want line=%d col=%d near=%q msg~%q",
				tc.sql, e.Kind, e.Line, e.Column, e.Near, e.Msg, tc.line, tc.col, tc.near, tc.msg)
		}
	}
}

func TestDescribeUnknownTable(t *testing.T) {
	_, err := bindOne(t, testCatalog(t), "describe lineitm")
	var e *Error
	if !errors.As(err, &e) || e.Kind != "bind" || !strings.Contains(e.Hint, `"lineitem"`) {
		t.Fatalf("got %v, want bind error suggesting lineitem", err)
	}
}

func TestViews(t *testing.T) {
	cat := testCatalog(t)
	if err := cat.RegisterView(&catalog.View{Name: "v", SQL: "select a, s as name from t where a > 1", Columns: []string{"x"}}, false); err != nil {
		t.Fatal(err)
	}
	if err := cat.RegisterView(&catalog.View{Name: "vv", SQL: "select x, count(*) as n from v group by x"}, false); err != nil {
		t.Fatal(err)
	}
	if err := cat.RegisterView(&catalog.View{Name: "broken", SQL: "select nope from t"}, false); err != nil {
		t.Fatal(err)
	}
	b, err := bindOne(t, cat, "select v1.x, v2.name, vv.n from v v1 join v v2 on v1.x = v2.x join vv on vv.x = v1.x")
	if err != nil {
		t.Fatal(err)
	}
	q := b.(*Query)
	checkUniqueIDs(t, q.Plan)
	checkGolden(t, "views", formatQuery(q))

	_, err = bindOne(t, cat, "select * from broken")
	var e *Error
	if !errors.As(err, &e) || !strings.Contains(e.Msg, `in view "broken"`) || !strings.Contains(e.Msg, `column "nope" does not exist`) {
		t.Fatalf("got %v, want error inside view", err)
	}
	// A view that refers to itself fails instead of recursing forever.
	if err := cat.RegisterView(&catalog.View{Name: "loop", SQL: "select * from loop"}, false); err != nil {
		t.Fatal(err)
	}
	if _, err := bindOne(t, cat, "select * from loop"); err == nil || !strings.Contains(err.Error(), "nested too deeply") {
		t.Fatalf("got %v, want nesting error", err)
	}
	// Views that read a view four times multiply: d6 expands 5460 views,
	// d7 21844, more than a statement may (d20 would be a trillion).
	if err := cat.RegisterView(&catalog.View{Name: "d0", SQL: "select a from t"}, false); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 7; i++ {
		p := fmt.Sprintf("d%d", i-1)
		q := fmt.Sprintf("select w.a from %s w, %s x, %s y, %s z", p, p, p, p)
		if err := cat.RegisterView(&catalog.View{Name: fmt.Sprintf("d%d", i), SQL: q}, false); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := bindOne(t, cat, "select count(*) from d6"); err != nil {
		t.Fatalf("d6: %v", err)
	}
	if _, err := bindOne(t, cat, "select count(*) from d7"); err == nil || !strings.Contains(err.Error(), "the statement expands views more than 10000 times") {
		t.Fatalf("d7: got %v, want the expansion limit", err)
	}
}

func TestExplain(t *testing.T) {
	b, err := bindOne(t, testCatalog(t), "explain select a from t")
	if err != nil {
		t.Fatal(err)
	}
	e, ok := b.(*Explain)
	if !ok || e.Query == nil || !reflect.DeepEqual(e.Query.Names, []string{"a"}) {
		t.Fatalf("got %#v", b)
	}
}

func TestExplainAnalyze(t *testing.T) {
	tests := []struct {
		sql     string
		analyze bool
	}{
		{"explain analyze select a from t", true},
		{"EXPLAIN (ANALYZE) select a from t", true},
		{"explain (analyze true) select a from t", true},
		{"explain (analyze on) select a from t", true},
		{"explain (analyze off) select a from t", false},
		{"explain (analyze 0) select a from t", false},
	}
	for _, tt := range tests {
		b, err := bindOne(t, testCatalog(t), tt.sql)
		if err != nil {
			t.Fatalf("%s: %v", tt.sql, err)
		}
		e, ok := b.(*Explain)
		if !ok || e.Query == nil || e.Analyze != tt.analyze {
			t.Errorf("%s: got %#v, want analyze=%v", tt.sql, b, tt.analyze)
		}
	}
}

// TestExplainWrite: EXPLAIN of COPY and CREATE TABLE ... STORED AS (which
// PostgreSQL's grammar does not explain) binds the write; errors keep the
// positions of the user's text; EXPLAIN ANALYZE of a write is refused.
func TestExplainWrite(t *testing.T) {
	for _, q := range []string{
		"explain copy (select a from t) to '/tmp/x' (format parquet)",
		"EXPLAIN\n  COPY t TO '/tmp/x'",
		"explain create table n stored as csv location '/tmp/x' as select a from t",
	} {
		b, err := bindOne(t, testCatalog(t), q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if e, ok := b.(*Explain); !ok || e.Write == nil || e.Query != nil || e.Write.Location != "/tmp/x" {
			t.Errorf("%s: got %#v", q, b)
		}
	}
	_, err := bindOne(t, testCatalog(t), "explain copy (select nosuch from t) to '/tmp/x'")
	var se *Error
	if !errors.As(err, &se) || se.Line != 1 || se.Column != 22 {
		t.Errorf("error %#v: want one at line 1, column 22", err)
	}
	for _, q := range []string{
		"explain analyze copy t to '/tmp/x'",
		"explain analyze create table n stored as csv location '/tmp/x' as select a from t",
	} {
		if _, err := bindOne(t, testCatalog(t), q); err == nil || !strings.Contains(err.Error(), "EXPLAIN ANALYZE of a write") {
			t.Errorf("%s: %v, want a refusal", q, err)
		}
	}
}

// TestNullability checks that outer joins make the inner side nullable and
// NOT NULL source columns stay NOT NULL.
func TestNullability(t *testing.T) {
	cat := testCatalog(t)
	tests := []struct {
		sql  string
		want []bool
	}{
		{"select n_name, r_name from nation left join region on n_regionkey = r_regionkey", []bool{false, true}},
		{"select n_name, r_name from nation right join region on n_regionkey = r_regionkey", []bool{true, false}},
		{"select n_name, r_name from nation full join region on n_regionkey = r_regionkey", []bool{true, true}},
		{"select n_name, r_name, n_nationkey + 1 from nation join region on n_regionkey = r_regionkey", []bool{false, false, false}},
		{"select count(*), sum(n_nationkey) from nation", []bool{false, true}},
		{"select a, coalesce(a, 0) from t", []bool{true, false}},
	}
	for _, tc := range tests {
		b, err := bindOne(t, cat, tc.sql)
		if err != nil {
			t.Fatalf("%q: %v", tc.sql, err)
		}
		var got []bool
		for _, c := range b.(*Query).Plan.Schema() {
			got = append(got, c.Nullable)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q: nullable %v, want %v", tc.sql, got, tc.want)
		}
	}
}
