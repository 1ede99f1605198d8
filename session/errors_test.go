package session_test

import (
	"context"
	"errors"
	"io"
	"testing"

	"sluice/catalog"
	"sluice/cluster"
	"sluice/session"
)

// TestQueryErrorsReadClean: an error of the query's own data reads as what
// went wrong and in which expression, the same in process and in both
// cluster modes, without the stages, tasks and operators it went through.
func TestQueryErrorsReadClean(t *testing.T) {
	ctx := context.Background()
	cases := []struct{ sql, want string }{
		{"SELECT 1/0", "division by zero in (1 / 0)"},
		{"SELECT CAST(x AS INT) FROM (VALUES ('abc')) t(x)", `invalid input syntax for type INT: "abc" in CAST(x AS INT)`},
		{"SELECT (SELECT n FROM (VALUES (1), (2)) t(n)) AS one", "more than one row returned by a subquery used as an expression"},
	}
	run := func(t *testing.T, s *session.Session) {
		for _, c := range cases {
			err := drain(ctx, s, c.sql)
			if err == nil || err.Error() != c.want {
				t.Errorf("%s: error %v, want %q", c.sql, err, c.want)
			}
		}
	}
	t.Run("in-process", func(t *testing.T) { run(t, session.New(catalog.New())) })
	s := startCluster(t, 2, cluster.PolicyPush)
	for _, mode := range []string{"blocking", "pipelined"} {
		t.Run(mode, func(t *testing.T) {
			if err := s.Settings.Set("execution.mode", mode); err != nil {
				t.Fatal(err)
			}
			run(t, s)
		})
	}
}

// drain runs sql and reads its result to the end.
func drain(ctx context.Context, s *session.Session, sql string) error {
	res, err := s.Execute(ctx, sql)
	if err != nil {
		return err
	}
	defer res.Close()
	for {
		b, err := res.Next(ctx)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		b.Release()
	}
}
