package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"

	"sluice/catalog"
)

// prepare runs one statement that needs no execution and returns its
// message, or its rows' first column's values.
func prepare(t *testing.T, e *Engine, s *Settings, text string) (string, error) {
	t.Helper()
	out, err := e.Prepare(text, s)
	if err != nil {
		return "", err
	}
	if out.Rows != nil {
		defer out.Rows.Release()
		var vals []string
		for r := range int(out.Rows.NumRows()) {
			vals = append(vals, out.Rows.Column(int(out.Rows.NumCols())-1).(*array.String).Value(r))
		}
		return strings.Join(vals, ","), nil
	}
	return out.Message, nil
}

// TestTempWarehouse checks the shell's warehouse: made on first use, shown
// before that as what it will be, removed with its files by Close.
func TestTempWarehouse(t *testing.T) {
	w := TempWarehouse()
	if !strings.Contains(w.Describe(), "temporary") {
		t.Errorf("Describe before use = %q", w.Describe())
	}
	dir, err := w.Dir()
	if err != nil {
		t.Fatal(err)
	}
	again, _ := w.Dir()
	if again != dir || w.Describe() != dir {
		t.Errorf("Dir %q then %q, Describe %q", dir, again, w.Describe())
	}
	if err := os.MkdirAll(filepath.Join(dir, "t"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the temporary warehouse %s is still there: %v", dir, err)
	}
	fixed, err := NewWarehouse(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	fdir, _ := fixed.Dir()
	if err := fixed.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(fdir); err != nil {
		t.Errorf("Close removed a warehouse it was given: %v", err)
	}
}

func TestWarehouseSetting(t *testing.T) {
	s := NewSettings()
	if v, _ := s.Get("catalog.warehouse"); v != "" {
		t.Errorf("default %q", v)
	}
	for _, bad := range []string{"relative", "s3://bucket/wh", "./x"} {
		if err := s.Set("catalog.warehouse", bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if err := s.Set("catalog.warehouse", "/data/wh/"); err != nil {
		t.Fatal(err)
	}
	if v, _ := s.Get("catalog.warehouse"); v != "/data/wh" {
		t.Errorf("stored %q", v)
	}
	if err := s.Reset("catalog.warehouse"); err != nil {
		t.Fatal(err)
	}
	if v, _ := s.Get("catalog.warehouse"); v != "" {
		t.Errorf("after RESET %q", v)
	}
}

// TestCreateAndDropManaged checks CREATE TABLE name (columns) and DROP
// TABLE on the engine: the table's directory is made under the warehouse
// and removed with the table; an external table's files stay.
func TestCreateAndDropManaged(t *testing.T) {
	wh := t.TempDir()
	w, err := NewWarehouse(wh)
	if err != nil {
		t.Fatal(err)
	}
	e := &Engine{Catalog: catalog.New(), Warehouse: w}
	s := NewSettings()
	if _, err := prepare(t, e, s, "CREATE TABLE Events (id INT, name VARCHAR)"); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(wh, "events")
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		t.Fatalf("the table's directory: %v", err)
	}
	if got, _ := prepare(t, e, s, "DESCRIBE events"); got != "YES,YES" {
		t.Errorf("DESCRIBE: %q", got)
	}
	if _, err := prepare(t, e, s, "CREATE TABLE events (x INT)"); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("second CREATE: %v", err)
	}
	// A file left in the directory (as by an INSERT) goes with DROP.
	if err := os.WriteFile(filepath.Join(dir, "part.parquet"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := prepare(t, e, s, "DROP TABLE events"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("DROP TABLE left %s: %v", dir, err)
	}
	// Files the warehouse holds for no table are not silently taken over.
	if err := os.MkdirAll(filepath.Join(wh, "stale"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(wh, "stale", "f.parquet"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := prepare(t, e, s, "CREATE TABLE stale (x INT)"); err == nil || !strings.Contains(err.Error(), "already holds files") {
		t.Errorf("CREATE over leftover files: %v", err)
	}
	if _, err := prepare(t, e, s, "CREATE OR REPLACE TABLE stale (x INT)"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(wh, "stale", "f.parquet")); !os.IsNotExist(err) {
		t.Errorf("OR REPLACE kept the old files: %v", err)
	}
	// DROP of an external table over an empty directory keeps it.
	ext := t.TempDir()
	if _, err := prepare(t, e, s, "CREATE EXTERNAL TABLE ext (a INT) STORED AS PARQUET LOCATION '"+ext+"'"); err != nil {
		t.Fatal(err)
	}
	if _, err := prepare(t, e, s, "DROP TABLE ext"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(ext); err != nil {
		t.Errorf("DROP of an external table removed its directory: %v", err)
	}
	// The session's catalog.warehouse wins over the engine's.
	other := t.TempDir()
	if err := s.Set("catalog.warehouse", other); err != nil {
		t.Fatal(err)
	}
	if _, err := prepare(t, e, s, "CREATE TABLE elsewhere (x INT)"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(other, "elsewhere")); err != nil {
		t.Errorf("catalog.warehouse not used: %v", err)
	}
	if got, _ := prepare(t, e, s, "SHOW catalog.warehouse"); got != other {
		t.Errorf("SHOW catalog.warehouse = %q, want %q", got, other)
	}
}

// TestNoWarehouse checks a scheduler started without --warehouse: CREATE
// TABLE without LOCATION fails saying what to do, and SHOW says so.
func TestNoWarehouse(t *testing.T) {
	e := &Engine{Catalog: catalog.New()}
	s := NewSettings()
	for _, q := range []string{"CREATE TABLE t (a INT)", "CREATE TABLE t AS SELECT 1 AS a"} {
		_, err := prepare(t, e, s, q)
		if err == nil || !strings.Contains(err.Error(), "--warehouse DIR") || !strings.Contains(err.Error(), "catalog.warehouse") {
			t.Errorf("%s: %v", q, err)
		}
	}
	if got, _ := prepare(t, e, s, "SHOW catalog.warehouse"); !strings.Contains(got, "--warehouse") {
		t.Errorf("SHOW catalog.warehouse = %q", got)
	}
	if _, ok := e.Catalog.Table("t"); ok {
		t.Error("a failed CREATE TABLE registered the table")
	}
}
