package physical

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	pqcol "sluice/physical/datasource/parquet"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"sluice/catalog"
	"sluice/physical/internal/testutil"
)

// writerTestSchema holds a column of each type sluice reads, nullable
// (OPTIONAL, as most writers mark every column) but for one required key.
var writerTestSchema = arrow.NewSchema([]arrow.Field{
	{Name: "k", Type: arrow.PrimitiveTypes.Int64},
	{Name: "i32", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	{Name: "i64", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "f64", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "f32", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
	{Name: "money", Type: &arrow.Decimal128Type{Precision: 15, Scale: 2}, Nullable: true},
	{Name: "wide", Type: &arrow.Decimal128Type{Precision: 38, Scale: 4}, Nullable: true},
	{Name: "day", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
	{Name: "flag", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "text", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "ok", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "mostlynull", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "at", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true},
	{Name: "atms", Type: &arrow.TimestampType{Unit: arrow.Millisecond}, Nullable: true},
}, nil)

// randomWriterTable builds n rows of writerTestSchema from seed: values in
// runs and at random, NULLs scattered, in runs, and a column almost all
// NULL.
func randomWriterTable(seed uint64, n int) arrow.RecordBatch {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	b := array.NewRecordBuilder(memory.NewGoAllocator(), writerTestSchema)
	defer b.Release()
	nullRun := 0
	for i := range n {
		if nullRun > 0 {
			nullRun--
		} else if r.IntN(200) == 0 {
			nullRun = r.IntN(300)
		}
		null := func(p int) bool { return nullRun > 0 || r.IntN(p) == 0 }
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		if null(7) {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.Int32Builder).Append(int32(r.Uint32()) >> r.IntN(32))
		}
		if null(5) {
			b.Field(2).AppendNull()
		} else if r.IntN(3) == 0 {
			b.Field(2).(*array.Int64Builder).Append(int64(r.Uint64()))
		} else {
			b.Field(2).(*array.Int64Builder).Append(int64(i/10) * 3)
		}
		if null(6) {
			b.Field(3).AppendNull()
		} else {
			b.Field(3).(*array.Float64Builder).Append(float64(r.IntN(1000)) / 8)
		}
		if null(6) {
			b.Field(4).AppendNull()
		} else {
			b.Field(4).(*array.Float32Builder).Append(float32(r.NormFloat64()))
		}
		if null(9) {
			b.Field(5).AppendNull()
		} else {
			b.Field(5).(*array.Decimal128Builder).Append(decimal128.FromI64(r.Int64N(2_000_000_00) - 1_000_000_00))
		}
		if null(9) {
			b.Field(6).AppendNull()
		} else {
			b.Field(6).(*array.Decimal128Builder).Append(decimal128.New(r.Int64N(1<<40)-1<<39, r.Uint64()))
		}
		if null(8) {
			b.Field(7).AppendNull()
		} else {
			b.Field(7).(*array.Date32Builder).Append(arrow.Date32(8000 + r.IntN(2500)))
		}
		if null(10) {
			b.Field(8).AppendNull()
		} else {
			b.Field(8).(*array.StringBuilder).Append([]string{"MAIL", "SHIP", "AIR", "", "TRUCK"}[r.IntN(5)])
		}
		if null(4) {
			b.Field(9).AppendNull()
		} else {
			b.Field(9).(*array.StringBuilder).Append(fmt.Sprintf("text %d %x", r.IntN(n), r.Uint32()>>r.IntN(32)))
		}
		if null(3) {
			b.Field(10).AppendNull()
		} else {
			b.Field(10).(*array.BooleanBuilder).Append(r.IntN(2) == 0)
		}
		if r.IntN(500) != 0 {
			b.Field(11).AppendNull()
		} else {
			b.Field(11).(*array.Int64Builder).Append(r.Int64())
		}
		for f := 12; f <= 13; f++ {
			if null(6) {
				b.Field(f).AppendNull()
			} else {
				b.Field(f).(*array.TimestampBuilder).Append(arrow.Timestamp(1_600_000_000_000 + r.Int64N(1e9)))
			}
		}
	}
	return b.NewRecordBatch()
}

// writerConfigs are the writer settings the differential test writes the
// table with: page versions, dictionaries on and off (and falling back to
// PLAIN inside a chunk), every codec, small row groups and pages, other
// encodings, decimals as integers.
var writerConfigs = []struct {
	name  string
	props []parquet.WriterProperty
}{
	{"v1-dict-snappy", []parquet.WriterProperty{parquet.WithDataPageVersion(parquet.DataPageV1), parquet.WithCompression(compress.Codecs.Snappy)}},
	{"v2-dict-zstd", []parquet.WriterProperty{parquet.WithDataPageVersion(parquet.DataPageV2), parquet.WithCompression(compress.Codecs.Zstd)}},
	{"v1-plain-gzip", []parquet.WriterProperty{parquet.WithDataPageVersion(parquet.DataPageV1), parquet.WithDictionaryDefault(false), parquet.WithCompression(compress.Codecs.Gzip)}},
	{"v2-plain-none-small", []parquet.WriterProperty{parquet.WithDataPageVersion(parquet.DataPageV2), parquet.WithDictionaryDefault(false),
		parquet.WithMaxRowGroupLength(700), parquet.WithDataPageSize(512)}},
	{"v1-fallback-brotli", []parquet.WriterProperty{parquet.WithDataPageVersion(parquet.DataPageV1), parquet.WithDictionaryPageSizeLimit(300),
		parquet.WithDataPageSize(1024), parquet.WithCompression(compress.Codecs.Brotli)}},
	{"v2-fallback-lz4", []parquet.WriterProperty{parquet.WithDataPageVersion(parquet.DataPageV2), parquet.WithDictionaryPageSizeLimit(300),
		parquet.WithDataPageSize(1024), parquet.WithCompression(compress.Codecs.Lz4Raw), parquet.WithMaxRowGroupLength(1500)}},
	{"v2-delta-bss", []parquet.WriterProperty{parquet.WithDataPageVersion(parquet.DataPageV2), parquet.WithDictionaryDefault(false),
		parquet.WithEncodingFor("i32", parquet.Encodings.DeltaBinaryPacked), parquet.WithEncodingFor("i64", parquet.Encodings.DeltaBinaryPacked),
		parquet.WithEncodingFor("k", parquet.Encodings.DeltaBinaryPacked), parquet.WithEncodingFor("mostlynull", parquet.Encodings.DeltaBinaryPacked),
		parquet.WithEncodingFor("f64", parquet.Encodings.ByteStreamSplit), parquet.WithEncodingFor("f32", parquet.Encodings.ByteStreamSplit),
		parquet.WithEncodingFor("wide", parquet.Encodings.ByteStreamSplit), parquet.WithEncodingFor("text", parquet.Encodings.DeltaLengthByteArray),
		parquet.WithEncodingFor("flag", parquet.Encodings.DeltaByteArray), parquet.WithMaxRowGroupLength(2000)}},
	{"v1-decimal-integers", []parquet.WriterProperty{parquet.WithStoreDecimalAsInteger(true), parquet.WithMaxRowGroupLength(1000)}},
	{"no-stats", []parquet.WriterProperty{parquet.WithStats(false), parquet.WithDataPageVersion(parquet.DataPageV1)}},
}

// TestParquetScanMatchesEveryWriter writes one random table with each of
// writerConfigs and checks that every value the scan reads, in batches of
// several sizes, is the value written.
func TestParquetScanMatchesEveryWriter(t *testing.T) {
	const n = 5000
	want := randomWriterTable(1, n)
	defer want.Release()
	for _, cfg := range writerConfigs {
		t.Run(cfg.name, func(t *testing.T) {
			want.Retain()
			path := filepath.Join(t.TempDir(), "t.parquet")
			writeParquetArrow(t, path, want, pqarrow.DefaultWriterProps(), cfg.props...)
			checkScanMatches(t, path, want)
			// Every column but the booleans is read by the scan's own
			// readers, not arrow's.
			rdr, m := testutil.OpenWithManifest(t, path)
			fields := make([]int, want.NumCols())
			for i := range fields {
				fields[i] = i
			}
			rgs := testutil.AllRowGroups(rdr)
			pqcol.ReadDecimalsRaw(m, rdr, fields)
			pqcol.ReadDatesRaw(m, rdr, fields)
			dictLeaves := pqcol.DictionaryOnlyStrings(rdr, fields, rgs)
			decoders := pqcol.ChooseDecoders(m, rdr, fields, rgs, nil)
			for j := range fields {
				own := decoders[j] != "" || slices.Contains(dictLeaves, j)
				if name := want.Schema().Field(j).Name; own != (name != "ok") {
					t.Errorf("column %s read by the scan's own reader: %v", name, own)
				}
			}
		})
	}
}

// checkScanMatches scans every column of the table at path in batches of
// several sizes and compares each value with want's.
func checkScanMatches(t *testing.T, path string, want arrow.RecordBatch) {
	t.Helper()
	tbl, err := catalog.OpenParquet(path)
	if err != nil {
		t.Fatal(err)
	}
	projection := make([]int, want.NumCols())
	for i := range projection {
		projection[i] = i
	}
	for _, batch := range []int{1000, 333, 4096} {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		bs := drainPartition(t, NewParquetScan("t", tbl, projection, nil, 1), 0, testTaskContext(mem, batch))
		row := 0
		for _, b := range bs {
			for c := range int(b.NumCols()) {
				got, exp := b.Column(c), want.Column(c)
				for r := range int(b.NumRows()) {
					if g, w := testutil.CellValue(got, r), testutil.CellValue(exp, row+r); g != w {
						t.Fatalf("batch size %d: column %s row %d: read %v, wrote %v", batch, want.Schema().Field(c).Name, row+r, g, w)
					}
				}
			}
			row += int(b.NumRows())
			b.Release()
		}
		if row != int(want.NumRows()) {
			t.Fatalf("batch size %d: %d rows read, %d written", batch, row, want.NumRows())
		}
		mem.AssertSize(t, 0)
	}
}
