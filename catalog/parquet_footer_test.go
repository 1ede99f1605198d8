package catalog

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// writeInts writes a Parquet file at path holding the integers 0..n-1.
func writeInts(t *testing.T, path string, n int) {
	t.Helper()
	b := array.NewInt64Builder(memory.DefaultAllocator)
	defer b.Release()
	for i := range n {
		b.Append(int64(i))
	}
	col := b.NewArray()
	defer col.Release()
	schema := arrow.NewSchema([]arrow.Field{{Name: "v", Type: arrow.PrimitiveTypes.Int64}}, nil)
	rec := array.NewRecordBatch(schema, []arrow.Array{col}, int64(n))
	defer rec.Release()
	writeParquet(t, path, rec, nil)
}

// writeParquet writes rec as a Parquet file at path, with props (nil: the
// defaults).
func writeParquet(t *testing.T, path string, rec arrow.RecordBatch, props *parquet.WriterProperties) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := pqarrow.NewFileWriter(rec.Schema(), f, props, pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestLocalFooterKeptWhileTheFileIsUnchanged: a scan of a local file uses
// the footer the table read while the file has the size and modification
// time the table saw, and reads the footer again once either changed, so
// a file written again is never decoded through its old footer.
func TestLocalFooterKeptWhileTheFileIsUnchanged(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.parquet")
	writeInts(t, path, 10)
	tbl, err := OpenParquet(path)
	if err != nil {
		t.Fatal(err)
	}
	pf := tbl.Files[0]
	if pf.Footer() == nil {
		t.Fatal("the table kept no footer for a local file")
	}
	open := func() (rows int64, kept bool) {
		t.Helper()
		rdr, err := OpenParquetReader(context.Background(), pf.Info(), nil, pf.Footer())
		if err != nil {
			t.Fatal(err)
		}
		defer rdr.Close()
		return rdr.NumRows(), rdr.MetaData() == pf.Footer()
	}
	if n, kept := open(); n != 10 || !kept {
		t.Fatalf("unchanged file: %d rows, footer kept %v; want 10 rows through the kept footer", n, kept)
	}
	// Written again, larger.
	writeInts(t, path, 25)
	if n, kept := open(); n != 25 || kept {
		t.Fatalf("file written again: %d rows, footer kept %v; want the new footer's 25", n, kept)
	}
	// Written again at the old size, only the modification time differs.
	writeInts(t, path, 10)
	later := time.Unix(0, pf.ModTime).Add(time.Hour)
	if err := os.Chtimes(path, later, later); err != nil {
		t.Fatal(err)
	}
	if _, kept := open(); kept {
		t.Fatal("a file with another modification time was read through the kept footer")
	}
}
