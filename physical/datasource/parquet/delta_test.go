package parquet

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"sluice/physical/internal/testutil"
	"sluice/physical/mempool"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// deltaFile writes cols as required INT64 columns c0, c1, ... with
// DELTA_BINARY_PACKED, rowGroup rows per row group, small data pages and
// the extra writer properties, and opens it.
func deltaFile(t testing.TB, rowGroup int64, extra []parquet.WriterProperty, cols ...[]int64) *file.Reader {
	t.Helper()
	var fields []arrow.Field
	var arrs []arrow.Array
	for i, c := range cols {
		b := array.NewInt64Builder(memory.DefaultAllocator)
		b.AppendValues(c, nil)
		arrs = append(arrs, b.NewArray())
		b.Release()
		fields = append(fields, arrow.Field{Name: fmt.Sprintf("c%d", i), Type: arrow.PrimitiveTypes.Int64})
	}
	sc := arrow.NewSchema(fields, nil)
	rec := array.NewRecordBatch(sc, arrs, int64(len(cols[0])))
	defer rec.Release()
	for _, a := range arrs {
		a.Release()
	}
	return parquetInMemory(t, rec, append([]parquet.WriterProperty{
		parquet.WithDictionaryDefault(false),
		parquet.WithEncoding(parquet.Encodings.DeltaBinaryPacked),
		parquet.WithDataPageSize(4096),
		parquet.WithMaxRowGroupLength(rowGroup),
	}, extra...))
}

// parquetInMemory writes rec with the writer properties to a buffer and
// opens it.
func parquetInMemory(t testing.TB, rec arrow.RecordBatch, props []parquet.WriterProperty) *file.Reader {
	t.Helper()
	var buf bytes.Buffer
	w, err := pqarrow.NewFileWriter(rec.Schema(), &buf, parquet.NewWriterProperties(props...), pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	rdr, err := file.NewParquetReader(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	return rdr
}

// benchOwnColumn times reading n values in batches of 8192 from the
// columns open returns.
func benchOwnColumn(b *testing.B, open func() Column, n int) {
	for b.Loop() {
		c := open()
		for done := 0; done < n; done += 8192 {
			a, err := c.Read(mempool.Allocator, min(8192, n-done))
			if err != nil {
				b.Fatal(err)
			}
			a.Release()
		}
		c.Close()
	}
}

// benchArrowReader times arrow's record reader over the file's first
// column with props, for comparison with the scan's own decoders.
func benchArrowReader(b *testing.B, rdr *file.Reader, props pqarrow.ArrowReadProperties) {
	fr, err := pqarrow.NewFileReader(rdr, props, mempool.Allocator)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		rr, err := fr.GetRecordReader(b.Context(), []int{0}, []int{0})
		if err != nil {
			b.Fatal(err)
		}
		for rr.Next() {
		}
		rr.Release()
	}
}

// deltaPatterns are columns that exercise every bit width: sorted keys,
// random values of several widths, negatives, constants and the int64
// extremes (whose differences wrap).
func deltaPatterns(n int) map[string][]int64 {
	r := rand.New(rand.NewPCG(1, 2))
	pats := map[string][]int64{}
	sorted := make([]int64, n)
	for i := range sorted {
		sorted[i] = int64(i/4)*3 + 1
	}
	pats["sorted"] = sorted
	for _, bitsWide := range []uint{1, 7, 8, 13, 24, 31, 33, 48, 56, 57, 63} {
		v := make([]int64, n)
		for i := range v {
			v[i] = int64(r.Uint64() >> (64 - bitsWide))
		}
		pats[fmt.Sprintf("random%d", bitsWide)] = v
	}
	full := make([]int64, n)
	for i := range full {
		full[i] = int64(r.Uint64())
	}
	pats["full64"] = full
	ext := make([]int64, n)
	for i := range ext {
		ext[i] = []int64{math.MinInt64, math.MaxInt64, 0, -1, 1}[r.IntN(5)]
	}
	pats["extremes"] = ext
	neg := make([]int64, n)
	for i := range neg {
		neg[i] = -int64(r.IntN(1000)) - 5000*int64(i)
	}
	pats["descending"] = neg
	constant := make([]int64, n)
	for i := range constant {
		constant[i] = 42
	}
	pats["constant"] = constant
	return pats
}

// pageLayouts are data pages of both versions, compressed and not, for
// the tests of the scan's own column decoders.
var pageLayouts = map[string][]parquet.WriterProperty{
	"v1":        nil,
	"v2 snappy": {parquet.WithDataPageVersion(parquet.DataPageV2), parquet.WithCompression(compress.Codecs.Snappy)},
}

func TestDeltaColumnMatchesValues(t *testing.T) {
	for layout, extra := range pageLayouts {
		for _, n := range []int{1, 2, 31, 33, 127, 129, 1000, 20000} {
			for name, vals := range deltaPatterns(n) {
				name := layout + " " + name
				rdr := deltaFile(t, 7000, extra, vals)
				if pr, err := rdr.RowGroup(0).GetColumnPageReader(0); err != nil || !pr.Next() {
					t.Fatalf("%s: no first page: %v", name, err)
				} else if _, v2 := pr.Page().(*file.DataPageV2); v2 != (extra != nil) {
					t.Fatalf("%s: first page is %T", name, pr.Page())
				}
				c := newDeltaColumn(rdr, 0, testutil.AllRowGroups(rdr))
				var got []int64
				// Odd batch sizes cross page and row-group boundaries.
				for len(got) < n {
					k := min(n-len(got), 1+len(got)%5000)
					a, err := c.Read(memory.DefaultAllocator, k)
					if err != nil {
						t.Fatalf("%s n=%d: %v", name, n, err)
					}
					got = append(got, a.(*array.Int64).Int64Values()...)
					a.Release()
				}
				c.Close()
				if !slices.Equal(got, vals) {
					for i := range got {
						if got[i] != vals[i] {
							t.Fatalf("%s n=%d: row %d = %d, want %d", name, n, i, got[i], vals[i])
						}
					}
				}
				if _, err := c.Read(memory.DefaultAllocator, 1); err == nil {
					t.Fatalf("%s n=%d: a read past the end did not fail", name, n)
				}
			}
		}
	}
}

func TestDeltaColumnsChosenOnlyForDeltaPages(t *testing.T) {
	delta := []parquet.WriterProperty{parquet.WithDictionaryDefault(false), parquet.WithEncoding(parquet.Encodings.DeltaBinaryPacked)}
	for _, c := range []struct {
		what     string
		nullable bool
		props    []parquet.WriterProperty
		want     bool
	}{
		{"a delta-encoded required column", false, delta, true},
		{"a dictionary-encoded column (the default encodings)", false, nil, false},
		// Its pages carry definition levels.
		{"a nullable delta-encoded column", true, delta, false},
	} {
		sc := arrow.NewSchema([]arrow.Field{{Name: "c0", Type: arrow.PrimitiveTypes.Int64, Nullable: c.nullable}}, nil)
		b := array.NewInt64Builder(memory.DefaultAllocator)
		b.AppendValues([]int64{1, 2, 3}, nil)
		a := b.NewArray()
		b.Release()
		rec := array.NewRecordBatch(sc, []arrow.Array{a}, 3)
		a.Release()
		path := filepath.Join(t.TempDir(), "c.parquet")
		testutil.WriteParquet(t, path, rec, c.props...)
		rdr, m := testutil.OpenWithManifest(t, path)
		if got := deltaColumns(m, rdr, []int{0}, []int{0})[0]; got != c.want {
			t.Errorf("%s: chosen for the delta decoder %v, want %v", c.what, got, c.want)
		}
	}
}

func TestDecodeDeltaRejectsCorruptPages(t *testing.T) {
	rdr := deltaFile(t, 1000, nil, deltaPatterns(300)["random24"])
	pr, err := rdr.RowGroup(0).GetColumnPageReader(0)
	if err != nil {
		t.Fatal(err)
	}
	if !pr.Next() {
		t.Fatal(pr.Err())
	}
	page := slices.Clone(pr.Page().Data())
	n := int(pr.Page().NumValues())
	out := make([]int64, n)
	if err := decodeDeltaBinaryPacked(page, out); err != nil {
		t.Fatal(err)
	}
	// Every truncation fails with an error, never a panic or a short read.
	for cut := 0; cut < len(page); cut++ {
		if err := decodeDeltaBinaryPacked(page[:cut], out); err == nil {
			t.Fatalf("page cut to %d of %d bytes decoded without error", cut, len(page))
		}
	}
	if err := decodeDeltaBinaryPacked(page, make([]int64, n+1)); err == nil {
		t.Fatal("a value count other than the page's was accepted")
	}
}

func BenchmarkDeltaColumn(b *testing.B) {
	for _, name := range []string{"sorted", "random24"} {
		vals := deltaPatterns(1 << 20)[name]
		// Pages as large as the writer's default: one per row group here,
		// as in the generated TPC-H files.
		rdr := deltaFile(b, 1<<20, []parquet.WriterProperty{parquet.WithDataPageSize(1 << 20)}, vals)
		b.Run(name, func(b *testing.B) {
			b.SetBytes(8 << 20)
			benchOwnColumn(b, func() Column { return newDeltaColumn(rdr, 0, []int{0}) }, len(vals))
		})
		// arrow's record reader on the same file, for comparison.
		b.Run("arrow/"+name, func(b *testing.B) {
			b.SetBytes(8 << 20)
			benchArrowReader(b, rdr, pqarrow.ArrowReadProperties{BatchSize: 8192})
		})
	}
}
