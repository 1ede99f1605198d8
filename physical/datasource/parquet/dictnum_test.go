package parquet

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"sluice/physical/internal/testutil"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// dictNumFile writes vals as one required column of typ (Int32 or Int64),
// dictionary encoded, rowGroup rows per row group, with small data pages
// and the extra writer properties, and opens it.
func dictNumFile(t testing.TB, typ arrow.DataType, rowGroup int64, extra []parquet.WriterProperty, vals []int64) *file.Reader {
	t.Helper()
	sc := arrow.NewSchema([]arrow.Field{{Name: "v", Type: typ}}, nil)
	var a arrow.Array
	if typ.ID() == arrow.INT32 {
		b := array.NewInt32Builder(memory.DefaultAllocator)
		for _, v := range vals {
			b.Append(int32(v))
		}
		a = b.NewArray()
		b.Release()
	} else {
		b := array.NewInt64Builder(memory.DefaultAllocator)
		b.AppendValues(vals, nil)
		a = b.NewArray()
		b.Release()
	}
	rec := array.NewRecordBatch(sc, []arrow.Array{a}, int64(len(vals)))
	a.Release()
	defer rec.Release()
	return parquetInMemory(t, rec, append([]parquet.WriterProperty{
		parquet.WithDictionaryDefault(true),
		parquet.WithDictionaryCostFallbackFor("v", false),
		parquet.WithDataPageSize(4096),
		parquet.WithMaxRowGroupLength(rowGroup),
	}, extra...))
}

// dictNumPatterns are integer columns whose codes take every kind of run
// and the bit widths the unpacking treats apart (0 to 8, 9 to 14, wider),
// with negative values and the extremes of each type among the entries.
func dictNumPatterns(n int, wide bool) map[string][]int64 {
	r := rand.New(rand.NewPCG(5, 6))
	lo, hi := int64(-1<<31), int64(1<<31-1)
	if wide {
		lo, hi = -1<<63, 1<<63-1
	}
	pick := func(k int) []int64 {
		entries := []int64{lo, hi, 0, -1}
		for len(entries) < k {
			e := int64(int32(r.Uint32()))
			if wide {
				e = int64(r.Uint64())
			}
			entries = append(entries, e)
		}
		v := make([]int64, n)
		for i := range v {
			v[i] = entries[r.IntN(k)]
		}
		return v
	}
	pats := map[string][]int64{"one": slices.Repeat([]int64{hi}, n)}
	for _, k := range []int{4, 200, 600, 3000, 70000} {
		pats[fmt.Sprint(k)] = pick(k)
	}
	runs := make([]int64, n)
	for i := range runs {
		runs[i] = int64(i/50%4) - 2
	}
	pats["runs"] = runs
	return pats
}

func TestDictNumColumnMatchesValues(t *testing.T) {
	for _, typ := range []arrow.DataType{arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Int64} {
		for layout, extra := range pageLayouts {
			for _, n := range []int{1, 9, 1000, 20000} {
				for name, vals := range dictNumPatterns(n, typ.ID() == arrow.INT64) {
					name := fmt.Sprintf("%s %s %s n=%d", typ, layout, name, n)
					rdr := dictNumFile(t, typ, 7000, extra, vals)
					groups := testutil.AllRowGroups(rdr)
					m, err := pqarrow.NewSchemaManifest(rdr.MetaData().Schema, nil, &pqarrow.ArrowReadProperties{})
					if err != nil {
						t.Fatal(err)
					}
					if !dictNumColumns(m, rdr, []int{0}, groups)[0] {
						t.Fatalf("%s: not chosen for the dictionary decoder", name)
					}
					mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
					c := newDictNumColumn(rdr, 0, groups)
					var got []int64
					// Odd batch sizes cross runs, scratch fills, pages and
					// row groups.
					for len(got) < n {
						k := min(n-len(got), 1+len(got)%5001)
						a, err := c.Read(mem, k)
						if err != nil {
							t.Fatalf("%s: %v", name, err)
						}
						if !arrow.TypeEqual(a.DataType(), typ) || a.Len() != k || a.NullN() != 0 {
							t.Fatalf("%s: read %s of %d rows (%d NULL), want %s of %d", name, a.DataType(), a.Len(), a.NullN(), typ, k)
						}
						switch a := a.(type) {
						case *array.Int32:
							for _, v := range a.Int32Values() {
								got = append(got, int64(v))
							}
						case *array.Int64:
							got = append(got, a.Int64Values()...)
						}
						a.Release()
					}
					if _, err := c.Read(mem, 1); err == nil {
						t.Fatalf("%s: a read past the end did not fail", name)
					}
					c.Close()
					mem.AssertSize(t, 0)
					for i := range got {
						if got[i] != vals[i] {
							t.Fatalf("%s: row %d = %d, want %d", name, i, got[i], vals[i])
						}
					}
				}
			}
		}
	}
}

func TestDictNumColumnsChosenOnlyForRequiredDictionaryIntegers(t *testing.T) {
	keepDict := []parquet.WriterProperty{parquet.WithDictionaryCostFallbackFor("v", false)}
	for _, c := range []struct {
		what     string
		typ      arrow.DataType
		nullable bool
		props    []parquet.WriterProperty
		want     bool
	}{
		{"a dictionary-encoded required int32", arrow.PrimitiveTypes.Int32, false, keepDict, true},
		{"a dictionary-encoded required int64", arrow.PrimitiveTypes.Int64, false, keepDict, true},
		{"a dictionary-encoded required date", arrow.FixedWidthTypes.Date32, false, keepDict, false},
		{"a dictionary-encoded required float64", arrow.PrimitiveTypes.Float64, false, keepDict, false},
		// Its pages carry definition levels.
		{"a nullable dictionary-encoded int64", arrow.PrimitiveTypes.Int64, true, keepDict, false},
		{"a plain-encoded int64", arrow.PrimitiveTypes.Int64, false, []parquet.WriterProperty{parquet.WithDictionaryDefault(false)}, false},
	} {
		sc := arrow.NewSchema([]arrow.Field{{Name: "v", Type: c.typ, Nullable: c.nullable}}, nil)
		b := array.NewBuilder(memory.DefaultAllocator, c.typ)
		for _, v := range []int{1, 2, 1} {
			switch b := b.(type) {
			case *array.Int32Builder:
				b.Append(int32(v))
			case *array.Int64Builder:
				b.Append(int64(v))
			case *array.Date32Builder:
				b.Append(arrow.Date32(v))
			case *array.Float64Builder:
				b.Append(float64(v))
			}
		}
		a := b.NewArray()
		b.Release()
		rec := array.NewRecordBatch(sc, []arrow.Array{a}, 3)
		a.Release()
		path := filepath.Join(t.TempDir(), "c.parquet")
		testutil.WriteParquet(t, path, rec, c.props...)
		rdr, m := testutil.OpenWithManifest(t, path)
		// Dates are read as Int32 only once ReadDatesRaw says so.
		if got := dictNumColumns(m, rdr, []int{0}, []int{0})[0]; got != c.want {
			t.Errorf("%s: chosen for the dictionary decoder %v, want %v", c.what, got, c.want)
		}
		if c.typ.ID() == arrow.DATE32 {
			ReadDatesRaw(m, rdr, []int{0})
			if !dictNumColumns(m, rdr, []int{0}, []int{0})[0] {
				t.Errorf("%s read as Int32: not chosen for the dictionary decoder", c.what)
			}
		}
	}
}

func BenchmarkDictNumColumn(b *testing.B) {
	for _, name := range []string{"200", "3000"} {
		vals := dictNumPatterns(1<<20, false)[name]
		rdr := dictNumFile(b, arrow.PrimitiveTypes.Int32, 1<<20, []parquet.WriterProperty{parquet.WithDataPageSize(1 << 20)}, vals)
		b.Run(name, func(b *testing.B) {
			b.SetBytes(4 << 20)
			benchOwnColumn(b, func() Column { return newDictNumColumn(rdr, 0, []int{0}) }, len(vals))
		})
		b.Run("arrow/"+name, func(b *testing.B) {
			b.SetBytes(4 << 20)
			benchArrowReader(b, rdr, pqarrow.ArrowReadProperties{BatchSize: 8192})
		})
	}
}
