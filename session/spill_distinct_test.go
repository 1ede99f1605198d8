package session_test

import (
	"context"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"sluice/catalog"
	"sluice/cluster"
	"sluice/physical"
	"sluice/session"
)

// mixedDistinctQueries mix DISTINCT aggregates with plain ones: grouped,
// global, and with two DISTINCT arguments. Each holds far more than the
// limits TestMixedDistinctSpills sets.
var mixedDistinctQueries = []string{
	"SELECT count(*), sum(n), sum(c), sum(s), min(a), max(a) FROM (SELECT x % 1000 AS k, count(DISTINCT x) AS n, count(*) AS c, sum(x) AS s, avg(x) AS a FROM generate_series(1, 300000) t(x) GROUP BY 1) g",
	"SELECT count(DISTINCT x % 100000), count(*), sum(x), avg(x), min(x), max(x) FROM generate_series(1, 300000) t(x)",
	"SELECT count(DISTINCT x % 100000), count(DISTINCT CASE WHEN x % 5 = 0 THEN NULL ELSE x % 77777 END), count(*), sum(x) FROM generate_series(1, 300000) t(x)",
}

// TestMixedDistinctSpills runs the mixed DISTINCT aggregates under a
// random execution.memory_limit (log-uniform, 512 KiB to 2 MiB, far below
// what they hold): in process and in blocking mode each completes with the
// answer it gives without a limit, and spills; pipelined mode, which does
// not spill, fails with the memory error.
func TestMixedDistinctSpills(t *testing.T) {
	ctx := context.Background()
	limit := int64(math.Exp(math.Log(512<<10) + rand.Float64()*math.Log(4)))
	t.Logf("execution.memory_limit = %d", limit)
	want := map[string]string{}
	{
		s := session.New(catalog.New())
		for _, q := range mixedDistinctQueries {
			out, err := runScriptCSV(ctx, s, q)
			if err != nil {
				t.Fatalf("%s without a limit: %v", q, err)
			}
			want[q] = out
		}
	}
	check := func(t *testing.T, s *session.Session) {
		if err := s.Settings.Set("execution.memory_limit", strconv.FormatInt(limit, 10)); err != nil {
			t.Fatal(err)
		}
		for _, q := range mixedDistinctQueries {
			files, _ := physical.SpillStats()
			got, err := runScriptCSV(ctx, s, q)
			if err != nil {
				t.Fatalf("%s under %d bytes: %v", q, limit, err)
			}
			if got != want[q] {
				t.Errorf("%s under %d bytes:\n%s\nwithout a limit:\n%s", q, limit, got, want[q])
			}
			if after, _ := physical.SpillStats(); after == files {
				t.Errorf("%s did not spill under %d bytes", q, limit)
			}
		}
	}
	t.Run("in-process", func(t *testing.T) {
		check(t, session.New(catalog.New()))
	})
	_, s := startClusterWith(t, cluster.EmbeddedConfig{Executors: 2})
	t.Run("blocking", func(t *testing.T) {
		if err := s.Settings.Set("execution.mode", "blocking"); err != nil {
			t.Fatal(err)
		}
		check(t, s)
	})
	t.Run("pipelined", func(t *testing.T) {
		if err := s.Settings.Set("execution.mode", "pipelined"); err != nil {
			t.Fatal(err)
		}
		for _, q := range mixedDistinctQueries {
			err := drain(ctx, s, q)
			if err == nil || !strings.Contains(err.Error(), "memory limit reached") || !strings.Contains(err.Error(), "blocking mode") {
				t.Errorf("%s: error %v, want the memory limit and a hint to use blocking mode", q, err)
			}
		}
	})
}
