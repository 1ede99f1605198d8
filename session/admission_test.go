package session_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"sluice/cluster"
	"sluice/session"
)

// admissionBound is the longest a pipelined query may wait for its vcores
// in TestAdmissionMixedClients. Each blocking query's tasks take well under
// a second on this data; the bound leaves room for a loaded machine, and
// without the admission rules the pipelined query waits for as long as the
// blocking clients keep submitting (the whole test).
const admissionBound = 15 * time.Second

// Three clients keep the embedded cluster busy with blocking queries, one
// one-vcore task per partition, while a fourth runs pipelined queries that
// need every vcore of the cluster at once. Each pipelined query must be
// placed within admissionBound, and the blocking clients must keep
// finishing queries meanwhile (neither mode starves the other).
func TestAdmissionMixedClients(t *testing.T) {
	if testing.Short() {
		t.Skip("TPC-H SF 1 skipped in -short mode")
	}
	dir := tpchData(t)
	_, s := startClusterWith(t, cluster.EmbeddedConfig{Executors: 2, Policy: cluster.PolicyPush, VcoresPerExecutor: 2})
	ctx := context.Background()
	for _, name := range []string{"lineitem", "orders"} {
		res, err := s.Execute(ctx, fmt.Sprintf("CREATE EXTERNAL TABLE %s STORED AS PARQUET LOCATION '%s'", name, filepath.Join(dir, name)))
		if err != nil {
			t.Fatal(err)
		}
		res.Close()
	}
	set := func(s *session.Session, kv ...string) {
		for i := 0; i+1 < len(kv); i += 2 {
			if err := s.Settings.Set(kv[i], kv[i+1]); err != nil {
				t.Fatal(err)
			}
		}
	}

	stop := make(chan struct{})
	var blockingDone atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for c := 0; c < 3; c++ {
		bs := s.Fork()
		set(bs, "execution.mode", "blocking", "execution.target_partitions", "8", "scheduler.max_partitions_per_task", "1")
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if err := runToEnd(ctx, bs, "SELECT l_returnflag, l_linestatus, sum(l_quantity), count(*) FROM lineitem GROUP BY l_returnflag, l_linestatus"); err != nil {
					errs <- fmt.Errorf("blocking client: %w", err)
					return
				}
				blockingDone.Add(1)
			}
		}()
	}
	defer func() {
		close(stop)
		wg.Wait()
	}()

	ps := s.Fork()
	set(ps, "execution.mode", "pipelined", "execution.target_partitions", "4")
	time.Sleep(500 * time.Millisecond) // the blocking clients are under way
	var maxWait time.Duration
	for i := 0; i < 5; i++ {
		before := blockingDone.Load()
		start := time.Now()
		res, err := ps.Execute(ctx, "SELECT o_orderpriority, count(*) FROM orders GROUP BY o_orderpriority")
		if err != nil {
			t.Fatal(err)
		}
		n, err := readAll(ctx, res)
		st := res.Stats()
		res.Close()
		if err != nil || n != 5 {
			t.Fatalf("pipelined query %d: %d rows, %v", i, n, err)
		}
		if st.Queued > admissionBound {
			t.Errorf("pipelined query %d waited %v for its vcores (bound %v; %s)", i, st.Queued, admissionBound, st.Admission)
		}
		maxWait = max(maxWait, st.Queued)
		t.Logf("pipelined query %d: queued %v, total %v, blocking queries finished meanwhile %d (%s)",
			i, st.Queued, time.Since(start).Round(time.Millisecond), blockingDone.Load()-before, st.Admission)
		select {
		case err := <-errs:
			t.Fatal(err)
		default:
		}
	}
	if blockingDone.Load() < 3 {
		t.Errorf("the blocking clients finished %d queries in all: they were starved", blockingDone.Load())
	}
	t.Logf("max admission wait of a pipelined query: %v; blocking queries finished: %d", maxWait, blockingDone.Load())
}

// runToEnd runs sql and reads its result to the end.
func runToEnd(ctx context.Context, s *session.Session, sql string) error {
	res, err := s.Execute(ctx, sql)
	if err != nil {
		return err
	}
	defer res.Close()
	_, err = readAll(ctx, res)
	return err
}
