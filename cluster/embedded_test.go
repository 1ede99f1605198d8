package cluster

import (
	"context"
	"fmt"
	"maps"
	"runtime"
	"strings"
	"testing"
	"time"

	"sluice/catalog"
)

// testQueries exercise joins (broadcast and partitioned), aggregates and
// ORDER BY across several stages.
var testQueries = []struct {
	name     string
	sql      string
	ordered  bool
	settings map[string]string
}{
	{name: "join aggregate order", ordered: true, sql: `
		SELECT o_status, l_flag, count(*) AS n, sum(l_quantity) AS qty, sum(l_price) AS price
		FROM lineitem JOIN orders ON l_orderkey = o_orderkey
		WHERE l_quantity > 5
		GROUP BY o_status, l_flag ORDER BY o_status, l_flag`},
	{name: "partitioned join top-n", ordered: true, sql: `
		SELECT o_custkey, sum(l_price) AS revenue, count(*) AS items
		FROM orders JOIN lineitem ON o_orderkey = l_orderkey
		GROUP BY o_custkey ORDER BY revenue DESC, o_custkey LIMIT 25`,
		settings: map[string]string{"optimizer.broadcast_join_threshold_bytes": "0"}},
	{name: "aggregate unordered", sql: `SELECT l_flag, count(*), max(l_price) FROM lineitem GROUP BY l_flag`},
}

// heavyQuery has several stages with work in each: a repartitioned join
// and a global sort.
const heavyQuery = `
	SELECT o_custkey, o_status, sum(l_price) AS revenue
	FROM orders JOIN lineitem ON o_orderkey = l_orderkey
	GROUP BY o_custkey, o_status ORDER BY revenue DESC, o_custkey, o_status`

var heavySettings = map[string]string{"optimizer.broadcast_join_threshold_bytes": "0"}

func startCluster(t *testing.T, cfg EmbeddedConfig) (*Embedded, *catalog.Catalog) {
	t.Helper()
	cat := writeTestTables(t, t.TempDir())
	cfg.Catalog = cat
	if cfg.VcoresPerExecutor == 0 {
		cfg.VcoresPerExecutor = 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	emb, err := StartEmbedded(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(emb.Close)
	return emb, cat
}

func testContext(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func TestEmbeddedQueriesMatchLocalEngine(t *testing.T) {
	for _, policy := range []string{PolicyPush, PolicyPull} {
		for _, n := range []int{2, 3} {
			t.Run(fmt.Sprintf("%s/%d executors", policy, n), func(t *testing.T) {
				checkGoroutines(t)
				emb, cat := startCluster(t, EmbeddedConfig{Executors: n, Policy: policy})
				c := newTestClient(t, emb.SchedulerAddr(), emb.Security())
				ctx := testContext(t, 60*time.Second)
				for _, q := range testQueries {
					got, st, err := c.query(ctx, q.sql, q.settings)
					if err != nil {
						t.Fatalf("%s: %v", q.name, err)
					}
					sameRows(t, q.name, got, localRows(t, cat, q.sql), q.ordered)
					if st.Progress.GetStagesTotal() < 2 {
						t.Errorf("%s: ran in %d stages; the test wants a distributed plan\n%s", q.name, st.Progress.GetStagesTotal(), st.Stages)
					}
				}
				// With a task per partition, pushed tasks are dealt to every
				// executor. Polled ones go to whoever asks first, which may
				// be one executor for a query this small.
				spread := map[string]string{"execution.target_partitions": fmt.Sprint(2 * n), "scheduler.max_partitions_per_task": "1"}
				maps.Copy(spread, heavySettings)
				got, st, err := c.query(ctx, heavyQuery, spread)
				if err != nil {
					t.Fatal(err)
				}
				sameRows(t, "heavy", got, localRows(t, cat, heavyQuery), true)
				if policy == PolicyPush {
					for _, x := range emb.Executors() {
						if !strings.Contains(st.Stages, "@"+x.ID()+" ") {
							t.Errorf("executor %s ran no task:\n%s", x.ID(), st.Stages)
						}
					}
				}
			})
		}
	}
}

// checkGoroutines fails the test if goroutines started during it are still
// running at cleanup. Register it first: cleanups run last-in first-out.
func checkGoroutines(t *testing.T) {
	t.Helper()
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(10 * time.Second)
		for runtime.NumGoroutine() > before {
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<20)
				n := runtime.Stack(buf, true)
				t.Errorf("goroutine leak: %d before, %d after\n%s", before, runtime.NumGoroutine(), buf[:n])
				return
			}
			time.Sleep(20 * time.Millisecond) // polling a count that cannot be awaited
		}
	})
}

// TestPeersReadEachOtherDirectly: on the embedded cluster a blocking reader
// takes the other executor's outputs directly (exchange.Peers), held in
// memory or written to files, with FlightBetweenExecutors over Flight, the
// answers the same every way; a killed executor's outputs are no longer
// its peers' to take.
func TestPeersReadEachOtherDirectly(t *testing.T) {
	for _, c := range []struct {
		flight bool
		held   int64 // EmbeddedConfig.HeldOutputBytes: 0 the default budget, -1 files only
	}{{false, 0}, {false, -1}, {true, 0}, {true, -1}} {
		flight := c.flight
		t.Run(fmt.Sprintf("flight=%v/held=%d", flight, c.held), func(t *testing.T) {
			checkGoroutines(t)
			emb, cat := startCluster(t, EmbeddedConfig{Executors: 2, Policy: PolicyPush, FlightBetweenExecutors: flight, HeldOutputBytes: c.held})
			c := newTestClient(t, emb.SchedulerAddr(), emb.Security())
			ctx := testContext(t, 60*time.Second)
			spread := map[string]string{"execution.target_partitions": "4", "scheduler.max_partitions_per_task": "1"}
			maps.Copy(spread, heavySettings)
			got, st, err := c.query(ctx, heavyQuery, spread)
			if err != nil {
				t.Fatal(err)
			}
			sameRows(t, "heavy", got, localRows(t, cat, heavyQuery), true)
			switch reads := emb.PeerReads(); {
			case flight && reads != 0:
				t.Errorf("%d direct reads with FlightBetweenExecutors", reads)
			case !flight && reads == 0:
				t.Errorf("no location was read from the other executor directly:\n%s", st.Stages)
			}
			if flight {
				return
			}
			x := emb.Executors()[1]
			if !emb.peers.Has(x.env) {
				t.Fatalf("executor %s is not a peer", x.ID())
			}
			x.Kill()
			if emb.peers.Has(x.env) {
				t.Errorf("killed executor %s is still a peer", x.ID())
			}
		})
	}
}
