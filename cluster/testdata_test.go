package cluster

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

// Small orders-like and lineitem-like tables, written as several Parquet
// files of two row groups each so scans split into many partitions.
// Values are integers and strings: sums must come out the same however
// the cluster orders the additions.
const (
	testOrders   = 10_000
	testLineitem = 50_000
)

type testColumn struct {
	name string
	typ  arrow.DataType
	val  func(i int) any
}

type testTable struct {
	name  string
	rows  int
	files int
	cols  []testColumn
}

var testTables = []testTable{
	{"orders", testOrders, 2, []testColumn{
		{"o_orderkey", arrow.PrimitiveTypes.Int64, func(i int) any { return int64(i) }},
		{"o_custkey", arrow.PrimitiveTypes.Int64, func(i int) any { return int64(i * 17 % 997) }},
		{"o_status", arrow.BinaryTypes.String, func(i int) any { return []string{"F", "O", "P"}[i*7%3] }},
		{"o_orderdate", arrow.FixedWidthTypes.Date32, func(i int) any { return arrow.Date32(8036 + i*37%2500) }},
	}},
	{"lineitem", testLineitem, 4, []testColumn{
		{"l_orderkey", arrow.PrimitiveTypes.Int64, func(i int) any { return int64(i / 5) }},
		{"l_quantity", arrow.PrimitiveTypes.Int64, func(i int) any { return int64(1 + i%50) }},
		{"l_price", arrow.PrimitiveTypes.Int64, func(i int) any { return int64(i * 104729 % 1_000_000) }},
		{"l_flag", arrow.BinaryTypes.String, func(i int) any { return []string{"A", "N", "R"}[i%3] }},
	}},
}

// writeTestTables writes the tables under dir/<table>/ and returns a
// catalog with them registered.
func writeTestTables(t testing.TB, dir string) *catalog.Catalog {
	t.Helper()
	cat := catalog.New()
	for _, tb := range testTables {
		tdir := filepath.Join(dir, tb.name)
		if err := os.MkdirAll(tdir, 0o755); err != nil {
			t.Fatal(err)
		}
		per := (tb.rows + tb.files - 1) / tb.files
		for f := 0; f < tb.files; f++ {
			path := filepath.Join(tdir, fmt.Sprintf("part-%d.parquet", f))
			if err := writeParquet(path, tb, f*per, min((f+1)*per, tb.rows)); err != nil {
				t.Fatalf("writing %s: %v", path, err)
			}
		}
		pt, err := catalog.OpenParquet(tdir)
		if err != nil {
			t.Fatal(err)
		}
		if err := cat.RegisterTable(tb.name, pt, false); err != nil {
			t.Fatal(err)
		}
	}
	return cat
}

// writeParquet writes rows [from, to) of tb in two row groups.
func writeParquet(path string, tb testTable, from, to int) error {
	fields := make([]arrow.Field, len(tb.cols))
	for i, c := range tb.cols {
		fields[i] = arrow.Field{Name: c.name, Type: c.typ}
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
	half := (to - from + 1) / 2
	for start := from; start < to; start += half {
		if start > from {
			if err := fw.NewRowGroupChecked(); err != nil {
				return err
			}
		}
		rec := buildRows(schema, tb, start, min(start+half, to))
		err := fw.WriteBuffered(rec)
		rec.Release()
		if err != nil {
			return err
		}
	}
	return fw.Close()
}

func buildRows(schema *arrow.Schema, tb testTable, from, to int) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for ci, c := range tb.cols {
		for i := from; i < to; i++ {
			switch v := c.val(i).(type) {
			case int64:
				b.Field(ci).(*array.Int64Builder).Append(v)
			case string:
				b.Field(ci).(*array.StringBuilder).Append(v)
			case arrow.Date32:
				b.Field(ci).(*array.Date32Builder).Append(v)
			default:
				panic(fmt.Sprintf("unsupported test value %T", v))
			}
		}
	}
	return b.NewRecordBatch()
}
