package session_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
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

// selfJoinGroupBy joins a series to itself on a key with few values and
// groups by both sides: 500K groups, far more than the caps below allow.
const selfJoinGroupBy = "SELECT a.x, b.y, count(*) FROM generate_series(1, 1000) a(x) JOIN generate_series(1, 1000) b(y) ON a.x % 2 = b.y % 2 GROUP BY a.x, b.y"

// selfJoinOrdered needs memory no operator can spill: a string_agg with
// ORDER BY keeps every value of each group with its order keys, and has no
// form to spill in.
const selfJoinOrdered = "SELECT a.x, string_agg(b.y::text, ',' ORDER BY b.y), count(*) FROM generate_series(1, 2000) a(x) JOIN generate_series(1, 2000) b(y) ON a.x % 2 = b.y % 2 GROUP BY a.x"

// selfJoinOnlyDistinct groups the same rows with DISTINCT aggregates
// only, which spill their distinct values as rows.
const selfJoinOnlyDistinct = "SELECT count(*), sum(n) FROM (SELECT a.x, count(DISTINCT b.y) AS n FROM generate_series(1, 2000) a(x) JOIN generate_series(1, 2000) b(y) ON a.x % 2 = b.y % 2 GROUP BY a.x) g"

// selfJoinMixedDistinct mixes a DISTINCT aggregate with a plain one, which
// the optimizer splits into two plain aggregates that spill.
const selfJoinMixedDistinct = "SELECT count(*), sum(n), sum(c) FROM (SELECT a.x, count(DISTINCT b.y) AS n, count(*) AS c FROM generate_series(1, 2000) a(x) JOIN generate_series(1, 2000) b(y) ON a.x % 2 = b.y % 2 GROUP BY a.x) g"

// TestMemoryCapFailsQuery: a query whose operators need more memory than
// an executor's cap, or than execution.memory_limit, and cannot spill,
// fails at once (no retry in blocking mode) with a memory limit error
// naming what to change, in both modes and in process, and the executors
// take the next query. The self-join GROUP BY, which used to kill
// the process, now completes under the caps by spilling, in blocking mode
// and in process; pipelined mode, which does not spill, refuses it.
func TestMemoryCapFailsQuery(t *testing.T) {
	ctx := context.Background()
	_, s := startClusterWith(t, cluster.EmbeddedConfig{Executors: 2, ExecutorMemoryLimit: 4 << 20})
	check := func(t *testing.T, s *session.Session, query, hint string) {
		t.Helper()
		err := drain(ctx, s, query)
		if err == nil || !strings.HasPrefix(err.Error(), "resources exhausted: memory limit reached: ") || !strings.Contains(err.Error(), hint) {
			t.Fatalf("error %v, want at once a memory limit saying %q", err, hint)
		}
	}
	spills := func(t *testing.T, s *session.Session) {
		t.Helper()
		out, err := runScriptCSV(ctx, s, "SELECT count(*) FROM ("+selfJoinGroupBy+") g")
		if err != nil || !strings.HasSuffix(strings.TrimSpace(out), "500000") {
			t.Fatalf("the self-join GROUP BY under the cap: %q, %v; want 500000 groups", out, err)
		}
		out, err = runScriptCSV(ctx, s, selfJoinOnlyDistinct)
		if err != nil || !strings.HasSuffix(strings.TrimSpace(out), "2000,2000000") {
			t.Fatalf("the self-join DISTINCT aggregate under the cap: %q, %v; want 2000 groups of 1000 values", out, err)
		}
		out, err = runScriptCSV(ctx, s, selfJoinMixedDistinct)
		if err != nil || !strings.HasSuffix(strings.TrimSpace(out), "2000,2000000,2000000") {
			t.Fatalf("the self-join mixed DISTINCT aggregate under the cap: %q, %v; want 2000 groups of 1000 values and rows", out, err)
		}
	}
	for _, mode := range []string{"blocking", "pipelined"} {
		t.Run(mode, func(t *testing.T) {
			if err := s.Settings.Set("execution.mode", mode); err != nil {
				t.Fatal(err)
			}
			check(t, s, selfJoinOrdered, "--memory-limit")
			if mode == "blocking" {
				spills(t, s)
			} else {
				check(t, s, selfJoinGroupBy, "--memory-limit")
			}
			if err := s.Settings.Set("execution.memory_limit", "1048576"); err != nil {
				t.Fatal(err)
			}
			check(t, s, selfJoinOrdered, "SET execution.memory_limit to a larger value")
			if err := s.Settings.Reset("execution.memory_limit"); err != nil {
				t.Fatal(err)
			}
			if err := drain(ctx, s, "SELECT count(*) FROM generate_series(1, 1000)"); err != nil {
				t.Fatalf("the next query: %v", err)
			}
		})
	}
	t.Run("in-process", func(t *testing.T) {
		s := session.New(catalog.New())
		if err := s.Settings.Set("execution.memory_limit", "4194304"); err != nil {
			t.Fatal(err)
		}
		err := drain(ctx, s, selfJoinOrdered)
		if err == nil || !strings.Contains(err.Error(), "memory limit reached") || !strings.Contains(err.Error(), "SET execution.memory_limit") {
			t.Fatalf("error %v, want the query's memory limit", err)
		}
		spills(t, s)
	})
}

// TestSpillsToDisk: an ORDER BY and a GROUP BY needing several times their
// memory limit complete in process and in blocking mode, the sorts
// spilling runs to disk and merging them (every row in order), the
// aggregates spilling groups; pipelined mode, which does not spill, fails
// with the memory error and says which mode would.
func TestSpillsToDisk(t *testing.T) {
	ctx := context.Background()
	const n = 300_000
	query := fmt.Sprintf("SELECT x FROM generate_series(1, %d) t(x) ORDER BY (x::bigint * 7919) %% 300007, x", n)
	check := func(t *testing.T, s *session.Session) {
		t.Helper()
		if err := s.Settings.Set("execution.memory_limit", "1048576"); err != nil {
			t.Fatal(err)
		}
		out, err := runScriptCSV(ctx, s, query)
		if err != nil {
			t.Fatalf("spilling sort: %v", err)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")[1:]
		if len(lines) != n {
			t.Fatalf("%d rows, want %d", len(lines), n)
		}
		seen := make([]bool, n+1)
		prev := int64(-1)
		for i, l := range lines {
			x, err := strconv.Atoi(l)
			if err != nil || x < 1 || x > n || seen[x] {
				t.Fatalf("row %d: %q is not a new value of 1..%d", i, l, n)
			}
			seen[x] = true
			if key := int64(x) * 7919 % 300007; key < prev {
				t.Fatalf("row %d: key %d after %d", i, key, prev)
			} else {
				prev = key
			}
		}
	}
	// A GROUP BY of 100,000 groups under the same limit: the partial
	// aggregates pass groups on, the final ones spill them to hash buckets.
	checkAgg := func(t *testing.T, s *session.Session) {
		t.Helper()
		out, err := runScriptCSV(ctx, s, "SELECT count(*), sum(c), min(c), max(c) FROM (SELECT x % 100000 AS k, count(*) AS c FROM generate_series(1, 300000) t(x) GROUP BY 1) g")
		if err != nil {
			t.Fatalf("spilling aggregate: %v", err)
		}
		if got := strings.TrimSpace(out); !strings.HasSuffix(got, "100000,300000,3,3") {
			t.Fatalf("got %q, want 100000 groups of 3 rows", got)
		}
	}
	// A join of two 200,000-row inputs, repartitioned (a broadcast build
	// side, one the planner judged small, does not spill): its build side
	// goes to hash buckets joined one by one.
	checkJoin := func(t *testing.T, s *session.Session) {
		t.Helper()
		if err := s.Settings.Set("optimizer.broadcast_join_threshold_bytes", "1"); err != nil {
			t.Fatal(err)
		}
		// Several partitions at once share the limit: each build side
		// takes its fair share, so that none builds its whole table and
		// leaves another's buckets no room.
		if err := s.Settings.Set("execution.target_partitions", "4"); err != nil {
			t.Fatal(err)
		}
		defer s.Settings.Reset("execution.target_partitions")
		out, err := runScriptCSV(ctx, s, "SELECT count(*), sum(a.x) FROM generate_series(1, 200000) a(x) JOIN generate_series(1, 200000) b(y) ON a.x = b.y")
		if err != nil {
			t.Fatalf("spilling join: %v", err)
		}
		if got := strings.TrimSpace(out); !strings.HasSuffix(got, "200000,20000100000") {
			t.Fatalf("got %q, want 200000 rows summing to 20000100000", got)
		}
	}
	t.Run("in-process", func(t *testing.T) {
		s := session.New(catalog.New())
		check(t, s)
		checkAgg(t, s)
		checkJoin(t, s)
	})
	_, s := startClusterWith(t, cluster.EmbeddedConfig{Executors: 2})
	t.Run("blocking", func(t *testing.T) {
		if err := s.Settings.Set("execution.mode", "blocking"); err != nil {
			t.Fatal(err)
		}
		check(t, s)
		checkAgg(t, s)
		checkJoin(t, s)
	})
	t.Run("pipelined", func(t *testing.T) {
		if err := s.Settings.Set("execution.mode", "pipelined"); err != nil {
			t.Fatal(err)
		}
		if err := s.Settings.Set("execution.memory_limit", "1048576"); err != nil {
			t.Fatal(err)
		}
		for _, q := range []string{query, windowOnePartition} {
			err := drain(ctx, s, q)
			if err == nil || !strings.Contains(err.Error(), "memory limit reached") || !strings.Contains(err.Error(), "blocking mode") {
				t.Fatalf("%s: error %v, want the memory limit and a hint to use blocking mode", q, err)
			}
		}
	})
}

// windowOnePartition is a window over one window partition of 300,000
// rows: under a 1 MiB limit it spills in process and in blocking mode
// (testdata/slt/window_spill.slt) and fails in pipelined mode.
const windowOnePartition = "SELECT count(*), sum(rn), sum(s) FROM (SELECT row_number() OVER (ORDER BY x) rn, sum(x) OVER () s FROM generate_series(1, 300000) t(x)) w"
