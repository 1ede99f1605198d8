package cluster

import (
	"context"
	"errors"
	"io"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"sluice/session"
)

// dynFilterQuery joins a few orders with lineitem; with joins partitioned,
// lineitem's scan is in a stage of its own, and a cross-stage dynamic
// filter of the orders' keys may drop most of its rows before they are
// exchanged.
const dynFilterQuery = "SELECT count(*), sum(l_price), min(l_quantity) FROM orders JOIN lineitem ON o_orderkey = l_orderkey WHERE o_custkey < 50"

// TestDynamicFiltersProcesses runs the join on a scheduler and two
// executors in processes of their own, in both modes, with the dynamic
// filters on and off: the answers are the in-process engine's every time,
// and in blocking mode (where the lineitem stage runs after the orders
// stage, with the filter) the lineitem rows that leave their stage drop to
// those of the selected orders. (In pipelined mode these tables are small
// enough for the lineitem scan to be done before the filter comes; the
// TPC-H measurements in README show it arriving in time on larger ones.)
func TestDynamicFiltersProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the sluice binary")
	}
	ctx := testContext(t, 120*time.Second)
	pc := startProcessClusterWith(t, ctx, processClusterOptions{})
	want := localRows(t, pc.cat, dynFilterQuery)
	s, err := session.Connect(pc.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, mode := range []string{"blocking", "pipelined"} {
		scanned := map[string]int64{}
		for _, filters := range []string{"on", "off"} {
			for k, v := range map[string]string{
				"execution.mode": mode, "execution.dynamic_filters": filters,
				"optimizer.broadcast_join_threshold_bytes": "1", "execution.target_partitions": "4",
				// Small batches and queues: a pipelined lineitem scan waits
				// for the join, which reads the orders first.
				"execution.batch_size": "512", "exchange.queue_batches": "1",
			} {
				if err := s.Settings.Set(k, v); err != nil {
					t.Fatal(err)
				}
			}
			sameRows(t, mode+" filters "+filters, sessionRows(t, ctx, s, dynFilterQuery), want, false)
			plan := strings.Join(sessionRows(t, ctx, s, "EXPLAIN ANALYZE "+dynFilterQuery), "\n")
			rows, dropped, seen := lineitemScan(t, plan)
			scanned[filters] = rows
			t.Logf("%s, filters %s: lineitem rows out of their stage %d, dropped by the filter %d (%s)", mode, filters, rows, dropped, seen)
			switch {
			case filters == "off" && (seen != "" || dropped != 0):
				t.Errorf("%s: filters off, yet the scan shows dynamic filters %q:\n%s", mode, seen, plan)
			case filters == "on" && seen == "":
				t.Errorf("%s: filters on, the scan waited for none:\n%s", mode, plan)
			case filters == "on" && mode == "blocking" && (dropped == 0 || !allReceived(seen)):
				// Every probe task started with the filter.
				t.Errorf("%s: the filter dropped %d rows (filters %s):\n%s", mode, dropped, seen, plan)
			}
			if filters == "on" && rows+dropped != testLineitem {
				t.Errorf("%s: %d rows out and %d dropped of %d", mode, rows, dropped, testLineitem)
			}
		}
		if mode == "blocking" && scanned["on"]*5 > scanned["off"] {
			t.Errorf("blocking: %d lineitem rows exchanged with the filter, %d without: want a fifth at most", scanned["on"], scanned["off"])
		}
	}
}

// allReceived reports whether "received/expected" counts every filter.
func allReceived(seen string) bool {
	r, e, _ := strings.Cut(seen, "/")
	return r == e && r != "0"
}

var (
	scanRowsRe    = regexp.MustCompile(`rows=(\d+)`)
	scanFiltersRe = regexp.MustCompile(`dynamic_filters=(\d+/\d+), dynamic_dropped=(\d+)`)
)

// lineitemScan finds the lineitem scan's line in an analyzed plan: its
// output rows, the rows its dynamic filters dropped, and their
// received/expected count ("" when it had none).
func lineitemScan(t *testing.T, plan string) (rows, dropped int64, filters string) {
	t.Helper()
	for _, line := range strings.Split(plan, "\n") {
		if !strings.Contains(line, "ParquetScan: lineitem") {
			continue
		}
		m := scanRowsRe.FindStringSubmatch(line[strings.Index(line, "metrics="):])
		if m == nil {
			t.Fatalf("no rows in %q", line)
		}
		rows, _ = strconv.ParseInt(m[1], 10, 64)
		if f := scanFiltersRe.FindStringSubmatch(line); f != nil {
			filters = f[1]
			dropped, _ = strconv.ParseInt(f[2], 10, 64)
		}
		return rows, dropped, filters
	}
	t.Fatalf("no lineitem scan in the plan:\n%s", plan)
	return 0, 0, ""
}

// sessionRows runs sql in s and returns its rows (see formatRows).
func sessionRows(t *testing.T, ctx context.Context, s *session.Session, sql string) []string {
	t.Helper()
	res, err := s.Execute(ctx, sql)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	defer res.Close()
	var rows []string
	for {
		b, err := res.Next(ctx)
		if errors.Is(err, io.EOF) {
			return rows
		}
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		rows = append(rows, formatRows(b)...)
		b.Release()
	}
}
