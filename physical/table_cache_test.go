package physical

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"sluice/catalog"
	"sluice/plan"
)

func TestTableCacheParquet(t *testing.T) {
	dir := writeTestTable(t)
	c := NewTableCache()
	// Concurrent first requests share one open.
	got := make([]*catalog.ParquetTable, 8)
	var wg sync.WaitGroup
	for i := range got {
		wg.Go(func() {
			tbl, err := c.Parquet(dir, "")
			if err != nil {
				t.Error(err)
			}
			got[i] = tbl
		})
	}
	wg.Wait()
	for _, tbl := range got[1:] {
		if tbl != got[0] {
			t.Fatal("concurrent requests opened the table more than once")
		}
	}
	if got[0].Path() != dir || len(got[0].Files) != 2 {
		t.Fatalf("opened %s with %d files", got[0].Path(), len(got[0].Files))
	}
	c.Forget(dir)
	again, err := c.Parquet(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	if again == got[0] {
		t.Fatal("Forget kept the table")
	}
}

func TestTableCacheRetriesFailedOpens(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "late.parquet")
	c := NewTableCache()
	if _, err := c.Parquet(path, ""); err == nil {
		t.Fatal("opened a missing file")
	}
	writeParquet(t, path, testParquetSchema, testParquetBatch(0, 10))
	tbl, err := c.Parquet(path, "")
	if err != nil {
		t.Fatalf("the failed open was cached: %v", err)
	}
	if tbl.Statistics().NumRows != 10 {
		t.Fatalf("%d rows", tbl.Statistics().NumRows)
	}
}

func TestTableCacheCSV(t *testing.T) {
	dir := writeCSVDir(t)
	c := NewTableCache()
	header := catalog.CSVOptions{Header: true, Delimiter: ','}
	a, err := c.CSV(dir, "", header, nil)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := c.CSV(dir, "", header, nil); err != nil || b != a {
		t.Fatalf("second request: %p, %v; want the cached table %p", b, err, a)
	}
	// Other options or another schema are another table.
	noHeader, err := c.CSV(dir, "", catalog.CSVOptions{Delimiter: ','}, nil)
	if err != nil {
		t.Fatal(err)
	}
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: plan.Int64, Nullable: true}, {Name: "v", Type: plan.Utf8, Nullable: true},
		{Name: "d", Type: plan.Date32, Nullable: true}, {Name: "p", Type: plan.Decimal(10, 2), Nullable: true},
	}, nil)
	declared, err := c.CSV(dir, "", header, schema)
	if err != nil {
		t.Fatal(err)
	}
	if noHeader == a || declared == a || declared == noHeader {
		t.Fatal("tables read differently share a cache entry")
	}
	if !declared.Schema().Equal(schema) {
		t.Fatalf("schema %s, want %s", declared.Schema(), schema)
	}
	c.Forget(dir)
	for _, opts := range []catalog.CSVOptions{header, {Delimiter: ','}} {
		b, err := c.CSV(dir, "", opts, nil)
		if err != nil {
			t.Fatal(err)
		}
		if b == a || b == noHeader {
			t.Fatalf("Forget kept the table read with %+v", opts)
		}
	}
	if _, err := c.CSV(filepath.Join(dir, "missing"), "", header, nil); err == nil || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing location: error %v", err)
	}
}

// TestTableCacheVersions: a request for the version the planner saw after
// files were added reopens the table (and forgets the old one); a request
// for a version the files no longer have fails instead of reading other
// files.
func TestTableCacheVersions(t *testing.T) {
	dir := writeTestTable(t)
	planned, err := catalog.OpenParquet(dir)
	if err != nil {
		t.Fatal(err)
	}
	c := NewTableCache()
	old, err := c.Parquet(dir, planned.Version())
	if err != nil || len(old.Files) != 2 {
		t.Fatalf("first open: %v (%d files)", err, len(old.Files))
	}
	writeParquet(t, filepath.Join(dir, "c.parquet"), testParquetSchema, testParquetBatch(300, 310))
	if _, err := c.Parquet(dir, planned.Version()); err != nil {
		t.Fatalf("the cached version still serves queries planned before the change: %v", err)
	}
	replanned, err := catalog.OpenParquet(dir)
	if err != nil {
		t.Fatal(err)
	}
	if catalog.SameFiles(replanned.Version(), planned.Version()) {
		t.Fatal("a new file did not change the version")
	}
	fresh, err := c.Parquet(dir, replanned.Version())
	if err != nil || len(fresh.Files) != 3 {
		t.Fatalf("after the change: %v (%d files), want the 3 files", err, len(fresh.Files))
	}
	c.mu.Lock()
	n := len(c.parquet)
	c.mu.Unlock()
	if n != 1 {
		t.Errorf("%d cached versions of one location, want the newest only", n)
	}
	if _, err := c.Parquet(dir, planned.Version()); err == nil || !strings.Contains(err.Error(), "changed after the query was planned") {
		t.Errorf("a version the files no longer have: %v, want an error saying the files changed", err)
	}
}
