package parquet

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"runtime/debug"
	"strings"
	"testing"

	"sluice/physical/internal/testutil"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// The fuzz targets below check each of the scan's own Parquet decoders
// against arrow-go's reader: the fuzzer's bytes become a column's values
// and NULLs, arrow-go's writer writes them with the settings the target
// picks from its options byte, and the decoder must read back exactly
// what arrow-go's record reader reads, in batches of the fuzzer's size.
// Then one byte of the file's pages is changed: the decoder may fail, but
// must not panic. `make fuzz` runs each for FUZZTIME; their seeds run in
// go test.

// Column kinds of the fuzz targets.
const (
	fuzzInt64 = iota
	fuzzInt32
	fuzzFloat64
	fuzzDecimal // decimal128(20, 3): FIXED_LEN_BYTE_ARRAY
	fuzzString
)

// Page encodings of the fuzz targets.
const (
	fuzzDict     = iota
	fuzzPlain    // dictionary off
	fuzzDelta    // DELTA_BINARY_PACKED, DELTA_LENGTH_BYTE_ARRAY for strings
	fuzzOther    // BYTE_STREAM_SPLIT, DELTA_BYTE_ARRAY for strings
	fuzzFallback // a dictionary too small for the chunk: PLAIN after it
)

// fuzzColumn is one fuzz case: a column of kind written with encoding enc,
// nullable or not, in v2 data pages or v1, small pages or not.
type fuzzColumn struct {
	kind, enc          int
	nullable, v2, tiny bool
}

// fuzzArray builds the column's values from data, a few bytes per row.
func (fc fuzzColumn) array(data []byte) arrow.Array {
	mem := memory.NewGoAllocator()
	var b array.Builder
	switch fc.kind {
	case fuzzInt64:
		b = array.NewInt64Builder(mem)
	case fuzzInt32:
		b = array.NewInt32Builder(mem)
	case fuzzFloat64:
		b = array.NewFloat64Builder(mem)
	case fuzzDecimal:
		b = array.NewDecimal128Builder(mem, &arrow.Decimal128Type{Precision: 20, Scale: 3})
	default:
		b = array.NewStringBuilder(mem)
	}
	defer b.Release()
	// Rows repeat the fuzzer's bytes so that runs, dictionaries and
	// several pages happen.
	for i := 0; len(data) > 0 && i < 3000; i++ {
		c := data[i%len(data)]
		if fc.nullable && c%5 == 0 {
			b.AppendNull()
			continue
		}
		var w [8]byte
		for k := range w {
			w[k] = data[(i+k+1)%len(data)]
		}
		v := int64(binary.LittleEndian.Uint64(w[:])) >> (c % 64)
		switch b := b.(type) {
		case *array.Int64Builder:
			b.Append(v)
		case *array.Int32Builder:
			b.Append(int32(v))
		case *array.Float64Builder:
			b.Append(float64(v) / 16)
		case *array.Decimal128Builder:
			b.Append(decimal128.FromI64(v % 1e17))
		case *array.StringBuilder:
			b.Append(strings.Repeat(string(rune('a'+c%26)), int(c%7)) + fmt.Sprint(v%int64(c/4+1)))
		}
	}
	return b.NewArray()
}

// props are the writer properties of the case.
func (fc fuzzColumn) props() []parquet.WriterProperty {
	ps := []parquet.WriterProperty{parquet.WithDataPageVersion(parquet.DataPageV1)}
	if fc.v2 {
		ps[0] = parquet.WithDataPageVersion(parquet.DataPageV2)
	}
	if fc.tiny {
		ps = append(ps, parquet.WithDataPageSize(256), parquet.WithMaxRowGroupLength(700))
	}
	switch fc.enc {
	case fuzzPlain:
		ps = append(ps, parquet.WithDictionaryDefault(false))
	case fuzzDelta:
		e := parquet.Encodings.DeltaBinaryPacked
		if fc.kind == fuzzString {
			e = parquet.Encodings.DeltaLengthByteArray
		}
		ps = append(ps, parquet.WithDictionaryDefault(false), parquet.WithEncoding(e))
	case fuzzOther:
		e := parquet.Encodings.ByteStreamSplit
		if fc.kind == fuzzString {
			e = parquet.Encodings.DeltaByteArray
		}
		ps = append(ps, parquet.WithDictionaryDefault(false), parquet.WithEncoding(e))
	case fuzzFallback:
		ps = append(ps, parquet.WithDictionaryPageSizeLimit(64), parquet.WithDataPageSize(512))
	}
	return ps
}

// fuzzReader opens the decoder under test over the file's only column,
// or returns nil when the case is not one the decoder takes.
type fuzzReader func(rdr *file.Reader, m *pqarrow.SchemaManifest) Column

// runFuzzColumn writes the case's column, reads it with open's decoder
// and with arrow's reader, and compares; then checks a corrupted copy
// does not panic the decoder.
func runFuzzColumn(t *testing.T, fc fuzzColumn, data []byte, batch int, corrupt uint16, open fuzzReader) {
	col := fc.array(data)
	defer col.Release()
	if col.Len() == 0 {
		return
	}
	sc := arrow.NewSchema([]arrow.Field{{Name: "c", Type: col.DataType(), Nullable: fc.nullable}}, nil)
	rec := array.NewRecordBatch(sc, []arrow.Array{col}, int64(col.Len()))
	var buf bytes.Buffer
	w, err := pqarrow.NewFileWriter(sc, &buf, parquet.NewWriterProperties(fc.props()...), pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	rec.Release()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	raw := buf.Bytes()
	rdr, err := file.NewParquetReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	m, err := pqarrow.NewSchemaManifest(rdr.MetaData().Schema, nil, &pqarrow.ArrowReadProperties{})
	if err != nil {
		t.Fatal(err)
	}
	oc := open(rdr, m)
	if oc == nil {
		return
	}
	// The oracle: arrow's own reader.
	fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := fr.ReadTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Release()
	want := tbl.Column(0).Data().Chunks()
	var flat []any
	for _, c := range want {
		for r := range c.Len() {
			flat = append(flat, testutil.CellValue(c, r))
		}
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	row := 0
	for row < len(flat) {
		n := min(batch, len(flat)-row)
		a, err := oc.Read(mem, n)
		if err != nil {
			t.Fatalf("%+v: rows %d-%d: %v", fc, row, row+n, err)
		}
		got := plainArray(t, mem, a)
		for r := range n {
			if g := testutil.CellValue(got, r); g != flat[row+r] {
				t.Fatalf("%+v: row %d: read %v, arrow reads %v", fc, row+r, g, flat[row+r])
			}
		}
		got.Release()
		row += n
	}
	oc.Close()
	mem.AssertSize(t, 0)

	// A changed byte among the pages (not the footer, which arrow reads)
	// may make the decoder fail, never panic.
	footer := int(binary.LittleEndian.Uint32(raw[len(raw)-8:])) + 8
	if pages := len(raw) - footer - 4; pages > 0 {
		bad := bytes.Clone(raw)
		bad[4+int(corrupt)%pages] ^= byte(corrupt>>8) | 1
		readCorrupt(t, bad, open, len(flat), batch)
	}
}

// readCorrupt reads a corrupted file with the decoder, failing on a panic
// raised in the scan's code (one in arrow's page reader is arrow's).
func readCorrupt(t *testing.T, raw []byte, open fuzzReader, rows, batch int) {
	defer func() {
		if p := recover(); p != nil {
			if st := string(debug.Stack()); strings.Contains(st, "sluice/physical.") && !strings.Contains(st, "apache/arrow-go/v18/parquet/file.(*serializedPageReader)") {
				t.Fatalf("decoder panicked on a corrupt page: %v\n%s", p, st)
			}
		}
	}()
	rdr, err := file.NewParquetReader(bytes.NewReader(raw))
	if err != nil {
		return
	}
	m, err := pqarrow.NewSchemaManifest(rdr.MetaData().Schema, nil, &pqarrow.ArrowReadProperties{})
	if err != nil {
		return
	}
	oc := open(rdr, m)
	if oc == nil {
		return
	}
	defer oc.Close()
	for row := 0; row < rows; row += batch {
		a, err := oc.Read(memory.DefaultAllocator, min(batch, rows-row))
		if err != nil {
			return
		}
		a.Release()
	}
}

// plainArray turns a dictionary<int32, utf8> array into utf8; other
// arrays are returned as they are (retained).
func plainArray(t *testing.T, mem memory.Allocator, a arrow.Array) arrow.Array {
	d, ok := a.(*array.Dictionary)
	if !ok {
		return a
	}
	defer a.Release()
	out, err := DecodeStringDictionary(mem, d, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// fuzzSeeds adds seeds for every options byte a target uses.
func fuzzSeeds(f *testing.F) {
	for opts := range 64 {
		f.Add([]byte("\x01\x05\x09\x00\x33\xff\x7f\x10\x80\x02abcdefgh"), uint8(opts), uint16(333), uint16(opts*977))
		f.Add([]byte{3, 3, 3, 3, 3, 3, 3, 3, 3, 200}, uint8(opts), uint16(1024), uint16(opts*31))
	}
}

// caseFrom decodes the options byte: bit 0 nullable, bit 1 v2 pages,
// bit 2 small pages and row groups, bits 3-5 the encoding among encs.
func caseFrom(kind int, opts uint8, encs ...int) fuzzColumn {
	return fuzzColumn{kind: kind, nullable: opts&1 != 0, v2: opts&2 != 0, tiny: opts&4 != 0, enc: encs[int(opts>>3)%len(encs)]}
}

func batchFrom(b uint16) int { return int(b%2000) + 1 }

// FuzzDeltaColumn: required INT64 DELTA_BINARY_PACKED (deltaColumn).
func FuzzDeltaColumn(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte, opts uint8, batch, corrupt uint16) {
		fc := caseFrom(fuzzInt64, opts, fuzzDelta)
		fc.nullable = false
		runFuzzColumn(t, fc, data, batchFrom(batch), corrupt, func(rdr *file.Reader, m *pqarrow.SchemaManifest) Column {
			if !deltaColumns(m, rdr, []int{0}, testutil.AllRowGroups(rdr))[0] {
				t.Fatalf("%+v: not chosen for the delta decoder", fc)
			}
			return newDeltaColumn(rdr, 0, testutil.AllRowGroups(rdr))
		})
	})
}

// FuzzDictColumn: dictionary-encoded strings, required or optional
// (dictColumn).
func FuzzDictColumn(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte, opts uint8, batch, corrupt uint16) {
		fc := caseFrom(fuzzString, opts, fuzzDict)
		runFuzzColumn(t, fc, data, batchFrom(batch), corrupt, func(rdr *file.Reader, m *pqarrow.SchemaManifest) Column {
			rgs := testutil.AllRowGroups(rdr)
			if len(DictionaryOnlyStrings(rdr, []int{0}, rgs)) == 0 {
				return nil // the writer fell back to PLAIN
			}
			return newDictColumn(rdr, 0, rgs)
		})
	})
}

// FuzzDictNumColumn: required dictionary-encoded INT32 and INT64
// (dictNumColumn).
func FuzzDictNumColumn(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte, opts uint8, batch, corrupt uint16) {
		kind := fuzzInt64
		if opts&8 != 0 {
			kind = fuzzInt32
		}
		fc := caseFrom(kind, opts, fuzzDict)
		fc.nullable = false
		runFuzzColumn(t, fc, data, batchFrom(batch), corrupt, func(rdr *file.Reader, m *pqarrow.SchemaManifest) Column {
			if !dictNumColumns(m, rdr, []int{0}, testutil.AllRowGroups(rdr))[0] {
				return nil // the writer fell back to PLAIN
			}
			return newDictNumColumn(rdr, 0, testutil.AllRowGroups(rdr))
		})
	})
}

// FuzzFlatColumn: INT32, INT64, DOUBLE and FIXED_LEN_BYTE_ARRAY decimals,
// required or optional, in every encoding flatColumn takes (flatColumn,
// with the definition levels of parquet_levels.go).
func FuzzFlatColumn(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte, opts uint8, batch, corrupt uint16) {
		kind := []int{fuzzInt64, fuzzInt32, fuzzFloat64, fuzzDecimal}[int(opts>>6)]
		encs := []int{fuzzDict, fuzzPlain, fuzzFallback, fuzzOther}
		if kind == fuzzInt64 || kind == fuzzInt32 {
			encs[3] = fuzzDelta
		}
		fc := caseFrom(kind, opts&0x3f, encs...)
		runFuzzColumn(t, fc, data, batchFrom(batch), corrupt, func(rdr *file.Reader, m *pqarrow.SchemaManifest) Column {
			if !flatColumns(m, rdr, []int{0}, testutil.AllRowGroups(rdr))[0] {
				t.Fatalf("%+v: not chosen for the flat decoder", fc)
			}
			return newFlatColumn(rdr, 0, testutil.AllRowGroups(rdr), m.Fields[0].Field.Type)
		})
	})
}

// FuzzFlatStrings: strings, required or optional, PLAIN, dictionary with
// fallback, DELTA_LENGTH_BYTE_ARRAY and DELTA_BYTE_ARRAY (flatStrings).
func FuzzFlatStrings(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte, opts uint8, batch, corrupt uint16) {
		fc := caseFrom(fuzzString, opts, fuzzPlain, fuzzFallback, fuzzDelta, fuzzOther, fuzzDict)
		runFuzzColumn(t, fc, data, batchFrom(batch), corrupt, func(rdr *file.Reader, m *pqarrow.SchemaManifest) Column {
			if !flatStringColumns(m, rdr, []int{0}, testutil.AllRowGroups(rdr))[0] {
				t.Fatalf("%+v: not chosen for the string decoder", fc)
			}
			return newFlatStrings(rdr, 0, testutil.AllRowGroups(rdr))
		})
	})
}
