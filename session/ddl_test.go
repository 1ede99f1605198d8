package session_test

import (
	"context"
	"path/filepath"
	"testing"

	"sluice/catalog"
	"sluice/session"
)

// TestRelativeLocationIsResolved: a relative LOCATION is made absolute when
// the table is created (on the scheduler), so executors elsewhere, with
// other working directories, scan the same file.
func TestRelativeLocationIsResolved(t *testing.T) {
	cat := catalog.New()
	s := session.New(cat)
	res, err := s.Execute(context.Background(), "CREATE EXTERNAL TABLE e STORED AS CSV WITH HEADER ROW LOCATION '../testdata/slt/data/emp.csv'")
	if err != nil {
		t.Fatal(err)
	}
	res.Close()
	tbl, ok := cat.Table("e")
	if !ok {
		t.Fatal("table e was not registered")
	}
	csv, ok := tbl.(*catalog.CSVTable)
	if !ok || len(csv.Files) != 1 {
		t.Fatalf("table e is %T", tbl)
	}
	want, err := filepath.Abs("../testdata/slt/data/emp.csv")
	if err != nil {
		t.Fatal(err)
	}
	if got := csv.Files[0].Path; got != want {
		t.Errorf("file path %q, want %q", got, want)
	}
}
