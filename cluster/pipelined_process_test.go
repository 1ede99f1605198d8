package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"sluice/rpc"
	"sluice/session"
)

// The pipelined mode's features on a multi-process cluster: a scheduler
// and two executors of 2 vcores each, every one a `sluice` process of its
// own (startProcessClusterWith), driven through the remote session a shell
// uses.

// connectSession opens a session to the process cluster with settings.
func connectSession(t *testing.T, pc *processCluster, kv ...string) *session.Session {
	t.Helper()
	s, err := session.Connect(pc.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	setAll(t, s, kv...)
	return s
}

// setAll sets each key of kv (key, value, key, value...) in s.
func setAll(t *testing.T, s *session.Session, kv ...string) {
	t.Helper()
	for i := 0; i+1 < len(kv); i += 2 {
		if err := s.Settings.Set(kv[i], kv[i+1]); err != nil {
			t.Fatal(err)
		}
	}
}

// readerReadsRe finds a pipelined reader's queue reads on its line of an
// analyzed plan.
var readerReadsRe = regexp.MustCompile(`local_reads=(\d+), remote_reads=(\d+)`)

// queueReads sums the local and remote queue reads of every pipelined
// reader in an analyzed plan.
func queueReads(plan string) (local, remote int64) {
	for _, m := range readerReadsRe.FindAllStringSubmatch(plan, -1) {
		l, _ := strconv.ParseInt(m[1], 10, 64)
		r, _ := strconv.ParseInt(m[2], 10, 64)
		local += l
		remote += r
	}
	return local, remote
}

// TestPipelinedLocalReadsProcesses runs a multi-stage pipelined query on
// executor processes. With 2 partitions the whole job fits on one executor
// and every queue between its stages is read locally; with 4 its tasks
// are on both executors and a consumer reads its own executor's producer
// locally and the other's over Flight. EXPLAIN ANALYZE (task metrics sent
// from the executors to the scheduler) counts both, and the answers are
// the in-process engine's.
func TestPipelinedLocalReadsProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the sluice binary")
	}
	ctx := testContext(t, 90*time.Second)
	pc := startProcessClusterWith(t, ctx, processClusterOptions{})
	want := localRows(t, pc.cat, heavyQuery)
	s := connectSession(t, pc, "execution.mode", "pipelined", "optimizer.broadcast_join_threshold_bytes", "0")
	for _, parts := range []string{"2", "4"} {
		setAll(t, s, "execution.target_partitions", parts)
		sameRows(t, "partitions "+parts, sessionRows(t, ctx, s, heavyQuery), want, true)
		// A task takes up to its executor's free vcores: with every vcore
		// free, 2 partitions make one task per stage, on one executor.
		waitClusterIdle(t, ctx, pc.client, 20*time.Second)
		plan := strings.Join(sessionRows(t, ctx, s, "EXPLAIN ANALYZE "+heavyQuery), "\n")
		local, remote := queueReads(plan)
		t.Logf("%s partitions: queues read locally %d, over Flight %d", parts, local, remote)
		switch {
		case local == 0:
			t.Errorf("%s partitions: no queue was read locally:\n%s", parts, plan)
		case parts == "2" && remote != 0:
			t.Errorf("2 partitions fit one executor, yet %d queues were read over Flight:\n%s", remote, plan)
		case parts == "4" && remote == 0:
			t.Errorf("4 partitions span both executors, yet no queue was read over Flight:\n%s", plan)
		}
	}
}

// TestLazyProducersProcesses: with execution.lazy_producers on, executor
// processes give the in-process engine's answers to queries of several
// stages (joins broadcast and partitioned, aggregates, a top-n), and a
// client that never reads its result holds the cluster only until
// execution.idle_client_timeout: its job then fails, saying why, and the
// cluster's vcores are free again.
func TestLazyProducersProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the sluice binary")
	}
	ctx := testContext(t, 90*time.Second)
	pc := startProcessClusterWith(t, ctx, processClusterOptions{})
	s := connectSession(t, pc, "execution.mode", "pipelined", "execution.lazy_producers", "true", "execution.target_partitions", "4")
	for _, q := range append(testQueries, struct {
		name     string
		sql      string
		ordered  bool
		settings map[string]string
	}{name: "heavy", sql: heavyQuery, ordered: true, settings: heavySettings}) {
		qs := s.Fork()
		for k, v := range q.settings {
			setAll(t, qs, k, v)
		}
		sameRows(t, "lazy "+q.name, sessionRows(t, ctx, qs, q.sql), localRows(t, pc.cat, q.sql), q.ordered)
	}

	setAll(t, s, "execution.idle_client_timeout", "1s")
	start := time.Now()
	res, err := s.Execute(ctx, "SELECT x, repeat('x', 100) AS pad FROM generate_series(1, 100000000) t(x)")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Close()
	// Never read: the job must end by itself, and give back its vcores.
	waitClusterIdle(t, ctx, pc.client, 30*time.Second)
	freed := time.Since(start)
	var got error
	for got == nil {
		b, err := res.Next(ctx)
		if err != nil {
			got = err
			break
		}
		b.Release()
	}
	if errors.Is(got, io.EOF) || !strings.Contains(got.Error(), "stopped reading the result") {
		t.Fatalf("the idle client's result ended with %v, want the idle client error", got)
	}
	t.Logf("idle client: cluster free %v after the query started; its result: %v", freed.Round(time.Millisecond), got)
	q := testQueries[0]
	sameRows(t, "after the idle client", sessionRows(t, ctx, s, q.sql), localRows(t, pc.cat, q.sql), q.ordered)
}

// waitClusterIdle waits until no job runs and every executor's vcores are
// free, failing the test after limit.
func waitClusterIdle(t *testing.T, ctx context.Context, c *testClient, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		cs, err := c.sched.GetClusterState(ctx, &rpc.GetClusterStateRequest{})
		if err != nil {
			t.Fatal(err)
		}
		held := 0
		for _, e := range cs.Executors {
			held += int(e.Meta.Vcores - e.FreeVcores)
		}
		if held == 0 && len(cs.RunningJobs) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v the cluster still holds %d vcores for %d jobs", limit, held, len(cs.RunningJobs))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// processAdmissionBound is the longest the pipelined query of
// TestAdmissionProcesses may wait for its vcores. Each blocking query's
// tasks take a fraction of a second; without the admission rules the
// pipelined query waits until the blocking clients happen to leave every
// vcore free at once, which a steady stream of them rarely does.
const processAdmissionBound = 15 * time.Second

// admissionBlockingQuery has one task per partition of lineitem (8 row
// groups), each a few hundred thousand rows of work.
const admissionBlockingQuery = `SELECT l_flag, count(*), sum(l_quantity * x) FROM lineitem, generate_series(1, 200) g(x) GROUP BY l_flag`

// TestAdmissionProcesses: three clients keep the executor processes busy
// with blocking queries of one-vcore tasks, back to back, while a fourth
// runs a pipelined query that needs all 4 vcores at once. Each pipelined
// query is placed within processAdmissionBound (the longest wait is in
// the test log) and the blocking clients keep finishing queries.
func TestAdmissionProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the sluice binary")
	}
	ctx := testContext(t, 120*time.Second)
	pc := startProcessClusterWith(t, ctx, processClusterOptions{schedulerArgs: []string{"--admission-wait", "1s"}})
	wantBlocking := slices.Sorted(slices.Values(localRows(t, pc.cat, admissionBlockingQuery)))
	stop := make(chan struct{})
	var blockingDone atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	for c := 0; c < 3; c++ {
		bs := connectSession(t, pc, "execution.mode", "blocking", "execution.target_partitions", "8", "scheduler.max_partitions_per_task", "1")
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				got, err := sessionRowsErr(ctx, bs, admissionBlockingQuery)
				if err == nil && !slices.Equal(slices.Sorted(slices.Values(got)), wantBlocking) {
					err = fmt.Errorf("got %q, want %q", got, wantBlocking)
				}
				if err != nil {
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

	ps := connectSession(t, pc, "execution.mode", "pipelined", "execution.target_partitions", "4")
	pq := "SELECT o_status, count(*) FROM orders GROUP BY o_status"
	want := localRows(t, pc.cat, pq)
	// The blocking clients are under way once they have held vcores.
	for deadline := time.Now().Add(20 * time.Second); ; {
		cs, err := pc.client.sched.GetClusterState(ctx, &rpc.GetClusterStateRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if len(cs.RunningJobs) >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the blocking clients did not start")
		}
		time.Sleep(20 * time.Millisecond)
	}
	var maxWait time.Duration
	for i := 0; i < 4; i++ {
		before := blockingDone.Load()
		start := time.Now()
		res, err := ps.Execute(ctx, pq)
		if err != nil {
			t.Fatal(err)
		}
		st := res.Stats()
		got, err := readRows(ctx, res)
		res.Close()
		if err != nil {
			t.Fatalf("pipelined query %d: %v", i, err)
		}
		sameRows(t, fmt.Sprintf("pipelined %d", i), got, want, false)
		if st.Queued > processAdmissionBound {
			t.Errorf("pipelined query %d waited %v for its vcores (bound %v; %s)", i, st.Queued, processAdmissionBound, st.Admission)
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
	if maxWait == 0 {
		t.Error("no pipelined query waited: the blocking clients never held the vcores it needed")
	}
	t.Logf("max admission wait of a pipelined query on the process cluster: %v (bound %v); blocking queries finished: %d",
		maxWait, processAdmissionBound, blockingDone.Load())
}

// TestAutoModeProcesses: in auto mode the scheduler process runs a query
// that fits the free vcores pipelined and one wider than the cluster
// blocking, says which in the result's stats, and both answers are the
// in-process engine's.
func TestAutoModeProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the sluice binary")
	}
	ctx := testContext(t, 90*time.Second)
	pc := startProcessClusterWith(t, ctx, processClusterOptions{})
	s := connectSession(t, pc, "execution.mode", "auto", "optimizer.broadcast_join_threshold_bytes", "0")
	want := localRows(t, pc.cat, heavyQuery)
	for _, c := range []struct{ parts, mode string }{{"4", "pipelined"}, {"16", "blocking"}} {
		setAll(t, s, "execution.target_partitions", c.parts)
		res, err := s.Execute(ctx, heavyQuery)
		if err != nil {
			t.Fatal(err)
		}
		got, err := readRows(ctx, res)
		st := res.Stats()
		res.Close()
		if err != nil {
			t.Fatalf("%s partitions: %v", c.parts, err)
		}
		sameRows(t, "auto "+c.parts, got, want, true)
		if st == nil || !strings.HasPrefix(st.Mode, "auto: "+c.mode) {
			t.Errorf("%s partitions: mode %+v, want auto: %s", c.parts, st, c.mode)
		} else {
			t.Logf("%s partitions: %s", c.parts, st.Mode)
		}
	}
}

// readRows reads a result to its end (see formatRows).
func readRows(ctx context.Context, res *session.Result) ([]string, error) {
	var rows []string
	for {
		b, err := res.Next(ctx)
		if errors.Is(err, io.EOF) {
			return rows, nil
		}
		if err != nil {
			return rows, err
		}
		rows = append(rows, formatRows(b)...)
		b.Release()
	}
}

// sessionRowsErr is sessionRows returning its error, for goroutines.
func sessionRowsErr(ctx context.Context, s *session.Session, sql string) ([]string, error) {
	res, err := s.Execute(ctx, sql)
	if err != nil {
		return nil, err
	}
	defer res.Close()
	return readRows(ctx, res)
}
