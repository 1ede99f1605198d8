// Package testutil builds and renders the batches and Parquet files the
// tests of physical and its subpackages share.
package testutil

import (
	"fmt"
	"math"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// MakeBatch builds a batch from column values (nil = NULL). Values: int32,
// int64, float64, string, bool, decimal128 (as int64 unscaled), date32 and
// timestamp (as int32/int64).
func MakeBatch(t testing.TB, mem memory.Allocator, schema *arrow.Schema, cols ...[]any) arrow.RecordBatch {
	t.Helper()
	arrs := make([]arrow.Array, len(cols))
	n := 0
	for i, vals := range cols {
		n = len(vals)
		b := array.NewBuilder(mem, schema.Field(i).Type)
		for _, v := range vals {
			if v == nil {
				b.AppendNull()
				continue
			}
			switch bb := b.(type) {
			case *array.Int32Builder:
				bb.Append(int32(toInt(v)))
			case *array.Int64Builder:
				bb.Append(int64(toInt(v)))
			case *array.Date32Builder:
				bb.Append(arrow.Date32(toInt(v)))
			case *array.TimestampBuilder:
				bb.Append(arrow.Timestamp(toInt(v)))
			case *array.Float64Builder:
				bb.Append(v.(float64))
			case *array.StringBuilder:
				bb.Append(v.(string))
			case *array.BooleanBuilder:
				bb.Append(v.(bool))
			case *array.Decimal128Builder:
				bb.Append(decimal128.FromI64(int64(toInt(v))))
			default:
				t.Fatalf("MakeBatch: unsupported builder %T", b)
			}
		}
		arrs[i] = b.NewArray()
		b.Release()
	}
	rec := array.NewRecordBatch(schema, arrs, int64(n))
	for _, a := range arrs {
		a.Release()
	}
	return rec
}

func toInt(v any) int {
	switch x := v.(type) {
	case int:
		return x
	case int32:
		return int(x)
	case int64:
		return int(x)
	}
	panic(fmt.Sprintf("toInt(%T)", v))
}

// Cell returns a comparable Go value for row r of a.
func Cell(a arrow.Array, r int) any {
	if a.IsNull(r) || a.DataType().ID() == arrow.NULL {
		return nil
	}
	switch x := a.(type) {
	case *array.Int32:
		return int(x.Value(r))
	case *array.Int64:
		return int(x.Value(r))
	case *array.Date32:
		return int(x.Value(r))
	case *array.Timestamp:
		return int(x.Value(r))
	case *array.Float64:
		return x.Value(r)
	case *array.String:
		return x.Value(r)
	case *array.Boolean:
		return x.Value(r)
	case *array.Decimal128:
		return int(x.Value(r).LowBits())
	}
	return a.ValueStr(r)
}

// BatchRows converts b to rows of Go values.
func BatchRows(b arrow.RecordBatch) [][]any {
	rows := make([][]any, b.NumRows())
	for r := range rows {
		row := make([]any, b.NumCols())
		for c := range row {
			row[c] = Cell(b.Column(c), r)
		}
		rows[r] = row
	}
	return rows
}

// RowsString renders rows for comparison and error messages.
func RowsString(rows [][]any) string {
	var sb strings.Builder
	for _, r := range rows {
		fmt.Fprintln(&sb, r...)
	}
	return sb.String()
}

// SortedRowsString renders rows in a canonical order (for order-free checks).
func SortedRowsString(rows [][]any) string {
	lines := make([]string, len(rows))
	for i, r := range rows {
		lines[i] = fmt.Sprint(r...)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// WriteParquet writes rec (and releases it) as one row group of a new
// file at path, with the given writer properties.
func WriteParquet(t *testing.T, path string, rec arrow.RecordBatch, props ...parquet.WriterProperty) {
	t.Helper()
	WriteParquetArrow(t, path, rec, pqarrow.DefaultWriterProps(), props...)
}

// WriteParquetArrow is WriteParquet with Arrow writer properties too.
func WriteParquetArrow(t *testing.T, path string, rec arrow.RecordBatch, aprops pqarrow.ArrowWriterProperties, props ...parquet.WriterProperty) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	fw, err := pqarrow.NewFileWriter(rec.Schema(), f, parquet.NewWriterProperties(props...), aprops)
	if err != nil {
		t.Fatal(err)
	}
	if err := fw.Write(rec); err != nil {
		t.Fatal(err)
	}
	rec.Release()
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
}

// CellValue is row r of a as a comparable Go value (nil for NULL), the
// same for a value whatever width it is read at.
func CellValue(a arrow.Array, r int) any {
	if a.IsNull(r) {
		return nil
	}
	switch a := a.(type) {
	case *array.Int32:
		return int64(a.Value(r))
	case *array.Int64:
		return a.Value(r)
	case *array.Float32:
		return float64(a.Value(r))
	case *array.Float64:
		if math.IsNaN(a.Value(r)) {
			return "NaN"
		}
		return a.Value(r)
	case *array.Decimal128:
		return a.Value(r)
	case *array.Date32:
		return int64(a.Value(r))
	case *array.String:
		return a.Value(r)
	case *array.Boolean:
		return a.Value(r)
	case *array.Timestamp:
		// Read at microseconds, whatever unit the file stores.
		unit := a.DataType().(*arrow.TimestampType).Unit
		return int64(a.Value(r)) * map[arrow.TimeUnit]int64{arrow.Millisecond: 1000, arrow.Microsecond: 1}[unit]
	}
	return a.ValueStr(r)
}

// AllRowGroups lists the file's row groups.
func AllRowGroups(rdr *file.Reader) []int {
	groups := make([]int, rdr.NumRowGroups())
	for i := range groups {
		groups[i] = i
	}
	return groups
}

// OpenWithManifest opens the Parquet file at path (closed when the test
// ends) and its Arrow schema manifest.
func OpenWithManifest(t *testing.T, path string) (*file.Reader, *pqarrow.SchemaManifest) {
	t.Helper()
	rdr, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdr.Close() })
	m, err := pqarrow.NewSchemaManifest(rdr.MetaData().Schema, nil, &pqarrow.ArrowReadProperties{})
	if err != nil {
		t.Fatal(err)
	}
	return rdr, m
}

// NewParquetWriter creates path and returns a Parquet writer of schema on
// it, with the given properties; the caller writes and closes it.
func NewParquetWriter(t testing.TB, path string, schema *arrow.Schema, aprops pqarrow.ArrowWriterProperties, props ...parquet.WriterProperty) *pqarrow.FileWriter {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	fw, err := pqarrow.NewFileWriter(schema, f, parquet.NewWriterProperties(props...), aprops)
	if err != nil {
		f.Close()
		t.Fatal(err)
	}
	return fw
}
