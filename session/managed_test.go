package session_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sluice/cluster"
	"sluice/engine"
	"sluice/session"
)

// startStandalone starts a scheduler as `sluice scheduler` does (with the
// warehouse it is given, possibly none) and one executor, and connects a
// session.
func startStandalone(t *testing.T, warehouse *engine.Warehouse) *session.Session {
	t.Helper()
	sched, err := cluster.StartScheduler(cluster.SchedulerConfig{Warehouse: warehouse})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sched.Close)
	x, err := cluster.StartExecutor(context.Background(), cluster.ExecutorConfig{SchedulerAddr: sched.Addr(), BindAddr: "127.0.0.1:0", FlightAddr: "127.0.0.1:0",
		Vcores: 2, WorkDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(x.Close)
	s, err := session.ConnectWith(sched.Addr(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// TestManagedTablesOnAStandaloneScheduler: a scheduler started without
// --warehouse refuses CREATE TABLE without LOCATION, saying what to do,
// until the session sets catalog.warehouse; one started with it keeps the
// tables there, and DROP TABLE removes their files.
func TestManagedTablesOnAStandaloneScheduler(t *testing.T) {
	ctx := context.Background()
	t.Run("no warehouse", func(t *testing.T) {
		s := startStandalone(t, nil)
		_, err := sltRun(ctx, s, "CREATE TABLE t (a INT)")
		if err == nil || !strings.Contains(err.Error(), "--warehouse DIR") {
			t.Fatalf("CREATE TABLE without a warehouse: %v", err)
		}
		dir := t.TempDir()
		if _, err := sltRun(ctx, s, "SET catalog.warehouse = '"+dir+"'"); err != nil {
			t.Fatal(err)
		}
		if _, err := sltRun(ctx, s, "CREATE TABLE t AS SELECT 7 AS a"); err != nil {
			t.Fatal(err)
		}
		rows, err := sltRun(ctx, s, "SELECT a FROM t")
		if err != nil || strings.Join(rows, ",") != "7" {
			t.Fatalf("SELECT: %v %v", rows, err)
		}
		if files, _ := filepath.Glob(filepath.Join(dir, "t", "*.parquet")); len(files) == 0 {
			t.Errorf("no Parquet files under %s/t", dir)
		}
	})
	t.Run("--warehouse", func(t *testing.T) {
		dir := t.TempDir()
		w, err := engine.NewWarehouse(dir)
		if err != nil {
			t.Fatal(err)
		}
		s := startStandalone(t, w)
		for _, q := range []string{
			"CREATE TABLE t (a INT, b VARCHAR)",
			"INSERT INTO t VALUES (1, 'x'), (NULL, NULL)",
			"INSERT INTO t VALUES (2, 'y')",
		} {
			if _, err := sltRun(ctx, s, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		rows, err := sltRun(ctx, s, "SELECT a, b FROM t ORDER BY a")
		if err != nil || strings.Join(rows, ",") != "1 x,2 y,NULL NULL" {
			t.Fatalf("SELECT: %v %v", rows, err)
		}
		if rows, err := sltRun(ctx, s, "SHOW catalog.warehouse"); err != nil || len(rows) != 1 || rows[0] != "catalog.warehouse "+dir {
			t.Errorf("SHOW catalog.warehouse: %v %v", rows, err)
		}
		if _, err := sltRun(ctx, s, "DROP TABLE t"); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(dir, "t")); !os.IsNotExist(err) {
			t.Errorf("DROP TABLE left the table's files: %v", err)
		}
		if _, err := os.Stat(dir); err != nil {
			t.Errorf("the warehouse itself is gone: %v", err)
		}
	})
}
