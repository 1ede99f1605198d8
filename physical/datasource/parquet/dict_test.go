package parquet

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sluice/physical/internal/testutil"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// dictFile writes vals as one required string column, dictionary encoded,
// rowGroup rows per row group, small data pages and the extra writer
// properties, and opens it.
func dictFile(t testing.TB, rowGroup int64, extra []parquet.WriterProperty, vals []string) *file.Reader {
	t.Helper()
	sc := arrow.NewSchema([]arrow.Field{{Name: "s", Type: arrow.BinaryTypes.String}}, nil)
	b := array.NewStringBuilder(memory.DefaultAllocator)
	b.AppendValues(vals, nil)
	a := b.NewArray()
	b.Release()
	rec := array.NewRecordBatch(sc, []arrow.Array{a}, int64(len(vals)))
	a.Release()
	defer rec.Release()
	return parquetInMemory(t, rec, append([]parquet.WriterProperty{
		parquet.WithDictionaryDefault(true),
		// Uncompressed, the writer would fall back to plain pages where
		// they come out smaller.
		parquet.WithDictionaryCostFallbackFor("s", false),
		parquet.WithDataPageSize(4096),
		parquet.WithMaxRowGroupLength(rowGroup),
	}, extra...))
}

// dictPatterns are string columns whose codes take every kind of run and
// several bit widths: one value (width 0 or 1), two and three values at
// random (bit-packed runs of widths 1 and 2), long repeats (repeated runs),
// 200, 300, 600, 3000 and 9000 values (widths 8, 9, 10, 12 and 14: the
// half-group unpacking), and 70,000 (17), with an empty string among them.
func dictPatterns(n int) map[string][]string {
	r := rand.New(rand.NewPCG(3, 4))
	pats := map[string][]string{}
	pick := func(k int) []string {
		v := make([]string, n)
		for i := range v {
			v[i] = fmt.Sprintf("v%d", r.IntN(k))
		}
		return v
	}
	pats["one"] = slices.Repeat([]string{"only"}, n)
	pats["two"] = pick(2)
	pats["three"] = pick(3)
	pats["200"] = pick(200)
	pats["300"] = pick(300)
	pats["600"] = pick(600)
	pats["3000"] = pick(3000)
	pats["9000"] = pick(9000)
	pats["70000"] = pick(70000)
	runs := make([]string, n)
	for i := range runs {
		runs[i] = strings.Repeat("x", i/50%4) // "" among them
	}
	pats["runs"] = runs
	return pats
}

func TestDictColumnMatchesValues(t *testing.T) {
	for layout, extra := range pageLayouts {
		for _, n := range []int{1, 7, 9, 1000, 20000} {
			for name, vals := range dictPatterns(n) {
				name := fmt.Sprintf("%s %s n=%d", layout, name, n)
				rdr := dictFile(t, 7000, extra, vals)
				groups := testutil.AllRowGroups(rdr)
				for i := range groups {
					cc, err := rdr.MetaData().RowGroup(i).ColumnChunk(0)
					if err != nil || !cc.HasDictionaryPage() {
						t.Fatalf("%s: row group %d has no dictionary page", name, i)
					}
				}
				if got := DictionaryOnlyStrings(rdr, []int{0}, groups); len(got) != 1 {
					t.Fatalf("%s: written with pages other than dictionary codes", name)
				}
				mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
				c := newDictColumn(rdr, 0, groups)
				var got []string
				// Odd batch sizes cross runs, pages and row groups.
				for len(got) < n {
					k := min(n-len(got), 1+len(got)%5001)
					a, err := c.Read(mem, k)
					if err != nil {
						t.Fatalf("%s: %v", name, err)
					}
					d := a.(*array.Dictionary)
					strs := d.Dictionary().(*array.String)
					for i := range k {
						got = append(got, strs.Value(d.GetValueIndex(i)))
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
						t.Fatalf("%s: row %d = %q, want %q", name, i, got[i], vals[i])
					}
				}
			}
		}
	}
}

// TestDictColumnSharesTheRowGroupsDictionary: batches within a row group
// hold one dictionary array (the scan's dictionary filters evaluate a
// dictionary once per array).
func TestDictColumnSharesTheRowGroupsDictionary(t *testing.T) {
	rdr := dictFile(t, 1000, nil, dictPatterns(2000)["three"])
	c := newDictColumn(rdr, 0, []int{0, 1})
	defer c.Close()
	var dicts []arrow.ArrayData
	for range 4 {
		a, err := c.Read(memory.DefaultAllocator, 500)
		if err != nil {
			t.Fatal(err)
		}
		dicts = append(dicts, a.(*array.Dictionary).Dictionary().Data())
		a.Release()
	}
	if dicts[0] != dicts[1] || dicts[2] != dicts[3] || dicts[1] == dicts[2] {
		t.Fatal("batches of one row group do not share its dictionary, or two row groups share one")
	}
}

func TestDictColumnsChosenOnlyForFlatDictionaryStrings(t *testing.T) {
	keepDict := []parquet.WriterProperty{parquet.WithDictionaryCostFallbackFor("s", false)}
	for _, c := range []struct {
		what     string
		nullable bool
		props    []parquet.WriterProperty
		want     bool
	}{
		{"a dictionary-encoded required string", false, keepDict, true},
		// Its pages carry definition levels, which the reader decodes.
		{"a nullable dictionary-encoded string", true, keepDict, true},
		{"a plain-encoded string", false, []parquet.WriterProperty{parquet.WithDictionaryDefault(false)}, false},
	} {
		sc := arrow.NewSchema([]arrow.Field{{Name: "s", Type: arrow.BinaryTypes.String, Nullable: c.nullable}}, nil)
		b := array.NewStringBuilder(memory.DefaultAllocator)
		b.AppendValues([]string{"a", "b", "a"}, nil)
		a := b.NewArray()
		b.Release()
		rec := array.NewRecordBatch(sc, []arrow.Array{a}, 3)
		a.Release()
		path := filepath.Join(t.TempDir(), "c.parquet")
		testutil.WriteParquet(t, path, rec, c.props...)
		rdr, m := testutil.OpenWithManifest(t, path)
		leaves := DictionaryOnlyStrings(rdr, []int{0}, []int{0})
		if got := dictColumns(m, rdr, []int{0}, []int{0}, leaves)[0]; got != c.want {
			t.Errorf("%s: chosen for the dictionary code decoder %v, want %v", c.what, got, c.want)
		}
	}
}

// firstDataPage returns a copy of the first data page's encoded codes, its
// value count and the dictionary's size.
func firstDataPage(t *testing.T, rdr *file.Reader) ([]byte, int, int) {
	t.Helper()
	pr, err := rdr.RowGroup(0).GetColumnPageReader(0)
	if err != nil {
		t.Fatal(err)
	}
	entries := 0
	for pr.Next() {
		if dp, ok := pr.Page().(*file.DictionaryPage); ok {
			entries = int(dp.NumValues())
			continue
		}
		data, err := dataPageValues(pr.Page())
		if err != nil {
			t.Fatal(err)
		}
		return slices.Clone(data), int(pr.Page().NumValues()), entries
	}
	t.Fatalf("no data page: %v", pr.Err())
	return nil, 0, 0
}

func TestCodeDecoderRejectsCorruptPages(t *testing.T) {
	for _, name := range []string{"three", "200", "runs"} {
		page, n, entries := firstDataPage(t, dictFile(t, 1000, nil, dictPatterns(300)[name]))
		decode := func(page []byte, entries int) error {
			var d codeDecoder
			if err := d.reset(page, n); err != nil {
				return err
			}
			out := make([]int32, n)
			k, err := d.decode(out, entries)
			if err == nil && k != n {
				t.Fatalf("%s: %d of %d codes and no error", name, k, n)
			}
			return err
		}
		if err := decode(page, entries); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		// Every truncation fails with an error, never a panic or a short
		// read.
		for cut := 0; cut < len(page); cut++ {
			if err := decode(page[:cut], entries); err == nil {
				t.Fatalf("%s: page cut to %d of %d bytes decoded without error", name, cut, len(page))
			}
		}
		// A code past the dictionary's end is an error, not a row.
		if err := decode(page, entries-1); err == nil {
			t.Fatalf("%s: codes up to %d accepted for a dictionary of %d", name, entries-1, entries-1)
		}
	}
	if _, err := plainStrings(memory.DefaultAllocator, []byte{3, 0, 0, 0, 'a', 'b'}, 1); err == nil {
		t.Fatal("a cut dictionary entry was accepted")
	}
}

func BenchmarkDictColumn(b *testing.B) {
	for _, name := range []string{"three", "200", "runs"} {
		vals := dictPatterns(1 << 20)[name]
		// Pages as large as the writer's default, one row group.
		rdr := dictFile(b, 1<<20, []parquet.WriterProperty{parquet.WithDataPageSize(1 << 20)}, vals)
		b.Run(name, func(b *testing.B) {
			b.SetBytes(4 << 20)
			benchOwnColumn(b, func() Column { return newDictColumn(rdr, 0, []int{0}) }, len(vals))
		})
		// arrow's record reader on the same file, as the scan used it.
		b.Run("arrow/"+name, func(b *testing.B) {
			b.SetBytes(4 << 20)
			props := pqarrow.ArrowReadProperties{BatchSize: 8192}
			props.SetReadDict(0, true)
			benchArrowReader(b, rdr, props)
		})
	}
}

// TestDecodeStringDictionary checks decoding against a row-by-row
// reference, with and without a selection, NULL rows and NULL entries, and
// that a code outside the dictionary is an error.
func TestDecodeStringDictionary(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	newDict := func(entries []string, entryValid []bool, codes []int32, valid []bool) *array.Dictionary {
		sb := array.NewStringBuilder(mem)
		sb.AppendValues(entries, entryValid)
		dict := sb.NewArray()
		sb.Release()
		ib := array.NewInt32Builder(mem)
		ib.AppendValues(codes, valid)
		ix := ib.NewArray()
		ib.Release()
		d := array.NewDictionaryArray(dictStringType, ix, dict)
		ix.Release()
		dict.Release()
		return d
	}
	codes := make([]int32, 300)
	for i := range codes {
		codes[i] = int32(i * 7 % 3)
	}
	rowValid := make([]bool, len(codes))
	for i := range rowValid {
		rowValid[i] = i%5 != 1
	}
	sel := []int32{0, 1, 2, 6, 11, 299}
	for _, c := range []struct {
		name       string
		entries    []string
		entryValid []bool
		valid      []bool
	}{
		{"no NULLs", []string{"A", "", "xyz"}, nil, nil},
		{"one-byte entries", []string{"N", "R", "A"}, nil, nil},
		{"NULL rows", []string{"A", "", "xyz"}, nil, rowValid},
		{"one-byte entries, NULL rows", []string{"N", "R", "A"}, nil, rowValid},
		{"a NULL entry", []string{"A", "", "xyz"}, []bool{true, false, true}, nil},
	} {
		d := newDict(c.entries, c.entryValid, codes, c.valid)
		for _, s := range [][]int32{nil, sel} {
			got, err := DecodeStringDictionary(mem, d, s, false)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			rows := s
			if rows == nil {
				rows = make([]int32, len(codes))
				for i := range rows {
					rows[i] = int32(i)
				}
			}
			strs := got.(*array.String)
			if strs.Len() != len(rows) {
				t.Fatalf("%s: %d rows, want %d", c.name, strs.Len(), len(rows))
			}
			for k, r := range rows {
				if want := d.IsValid(int(r)) && d.Dictionary().IsValid(d.GetValueIndex(int(r))); strs.IsValid(k) != want {
					t.Fatalf("%s sel=%v: row %d valid %v, want %v", c.name, s != nil, r, strs.IsValid(k), want)
				}
				if strs.IsValid(k) && strs.Value(k) != d.Dictionary().(*array.String).Value(d.GetValueIndex(int(r))) {
					t.Fatalf("%s sel=%v: row %d = %q", c.name, s != nil, r, strs.Value(k))
				}
			}
			got.Release()
		}
		d.Release()
	}
	// Out of range, with and without NULL rows; a NULL row's code is not
	// looked at.
	bad := slices.Clone(codes)
	bad[7] = 3
	for _, valid := range [][]bool{nil, rowValid} {
		d := newDict([]string{"A", "", "xyz"}, nil, bad, valid)
		if got, err := DecodeStringDictionary(mem, d, nil, false); err == nil {
			got.Release()
			t.Fatalf("code 3 of a dictionary of 3 decoded (NULL rows: %v)", valid != nil)
		}
		d.Release()
	}
	bad[7], bad[1] = 0, -4 // row 1 is NULL in rowValid
	d := newDict([]string{"A", "", "xyz"}, nil, bad, rowValid)
	got, err := DecodeStringDictionary(mem, d, nil, false)
	if err != nil {
		t.Fatalf("the code of a NULL row was checked: %v", err)
	}
	got.Release()
	d.Release()
}
