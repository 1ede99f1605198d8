package catalog

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

func intSchema(name string, typ arrow.DataType) *arrow.Schema {
	return arrow.NewSchema([]arrow.Field{{Name: name, Type: typ, Nullable: true}}, nil)
}

// TestManagedMark checks which registrations keep a table managed: the
// table reopened over its own directory does; a table elsewhere does not,
// and the replaced managed directory is handed back to be removed.
func TestManagedMark(t *testing.T) {
	c := New()
	dir := t.TempDir()
	tdir := filepath.Join(dir, "t")
	schema := intSchema("v", arrow.PrimitiveTypes.Int64)
	if _, err := c.RegisterManaged("T", EmptyParquet(tdir, schema), tdir, false); err != nil {
		t.Fatal(err)
	}
	if d, ok := c.ManagedDir("t"); !ok || d != tdir {
		t.Fatalf("ManagedDir = %q, %v; want %q", d, ok, tdir)
	}
	// An INSERT reopens the table over the same directory.
	if err := c.RegisterTable("t", EmptyParquet(tdir, schema), true); err != nil {
		t.Fatal(err)
	}
	if d, ok := c.ManagedDir("t"); !ok || d != tdir {
		t.Fatalf("after reopening: ManagedDir = %q, %v; want %q", d, ok, tdir)
	}
	// An external table elsewhere replaces it: its files are orphaned.
	orphan, err := c.RegisterManaged("t", EmptyParquet(filepath.Join(dir, "ext"), schema), "", true)
	if err != nil {
		t.Fatal(err)
	}
	if orphan != tdir {
		t.Errorf("orphan = %q, want %q", orphan, tdir)
	}
	if _, ok := c.ManagedDir("t"); ok {
		t.Error("an external table is still marked managed")
	}
	if dir, ok := c.DropTableDir("t"); !ok || dir != "" {
		t.Errorf("DropTableDir of an external table = %q, %v", dir, ok)
	}
	if _, err := c.RegisterManaged("u", EmptyParquet(tdir, schema), tdir, false); err != nil {
		t.Fatal(err)
	}
	if d, ok := c.DropTableDir("U"); !ok || d != tdir {
		t.Errorf("DropTableDir = %q, %v; want %q", d, ok, tdir)
	}
	if _, ok := c.ManagedDir("u"); ok {
		t.Error("a dropped table is still marked managed")
	}
	if _, ok := c.DropTableDir("u"); ok {
		t.Error("a dropped table was dropped again")
	}
}

// TestOpenParquetDeclared checks a declared table over a directory: empty
// (the declared schema, no files), with matching files, with files of
// other columns (refused).
func TestOpenParquetDeclared(t *testing.T) {
	dir := t.TempDir()
	want := intSchema("v", arrow.PrimitiveTypes.Int64)
	tbl, err := OpenParquetDeclared(dir, want)
	if err != nil {
		t.Fatal(err)
	}
	if len(tbl.Files) != 0 || !tbl.Schema().Equal(want) || tbl.Statistics().NumRows != 0 || tbl.Path() != dir {
		t.Fatalf("empty table: files %d, schema %s, stats %+v", len(tbl.Files), tbl.Schema(), tbl.Statistics())
	}
	if _, err := OpenParquet(dir); err == nil || !strings.Contains(err.Error(), "no *.parquet files") {
		t.Errorf("OpenParquet of an empty directory: %v", err)
	}
	writeInts(t, filepath.Join(dir, "part-0.parquet"), 3)
	tbl, err = OpenParquetDeclared(dir, intSchema("V", arrow.PrimitiveTypes.Int64))
	if err != nil {
		t.Fatal(err)
	}
	if tbl.Statistics().NumRows != 3 || len(tbl.Files) != 1 {
		t.Errorf("stats %+v, %d files", tbl.Statistics(), len(tbl.Files))
	}
	if _, err := OpenParquetDeclared(dir, intSchema("v", arrow.PrimitiveTypes.Int32)); err == nil || !strings.Contains(err.Error(), "do not match") {
		t.Errorf("mismatched columns: %v", err)
	}
	if _, err := OpenParquetDeclared(filepath.Join(dir, "missing"), want); err == nil {
		t.Error("a missing directory opened")
	}
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := t.TempDir()
	if err := os.WriteFile(filepath.Join(empty, "notes.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if tbl, err := OpenParquetOrEmpty(empty, want); err != nil || len(tbl.Files) != 0 {
		t.Errorf("a directory of other files: %v", err)
	}
}

func TestCheckManagedName(t *testing.T) {
	for _, ok := range []string{"t", "My Table", "a.b", "événements"} {
		if err := CheckManagedName(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", ".", "..", "a/b", "/etc", `a\b`, "../x", "x..y", "a\x00b"} {
		if err := CheckManagedName(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
