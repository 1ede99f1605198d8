package cluster

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"sluice/rpc"
)

// longQuery keeps both executors busy for many seconds: one task counts a
// billion generated rows and hands them, grouped, to the tasks of the
// aggregate's second stage.
const longQuery = `SELECT count(*), sum(c) FROM (SELECT x % 1000 AS k, count(*) AS c FROM generate_series(1, 1000000000) AS g(x) GROUP BY 1) t`

// TestFrozenExecutorsPipelined freezes both executors (SIGSTOP) while a
// pipelined query runs: the query must not wait for good. Their heartbeats
// stop, the scheduler drops them after its executor timeout and fails the
// job, saying which executor was lost (retries are off here: with them, the
// retry fails too, as no executor is left). Once thawed, the executors register again and the cluster runs
// queries.
func TestFrozenExecutorsPipelined(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the sluice binary")
	}
	ctx := testContext(t, 120*time.Second)
	sched, execs, c, _ := startProcessCluster(t, ctx)
	j, err := c.submit(ctx, longQuery, map[string]string{"execution.mode": "pipelined", "execution.query_retries": "0"})
	if err != nil {
		t.Fatal(err)
	}
	for {
		st, err := c.sched.GetJobStatus(ctx, &rpc.GetJobStatusRequest{JobId: j.id()})
		if err != nil {
			t.Fatal(err)
		}
		if finalState(st.State) {
			t.Fatalf("the long query ended before the freeze: %s %s", st.State, st.GetError().GetMessage())
		}
		if st.State == rpc.JobState_JOB_RUNNING {
			break
		}
		time.Sleep(10 * time.Millisecond) // polling a state that has no notification
	}
	for _, x := range execs {
		if err := x.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = x.cmd.Process.Signal(syscall.SIGCONT) })
	}
	start := time.Now()
	st, err := j.wait()
	if err == nil {
		t.Fatalf("the query succeeded with both executors frozen\n%s", st.GetStages())
	}
	if st.GetState() != rpc.JobState_JOB_FAILED || !strings.Contains(err.Error(), "was lost") || !strings.Contains(err.Error(), "execution.query_retries") {
		t.Fatalf("want the job failed naming the lost executor, got %v", err)
	}
	t.Logf("failed %v after the freeze: %v", time.Since(start), err)
	for _, x := range execs {
		_ = x.cmd.Process.Signal(syscall.SIGCONT)
	}
	waitFor(t, "both executors registered again", func() bool {
		cs, err := c.sched.GetClusterState(ctx, &rpc.GetClusterStateRequest{})
		return err == nil && len(cs.GetExecutors()) == 2
	})
	if _, _, err := c.query(ctx, "SELECT 1", nil); err != nil {
		t.Fatalf("a query after the thaw: %v", err)
	}
	for _, x := range execs {
		x.stop(t)
	}
	sched.stop(t)
}
