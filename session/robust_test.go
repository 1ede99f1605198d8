package session_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"

	"sluice/catalog"
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
