package session_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"sluice/catalog"
	"sluice/cluster"
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

// TestRecreatedTableSeesNewFiles: a table dropped and created again over a
// directory that gained a file counts the new file on the cluster too: the
// executors' cached table is of the files the planner saw, not the first
// ones they opened.
func TestRecreatedTableSeesNewFiles(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.csv"), []byte("x\n1\n2\n3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := startCluster(t, 2, cluster.PolicyPush)
	create := fmt.Sprintf("CREATE EXTERNAL TABLE grow (x INT) STORED AS CSV WITH HEADER ROW LOCATION '%s'", dir)
	count := func(mode string) string {
		t.Helper()
		if err := s.Settings.Set("execution.mode", mode); err != nil {
			t.Fatal(err)
		}
		got, err := runScriptCSV(ctx, s, "SELECT count(*) AS n FROM grow")
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if _, err := runScriptCSV(ctx, s, create); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"blocking", "pipelined"} {
		if got := count(mode); got != "n\n3\n" {
			t.Fatalf("%s: %q, want 3 rows", mode, got)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "b.csv"), []byte("x\n4\n5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := runScriptCSV(ctx, s, "DROP TABLE grow;\n"+create); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"blocking", "pipelined"} {
		if got := count(mode); got != "n\n5\n" {
			t.Errorf("%s after DROP and CREATE over a new file: %q, want 5 rows", mode, got)
		}
	}
}
