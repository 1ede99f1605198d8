package scheduler

import (
	"strings"
	"testing"

	"sluice/engine"
	"sluice/scheduler/dplan"
)

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
		s := engine.NewSettings()
		for k, v := range map[string]string{"execution.target_partitions": "2", "execution.blocking_inline_build_bytes": c.bytes} {
			if err := s.Set(k, v); err != nil {
				t.Fatal(err)
			}
		}
		out, err := testEngine(t).Prepare(sql, s)
		if err != nil {
			t.Fatal(err)
		}
		g, err := planStages(out.Query, s, c.mode)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, st := range g.Stages {
			if st.Broadcast {
				n++
			}
		}
		if n != c.broadcast {
			t.Errorf("%s, inline up to %s: %d broadcast stages, want %d:\n%s", c.mode, c.bytes, n, c.broadcast, dplan.Format(g))
		}
		if c.broadcast == 0 && !strings.Contains(dplan.Format(g), "ParquetScan: customer") {
			t.Errorf("%s: the customer scan is in no stage:\n%s", c.mode, dplan.Format(g))
		}
	}
}
