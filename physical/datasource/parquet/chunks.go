// Package parquet holds sluice's own Parquet column decoders, which the
// Parquet scan (physical.ParquetScan) uses in place of arrow-go's record
// reader for the column chunks they can read, because they decode in bulk
// straight into Arrow buffers: delta and dictionary encodings, flat
// numbers, decimals and strings, REQUIRED and OPTIONAL columns (definition
// levels become validity bitmaps). It also answers what a column chunk's
// metadata says about its pages. Every decoder is fuzzed against arrow-go's
// reader (fuzz_test.go).
package parquet

import (
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/arrow-go/v18/parquet/schema"
)

// Parquet page types (parquet-format's PageType, which arrow-go keeps in an
// internal package).
const (
	pageData   = 0
	pageDataV2 = 3
)

// allDataPages reports whether the column chunk's metadata records data
// pages, every one of them in one of encs. Without page encoding
// statistics (DuckDB writes none), the chunk's list of encodings decides:
// it must hold one of encs and otherwise only RLE (definition levels) and,
// with a dictionary page, the dictionary page's encoding as the writer
// lists it (PLAIN_DICTIONARY, as PLAIN would be indistinguishable from
// PLAIN data pages).
func allDataPages(cc *metadata.ColumnChunkMetaData, encs ...parquet.Encoding) bool {
	if len(cc.EncodingStats()) == 0 {
		found := false
		for _, e := range cc.Encodings() {
			switch {
			case slices.Contains(encs, e):
				found = true
			case e == parquet.Encodings.RLE:
			case e == parquet.Encodings.PlainDict && cc.HasDictionaryPage():
			default:
				return false
			}
		}
		return found
	}
	data := 0
	for _, st := range cc.EncodingStats() {
		if st.PageType != pageData && st.PageType != pageDataV2 {
			continue
		}
		if !slices.Contains(encs, st.Encoding) {
			return false
		}
		data++
	}
	return data > 0
}

// DictionaryOnlyStrings returns the string leaves whose column chunks in
// every one of rowGroups hold dictionary-encoded data pages only. The scan
// reads those as dictionary arrays and decodes them itself, in bulk: the
// reader's own path appends every value to a builder one at a time, which
// was a fifth of TPC-H q1. A chunk whose writer fell back to plain pages, or
// whose metadata has no page encoding statistics, is read the usual way.
func DictionaryOnlyStrings(rdr *file.Reader, leaves, rowGroups []int) []int {
	md := rdr.MetaData()
	var out []int
	for _, leaf := range leaves {
		col := md.Schema.Column(leaf)
		if col.PhysicalType() != parquet.Types.ByteArray {
			continue
		}
		// Strings only (binary columns keep the reader's own path).
		if _, isString := col.LogicalType().(schema.StringLogicalType); !isString && col.ConvertedType() != schema.ConvertedTypes.UTF8 {
			continue
		}
		if dictionaryOnly(md, leaf, rowGroups, false) {
			out = append(out, leaf)
		}
	}
	return out
}

// dictionaryOnly reports whether leaf's column chunks in every one of
// rowGroups hold a dictionary page and dictionary-encoded data pages only
// (and, with plainText, no encryption either: the scan's own readers take
// the pages as they are).
func dictionaryOnly(md *metadata.FileMetaData, leaf int, rowGroups []int, plainText bool) bool {
	for _, rg := range rowGroups {
		cc, err := md.RowGroup(rg).ColumnChunk(leaf)
		if err != nil || !cc.HasDictionaryPage() || (plainText && cc.CryptoMetadata() != nil) ||
			!allDataPages(cc, parquet.Encodings.RLEDict, parquet.Encodings.PlainDict) {
			return false
		}
	}
	return true
}

// ManifestLeaf returns field c of the manifest when it is a leaf (a flat
// column), else nil.
func ManifestLeaf(m *pqarrow.SchemaManifest, c int) *pqarrow.SchemaField {
	if c < 0 || c >= len(m.Fields) || !m.Fields[c].IsLeaf() {
		return nil
	}
	return &m.Fields[c]
}

// Column is a column this package decodes itself, instead of arrow's
// record reader.
type Column interface {
	// Read returns the column's next n values.
	Read(mem memory.Allocator, n int) (arrow.Array, error)
	// Close releases the pages and buffers the column holds.
	Close()
}

// Decoder names which of this package's decoders reads a column; the
// empty Decoder means arrow's record reader does.
type Decoder string

// The decoders, by what they read.
const (
	DeltaIntegers   Decoder = "delta integers"     // delta.go
	DictionaryCodes Decoder = "dictionary codes"   // dict.go: strings as dictionary arrays
	DictionaryInts  Decoder = "dictionary numbers" // dictnum.go
	Flat            Decoder = "flat"               // flat.go: numbers, decimals
	FlatStrings     Decoder = "flat strings"       // flat_strings.go
)

// ChooseDecoders picks, for each of fields (indices into m's fields), the
// decoder that can read its column chunks in every one of rowGroups: delta
// encoded integers, the codes of dictionary-encoded strings in dictLeaves,
// dictionary-encoded integers, and flat numbers, decimals and strings in
// the encodings common writers use. The first that can wins.
func ChooseDecoders(m *pqarrow.SchemaManifest, rdr *file.Reader, fields, rowGroups, dictLeaves []int) []Decoder {
	delta := deltaColumns(m, rdr, fields, rowGroups)
	dict := dictColumns(m, rdr, fields, rowGroups, dictLeaves)
	dictNum := dictNumColumns(m, rdr, fields, rowGroups)
	flat := flatColumns(m, rdr, fields, rowGroups)
	flatStr := flatStringColumns(m, rdr, fields, rowGroups)
	out := make([]Decoder, len(fields))
	for j := range fields {
		switch {
		case delta[j]:
			out[j] = DeltaIntegers
		case dict[j]:
			out[j] = DictionaryCodes
		case dictNum[j]:
			out[j] = DictionaryInts
		case flat[j]:
			out[j] = Flat
		case flatStr[j]:
			out[j] = FlatStrings
		}
	}
	return out
}

// OpenColumns opens the decoder ChooseDecoders picks for each of fields.
// cols[j] is nil for a field arrow's record reader must read. codes[j] says
// field j is read as dictionary codes this package checked against the
// dictionary's size. The caller closes every column it was given.
func OpenColumns(m *pqarrow.SchemaManifest, rdr *file.Reader, fields, rowGroups, dictLeaves []int) (cols []Column, codes []bool) {
	cols, codes = make([]Column, len(fields)), make([]bool, len(fields))
	for j, d := range ChooseDecoders(m, rdr, fields, rowGroups, dictLeaves) {
		leaf := m.Fields[fields[j]].ColIndex
		switch d {
		case DeltaIntegers:
			cols[j] = newDeltaColumn(rdr, leaf, rowGroups)
		case DictionaryCodes:
			cols[j], codes[j] = newDictColumn(rdr, leaf, rowGroups), true
		case DictionaryInts:
			cols[j] = newDictNumColumn(rdr, leaf, rowGroups)
		case Flat:
			cols[j] = newFlatColumn(rdr, leaf, rowGroups, m.Fields[fields[j]].Field.Type)
		case FlatStrings:
			cols[j] = newFlatStrings(rdr, leaf, rowGroups)
		}
	}
	return cols, codes
}

// ReadDecimalsRaw switches the manifest's decimal leaves stored as INT32 or
// INT64 to those integer types, so the reader hands their values over
// without a copy (its own conversion to decimal128 goes value by value
// through a generic loop, 7 to 13 % of a scan-heavy query); shape then
// widens them in one tight loop. It returns, per read column (fields'
// order), whether that column is read so.
func ReadDecimalsRaw(m *pqarrow.SchemaManifest, rdr *file.Reader, fields []int) []bool {
	return readAsStored(m, rdr, fields, func(t arrow.DataType, phys parquet.Type) arrow.DataType {
		if t.ID() != arrow.DECIMAL128 {
			return nil
		}
		switch phys {
		case parquet.Types.Int64:
			return arrow.PrimitiveTypes.Int64
		case parquet.Types.Int32:
			return arrow.PrimitiveTypes.Int32
		}
		return nil
	})
}

// ReadDatesRaw sets the manifest to read the DATE32 fields among fields as
// Int32, and marks them: arrow's reader hands INT32 columns over without a
// copy, but copies them value by value into a new buffer as Date32. The
// scan turns them back into Date32 over the same buffers.
func ReadDatesRaw(m *pqarrow.SchemaManifest, rdr *file.Reader, fields []int) []bool {
	return readAsStored(m, rdr, fields, func(t arrow.DataType, phys parquet.Type) arrow.DataType {
		if t.ID() != arrow.DATE32 || phys != parquet.Types.Int32 {
			return nil
		}
		return arrow.PrimitiveTypes.Int32
	})
}

// readAsStored switches the manifest's leaf fields among fields to the
// type as returns for their Arrow type and physical type (nil: leave it),
// and returns per read column whether it did.
func readAsStored(m *pqarrow.SchemaManifest, rdr *file.Reader, fields []int, as func(arrow.DataType, parquet.Type) arrow.DataType) []bool {
	raw := make([]bool, len(fields))
	for j, c := range fields {
		sf := ManifestLeaf(m, c)
		if sf == nil {
			continue
		}
		t := as(sf.Field.Type, rdr.MetaData().Schema.Column(sf.ColIndex).PhysicalType())
		if t == nil {
			continue
		}
		f := *sf.Field
		f.Type = t
		sf.Field = &f
		raw[j] = true
	}
	return raw
}
