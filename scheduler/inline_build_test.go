package scheduler

import (
	"strings"
	"testing"

	"sluice/engine"
	"sluice/scheduler/dplan"
)

// stagesFor prepares sql with settings and cuts it into stages as a job
// in mode would be.
func stagesFor(t *testing.T, sql, mode string, settings map[string]string) *dplan.Graph {
	t.Helper()
	s := engine.NewSettings()
	for k, v := range settings {
		if err := s.Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	q, err := testEngine(t).Prepare(sql, s)
	if err != nil {
		t.Fatal(err)
	}
	g, err := planStages(q.Query, s, mode)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// broadcastStages counts g's broadcast stages.
func broadcastStages(g *dplan.Graph) int {
	n := 0
	for _, st := range g.Stages {
		if st.Broadcast {
			n++
		}
	}
	return n
}

// TestBlockingInlinesSmallBuildSides: in blocking mode a broadcast join's
// build side that only reads a file and is estimated under
// execution.blocking_inline_build_bytes stays in the join's stage; at 0,
// and in pipelined mode, it is a broadcast stage of its own.
func TestBlockingInlinesSmallBuildSides(t *testing.T) {
	const sql = "SELECT o_orderdate, count(*) FROM orders JOIN customer ON o_custkey = c_custkey WHERE c_mktsegment = 'BUILDING' GROUP BY o_orderdate"
	for _, c := range []struct {
		mode, bytes string
		broadcast   int
	}{
		{ModeBlocking, "64MiB", 0},
		{ModeBlocking, "0", 1},
		{ModeBlocking, "1", 1}, // the estimate is over one byte
		{ModePipelined, "64MiB", 1},
	} {
		g := stagesFor(t, sql, c.mode, map[string]string{"execution.target_partitions": "2", "execution.blocking_inline_build_bytes": c.bytes})
		if n := broadcastStages(g); n != c.broadcast {
			t.Errorf("%s, inline up to %s: %d broadcast stages, want %d:\n%s", c.mode, c.bytes, n, c.broadcast, dplan.Format(g))
		}
		if c.broadcast == 0 && !strings.Contains(dplan.Format(g), "ParquetScan: customer") {
			t.Errorf("%s: the customer scan is in no stage:\n%s", c.mode, dplan.Format(g))
		}
	}
}

// TestBlockingSwapsJoinToInlineItsProbeScan: a collect-left join that
// builds the rows of another join and probes a small scan is turned
// around in blocking mode, so that the scan is the build side read in the
// stage and no stage writes the other join's rows out first; the columns
// keep their order.
func TestBlockingSwapsJoinToInlineItsProbeScan(t *testing.T) {
	const sql = "SELECT n_name, count(*) FROM orders JOIN customer ON o_custkey = c_custkey JOIN nation ON c_nationkey = n_nationkey WHERE o_totalprice < 10 GROUP BY n_name"
	for _, c := range []struct {
		bytes, ratio      string
		stages, broadcast int
	}{
		{"0", "8", 4, 2}, // nation, nation with customer, the join with orders, final
		{"64MiB", "8", 2, 0},
		{"64MiB", "0", 3, 1}, // nation is kept in; the join is not turned around
	} {
		g := stagesFor(t, sql, ModeBlocking, map[string]string{"execution.target_partitions": "2", "execution.blocking_inline_build_bytes": c.bytes, "execution.blocking_swap_max_ratio": c.ratio})
		text := dplan.Format(g)
		if n := broadcastStages(g); len(g.Stages) != c.stages || n != c.broadcast {
			t.Errorf("inline up to %s, swap ratio %s: %d stages, %d broadcast, want %d and %d:\n%s", c.bytes, c.ratio, len(g.Stages), n, c.stages, c.broadcast, text)
		}
		if c.broadcast == 0 && !strings.Contains(text, "HashJoin(Inner, CollectLeft): on=[o_custkey@0 = c_custkey@") {
			t.Errorf("the join with orders does not build orders:\n%s", text)
		}
	}
}

// TestBlockingKeepsBuildOnSharedAggregate: a join building on an
// aggregate the query computes twice is not turned around to build on
// its probe side's scan. The aggregate is a stage of its own either way
// (its readers share it), so the swap would save no stage and only build
// on the scan, here the larger side.
func TestBlockingKeepsBuildOnSharedAggregate(t *testing.T) {
	const sql = `WITH t AS (SELECT o_custkey, sum(o_totalprice) AS s FROM orders GROUP BY o_custkey)
		SELECT c_name, s FROM t JOIN customer ON o_custkey = c_custkey
		UNION ALL SELECT c_name, s FROM t JOIN customer ON o_custkey = c_custkey WHERE c_nationkey > 3`
	g := stagesFor(t, sql, ModeBlocking, map[string]string{"execution.target_partitions": "8", "execution.blocking_inline_build_bytes": "64MiB", "execution.blocking_swap_max_ratio": "1000"})
	text := dplan.Format(g)
	if !strings.Contains(text, "HashJoin(Inner, CollectLeft): on=[o_custkey@0 = c_custkey@0]") {
		t.Errorf("the unfiltered join does not build on the shared aggregate:\n%s", text)
	}
	if len(g.Stages) != 3 || !g.Stages[1].Shared || !g.Stages[1].Broadcast {
		t.Errorf("want the partial aggregate, the shared broadcast final aggregate and the final stage:\n%s", text)
	}
}
