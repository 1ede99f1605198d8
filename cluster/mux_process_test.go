package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"sluice/bench"
	"sluice/tpch"
)

// muxStreamsRe finds a pipelined reader's multiplexed streams on its line
// of an analyzed plan.
var muxStreamsRe = regexp.MustCompile(`mux_streams=(\d+)`)

// TestMultiplexedTPCHProcesses runs the 22 TPC-H queries at SF 1 in
// pipelined mode with exchange.multiplex on, on a scheduler and two
// executor processes of 4 vcores with 8 partitions (so a consumer task
// reads 4 partitions from the other executor's producer task), and
// compares every answer with the official one. EXPLAIN ANALYZE shows the
// remote reads went over fewer streams than there were reads.
func TestMultiplexedTPCHProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the sluice binary and needs TPC-H SF 1")
	}
	data, err := filepath.Abs("../.cache/tpch-sf1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tpch.EnsureCached(context.Background(), 1, data, nil, nil); err != nil {
		t.Fatalf("generating TPC-H SF 1: %v", err)
	}
	ctx := testContext(t, 15*time.Minute)
	pc := startProcessClusterWith(t, ctx, processClusterOptions{
		schedulerArgs: []string{"--allowed-locations", data},
		executorArgs:  []string{"--allowed-locations", data, "--vcores", "4"},
	})
	s := connectSession(t, pc, "execution.mode", "pipelined", "exchange.multiplex", "on", "execution.target_partitions", "8")
	for _, name := range tpch.TableNames {
		// The harness's own test tables take two of TPC-H's names.
		sessionRows(t, ctx, s, "DROP TABLE IF EXISTS "+name)
		sessionRows(t, ctx, s, fmt.Sprintf("CREATE EXTERNAL TABLE %s STORED AS PARQUET LOCATION '%s'", name, filepath.Join(data, name)))
	}
	for n := 1; n <= 22; n++ {
		text, err := os.ReadFile(fmt.Sprintf("../testdata/tpch/q%d.sql", n))
		if err != nil {
			t.Fatal(err)
		}
		c, ok, err := bench.CheckAnswer(ctx, s, "../testdata/tpch/answers-sf1", bench.Query{N: n, Text: string(text)}, "pipelined")
		if err != nil {
			t.Errorf("q%d: %v", n, err)
			continue
		}
		if !ok || !c.Pass {
			t.Errorf("q%d does not match the official answer (answer file found: %v): %s", n, ok, c.Detail)
		}
	}

	text, err := os.ReadFile("../testdata/tpch/q5.sql")
	if err != nil {
		t.Fatal(err)
	}
	waitClusterIdle(t, ctx, pc.client, 20*time.Second)
	plan := strings.Join(sessionRows(t, ctx, s, "EXPLAIN ANALYZE "+string(text)), "\n")
	_, remote := queueReads(plan)
	var streams int64
	for _, m := range muxStreamsRe.FindAllStringSubmatch(plan, -1) {
		n, _ := strconv.ParseInt(m[1], 10, 64)
		streams += n
	}
	t.Logf("q5: %d remote queue reads over %d multiplexed streams", remote, streams)
	if streams == 0 || remote <= streams {
		t.Errorf("q5 read %d queues remotely over %d multiplexed streams; want fewer streams than reads:\n%s", remote, streams, plan)
	}
}
