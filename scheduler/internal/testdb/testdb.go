// Package testdb writes small TPC-H-shaped Parquet tables for the
// scheduler's tests: enough rows and statistics for the optimizer to pick
// realistic join orders, small enough to write in milliseconds.
package testdb

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"sluice/catalog"
)

type column struct {
	name string
	typ  arrow.DataType
	val  func(i int) any
}

type table struct {
	name string
	rows int
	cols []column
}

func i64(f func(i int) int) func(int) any { return func(i int) any { return int64(f(i)) } }

var (
	int64T = arrow.PrimitiveTypes.Int64
	f64T   = arrow.PrimitiveTypes.Float64
	strT   = arrow.BinaryTypes.String
	dateT  = arrow.FixedWidthTypes.Date32
)

// date is a day in 1992-1998, as days since the epoch.
func date(i int) any { return arrow.Date32(8036 + (i*37)%2500) }

var tables = []table{
	{"region", 5, []column{
		{"r_regionkey", int64T, i64(func(i int) int { return i })},
		{"r_name", strT, func(i int) any {
			return []string{"AFRICA", "AMERICA", "ASIA", "EUROPE", "MIDDLE EAST"}[i]
		}},
	}},
	{"nation", 25, []column{
		{"n_nationkey", int64T, i64(func(i int) int { return i })},
		{"n_name", strT, func(i int) any { return fmt.Sprintf("NATION%02d", i) }},
		{"n_regionkey", int64T, i64(func(i int) int { return i % 5 })},
	}},
	{"supplier", 40, []column{
		{"s_suppkey", int64T, i64(func(i int) int { return i })},
		{"s_name", strT, func(i int) any { return fmt.Sprintf("Supplier#%03d", i) }},
		{"s_nationkey", int64T, i64(func(i int) int { return (i * 7) % 25 })},
		{"s_acctbal", f64T, func(i int) any { return float64(i*113%10000) / 10 }},
	}},
	{"customer", 300, []column{
		{"c_custkey", int64T, i64(func(i int) int { return i })},
		{"c_name", strT, func(i int) any { return fmt.Sprintf("Customer#%04d", i) }},
		{"c_nationkey", int64T, i64(func(i int) int { return (i * 3) % 25 })},
		{"c_mktsegment", strT, func(i int) any {
			return []string{"AUTOMOBILE", "BUILDING", "FURNITURE", "HOUSEHOLD", "MACHINERY"}[i%5]
		}},
	}},
	{"orders", 3000, []column{
		{"o_orderkey", int64T, i64(func(i int) int { return i })},
		{"o_custkey", int64T, i64(func(i int) int { return (i * 17) % 300 })},
		{"o_orderdate", dateT, date},
		{"o_shippriority", int64T, i64(func(i int) int { return 0 })},
		{"o_totalprice", f64T, func(i int) any { return float64(i*7919%500000) / 100 }},
	}},
	{"lineitem", 12000, []column{
		{"l_orderkey", int64T, i64(func(i int) int { return i / 4 })},
		{"l_suppkey", int64T, i64(func(i int) int { return (i * 13) % 40 })},
		{"l_quantity", f64T, func(i int) any { return float64(1 + i%50) }},
		{"l_extendedprice", f64T, func(i int) any { return float64(i*104729%1000000) / 100 }},
		{"l_discount", f64T, func(i int) any { return float64(i%11) / 100 }},
		{"l_shipdate", dateT, func(i int) any { return arrow.Date32(8036 + (i/4*37)%2500 + i%4*9) }},
		{"l_returnflag", strT, func(i int) any { return []string{"A", "N", "R"}[i%3] }},
	}},
}

// Catalog writes every table under a temporary directory and returns a
// catalog with them registered.
func Catalog(t testing.TB) *catalog.Catalog {
	t.Helper()
	dir := t.TempDir()
	cat := catalog.New()
	for _, tb := range tables {
		path := filepath.Join(dir, tb.name+".parquet")
		if err := write(path, tb); err != nil {
			t.Fatalf("write %s: %v", tb.name, err)
		}
		pt, err := catalog.OpenParquet(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := cat.RegisterTable(tb.name, pt, false); err != nil {
			t.Fatal(err)
		}
	}
	return cat
}

// write stores the table with two row groups, so scans have row groups to
// split.
func write(path string, tb table) error {
	fields := make([]arrow.Field, len(tb.cols))
	for i, c := range tb.cols {
		fields[i] = arrow.Field{Name: c.name, Type: c.typ, Nullable: false}
	}
	schema := arrow.NewSchema(fields, nil)
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fw, err := pqarrow.NewFileWriter(schema, f, parquet.NewWriterProperties(parquet.WithStats(true)), pqarrow.DefaultWriterProps())
	if err != nil {
		return err
	}
	half := (tb.rows + 1) / 2
	for start := 0; start < tb.rows; start += half {
		rec := build(schema, tb, start, min(start+half, tb.rows))
		if start > 0 {
			if err := fw.NewRowGroupChecked(); err != nil {
				rec.Release()
				return err
			}
		}
		err := fw.WriteBuffered(rec)
		rec.Release()
		if err != nil {
			return err
		}
	}
	return fw.Close()
}

func build(schema *arrow.Schema, tb table, from, to int) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for ci, c := range tb.cols {
		for i := from; i < to; i++ {
			switch v := c.val(i).(type) {
			case int64:
				b.Field(ci).(*array.Int64Builder).Append(v)
			case float64:
				b.Field(ci).(*array.Float64Builder).Append(v)
			case string:
				b.Field(ci).(*array.StringBuilder).Append(v)
			case arrow.Date32:
				b.Field(ci).(*array.Date32Builder).Append(v)
			default:
				panic(fmt.Sprintf("testdb: unsupported value %T", v))
			}
		}
	}
	return b.NewRecordBatch()
}
