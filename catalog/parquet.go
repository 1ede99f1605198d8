package catalog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// ParquetTable is a table backed by one Parquet file or a directory of them.
// Opening it reads only the footers; the scan reads the data.
type ParquetTable struct {
	path   string
	schema *arrow.Schema
	// Files are the table's files, sorted by path.
	Files []ParquetFile
	// leaves[i] are the Parquet leaf column indices behind schema field i.
	leaves    [][]int
	rows      int64
	dataBytes int64
	version   string // Version, computed once when the table is opened
}

// ParquetFile is one file of a ParquetTable.
type ParquetFile struct {
	Path      string
	NumRows   int64
	Size      int64  // bytes on disk
	ModTime   int64  // modification time, Unix nanoseconds
	ETag      string // an object's entity tag; "" for local files
	RowGroups []RowGroup
	// footer is the file's parsed footer, kept so that scans do not
	// fetch (an object) or parse (a local file: a scan opens the file
	// for every run of row groups it reads) it again.
	footer *metadata.FileMetaData
}

// Footer is the file's parsed footer when the table keeps it, else nil;
// pass it to OpenParquetReader.
func (f ParquetFile) Footer() *metadata.FileMetaData { return f.footer }

// Info is the file's identity, for reading it (OpenFile).
func (f ParquetFile) Info() FileInfo {
	return FileInfo{Path: f.Path, Size: f.Size, ModTime: f.ModTime, ETag: f.ETag}
}

// RowGroup is one row group of a Parquet file.
type RowGroup struct {
	Index   int   // row group index within its file
	NumRows int64 // rows in the group
	Bytes   int64 // compressed bytes of its column chunks
	// Columns holds statistics per table schema field (same indices).
	Columns []ColumnStats
}

// ColumnStats are one column chunk's footer statistics. Min and Max follow
// plan.Literal's value conventions for the field's (table schema) type:
// int32 for INT and DATE, int64 for BIGINT, float64, decimal128.Num (with the
// column's scale), string, bool.
type ColumnStats struct {
	// HasMinMax says Min and Max are set and exact bounds.
	HasMinMax bool
	Min, Max  any
	// NullCount is the number of NULLs, or -1 when unknown.
	NullCount int64
}

// Schema implements Table.
func (t *ParquetTable) Schema() *arrow.Schema { return t.schema }

// Statistics implements Table: total rows and compressed data bytes.
func (t *ParquetTable) Statistics() Statistics {
	return Statistics{NumRows: t.rows, TotalBytes: t.dataBytes}
}

// Path is the file or directory the table was opened from.
func (t *ParquetTable) Path() string { return t.path }

// FieldLeaves returns the Parquet leaf column indices that make up schema
// field i (one for a flat column), in file order.
func (t *ParquetTable) FieldLeaves(i int) []int { return t.leaves[i] }

// NumRowGroups is the total number of row groups over all files.
func (t *ParquetTable) NumRowGroups() int {
	n := 0
	for _, f := range t.Files {
		n += len(f.RowGroups)
	}
	return n
}

// OpenParquet opens a .parquet file, or every *.parquet file under a
// directory (recursively, sorted by path). All files must have the same
// schema.
func OpenParquet(path string) (*ParquetTable, error) {
	files, err := listFiles(path, ".parquet")
	if err != nil {
		return nil, err
	}
	return OpenParquetFiles(path, files)
}

// OpenParquetFiles opens the table at path made of the given files (as
// listed by the process that planned the query), reading their footers.
// An object store's files are not listed again: every executor reads the
// files the planner saw, and fails if one of them changed since.
func OpenParquetFiles(path string, files []FileInfo) (*ParquetTable, error) {
	if len(files) == 0 {
		return nil, fmt.Errorf("no *.parquet files under %s", path)
	}
	t := &ParquetTable{path: path}
	var firstPath string
	for _, fi := range files {
		p := fi.Path
		pf, schema, leaves, err := readParquetFooter(fi)
		if err != nil {
			return nil, err
		}
		if t.schema == nil {
			t.schema, t.leaves, firstPath = schema, leaves, p
		} else {
			merged, err := mergeSchemas(t.schema, schema)
			if err != nil {
				return nil, fmt.Errorf("parquet files %s and %s have different schemas: %w", firstPath, p, err)
			}
			t.schema = merged
		}
		t.Files = append(t.Files, pf)
		t.rows += pf.NumRows
		for _, rg := range pf.RowGroups {
			t.dataBytes += rg.Bytes
		}
	}
	t.version = filesVersion(t.Files, func(f ParquetFile) FileInfo { return f.Info() })
	return t, nil
}

// FileInfos are the identities of the table's files.
func (t *ParquetTable) FileInfos() []FileInfo {
	out := make([]FileInfo, len(t.Files))
	for i, f := range t.Files {
		out[i] = f.Info()
	}
	return out
}

// listLocal returns path itself if it is a file, every file under the
// directory path whose name ends in ext (case-insensitive), or the files a
// glob pattern (IsGlob) matches, sorted.
func listLocal(path, ext string) ([]string, error) {
	if IsGlob(path) {
		return listGlob(path)
	}
	if err := checkAllowed(path); err != nil {
		return nil, err
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if !st.IsDir() {
		if err := checkRegular(path, st); err != nil {
			return nil, err
		}
		return []string{path}, nil
	}
	var out []string
	err = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(strings.ToLower(d.Name()), ext) {
			st, err := os.Stat(p) // follows a symlink to its file
			if err != nil {
				return err
			}
			if err := checkRegular(p, st); err != nil {
				return err
			}
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", path, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no *%s files under %s", ext, path)
	}
	sort.Strings(out)
	return out, nil
}

// ParquetArrowSchema converts a Parquet file's schema to the Arrow schema
// sluice reads it as, ignoring any Arrow schema stored in the file's
// metadata: strings come back as plain utf8 (never dictionary or large
// variants) and decimals as decimal128. The scan builds its reader manifest
// the same way, so what it reads matches.
//
// props, if given, are the read properties the manifest is for: a leaf they
// mark for dictionary reading comes back as dictionary<int32, utf8>, which
// the scan decodes itself.
func ParquetArrowSchema(rdr *file.Reader, props ...*pqarrow.ArrowReadProperties) (*pqarrow.SchemaManifest, error) {
	p := &pqarrow.ArrowReadProperties{}
	if len(props) > 0 {
		p = props[0]
	}
	return pqarrow.NewSchemaManifest(rdr.MetaData().Schema, nil, p)
}

// ErrNotParquet is the error for a file that does not start and end with
// Parquet's magic bytes.
var ErrNotParquet = errors.New("not a Parquet file: missing PAR1 magic")

// CheckParquetMagic checks that the file at path starts with Parquet's
// magic "PAR1" and ends with it (or with "PARE", an encrypted footer), so a
// file of something else is named for what it is rather than for whatever
// its last bytes make of a footer length.
func CheckParquetMagic(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	return CheckParquetMagicAt(f, st.Size(), path)
}

// CheckParquetMagicAt is CheckParquetMagic for an open file r of size
// bytes. Only the end is checked for a remote file: every read there is a
// request, the end is fetched with the footer anyway, and a file of
// something else rarely ends in PAR1.
func CheckParquetMagicAt(r io.ReaderAt, size int64, path string) error {
	var head, tail [4]byte
	if size < 12 {
		return fmt.Errorf("%s: %w (%d bytes)", path, ErrNotParquet, size)
	}
	copy(head[:], "PAR1")
	if !IsS3(path) {
		if _, err := r.ReadAt(head[:], 0); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	if _, err := r.ReadAt(tail[:], size-4); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if string(head[:]) != "PAR1" || (string(tail[:]) != "PAR1" && string(tail[:]) != "PARE") {
		return fmt.Errorf("%s: %w", path, ErrNotParquet)
	}
	return nil
}

// OpenParquetReader opens the Parquet file f with props (nil for the
// defaults), after checking its magic bytes. Given the file's footer
// (ParquetFile.Footer), it neither reads nor checks the footer again: an
// object's entity tag pins its content, and a local file is taken to be
// the one the footer was read from while its size and modification time
// are (else its footer is read again). Closing the reader closes the
// file.
func OpenParquetReader(ctx context.Context, f FileInfo, props *parquet.ReaderProperties, footer *metadata.FileMetaData) (*file.Reader, error) {
	r, err := OpenFile(ctx, f)
	if err != nil {
		return nil, err
	}
	if lf, ok := r.(localFile); ok && !lf.sameAs(f) {
		footer = nil
	}
	var opts []file.ReadOption
	if footer != nil {
		opts = append(opts, file.WithMetadata(footer))
	} else if err := CheckParquetMagicAt(r, r.Size(), f.Path); err != nil {
		r.Close()
		return nil, err
	}
	if props != nil {
		opts = append(opts, file.WithReadProps(props))
	}
	rdr, err := file.NewParquetReader(r, opts...)
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("open parquet file %s: %w", f.Path, err)
	}
	return rdr, nil
}

func readParquetFooter(fi FileInfo) (ParquetFile, *arrow.Schema, [][]int, error) {
	path := fi.Path
	pf := ParquetFile{Path: path, Size: fi.Size, ModTime: fi.ModTime, ETag: fi.ETag}
	rdr, err := OpenParquetReader(context.Background(), fi, nil, nil)
	if err != nil {
		return pf, nil, nil, err
	}
	defer rdr.Close()
	pf.footer = rdr.MetaData()
	// Set the writer version it computes lazily now, before scans share
	// the footer between goroutines.
	pf.footer.WriterVersion()
	manifest, err := ParquetArrowSchema(rdr)
	if err != nil {
		return pf, nil, nil, fmt.Errorf("parquet file %s: schema: %w", path, err)
	}
	fields := make([]arrow.Field, len(manifest.Fields))
	leaves := make([][]int, len(manifest.Fields))
	for i := range manifest.Fields {
		fields[i] = NormalizeField(*manifest.Fields[i].Field)
		leaves[i] = collectLeaves(&manifest.Fields[i], nil)
	}
	schema := arrow.NewSchema(fields, nil)

	md := rdr.MetaData()
	for g := 0; g < md.NumRowGroups(); g++ {
		rgm := md.RowGroup(g)
		rg := RowGroup{Index: g, NumRows: rgm.NumRows(), Columns: make([]ColumnStats, len(fields))}
		for c := 0; c < rgm.NumColumns(); c++ {
			cc, err := rgm.ColumnChunk(c)
			if err != nil {
				return pf, nil, nil, fmt.Errorf("parquet file %s: row group %d column %d: %w", path, g, c, err)
			}
			rg.Bytes += cc.TotalCompressedSize()
		}
		for i := range fields {
			rg.Columns[i] = ColumnStats{NullCount: -1}
			if len(leaves[i]) != 1 || len(manifest.Fields[i].Children) != 0 {
				continue // nested column: no usable min/max
			}
			cc, err := rgm.ColumnChunk(leaves[i][0])
			if err != nil {
				return pf, nil, nil, fmt.Errorf("parquet file %s: row group %d column %d: %w", path, g, leaves[i][0], err)
			}
			rg.Columns[i] = columnStats(cc, manifest.Fields[i].Field.Type)
		}
		pf.RowGroups = append(pf.RowGroups, rg)
		pf.NumRows += rg.NumRows
	}
	return pf, schema, leaves, nil
}

func collectLeaves(f *pqarrow.SchemaField, out []int) []int {
	if len(f.Children) == 0 {
		return append(out, f.ColIndex)
	}
	for i := range f.Children {
		out = collectLeaves(&f.Children[i], out)
	}
	return out
}

// columnStats converts a column chunk's statistics to ColumnStats for a
// column read as arrow type typ. Statistics that are missing, unreliable
// (old writers), or of a type combination not handled here yield
// HasMinMax=false, so the scan keeps the row group.
func columnStats(cc *metadata.ColumnChunkMetaData, typ arrow.DataType) ColumnStats {
	out := ColumnStats{NullCount: -1}
	st, err := cc.Statistics()
	if err != nil || st == nil {
		return out
	}
	if st.HasNullCount() {
		out.NullCount = st.NullCount()
	}
	if !st.HasMinMax() {
		return out
	}
	var lo, hi any
	switch s := st.(type) {
	case *metadata.Int32Statistics:
		lo, hi = s.Min(), s.Max()
	case *metadata.Int64Statistics:
		lo, hi = s.Min(), s.Max()
	case *metadata.Float64Statistics:
		lo, hi = s.Min(), s.Max()
	case *metadata.Float32Statistics:
		lo, hi = s.Min(), s.Max()
	case *metadata.BooleanStatistics:
		lo, hi = s.Min(), s.Max()
	case *metadata.ByteArrayStatistics:
		lo, hi = s.Min(), s.Max()
	case *metadata.FixedLenByteArrayStatistics:
		lo, hi = s.Min(), s.Max()
	}
	lo, hi = statBounds(lo, hi, typ)
	if lo == nil || hi == nil {
		return out
	}
	out.HasMinMax, out.Min, out.Max = true, lo, hi
	return out
}

// statBounds converts a minimum and maximum as a Parquet reader gives them
// (int32, int64, float32, float64, bool, parquet.ByteArray or
// parquet.FixedLenByteArray) to the values ColumnStats holds for a column
// read as arrow type typ; nil, nil for a combination not handled here or a
// NaN bound.
func statBounds(min, max any, typ arrow.DataType) (lo, hi any) {
	switch a := min.(type) {
	case int32:
		b := max.(int32)
		switch typ.ID() {
		case arrow.INT8, arrow.INT16, arrow.INT32, arrow.DATE32:
			return a, b
		case arrow.DECIMAL128:
			return decimal128.FromI64(int64(a)), decimal128.FromI64(int64(b))
		}
	case int64:
		b := max.(int64)
		switch typ.ID() {
		case arrow.INT64:
			return a, b
		case arrow.DECIMAL128:
			return decimal128.FromI64(a), decimal128.FromI64(b)
		}
	case float64:
		b := max.(float64)
		if typ.ID() == arrow.FLOAT64 && a == a && b == b {
			return a, b
		}
	case float32:
		b := max.(float32)
		if typ.ID() == arrow.FLOAT32 && a == a && b == b {
			return float64(a), float64(b)
		}
	case bool:
		if typ.ID() == arrow.BOOL {
			return a, max.(bool)
		}
	case parquet.ByteArray:
		b := max.(parquet.ByteArray)
		switch typ.ID() {
		case arrow.STRING:
			return string(a), string(b)
		case arrow.DECIMAL128:
			return decimalFromBigEndian(a), decimalFromBigEndian(b)
		}
	case parquet.FixedLenByteArray:
		if typ.ID() == arrow.DECIMAL128 {
			return decimalFromBigEndian(a), decimalFromBigEndian(max.(parquet.FixedLenByteArray))
		}
	}
	return nil, nil
}

// decimalFromBigEndian decodes Parquet's big-endian two's complement
// decimal encoding; nil when it does not fit in 128 bits.
func decimalFromBigEndian(b []byte) any {
	if len(b) == 0 || len(b) > 16 {
		return nil
	}
	var buf [16]byte
	fill := byte(0)
	if b[0]&0x80 != 0 {
		fill = 0xff
	}
	for i := 0; i < 16-len(b); i++ {
		buf[i] = fill
	}
	copy(buf[16-len(b):], b)
	var hi, lo uint64
	for i := 0; i < 8; i++ {
		hi = hi<<8 | uint64(buf[i])
		lo = lo<<8 | uint64(buf[8+i])
	}
	return decimal128.New(int64(hi), lo)
}

// NormalizeType maps an Arrow type a file may hold to the type sluice
// computes with: small integers widen to int32, uint32 to int64, float32 to
// float64, every timestamp becomes timestamp[us] without a zone, string
// variants become utf8. Other types are returned unchanged. Scans cast
// columns whose stored type differs.
func NormalizeType(t arrow.DataType) arrow.DataType {
	switch t.ID() {
	case arrow.INT8, arrow.INT16, arrow.UINT8, arrow.UINT16:
		return typeInt32
	case arrow.UINT32:
		return typeInt64
	case arrow.FLOAT16, arrow.FLOAT32:
		return typeFloat64
	case arrow.TIMESTAMP:
		return typeTimestamp
	case arrow.LARGE_STRING, arrow.STRING_VIEW:
		return typeUtf8
	case arrow.DICTIONARY:
		return NormalizeType(t.(*arrow.DictionaryType).ValueType)
	}
	return t
}

// NormalizeField is f with its type normalized by NormalizeType.
func NormalizeField(f arrow.Field) arrow.Field {
	f.Type = NormalizeType(f.Type)
	f.Metadata = arrow.Metadata{}
	return f
}

// mergeSchemas checks that two files' schemas agree on names and types and
// returns the first with every field nullable that is nullable in either.
func mergeSchemas(a, b *arrow.Schema) (*arrow.Schema, error) {
	if a.NumFields() != b.NumFields() {
		return nil, fmt.Errorf("%d columns vs %d", a.NumFields(), b.NumFields())
	}
	fields := make([]arrow.Field, a.NumFields())
	for i := range fields {
		fa, fb := a.Field(i), b.Field(i)
		if fa.Name != fb.Name {
			return nil, fmt.Errorf("column %d is %q vs %q", i+1, fa.Name, fb.Name)
		}
		if !arrow.TypeEqual(fa.Type, fb.Type) {
			return nil, fmt.Errorf("column %q is %s vs %s", fa.Name, fa.Type, fb.Type)
		}
		fa.Nullable = fa.Nullable || fb.Nullable
		fields[i] = fa
	}
	return arrow.NewSchema(fields, nil), nil
}

var _ Table = (*ParquetTable)(nil)
