package session_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"sluice/cluster"
)

// localReadQuery repartitions lineitem's groups between stages and sorts
// them, so every stage but the first reads another's queues.
const localReadQuery = "SELECT l_suppkey, count(*) AS n, sum(l_quantity) AS q FROM lineitem GROUP BY l_suppkey ORDER BY n DESC, l_suppkey LIMIT 5"

// On one executor every pipelined queue is read where it was written:
// consumer tasks take their producers' queues from the executor's registry,
// and so does the client, a session of the cluster's process, for the
// final stage's. On two executors the queues of producers on the
// consumer's own executor are still read locally, the rest over Flight,
// and the answers agree.
func TestPipelinedLocalReads(t *testing.T) {
	var want string
	for _, n := range []int{1, 2} {
		t.Run(fmt.Sprintf("%d-executors", n), func(t *testing.T) {
			// Two vcores in all, a task per partition: on two executors
			// every stage has a task on each.
			emb, s := pipelinedCluster(t, cluster.EmbeddedConfig{Executors: n, VcoresPerExecutor: 2 / n})
			for k, v := range map[string]string{"execution.target_partitions": "2", "scheduler.max_partitions_per_task": "1"} {
				if err := s.Settings.Set(k, v); err != nil {
					t.Fatal(err)
				}
			}
			got, err := runScriptCSV(context.Background(), s, localReadQuery)
			if err != nil {
				t.Fatal(err)
			}
			if want == "" {
				want = got
			} else if got != want {
				t.Errorf("2 executors answered\n%s\n1 executor\n%s", got, want)
			}
			waitIdle(t, emb, 10*time.Second)
			var local, remote int64
			for _, e := range emb.Executors() {
				l, r := e.PipelinedReads()
				local, remote = local+l, remote+r
			}
			t.Logf("%d executors: %d queues read locally, %d over Flight", n, local, remote)
			if local == 0 {
				t.Errorf("no queue was read locally")
			}
			// The final stage is one sorted partition, which the client
			// takes from the executor that runs it.
			if n == 1 && remote != 0 {
				t.Errorf("one executor served %d queues over Flight; want none", remote)
			}
			if emb.PeerReads() == 0 {
				t.Errorf("the client read the final stage over Flight")
			}
			if n == 2 && remote < 2 {
				t.Errorf("two executors served %d queues over Flight; some consumers read the other executor's producers", remote)
			}
		})
	}
}

// lazySettings run a pipelined query with lazy producers.
var lazySettings = map[string]string{"execution.mode": "pipelined", "execution.lazy_producers": "true"}

// TestSQLLogicClusterLazyProducers runs every .slt file on a pipelined
// embedded cluster of 2 executors whose producer tasks start only when a
// consumer first reads them (execution.lazy_producers).
func TestSQLLogicClusterLazyProducers(t *testing.T) {
	files, err := filepath.Glob("../testdata/slt/*.slt")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			s := startCluster(t, 2, cluster.PolicyPush)
			runSLT(t, f, s, "pipelined", lazySettings)
		})
	}
}

// TestTPCHClusterLazyProducers runs the 22 TPC-H queries at SF 1 on a
// pipelined embedded cluster of 2 executors with lazy producers and
// compares them with the official answers.
func TestTPCHClusterLazyProducers(t *testing.T) {
	_, s := pipelinedCluster(t, cluster.EmbeddedConfig{Executors: 2})
	for k, v := range lazySettings {
		if err := s.Settings.Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	for n := 1; n <= 22; n++ {
		checkTPCH(t, context.Background(), s, n)
	}
	t.Logf("22 queries in %v", time.Since(start))
}
