package session_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"sluice/catalog"
	"sluice/physical"
	"sluice/session"
)

// robustSessions returns an in-process session and sessions on embedded
// clusters in blocking and pipelined mode, so each robustness case runs in
// every mode.
func robustSessions(t *testing.T) map[string]*session.Session {
	t.Helper()
	out := map[string]*session.Session{"in-process": session.New(catalog.New())}
	for _, mode := range []string{"blocking", "pipelined"} {
		s := startCluster(t, 2, "push")
		if err := s.Settings.Set("execution.mode", mode); err != nil {
			t.Fatal(err)
		}
		out[mode] = s
	}
	return out
}

// countRows runs sql and returns its column and row counts.
func countRows(ctx context.Context, s *session.Session, sql string) (cols, rows int, err error) {
	res, err := s.Execute(ctx, sql)
	if err != nil {
		return 0, 0, err
	}
	defer res.Close()
	if res.Schema != nil {
		cols = res.Schema.NumFields()
	}
	for {
		b, err := res.Next(ctx)
		if errors.Is(err, io.EOF) {
			return cols, rows, nil
		}
		if err != nil {
			return 0, 0, err
		}
		if int(b.NumCols()) != cols {
			err = fmt.Errorf("batch has %d columns, schema %d", b.NumCols(), cols)
		}
		rows += int(b.NumRows())
		b.Release()
		if err != nil {
			return 0, 0, err
		}
	}
}

// TestZeroColumnSelect checks that a SELECT with an empty select list
// returns rows without columns, one per input row, as PostgreSQL does.
func TestZeroColumnSelect(t *testing.T) {
	ctx := context.Background()
	for name, s := range robustSessions(t) {
		for _, c := range []struct {
			sql  string
			rows int
		}{
			{"SELECT", 1},
			{"SELECT FROM (VALUES (1), (2), (3)) t(a)", 3},
			{"SELECT FROM (VALUES (1), (2), (3)) t(a) WHERE a > 1", 2},
			{"SELECT FROM (VALUES (1), (2), (3)) t(a) WHERE a > 5", 0},
		} {
			cols, rows, err := countRows(ctx, s, c.sql)
			if err != nil {
				t.Errorf("%s: %s: %v", name, c.sql, err)
				continue
			}
			if cols != 0 || rows != c.rows {
				t.Errorf("%s: %s: got %d columns, %d rows; want 0 columns, %d rows", name, c.sql, cols, rows, c.rows)
			}
		}
	}
}

// TestPanicInQueryCodeFailsOnlyTheQuery injects a panic at each kind of
// goroutine boundary that runs query code (a stream's Next on its
// consumer's goroutine, an operator's own goroutines, a scan's reader) and
// checks that the query fails with an internal error naming the panic, and
// that the session, and the cluster behind it, go on serving queries.
func TestPanicInQueryCodeFailsOnlyTheQuery(t *testing.T) {
	ctx := context.Background()
	csv, err := filepath.Abs("../testdata/slt/data/emp.csv")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		failpoint, sql string
		inProcess      bool // a cluster runs the operator as an exchange
	}{
		{physical.FailpointProjection, "SELECT id + 1 FROM emp", false},
		{physical.FailpointScan, "SELECT count(*) FROM emp", false},
		{physical.FailpointHashJoinBuild, "SELECT count(*) FROM emp a JOIN emp b ON a.id = b.manager", false},
		{physical.FailpointRepartition, "SELECT dept, count(*) FROM emp GROUP BY dept", true},
	}
	for name, s := range robustSessions(t) {
		for _, stmt := range []string{
			"SET execution.target_partitions = 3",
			"SET optimizer.broadcast_join_threshold_bytes = 0",
			"CREATE EXTERNAL TABLE emp (id INT, name VARCHAR, dept VARCHAR, salary DECIMAL(10,2), hired DATE, manager INT) STORED AS CSV WITH HEADER ROW LOCATION '" + csv + "'",
		} {
			if _, _, err := countRows(ctx, s, stmt); err != nil {
				t.Fatalf("%s: %s: %v", name, stmt, err)
			}
		}
		for _, c := range cases {
			if c.inProcess && name != "in-process" {
				continue
			}
			clear := physical.SetPanicFailpoint(c.failpoint)
			_, _, err := countRows(ctx, s, c.sql)
			clear()
			want := "internal error: injected panic at failpoint " + c.failpoint
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %s with failpoint %s: got %v, want an error containing %q", name, c.sql, c.failpoint, err, want)
			}
			// The same session (and cluster) still answers.
			if _, rows, err := countRows(ctx, s, c.sql); err != nil || rows == 0 {
				t.Errorf("%s: %s after the panic: %d rows, %v", name, c.sql, rows, err)
			}
		}
	}
}
