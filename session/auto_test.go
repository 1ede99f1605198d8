package session_test

import (
	"context"
	"fmt"
	"math"
	"math/rand"
	"os"
	"strings"
	"testing"

	"sluice/cluster"
	"sluice/session"
)

func modeOf(st *session.Stats) string {
	if st == nil {
		return ""
	}
	return st.Mode
}

// tpchQueryText is TPC-H query n as one statement.
func tpchQueryText(t *testing.T, n int) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("../testdata/tpch/q%d.sql", n))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(strings.TrimSpace(string(b)), ";")
}

// autoChoice is the execution_mode line of the query's EXPLAIN in the
// session's (auto) mode.
func autoChoice(t *testing.T, ctx context.Context, q string, run func(string) ([]string, error)) string {
	t.Helper()
	rows, err := run("EXPLAIN " + q)
	if err != nil {
		t.Fatalf("EXPLAIN: %v", err)
	}
	for _, r := range rows {
		if kind, plan, ok := strings.Cut(r, "|"); ok && kind == "execution_mode" {
			return plan
		}
	}
	t.Fatalf("EXPLAIN in auto mode has no execution_mode line")
	return ""
}

// TestAutoModeTPCH runs TPC-H queries in auto mode on a 2-executor
// cluster. execution.auto_max_pipelined_rows is a tuned value, so each
// query runs with a threshold drawn at random (log-uniform from 1 to 10^8
// rows): whichever mode auto picks, the answer must be the official one.
// A query too wide to run pipelined completes in auto mode (blocking).
func TestAutoModeTPCH(t *testing.T) {
	_, s := pipelinedCluster(t, cluster.EmbeddedConfig{Executors: 2, VcoresPerExecutor: 2})
	ctx := context.Background()
	run := func(q string) ([]string, error) {
		rows, _, err := runQuery(t, s, q)
		return rows, err
	}
	if err := s.Settings.Set("execution.mode", "auto"); err != nil {
		t.Fatal(err)
	}
	const q1 = "SELECT l_returnflag, count(*) FROM lineitem GROUP BY l_returnflag"
	for _, c := range []struct{ limit, want string }{{"0", "auto: blocking (largest estimated intermediate"}, {"1000000000", "auto: pipelined"}} {
		if err := s.Settings.Set("execution.auto_max_pipelined_rows", c.limit); err != nil {
			t.Fatal(err)
		}
		if got := autoChoice(t, ctx, q1, run); !strings.HasPrefix(got, c.want) {
			t.Errorf("threshold %s: %q, want %q...", c.limit, got, c.want)
		}
		_, st, err := runQuery(t, s, q1)
		if err != nil || !strings.HasPrefix(modeOf(st), c.want) {
			t.Errorf("threshold %s: ran %q (%v), want %q...", c.limit, modeOf(st), err, c.want)
		}
	}
	seed := rand.Int63()
	rng := rand.New(rand.NewSource(seed))
	t.Logf("seed %d", seed)
	modes := map[string]int{}
	for _, n := range []int{1, 3, 5, 6, 9, 10, 12, 13, 15, 18, 21} {
		limit := int64(math.Pow(10, rng.Float64()*8))
		if err := s.Settings.Set("execution.auto_max_pipelined_rows", fmt.Sprint(limit)); err != nil {
			t.Fatal(err)
		}
		t.Run(fmt.Sprintf("q%d", n), func(t *testing.T) {
			checkTPCH(t, ctx, s, n)
		})
		if n != 15 { // q15 is a script (a view), not one statement
			text := tpchQueryText(t, n)
			choice := autoChoice(t, ctx, text, run)
			modes[strings.Fields(choice)[1]]++
			t.Logf("q%d threshold %d: %s", n, limit, choice)
		}
	}
	t.Logf("modes chosen: %v", modes)

	// Too wide for the cluster's 4 vcores at once: pipelined refuses it,
	// auto runs it blocking.
	if err := s.Settings.Set("execution.target_partitions", "8"); err != nil {
		t.Fatal(err)
	}
	if err := s.Settings.Set("execution.mode", "pipelined"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := runQuery(t, s, q1); err == nil || !strings.Contains(err.Error(), "needs 8 vcores at once") {
		t.Errorf("pipelined, 8 partitions on 4 vcores: %v", err)
	}
	if err := s.Settings.Set("execution.mode", "auto"); err != nil {
		t.Fatal(err)
	}
	rows, st, err := runQuery(t, s, q1)
	if err != nil || len(rows) != 3 || !strings.HasPrefix(modeOf(st), "auto: blocking (pipelined needs 8 vcores at once") {
		t.Errorf("auto, 8 partitions on 4 vcores: %d rows, %v, mode %q", len(rows), err, modeOf(st))
	}
}
