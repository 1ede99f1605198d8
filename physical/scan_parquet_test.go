package physical

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	pqcol "sluice/physical/datasource/parquet"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"sluice/catalog"
	"sluice/physical/expr"
	"sluice/physical/internal/testutil"
	"sluice/physical/kernels"
	"sluice/physical/mempool"
	"sluice/plan"
)

// testParquetSchema is the schema of the files the Parquet tests write.
var testParquetSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "price", Type: &arrow.Decimal128Type{Precision: 12, Scale: 2}},
	{Name: "day", Type: arrow.FixedWidthTypes.Date32},
	{Name: "score", Type: arrow.PrimitiveTypes.Float64},
	{Name: "qty", Type: arrow.PrimitiveTypes.Int32},
}, nil)

// testParquetBatch builds rows [lo, hi): id=i, name="n%03d" (NULL when
// i%10 == 9), price=i.50, day=i, score=i/2, qty=i%7.
func testParquetBatch(lo, hi int) arrow.RecordBatch {
	mem := memory.NewGoAllocator()
	b := array.NewRecordBuilder(mem, testParquetSchema)
	defer b.Release()
	for i := lo; i < hi; i++ {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		if i%10 == 9 {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.StringBuilder).Append(padName(i))
		}
		b.Field(2).(*array.Decimal128Builder).Append(decimal128.FromI64(int64(i*100 + 50)))
		b.Field(3).(*array.Date32Builder).Append(arrow.Date32(i))
		b.Field(4).(*array.Float64Builder).Append(float64(i) / 2)
		b.Field(5).(*array.Int32Builder).Append(int32(i % 7))
	}
	return b.NewRecordBatch()
}

func padName(i int) string {
	s := "000" + itoa(i)
	return "n" + s[len(s)-3:]
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var d []byte
	for ; i > 0; i /= 10 {
		d = append([]byte{byte('0' + i%10)}, d...)
	}
	return string(d)
}

// writeParquet writes one row group per [lo, hi) range.
func writeParquet(t *testing.T, path string, schema *arrow.Schema, batches ...arrow.RecordBatch) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	fw, err := pqarrow.NewFileWriter(schema, f, parquet.NewWriterProperties(parquet.WithStats(true)), pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	for i, rec := range batches {
		if i > 0 {
			if err := fw.NewRowGroupChecked(); err != nil {
				t.Fatal(err)
			}
		}
		if err := fw.WriteBuffered(rec); err != nil {
			t.Fatal(err)
		}
		rec.Release()
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
}

// writeTestTable writes dir/a.parquet (rows 0-99, 100-199 as two row
// groups) and dir/sub/b.parquet (rows 200-299).
func writeTestTable(t *testing.T) string {
	dir := t.TempDir()
	writeParquet(t, filepath.Join(dir, "a.parquet"), testParquetSchema, testParquetBatch(0, 100), testParquetBatch(100, 200))
	writeParquet(t, filepath.Join(dir, "sub", "b.parquet"), testParquetSchema, testParquetBatch(200, 300))
	return dir
}

func testTaskContext(mem memory.Allocator, batchSize int) *TaskContext {
	return &TaskContext{Alloc: mem, Memory: mempool.NewPool("test", 0, nil), BatchSize: batchSize}
}

// drain reads a whole partition, checking every batch has the operator's
// schema, and returns the batches (caller releases).
func drainPartition(t *testing.T, op Operator, p int, tc *TaskContext) []arrow.RecordBatch {
	t.Helper()
	s, err := op.Execute(context.Background(), p, tc)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var out []arrow.RecordBatch
	for {
		b, err := s.Next(context.Background())
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if !b.Schema().Equal(op.Schema()) {
			t.Fatalf("batch schema %s, operator schema %s", b.Schema(), op.Schema())
		}
		if b.NumRows() == 0 {
			t.Fatalf("empty batch")
		}
		out = append(out, b)
	}
}

// int64Column collects column c (int64) of batches.
func int64Column(bs []arrow.RecordBatch, c int) []int64 {
	var out []int64
	for _, b := range bs {
		out = append(out, b.Column(c).(*array.Int64).Int64Values()...)
	}
	return out
}

func TestOpenParquet(t *testing.T) {
	dir := writeTestTable(t)
	tbl, err := catalog.OpenParquet(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(tbl.Files) != 2 || tbl.NumRowGroups() != 3 {
		t.Fatalf("files=%d rowGroups=%d, want 2 and 3", len(tbl.Files), tbl.NumRowGroups())
	}
	if st := tbl.Statistics(); st.NumRows != 300 || st.TotalBytes <= 0 {
		t.Fatalf("statistics %+v", st)
	}
	if !tbl.Schema().Equal(testParquetSchema) {
		t.Fatalf("schema %s, want %s", tbl.Schema(), testParquetSchema)
	}
	rg := tbl.Files[0].RowGroups[1]
	want := []catalog.ColumnStats{
		{HasMinMax: true, Min: int64(100), Max: int64(199), NullCount: 0},
		{HasMinMax: true, Min: "n100", Max: "n198", NullCount: 10},
		{HasMinMax: true, Min: decimal128.FromI64(10050), Max: decimal128.FromI64(19950), NullCount: 0},
		{HasMinMax: true, Min: int32(100), Max: int32(199), NullCount: 0},
		{HasMinMax: true, Min: 50.0, Max: 99.5, NullCount: 0},
		{HasMinMax: true, Min: int32(0), Max: int32(6), NullCount: 0},
	}
	for i, w := range want {
		if got := rg.Columns[i]; got != w {
			t.Errorf("column %d stats %+v, want %+v", i, got, w)
		}
	}

	if _, err := catalog.OpenParquet(filepath.Join(dir, "missing.parquet")); err == nil {
		t.Errorf("missing path: no error")
	}
	other := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int32}}, nil)
	mb := array.NewRecordBuilder(memory.NewGoAllocator(), other)
	mb.Field(0).(*array.Int32Builder).Append(1)
	writeParquet(t, filepath.Join(dir, "z.parquet"), other, mb.NewRecordBatch())
	mb.Release()
	_, err = catalog.OpenParquet(dir)
	if err == nil || !strings.Contains(err.Error(), "a.parquet") || !strings.Contains(err.Error(), "z.parquet") {
		t.Errorf("mismatched schemas: error %v, want one naming both files", err)
	}
}

func TestParquetScanProjection(t *testing.T) {
	dir := writeTestTable(t)
	tbl, err := catalog.OpenParquet(dir)
	if err != nil {
		t.Fatal(err)
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)

	scan := NewParquetScan("t", tbl, []int{1, 0, 2}, nil, 1)
	if got := fieldNames(scan.Schema()); got != "name, id, price" {
		t.Fatalf("schema %s", got)
	}
	bs := drainPartition(t, scan, 0, testTaskContext(mem, 64))
	defer kernels.ReleaseAll(bs)
	ids := int64Column(bs, 1)
	if len(ids) != 300 {
		t.Fatalf("%d rows, want 300", len(ids))
	}
	i := 0
	for _, b := range bs {
		if b.NumRows() > 64 {
			t.Errorf("batch of %d rows exceeds the batch size", b.NumRows())
		}
		names := b.Column(0).(*array.String)
		prices := b.Column(2).(*array.Decimal128)
		for r := 0; r < int(b.NumRows()); r, i = r+1, i+1 {
			id := int(ids[i])
			if id != i {
				t.Fatalf("row %d has id %d", i, id)
			}
			if wantNull := id%10 == 9; names.IsNull(r) != wantNull || (!wantNull && names.Value(r) != padName(id)) {
				t.Fatalf("row %d: name %q null=%v", i, names.ValueStr(r), names.IsNull(r))
			}
			if prices.Value(r) != decimal128.FromI64(int64(id*100+50)) {
				t.Fatalf("row %d: price %s", i, prices.ValueStr(r))
			}
		}
	}
}

func TestParquetScanPruning(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "t.parquet")
	writeParquet(t, path, testParquetSchema, testParquetBatch(0, 100), testParquetBatch(100, 200))
	tbl, err := catalog.OpenParquet(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := func(unscaled int64, scale int32) plan.Literal {
		return plan.Literal{Typ: &arrow.Decimal128Type{Precision: 15, Scale: scale}, Val: decimal128.FromI64(unscaled)}
	}
	i64 := func(v int64) plan.Literal { return plan.Literal{Typ: plan.Int64, Val: v} }
	tests := []struct {
		name  string
		preds []ColumnPredicate
		units int
		minID int64 // smallest id read
	}{
		{"none", nil, 2, 0},
		{"id < 50", []ColumnPredicate{{0, plan.OpLt, i64(50)}}, 1, 0},
		{"id < 100", []ColumnPredicate{{0, plan.OpLt, i64(100)}}, 1, 0},
		{"id <= 100", []ColumnPredicate{{0, plan.OpLtEq, i64(100)}}, 2, 0},
		{"id >= 100", []ColumnPredicate{{0, plan.OpGtEq, i64(100)}}, 1, 100},
		{"id > 99", []ColumnPredicate{{0, plan.OpGt, i64(99)}}, 1, 100},
		{"id = 150", []ColumnPredicate{{0, plan.OpEq, i64(150)}}, 1, 100},
		{"id = 1000", []ColumnPredicate{{0, plan.OpEq, i64(1000)}}, 0, -1},
		{"id <> 5", []ColumnPredicate{{0, plan.OpNotEq, i64(5)}}, 2, 0},
		{"id = int32 150", []ColumnPredicate{{0, plan.OpEq, plan.Literal{Typ: plan.Int32, Val: int32(150)}}}, 1, 100},
		{"id < float 99.5", []ColumnPredicate{{0, plan.OpLt, plan.Literal{Typ: plan.Float64, Val: 99.5}}}, 1, 0},
		{"name >= n150", []ColumnPredicate{{1, plan.OpGtEq, plan.Literal{Typ: plan.Utf8, Val: "n150"}}}, 1, 100},
		{"name < n000", []ColumnPredicate{{1, plan.OpLt, plan.Literal{Typ: plan.Utf8, Val: "n000"}}}, 0, -1},
		{"price <= 99.50", []ColumnPredicate{{2, plan.OpLtEq, dec(9950, 2)}}, 1, 0},
		{"price > 99.5 (scale 1)", []ColumnPredicate{{2, plan.OpGt, dec(995, 1)}}, 1, 100},
		{"price > 99.4999 (scale 4)", []ColumnPredicate{{2, plan.OpGt, dec(994999, 4)}}, 2, 0},
		{"price >= int 100", []ColumnPredicate{{2, plan.OpGtEq, plan.Literal{Typ: plan.Int64, Val: int64(100)}}}, 1, 100},
		{"day > date 120", []ColumnPredicate{{3, plan.OpGt, plan.Literal{Typ: plan.Date32, Val: int32(120)}}}, 1, 100},
		{"day vs timestamp kept", []ColumnPredicate{{3, plan.OpGt, plan.Literal{Typ: plan.Timestamp, Val: int64(1) << 50}}}, 2, 0},
		{"score < 10.0", []ColumnPredicate{{4, plan.OpLt, plan.Literal{Typ: plan.Float64, Val: 10.0}}}, 1, 0},
		{"qty > 6", []ColumnPredicate{{5, plan.OpGt, plan.Literal{Typ: plan.Int32, Val: int32(6)}}}, 0, -1},
		{"NULL literal kept", []ColumnPredicate{{0, plan.OpEq, plan.Literal{Typ: plan.Int64}}}, 2, 0},
		// NaN, greater than every number, satisfies > >= and <> on a
		// double, and writers leave it out of min and max.
		{"score > 60.0 kept", []ColumnPredicate{{4, plan.OpGt, plan.Literal{Typ: plan.Float64, Val: 60.0}}}, 2, 0},
		{"score <> 1.0 kept", []ColumnPredicate{{4, plan.OpNotEq, plan.Literal{Typ: plan.Float64, Val: 1.0}}}, 2, 0},
		{"conjunction", []ColumnPredicate{{0, plan.OpLt, i64(150)}, {4, plan.OpLt, plan.Literal{Typ: plan.Float64, Val: 10.0}}}, 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			scan := NewParquetScan("t", tbl, []int{0}, tt.preds, 1)
			if scan.NumUnits() != tt.units {
				t.Fatalf("%d units, want %d (%s)", scan.NumUnits(), tt.units, scan)
			}
			bs := drainPartition(t, scan, 0, testTaskContext(mem, 1000))
			defer kernels.ReleaseAll(bs)
			ids := int64Column(bs, 0)
			if len(ids) != 100*tt.units {
				t.Fatalf("%d rows, want %d", len(ids), 100*tt.units)
			}
			if len(ids) > 0 && slices.Min(ids) != tt.minID {
				t.Fatalf("min id %d, want %d", slices.Min(ids), tt.minID)
			}
		})
	}
}

func TestParquetScanPartitions(t *testing.T) {
	dir := writeTestTable(t)
	tbl, err := catalog.OpenParquet(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, parts := range []int{1, 2, 3, 5} {
		for _, proj := range [][]int{{0}, {}} {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			scan := NewParquetScan("t", tbl, proj, nil, parts)
			if got := scan.OutputPartitioning(); got.Kind != PartUnknown || got.Count != parts {
				t.Fatalf("partitioning %s", got)
			}
			tc := testTaskContext(mem, 32)
			results := make([][]arrow.RecordBatch, parts)
			var wg sync.WaitGroup
			for p := range parts {
				wg.Go(func() { results[p] = drainPartition(t, scan, p, tc) })
			}
			wg.Wait()
			seen := make([]int, 300)
			total := 0
			for _, bs := range results {
				for _, b := range bs {
					total += int(b.NumRows())
					if int(b.NumCols()) != len(proj) {
						t.Fatalf("%d columns, want %d", b.NumCols(), len(proj))
					}
				}
				if len(proj) > 0 {
					for _, id := range int64Column(bs, 0) {
						seen[id]++
					}
				}
				kernels.ReleaseAll(bs)
			}
			if total != 300 {
				t.Fatalf("partitions=%d projection=%v: %d rows, want 300", parts, proj, total)
			}
			if len(proj) > 0 {
				for id, n := range seen {
					if n != 1 {
						t.Fatalf("partitions=%d: id %d read %d times", parts, id, n)
					}
				}
			}
			mem.AssertSize(t, 0)
		}
	}
}

func TestParquetScanEarlyClose(t *testing.T) {
	dir := writeTestTable(t)
	tbl, err := catalog.OpenParquet(dir)
	if err != nil {
		t.Fatal(err)
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	scan := NewParquetScan("t", tbl, []int{0, 1}, nil, 1)

	// Close after one batch.
	s, err := scan.Execute(context.Background(), 0, testTaskContext(mem, 16))
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Next(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	b.Release()
	s.Close()
	s.Close()

	// A cancelled context ends the stream with its error, never EOF.
	ctx, cancel := context.WithCancel(context.Background())
	s, err = scan.Execute(ctx, 0, testTaskContext(mem, 16))
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	for {
		b, err := s.Next(context.Background())
		if err == nil {
			b.Release()
			continue
		}
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("after cancel: %v, want context.Canceled", err)
		}
		break
	}
	s.Close()

	if _, err := scan.Execute(context.Background(), 1, testTaskContext(mem, 16)); err == nil {
		t.Fatalf("partition out of range: no error")
	}
}

func TestParquetScanString(t *testing.T) {
	dir := writeTestTable(t)
	tbl, err := catalog.OpenParquet(dir)
	if err != nil {
		t.Fatal(err)
	}
	scan := NewParquetScan("t", tbl, []int{0, 1}, []ColumnPredicate{{0, plan.OpGtEq, plan.Literal{Typ: plan.Int64, Val: int64(200)}}}, 2)
	want := "ParquetScan: t files=2 rowGroups=1/3 partitions=2 projection=[id, name] pruning=[id >= 200]"
	if got := scan.String(); got != want {
		t.Fatalf("String() = %q, want %q", got, want)
	}
}

// TestParquetScanNormalizesTypes reads a file whose stored Arrow schema has
// a dictionary string, a large string, int16 and a zoned millisecond
// timestamp: the scan yields utf8, utf8, int32 and timestamp[us].
func TestParquetScanNormalizesTypes(t *testing.T) {
	gomem := memory.NewGoAllocator()
	dictType := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}
	stored := arrow.NewSchema([]arrow.Field{
		{Name: "d", Type: dictType},
		{Name: "l", Type: arrow.BinaryTypes.LargeString},
		{Name: "s", Type: arrow.PrimitiveTypes.Int16},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}},
	}, nil)
	b := array.NewRecordBuilder(gomem, stored)
	for i := range 10 {
		b.Field(0).(*array.BinaryDictionaryBuilder).AppendString([]string{"x", "y"}[i%2])
		b.Field(1).(*array.LargeStringBuilder).Append(itoa(i))
		b.Field(2).(*array.Int16Builder).Append(int16(i))
		b.Field(3).(*array.TimestampBuilder).Append(arrow.Timestamp(i * 1000))
	}
	rec := b.NewRecordBatch()
	b.Release()
	path := filepath.Join(t.TempDir(), "n.parquet")
	writeParquetArrow(t, path, rec, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))

	tbl, err := catalog.OpenParquet(path)
	if err != nil {
		t.Fatal(err)
	}
	want := []arrow.DataType{arrow.BinaryTypes.String, arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int32, &arrow.TimestampType{Unit: arrow.Microsecond}}
	for i, w := range want {
		if got := tbl.Schema().Field(i).Type; !arrow.TypeEqual(got, w) {
			t.Fatalf("column %d: table type %s, want %s", i, got, w)
		}
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	bs := drainPartition(t, NewParquetScan("n", tbl, []int{0, 1, 2, 3}, nil, 1), 0, testTaskContext(mem, 100))
	defer kernels.ReleaseAll(bs)
	if len(bs) != 1 || bs[0].NumRows() != 10 {
		t.Fatalf("got %d batches", len(bs))
	}
	out := bs[0]
	for i := range 10 {
		if got := out.Column(0).(*array.String).Value(i); got != []string{"x", "y"}[i%2] {
			t.Fatalf("row %d: d = %q", i, got)
		}
		if got := out.Column(1).(*array.String).Value(i); got != itoa(i) {
			t.Fatalf("row %d: l = %q", i, got)
		}
		if got := out.Column(2).(*array.Int32).Value(i); got != int32(i) {
			t.Fatalf("row %d: s = %d", i, got)
		}
		if got := out.Column(3).(*array.Timestamp).Value(i); got != arrow.Timestamp(i*1000*1000) {
			t.Fatalf("row %d: ts = %d", i, got)
		}
	}
}

// BenchmarkParquetScan scans 1M rows of lineitem-like columns over two
// partitions.
func BenchmarkParquetScan(b *testing.B) {
	dir := b.TempDir()
	path := filepath.Join(dir, "bench.parquet")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	fw, err := pqarrow.NewFileWriter(testParquetSchema, f, parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(128*1024)), pqarrow.DefaultWriterProps())
	if err != nil {
		b.Fatal(err)
	}
	for lo := 0; lo < 1<<20; lo += 64 * 1024 {
		rec := testParquetBatch(lo, lo+64*1024)
		if err := fw.Write(rec); err != nil {
			b.Fatal(err)
		}
		rec.Release()
	}
	if err := fw.Close(); err != nil {
		b.Fatal(err)
	}
	tbl, err := catalog.OpenParquet(path)
	if err != nil {
		b.Fatal(err)
	}
	scan := NewParquetScan("bench", tbl, []int{0, 1, 2, 3}, nil, 2)
	tc := NewTaskContext()
	b.ResetTimer()
	for range b.N {
		var wg sync.WaitGroup
		var rows [2]int64
		for p := range 2 {
			wg.Go(func() {
				s, err := scan.Execute(context.Background(), p, tc)
				if err != nil {
					b.Error(err)
					return
				}
				defer s.Close()
				for {
					rec, err := s.Next(context.Background())
					if err != nil {
						if !errors.Is(err, io.EOF) {
							b.Error(err)
						}
						return
					}
					rows[p] += rec.NumRows()
					rec.Release()
				}
			})
		}
		wg.Wait()
		if rows[0]+rows[1] != 1<<20 {
			b.Fatalf("%d rows", rows[0]+rows[1])
		}
	}
}

// TestParquetScanDictionaryStrings: a string column whose chunks are all
// dictionary pages is read as a dictionary and decoded by the scan (NULLs
// included); one whose writer fell back to plain pages is read the usual
// way. Both give the written values.
func TestParquetScanDictionaryStrings(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	values := func(i int, distinct bool) (string, bool) {
		if i%11 == 3 {
			return "", false
		}
		if distinct {
			return fmt.Sprintf("value number %06d, long enough to fill a page", i), true
		}
		return []string{"A", "NO", "YES", "a longer dictionary entry"}[i%4], true
	}
	for _, tc := range []struct {
		name     string
		distinct bool
		props    []parquet.WriterProperty
		wantDict bool
	}{
		{"dictionary", false, nil, true},
		{"fallback", true, []parquet.WriterProperty{parquet.WithDictionaryPageSizeLimit(256)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := array.NewStringBuilder(memory.NewGoAllocator())
			for i := range 3000 {
				if v, ok := values(i, tc.distinct); ok {
					b.Append(v)
				} else {
					b.AppendNull()
				}
			}
			col := b.NewArray()
			b.Release()
			rec := array.NewRecordBatch(schema, []arrow.Array{col}, 3000)
			col.Release()
			path := filepath.Join(t.TempDir(), "d.parquet")
			writeParquetWith(t, path, rec, append([]parquet.WriterProperty{parquet.WithDataPageSize(1024)}, tc.props...)...)

			rdr, err := file.OpenParquetFile(path, false)
			if err != nil {
				t.Fatal(err)
			}
			got := pqcol.DictionaryOnlyStrings(rdr, []int{0}, []int{0})
			rdr.Close()
			if (len(got) == 1) != tc.wantDict {
				t.Fatalf("dictionaryOnlyStrings = %v, want dictionary reading %v", got, tc.wantDict)
			}

			tbl, err := catalog.OpenParquet(path)
			if err != nil {
				t.Fatal(err)
			}
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			bs := drainPartition(t, NewParquetScan("d", tbl, []int{0}, nil, 1), 0, testTaskContext(mem, 700))
			defer kernels.ReleaseAll(bs)
			i := 0
			for _, b := range bs {
				s := b.Column(0).(*array.String)
				for r := 0; r < s.Len(); r++ {
					want, ok := values(i, tc.distinct)
					if s.IsValid(r) != ok || (ok && s.Value(r) != want) {
						t.Fatalf("row %d: got %q (valid %v), want %q (valid %v)", i, s.Value(r), s.IsValid(r), want, ok)
					}
					i++
				}
			}
			if i != 3000 {
				t.Fatalf("read %d rows, want 3000", i)
			}
		})
	}
}

// TestFilterOverScanDictionaryPushdown: a Filter straight over a scan lets
// the scan drop rows by evaluating string conjuncts per dictionary entry
// and value conjuncts per batch; the rows that come out (NULLs, a conjunct
// on two columns, one that fails to evaluate on some entries) are exactly
// those of the same filter over a scan that does not push anything. The
// batches the scan judged on the whole predicate, which the Filter passes
// on untouched, are exactly those of the predicates it can: conjuncts on
// values and on NULL-free dictionary columns that all evaluate.
func TestFilterOverScanDictionaryPushdown(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "mode", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "n", Type: arrow.PrimitiveTypes.Int64},
		{Name: "num", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "kind", Type: arrow.BinaryTypes.String},
	}, nil)
	modes := []string{"AIR", "MAIL", "SHIP", "RAIL", "TRUCK"}
	nums := []string{"1", "2", "x", "40"}
	b := array.NewRecordBuilder(memory.NewGoAllocator(), schema)
	for i := range 5000 {
		if i%13 == 5 {
			b.Field(0).AppendNull()
		} else {
			b.Field(0).(*array.StringBuilder).Append(modes[i%5])
		}
		b.Field(1).(*array.Int64Builder).Append(int64(i))
		if i%17 == 3 {
			b.Field(2).AppendNull()
		} else {
			b.Field(2).(*array.StringBuilder).Append(nums[i%4])
		}
		b.Field(3).(*array.StringBuilder).Append([]string{"a", "bb", "c"}[i*7%3])
	}
	rec := b.NewRecordBatch()
	b.Release()
	path := filepath.Join(t.TempDir(), "p.parquet")
	writeParquetWith(t, path, rec, parquet.WithStats(true), parquet.WithCompression(compress.Codecs.Snappy))
	tbl, err := catalog.OpenParquet(path)
	if err != nil {
		t.Fatal(err)
	}
	if rdr, m := testutil.OpenWithManifest(t, path); pqcol.ChooseDecoders(m, rdr, []int{3}, []int{0}, pqcol.DictionaryOnlyStrings(rdr, []int{3}, []int{0}))[0] != pqcol.DictionaryCodes {
		t.Fatal("kind was not written as a dictionary-encoded required column")
	}
	col := func(i int) *expr.Column {
		return &expr.Column{Index: i, Name: schema.Field(i).Name, Type: schema.Field(i).Type}
	}
	lit := func(v any, typ arrow.DataType) *expr.Literal {
		return &expr.Literal{Value: plan.Literal{Typ: typ, Val: v}}
	}
	and := func(l, r expr.Expr) expr.Expr {
		return &expr.Binary{Op: plan.OpAnd, L: l, R: r, Type: arrow.FixedWidthTypes.Boolean}
	}
	cmp := func(op plan.BinaryOp, l, r expr.Expr) expr.Expr {
		return &expr.Binary{Op: op, L: l, R: r, Type: arrow.FixedWidthTypes.Boolean}
	}
	preds := map[string]expr.Expr{
		"mode in, n range": and(cmp(plan.OpNotEq, col(0), lit("MAIL", arrow.BinaryTypes.String)),
			and(cmp(plan.OpGtEq, col(1), lit(int64(100), arrow.PrimitiveTypes.Int64)), cmp(plan.OpLt, col(0), lit("TRUCK", arrow.BinaryTypes.String)))),
		"nothing passes": cmp(plan.OpEq, col(0), lit("BOAT", arrow.BinaryTypes.String)),
		"two columns":    cmp(plan.OpEq, col(0), col(2)),
		"value conjuncts": and(cmp(plan.OpGtEq, col(1), lit(int64(100), arrow.PrimitiveTypes.Int64)),
			and(cmp(plan.OpLt, col(1), lit(int64(4000), arrow.PrimitiveTypes.Int64)), cmp(plan.OpEq, col(0), lit("AIR", arrow.BinaryTypes.String)))),
		"value conjunct keeps all": cmp(plan.OpGtEq, col(1), lit(int64(0), arrow.PrimitiveTypes.Int64)),
		"value conjunct keeps none": and(cmp(plan.OpLt, col(1), lit(int64(0), arrow.PrimitiveTypes.Int64)),
			cmp(plan.OpEq, col(0), lit("AIR", arrow.BinaryTypes.String))),
		"value conjunct is NULL": cmp(plan.OpLt, col(1), lit(nil, arrow.PrimitiveTypes.Int64)),
		"value conjunct fails": cmp(plan.OpGt, &expr.Binary{Op: plan.OpDiv, L: col(1),
			R: &expr.Binary{Op: plan.OpSub, L: col(1), R: col(1), Type: arrow.PrimitiveTypes.Int64}, Type: arrow.PrimitiveTypes.Int64},
			lit(int64(1), arrow.PrimitiveTypes.Int64)),
		"cast fails on x": and(cmp(plan.OpGt, &expr.Cast{X: col(2), To: arrow.PrimitiveTypes.Int64}, lit(int64(1), arrow.PrimitiveTypes.Int64)),
			cmp(plan.OpEq, col(0), lit("AIR", arrow.BinaryTypes.String))),
		"values only": and(cmp(plan.OpGtEq, col(1), lit(int64(100), arrow.PrimitiveTypes.Int64)),
			cmp(plan.OpLt, col(1), lit(int64(4000), arrow.PrimitiveTypes.Int64))),
		"NULL-free dictionary": cmp(plan.OpEq, col(3), lit("bb", arrow.BinaryTypes.String)),
		"NULL-free dictionary and values": and(cmp(plan.OpNotEq, col(3), lit("a", arrow.BinaryTypes.String)),
			cmp(plan.OpLt, col(1), lit(int64(3000), arrow.PrimitiveTypes.Int64))),
		"NULL-free dictionary and one with NULLs": and(cmp(plan.OpEq, col(3), lit("c", arrow.BinaryTypes.String)),
			cmp(plan.OpEq, col(0), lit("AIR", arrow.BinaryTypes.String))),
	}
	// The predicates whose every batch the scan judges whole; on the
	// others, every batch goes through the Filter (their conjuncts read a
	// column with NULL rows, read two columns or fail to evaluate).
	judged := map[string]bool{"values only": true, "value conjunct keeps all": true,
		"NULL-free dictionary": true, "NULL-free dictionary and values": true}
	for name, pred := range preds {
		t.Run(name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			scan := NewParquetScan("p", tbl, []int{0, 1, 2, 3}, nil, 2)
			for p := range 2 {
				s, err := scan.execute(context.Background(), p, testTaskContext(mem, 700), expr.Conjuncts(pred))
				if err != nil {
					t.Fatal(err)
				}
				for {
					b, err := s.Next(context.Background())
					if err != nil {
						break // errors are compared below
					}
					if got := s.(filteredMarker).lastFiltered(); got != judged[name] {
						t.Fatalf("partition %d: batch marked judged %v, want %v", p, got, judged[name])
					}
					b.Release()
				}
				s.Close()
			}
			run := func(op Operator) (string, error) {
				var rows []string
				for p := 0; p < op.OutputPartitioning().Count; p++ {
					s, err := op.Execute(context.Background(), p, testTaskContext(mem, 700))
					if err != nil {
						return "", err
					}
					for {
						b, err := s.Next(context.Background())
						if errors.Is(err, io.EOF) {
							break
						}
						if err != nil {
							s.Close()
							return "", err
						}
						for r := 0; r < int(b.NumRows()); r++ {
							var parts []string
							for c := 0; c < 4; c++ {
								parts = append(parts, b.Column(c).ValueStr(r))
							}
							rows = append(rows, strings.Join(parts, ","))
						}
						b.Release()
					}
					s.Close()
				}
				return strings.Join(rows, "\n"), nil
			}
			got, gerr := run(NewFilter(scan, pred))
			// The reference: the same filter over a projection, which the
			// Filter does not push into.
			ref := NewFilter(&passThrough{scan}, pred)
			want, werr := run(ref)
			if (gerr == nil) != (werr == nil) || (gerr != nil && gerr.Error() != werr.Error()) {
				t.Fatalf("errors differ: pushed %v, reference %v", gerr, werr)
			}
			if got != want {
				t.Fatalf("pushed filter rows differ from the reference:\n%s\nwant\n%s", got, want)
			}
		})
	}
}

// passThrough hides an operator's concrete type.
type passThrough struct{ Operator }

// decimalsAsIntegers gives the decimals-as-integers tests' two column types
// and row i's values (unscaled; NULL in both columns when !ok).
func decimalsAsIntegers() (d9, d18 *arrow.Decimal128Type, val func(i int) (int64, int64, bool)) {
	return &arrow.Decimal128Type{Precision: 9, Scale: 2}, &arrow.Decimal128Type{Precision: 18, Scale: 3},
		func(i int) (int64, int64, bool) {
			return int64(i*37 - 50000), int64(i)*1_000_000_007 - 3_000_000_000_000, i%7 != 2
		}
}

// writeDecimalsAsIntegers writes n rows of a (DECIMAL(9,2)) and b
// (DECIMAL(18,3)), from decimalsAsIntegers, and extra, appended by add, to
// a Parquet file storing the decimals as INT32 and INT64, and returns its
// path.
func writeDecimalsAsIntegers(t *testing.T, n int, extra arrow.Field, add func(b array.Builder, i int), props ...parquet.WriterProperty) string {
	t.Helper()
	d9, d18, val := decimalsAsIntegers()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "a", Type: d9, Nullable: true},
		{Name: "b", Type: d18, Nullable: true},
		extra,
	}, nil)
	b := array.NewRecordBuilder(memory.NewGoAllocator(), schema)
	defer b.Release()
	for i := range n {
		x, y, ok := val(i)
		if ok {
			b.Field(0).(*array.Decimal128Builder).Append(decimal128.FromI64(x))
			b.Field(1).(*array.Decimal128Builder).Append(decimal128.FromI64(y))
		} else {
			b.Field(0).AppendNull()
			b.Field(1).AppendNull()
		}
		add(b.Field(2), i)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	path := filepath.Join(t.TempDir(), "d.parquet")
	writeParquetWith(t, path, rec, append([]parquet.WriterProperty{parquet.WithStoreDecimalAsInteger(true)}, props...)...)
	return path
}

// TestParquetScanDecimalsStoredAsIntegers: decimals stored as INT32 and
// INT64 (negative values and NULLs included) come back as the same
// decimal128 values, with and without rows dropped by a dictionary filter.
func TestParquetScanDecimalsStoredAsIntegers(t *testing.T) {
	d9, d18, val := decimalsAsIntegers()
	path := writeDecimalsAsIntegers(t, 3000, arrow.Field{Name: "tag", Type: arrow.BinaryTypes.String}, func(b array.Builder, i int) {
		b.(*array.StringBuilder).Append([]string{"keep", "drop", "keep", "other"}[i%4])
	})
	rdr, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	pa, pb := rdr.MetaData().Schema.Column(0).PhysicalType(), rdr.MetaData().Schema.Column(1).PhysicalType()
	rdr.Close()
	if pa != parquet.Types.Int32 || pb != parquet.Types.Int64 {
		t.Fatalf("stored as %s and %s, want INT32 and INT64", pa, pb)
	}
	tbl, err := catalog.OpenParquet(path)
	if err != nil {
		t.Fatal(err)
	}
	tag := &expr.Column{Index: 2, Name: "tag", Type: arrow.BinaryTypes.String}
	for _, filtered := range []bool{false, true} {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		var op Operator = NewParquetScan("d", tbl, []int{0, 1, 2}, nil, 1)
		if filtered {
			op = NewFilter(op, &expr.Binary{Op: plan.OpEq, L: tag, R: &expr.Literal{Value: plan.Literal{Typ: arrow.BinaryTypes.String, Val: "keep"}}, Type: arrow.FixedWidthTypes.Boolean})
		}
		bs := drainPartition(t, op, 0, testTaskContext(mem, 500))
		i := 0
		for _, b := range bs {
			if !arrow.TypeEqual(b.Column(0).DataType(), d9) || !arrow.TypeEqual(b.Column(1).DataType(), d18) {
				t.Fatalf("types %s, %s", b.Column(0).DataType(), b.Column(1).DataType())
			}
			ca, cb := b.Column(0).(*array.Decimal128), b.Column(1).(*array.Decimal128)
			for r := 0; r < int(b.NumRows()); r++ {
				for filtered && i%4 != 0 && i%4 != 2 {
					i++
				}
				x, y, ok := val(i)
				if ca.IsValid(r) != ok || cb.IsValid(r) != ok {
					t.Fatalf("filtered=%v row %d: validity %v/%v, want %v", filtered, i, ca.IsValid(r), cb.IsValid(r), ok)
				}
				if ok && (ca.Value(r) != decimal128.FromI64(x) || cb.Value(r) != decimal128.FromI64(y)) {
					t.Fatalf("filtered=%v row %d: got %s, %s, want %d, %d", filtered, i, ca.ValueStr(r), cb.ValueStr(r), x, y)
				}
				i++
			}
			b.Release()
		}
		if want := 3000; (!filtered && i != want) || (filtered && i < 2998) {
			t.Fatalf("filtered=%v: read up to row %d", filtered, i)
		}
		mem.AssertSize(t, 0)
	}
}

// TestParquetScanRawDecimalFilters: comparisons of decimals stored as INT32
// and INT64 with literals, on either side, every operator, a literal the
// INT32 column cannot hold, and a conjunct on another column, are judged by
// the scan on the stored integers (rawDecimalConjunct) and keep exactly the
// rows the Filter keeps, NULLs never.
func TestParquetScanRawDecimalFilters(t *testing.T) {
	d9, d18, val := decimalsAsIntegers()
	const n = 3000
	path := writeDecimalsAsIntegers(t, n, arrow.Field{Name: "k", Type: arrow.PrimitiveTypes.Int64}, func(b array.Builder, i int) {
		b.(*array.Int64Builder).Append(int64(i))
	}, parquet.WithMaxRowGroupLength(700))
	tbl, err := catalog.OpenParquet(path)
	if err != nil {
		t.Fatal(err)
	}
	a := &expr.Column{Index: 0, Name: "a", Type: d9}
	bcol := &expr.Column{Index: 1, Name: "b", Type: d18}
	k := &expr.Column{Index: 2, Name: "k", Type: arrow.PrimitiveTypes.Int64}
	lit := func(typ arrow.DataType, v decimal128.Num) expr.Expr {
		return &expr.Literal{Value: plan.Literal{Typ: typ, Val: v}}
	}
	cmp := func(op plan.BinaryOp, l, r expr.Expr) expr.Expr {
		return &expr.Binary{Op: op, L: l, R: r, Type: arrow.FixedWidthTypes.Boolean}
	}
	type check struct {
		name string
		pred expr.Expr
		keep func(i int) bool
	}
	var checks []check
	for _, op := range testutil.CompareOps {
		x0, y0, _ := val(1234)
		checks = append(checks,
			check{fmt.Sprintf("a %s lit", op), cmp(op, a, lit(d9, decimal128.FromI64(x0))), func(i int) bool {
				x, _, ok := val(i)
				return ok && testutil.Compare(op, x, x0)
			}},
			check{fmt.Sprintf("lit %s b", op), cmp(op, lit(d18, decimal128.FromI64(y0)), bcol), func(i int) bool {
				_, y, ok := val(i)
				return ok && testutil.Compare(op, y0, y)
			}},
			check{fmt.Sprintf("a %s beyond int32", op), cmp(op, a, lit(d9, decimal128.FromI64(1<<40))), func(i int) bool {
				x, _, ok := val(i)
				return ok && testutil.Compare(op, x, 1<<40)
			}},
		)
	}
	x1, _, _ := val(100)
	_, y2, _ := val(2500)
	checks = append(checks, check{"a >= lit AND b < lit AND k % 3 = 0 via k <> 7",
		cmp(plan.OpAnd, cmp(plan.OpAnd, cmp(plan.OpGtEq, a, lit(d9, decimal128.FromI64(x1))), cmp(plan.OpLt, bcol, lit(d18, decimal128.FromI64(y2)))),
			cmp(plan.OpNotEq, k, &expr.Literal{Value: plan.Literal{Typ: arrow.PrimitiveTypes.Int64, Val: int64(7)}})),
		func(i int) bool {
			x, y, ok := val(i)
			return ok && x >= x1 && y < y2 && i != 7
		}})
	for _, c := range checks {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		op := NewFilter(NewParquetScan("d", tbl, []int{0, 1, 2}, nil, 1), c.pred)
		var got []int64
		for _, b := range drainPartition(t, op, 0, testTaskContext(mem, 500)) {
			ks := b.Column(2).(*array.Int64)
			for r := 0; r < ks.Len(); r++ {
				got = append(got, ks.Value(r))
			}
			b.Release()
		}
		var want []int64
		for i := range n {
			if c.keep(i) {
				want = append(want, int64(i))
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: %d rows, want %d", c.name, len(got), len(want))
		}
		mem.AssertSize(t, 0)
	}
}

// writeParquetWith and writeParquetArrow are shared with the decoders' tests.
var (
	writeParquetWith  = testutil.WriteParquet
	writeParquetArrow = testutil.WriteParquetArrow
)

// TestParquetScanDeltaKeysAndDates reads a file whose required integers
// and decimals are delta encoded (the scan's own decoder) and whose
// nullable dates are read as integers and turned back into Date32, over
// several row groups, alone and next to columns arrow's reader reads,
// with and without a filter on the dates.
func TestParquetScanDeltaKeysAndDates(t *testing.T) {
	money := &arrow.Decimal128Type{Precision: 15, Scale: 2}
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int64},
		{Name: "price", Type: money},
		{Name: "day", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
		{Name: "tag", Type: arrow.BinaryTypes.String},
	}, nil)
	const n = 5000
	key := func(i int) int64 { return int64(i/3)*7 - 1000 }
	price := func(i int) int64 { return int64(i*7919%100000) - 20000 }
	day := func(i int) (int32, bool) { return int32(9000 + i%400), i%11 != 3 }
	b := array.NewRecordBuilder(memory.NewGoAllocator(), schema)
	for i := range n {
		b.Field(0).(*array.Int64Builder).Append(key(i))
		b.Field(1).(*array.Decimal128Builder).Append(decimal128.FromI64(price(i)))
		if d, ok := day(i); ok {
			b.Field(2).(*array.Date32Builder).Append(arrow.Date32(d))
		} else {
			b.Field(2).AppendNull()
		}
		b.Field(3).(*array.StringBuilder).Append(itoa(i % 5))
	}
	rec := b.NewRecordBatch()
	b.Release()
	path := filepath.Join(t.TempDir(), "delta.parquet")
	writeParquetWith(t, path, rec,
		parquet.WithStoreDecimalAsInteger(true),
		parquet.WithMaxRowGroupLength(1700),
		parquet.WithDataPageSize(2048),
		parquet.WithDictionaryFor("k", false), parquet.WithEncodingFor("k", parquet.Encodings.DeltaBinaryPacked),
		parquet.WithDictionaryFor("price", false), parquet.WithEncodingFor("price", parquet.Encodings.DeltaBinaryPacked))
	tbl, err := catalog.OpenParquet(path)
	if err != nil {
		t.Fatal(err)
	}
	dayCol := &expr.Column{Index: 2, Name: "day", Type: arrow.FixedWidthTypes.Date32}
	dayFilter := &expr.Binary{Op: plan.OpLt, L: dayCol, R: &expr.Literal{Value: plan.Literal{Typ: plan.Date32, Val: int32(9100)}}, Type: arrow.FixedWidthTypes.Boolean}
	for _, projection := range [][]int{{0}, {2, 0, 1, 3}, {1, 2}} {
		for _, filtered := range []bool{false, true} {
			if filtered && !slices.Contains(projection, 2) {
				continue
			}
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			var op Operator = NewParquetScan("d", tbl, projection, nil, 1)
			if filtered {
				col := *dayCol
				col.Index = slices.Index(projection, 2)
				f := *dayFilter
				f.L = &col
				op = NewFilter(op, &f)
			}
			bs := drainPartition(t, op, 0, testTaskContext(mem, 333))
			i := 0
			for _, b := range bs {
				for r := 0; r < int(b.NumRows()); r++ {
					for filtered && !func() bool { d, ok := day(i); return ok && d < 9100 }() {
						i++
					}
					for c, f := range projection {
						col := b.Column(c)
						switch f {
						case 0:
							if got := col.(*array.Int64).Value(r); got != key(i) {
								t.Fatalf("%v filtered=%v row %d: k %d, want %d", projection, filtered, i, got, key(i))
							}
						case 1:
							if got := col.(*array.Decimal128).Value(r); got != decimal128.FromI64(price(i)) {
								t.Fatalf("%v filtered=%v row %d: price %s, want %d", projection, filtered, i, col.ValueStr(r), price(i))
							}
						case 2:
							d, ok := day(i)
							dc, isDate := col.(*array.Date32)
							if !isDate {
								t.Fatalf("day read as %s", col.DataType())
							}
							if dc.IsValid(r) != ok || (ok && dc.Value(r) != arrow.Date32(d)) {
								t.Fatalf("%v filtered=%v row %d: day %s, want %d (valid %v)", projection, filtered, i, col.ValueStr(r), d, ok)
							}
						case 3:
							if got := col.(*array.String).Value(r); got != itoa(i%5) {
								t.Fatalf("row %d: tag %q", i, got)
							}
						}
					}
					i++
				}
				b.Release()
			}
			if !filtered && i != n {
				t.Fatalf("%v: %d rows, want %d", projection, i, n)
			}
			if filtered && i < n-400 {
				t.Fatalf("%v filtered: read up to row %d", projection, i)
			}
			mem.AssertSize(t, 0)
		}
	}
	// The delta decoder really is the one reading k and price.
	rdr, m := testutil.OpenWithManifest(t, path)
	pqcol.ReadDecimalsRaw(m, rdr, []int{0, 1, 2})
	if got := pqcol.ChooseDecoders(m, rdr, []int{0, 1, 2}, []int{0, 1, 2}, nil); got[0] != pqcol.DeltaIntegers || got[1] != pqcol.DeltaIntegers || got[2] == pqcol.DeltaIntegers {
		t.Fatalf("delta columns %v, want k and price", got)
	}
}

// TestPrefetchStreamMarksAParkedReader: Next parked on an empty channel
// says so (the producer then hands it the processor at its next batch),
// and the batch it waited for arrives.
func TestPrefetchStreamMarksAParkedReader(t *testing.T) {
	gate := make(chan struct{})
	schema := arrow.NewSchema(nil, nil)
	s := startPrefetch(context.Background(), func(ctx context.Context, emit func(arrow.RecordBatch) error) error {
		<-gate
		return emit(array.NewRecordBatch(schema, nil, 3))
	})
	defer s.Close()
	got := make(chan int64, 1)
	go func() {
		b, err := s.Next(context.Background())
		if err != nil {
			got <- -1
			return
		}
		got <- b.NumRows()
		b.Release()
	}()
	deadline := time.Now().Add(10 * time.Second)
	for !s.waiting.Load() {
		if time.Now().After(deadline) {
			t.Fatal("a reader parked in Next is not marked waiting")
		}
		time.Sleep(time.Millisecond)
	}
	close(gate)
	if n := <-got; n != 3 {
		t.Fatalf("Next returned %d rows, want the 3 it waited for", n)
	}
	if s.waiting.Load() {
		t.Error("the reader is still marked waiting after Next returned")
	}
}

// TestParquetScanListColumn: a list of strings reads back whole and
// through a filter's selection (which gathers lists with sluice's own
// kernel, not arrow's), NULL lists and empty lists included.
func TestParquetScanListColumn(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.NewGoAllocator(), schema)
	lb := b.Field(1).(*array.ListBuilder)
	vb := lb.ValueBuilder().(*array.StringBuilder)
	for i := range 3000 {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		if i%7 == 0 {
			lb.AppendNull()
			continue
		}
		lb.Append(true)
		for j := range i % 3 {
			vb.Append(fmt.Sprint("t", i, "-", j))
		}
	}
	rec := b.NewRecordBatch()
	b.Release()
	path := filepath.Join(t.TempDir(), "l.parquet")
	writeParquetWith(t, path, rec)
	tbl, err := catalog.OpenParquet(path)
	if err != nil {
		t.Fatal(err)
	}
	k := &expr.Column{Index: 0, Name: "k", Type: arrow.PrimitiveTypes.Int64}
	odd := &expr.Binary{Op: plan.OpEq, L: &expr.Binary{Op: plan.OpMod, L: k, R: &expr.Literal{Value: plan.Literal{Typ: arrow.PrimitiveTypes.Int64, Val: int64(2)}}, Type: arrow.PrimitiveTypes.Int64},
		R: &expr.Literal{Value: plan.Literal{Typ: arrow.PrimitiveTypes.Int64, Val: int64(1)}}, Type: arrow.FixedWidthTypes.Boolean}
	for _, filters := range [][]expr.Expr{nil, {odd}} {
		scan := NewParquetScan("l", tbl, []int{0, 1}, nil, 1)
		stream, err := scan.execute(context.Background(), 0, testTaskContext(mem, 700), filters)
		if err != nil {
			t.Fatal(err)
		}
		rows := 0
		for {
			out, err := stream.Next(context.Background())
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("filters %v: %v", filters, err)
			}
			ks, tags := out.Column(0).(*array.Int64), out.Column(1).(*array.List)
			for r := 0; r < int(out.NumRows()); r++ {
				i := int(ks.Value(r))
				if filters != nil && i%2 == 0 {
					continue // the filter may pass rows it did not settle
				}
				rows++
				if i%7 == 0 {
					if tags.IsValid(r) {
						t.Fatalf("row %d: tags not NULL", i)
					}
					continue
				}
				lo, hi := tags.ValueOffsets(r)
				if int(hi-lo) != i%3 {
					t.Fatalf("row %d: %d tags, want %d", i, hi-lo, i%3)
				}
				for j := lo; j < hi; j++ {
					if got, want := tags.ListValues().(*array.String).Value(int(j)), fmt.Sprint("t", i, "-", j-lo); got != want {
						t.Fatalf("row %d: tag %q, want %q", i, got, want)
					}
				}
			}
			out.Release()
		}
		stream.Close()
		if want := map[bool]int{false: 3000, true: 1500}[filters != nil]; rows != want {
			t.Fatalf("filters %v: %d rows, want %d", filters, rows, want)
		}
	}
}
