package cluster

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"sluice/exchange"
	"sluice/rpc"
)

// TestTokenRequiredEverywhere: with the cluster's token every call
// works; without it (or with a wrong one) the scheduler, the executors'
// control services and their Flight services all refuse, and an executor
// cannot register.
func TestTokenRequiredEverywhere(t *testing.T) {
	emb, _ := startCluster(t, EmbeddedConfig{Executors: 1})
	ctx := testContext(t, 30*time.Second)
	good := newTestClient(t, emb.SchedulerAddr(), emb.Security())
	j, err := good.submit(ctx, "SELECT count(*) FROM orders", nil)
	if err != nil {
		t.Fatal(err)
	}
	st, err := j.wait()
	if err != nil {
		t.Fatal(err)
	}
	final := st.FinalLocations[0]
	x := emb.Executors()[0]

	for _, tc := range []struct {
		name string
		sec  *rpc.Security
	}{
		{"no token", nil},
		{"wrong token", &rpc.Security{Token: rpc.NewToken()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := newTestClient(t, emb.SchedulerAddr(), tc.sec)
			_, _, err := bad.query(ctx, "SELECT 1", nil)
			wantUnauthenticated(t, "ExecuteQuery", err)
			_, err = bad.sched.GetClusterState(ctx, &rpc.GetClusterStateRequest{})
			wantUnauthenticated(t, "GetClusterState", err)
			_, err = bad.sched.RegisterExecutor(ctx, &rpc.RegisterExecutorRequest{Meta: &rpc.ExecutorMetadata{Id: "rogue", Vcores: 8}})
			wantUnauthenticated(t, "RegisterExecutor", err)

			conn, err := grpc.NewClient(x.GRPCAddress(), tc.sec.DialOptions()...)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_, err = rpc.NewExecutorServiceClient(conn).RemoveJobData(ctx, &rpc.RemoveJobDataRequest{JobId: final.JobId})
			wantUnauthenticated(t, "RemoveJobData", err)

			pool := exchange.NewClientPool(tc.sec)
			defer pool.Close()
			err = doGet(ctx, pool, final.FlightAddress, &rpc.FetchPartition{JobId: final.JobId, StageId: final.StageId,
				Partition: final.Partition, MapPartition: final.MapPartition, Path: final.Path})
			wantUnauthenticated(t, "Flight DoGet", err)

			rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			_, err = StartExecutor(rctx, ExecutorConfig{SchedulerAddr: emb.SchedulerAddr(), BindAddr: "127.0.0.1:0", FlightAddr: "127.0.0.1:0",
				WorkDir: t.TempDir(), ID: "rogue", Security: tc.sec})
			wantUnauthenticated(t, "StartExecutor", err)
		})
	}
	// The refusals changed nothing: the result is still there.
	if rows, err := good.read(ctx, st); err != nil || len(rows) != 1 {
		t.Fatalf("reading the result after the refused calls: rows %v, err %v", rows, err)
	}
	if n := len(emb.Executors()); n != 1 {
		t.Fatalf("%d executors, want 1", n)
	}
}

func wantUnauthenticated(t *testing.T, call string, err error) {
	t.Helper()
	if status.Code(err) != codes.Unauthenticated {
		// Errors wrapped by the client keep the status in their text.
		if err == nil || !strings.Contains(err.Error(), "Unauthenticated") {
			t.Errorf("%s: got %v, want Unauthenticated", call, err)
		}
	}
}

// TestSessionsAreIsolated: with the cluster's token, a second session
// can neither follow, cancel nor release the first session's job, nor
// read its results without the job's secret; the cluster state shows it
// the job without its plan or locations.
func TestSessionsAreIsolated(t *testing.T) {
	emb, _ := startCluster(t, EmbeddedConfig{Executors: 2})
	ctx := testContext(t, 30*time.Second)
	owner := newTestClient(t, emb.SchedulerAddr(), emb.Security())
	other := newTestClient(t, emb.SchedulerAddr(), emb.Security())
	j, err := owner.submit(ctx, heavyQuery, heavySettings)
	if err != nil {
		t.Fatal(err)
	}
	st, err := j.wait()
	if err != nil {
		t.Fatal(err)
	}
	if len(st.JobId) != 32 || st.JobSecret == "" {
		t.Fatalf("job id %q (want 128 random bits in hex), secret %q", st.JobId, st.JobSecret)
	}
	for _, x := range emb.Executors() {
		if strings.Contains(st.String(), x.WorkDir()) {
			t.Errorf("the job's status names the work dir of %s: %v", x.ID(), st)
		}
	}
	if _, err := other.sched.GetJobStatus(ctx, &rpc.GetJobStatusRequest{JobId: st.JobId}); status.Code(err) != codes.NotFound {
		t.Errorf("another session's GetJobStatus: got %v, want NotFound", err)
	}
	if _, err := other.sched.CancelJob(ctx, &rpc.CancelJobRequest{JobId: st.JobId}); status.Code(err) != codes.NotFound {
		t.Errorf("another session's CancelJob: got %v, want NotFound", err)
	}
	if _, err := other.sched.ReleaseJob(ctx, &rpc.ReleaseJobRequest{JobId: st.JobId}); err != nil {
		t.Errorf("another session's ReleaseJob: %v", err)
	}
	for _, loc := range st.FinalLocations {
		fetch := &rpc.FetchPartition{JobId: loc.JobId, StageId: loc.StageId, Partition: loc.Partition, MapPartition: loc.MapPartition, Path: loc.Path}
		if err := doGet(ctx, other.env.Clients, loc.FlightAddress, fetch); status.Code(err) != codes.PermissionDenied {
			t.Errorf("fetching another session's result without its secret: got %v, want PermissionDenied", err)
		}
		fetch.JobSecret = rpc.NewToken()
		if err := doGet(ctx, other.env.Clients, loc.FlightAddress, fetch); status.Code(err) != codes.PermissionDenied {
			t.Errorf("fetching another session's result with a wrong secret: got %v, want PermissionDenied", err)
		}
	}
	// The executors' control services want the job's secret too.
	for _, x := range emb.Executors() {
		conn, err := grpc.NewClient(x.GRPCAddress(), emb.Security().DialOptions()...)
		if err != nil {
			t.Fatal(err)
		}
		c := rpc.NewExecutorServiceClient(conn)
		if _, err := c.RemoveJobData(ctx, &rpc.RemoveJobDataRequest{JobId: st.JobId}); status.Code(err) != codes.PermissionDenied {
			t.Errorf("RemoveJobData without the job's secret on %s: got %v, want PermissionDenied", x.ID(), err)
		}
		if _, err := c.CancelTasks(ctx, &rpc.CancelTasksRequest{JobId: st.JobId}); status.Code(err) != codes.PermissionDenied {
			t.Errorf("CancelTasks without the job's secret on %s: got %v, want PermissionDenied", x.ID(), err)
		}
		conn.Close()
	}
	// Nothing the other session did touched the job: its owner reads it.
	rows, err := owner.read(ctx, st)
	if err != nil || len(rows) == 0 {
		t.Fatalf("the owner reading its result: %d rows, err %v", len(rows), err)
	}
	if cur, err := owner.sched.GetJobStatus(ctx, &rpc.GetJobStatusRequest{JobId: st.JobId}); err != nil || cur.State != rpc.JobState_JOB_SUCCESSFUL {
		t.Fatalf("the owner's GetJobStatus: %v, %v", cur, err)
	}
	if _, err := owner.sched.ReleaseJob(ctx, &rpc.ReleaseJobRequest{JobId: st.JobId}); err != nil {
		t.Fatal(err)
	}
}

// TestClusterStateHidesOtherSessionsJobs: a running job is listed in full
// to its session and to an operator, and without plan, locations or
// secret to anyone else.
func TestClusterStateHidesOtherSessionsJobs(t *testing.T) {
	sec := &rpc.Security{Token: rpc.NewToken(), AdminToken: rpc.NewToken()}
	// The hook holds every task until the test ends, so the job runs
	// while the listings are taken.
	hold := make(chan struct{})
	emb, _ := startCluster(t, EmbeddedConfig{Executors: 1, Security: sec,
		TaskFailureHook: func(*rpc.TaskDefinition) error { <-hold; return nil }})
	t.Cleanup(func() { close(hold) })
	ctx := testContext(t, 30*time.Second)
	owner := newTestClient(t, emb.SchedulerAddr(), &rpc.Security{Token: sec.Token})
	other := newTestClient(t, emb.SchedulerAddr(), &rpc.Security{Token: sec.Token})
	admin := newTestClient(t, emb.SchedulerAddr(), sec)
	j, err := owner.submit(ctx, heavyQuery, heavySettings)
	if err != nil {
		t.Fatal(err)
	}
	jobOf := func(c *testClient) *rpc.JobStatus {
		t.Helper()
		cs, err := c.sched.GetClusterState(ctx, &rpc.GetClusterStateRequest{})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range cs.RunningJobs {
			if r.JobId == j.last.JobId {
				return r
			}
		}
		t.Fatalf("job %s not listed", j.last.JobId)
		return nil
	}
	if st := jobOf(owner); st.Stages == "" || st.JobSecret == "" {
		t.Errorf("the owner's listing lacks the plan or the secret: %v", st)
	}
	if st := jobOf(admin); st.Stages == "" || st.JobSecret != "" {
		t.Errorf("the operator's listing: plan %q, secret %q (want the plan, no secret)", st.Stages, st.JobSecret)
	}
	if st := jobOf(other); st.Stages != "" || st.JobSecret != "" || len(st.Settings) != 0 || st.Schema != nil {
		t.Errorf("another session's listing shows too much: %v", st)
	}
}
