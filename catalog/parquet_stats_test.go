package catalog

import (
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
)

// TestIntRangeOfDecimals: a decimal column's range is its footers' unscaled
// minimum and maximum, whether the writer stored the decimals as integers
// (as DuckDB does) or as fixed-length bytes (arrow-go's default), while its
// distinct count stays unknown (the range counts the scale's steps); an
// integer column keeps both.
func TestIntRangeOfDecimals(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "p", Type: &arrow.Decimal128Type{Precision: 7, Scale: 2}, Nullable: true},
		{Name: "n", Type: arrow.PrimitiveTypes.Int64},
	}, nil)
	for _, tc := range []struct {
		name  string
		props *parquet.WriterProperties
	}{
		{"as integers", parquet.NewWriterProperties(parquet.WithStoreDecimalAsInteger(true))},
		{"as fixed-length bytes", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
			defer b.Release()
			p := b.Field(0).(*array.Decimal128Builder)
			for _, v := range []int64{500, -1234, 20000} {
				p.Append(decimal128.FromI64(v))
			}
			p.AppendNull()
			b.Field(1).(*array.Int64Builder).AppendValues([]int64{7, 3, 9, 4}, nil)
			rec := b.NewRecordBatch()
			defer rec.Release()
			path := filepath.Join(t.TempDir(), "d.parquet")
			writeParquet(t, path, rec, tc.props)
			tbl, err := OpenParquet(path)
			if err != nil {
				t.Fatal(err)
			}
			if lo, hi, ok := tbl.IntRange(0); !ok || lo != -1234 || hi != 20000 {
				t.Errorf("decimal IntRange = %d, %d, %v; want -1234, 20000, true", lo, hi, ok)
			}
			if n := tbl.DistinctCount(0); n != -1 {
				t.Errorf("decimal DistinctCount = %d, want -1", n)
			}
			if lo, hi, ok := tbl.IntRange(1); !ok || lo != 3 || hi != 9 {
				t.Errorf("integer IntRange = %d, %d, %v; want 3, 9, true", lo, hi, ok)
			}
			if n := tbl.DistinctCount(1); n != 4 {
				t.Errorf("integer DistinctCount = %d, want 4 (7 values in range, 4 rows)", n)
			}
		})
	}
}
