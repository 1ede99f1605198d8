package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"sluice/rpc"
	"sluice/session"
)

// TestSessionInProcess runs a query in both modes from a session of the
// embedded cluster's process: its calls to the scheduler are Go calls and
// it reads the final stage from the executors directly, the answers are
// the in-process engine's, and the scheduler logs each statement as it
// logs one that came over gRPC. With the control calls and the exchange
// over the wire (ControlOverGRPC, FlightBetweenExecutors) the same session
// goes over gRPC and Flight.
func TestSessionInProcess(t *testing.T) {
	for _, wire := range []bool{false, true} {
		t.Run(fmt.Sprintf("wire=%v", wire), func(t *testing.T) {
			var logged syncBuffer
			emb, cat := startCluster(t, EmbeddedConfig{Executors: 2, ControlOverGRPC: wire, FlightBetweenExecutors: wire,
				Logger: slog.New(slog.NewTextHandler(&logged, nil))})
			s, err := session.ConnectInProcess(emb)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			ctx := testContext(t, 60*time.Second)
			settings := maps.Clone(clusterSettings)
			maps.Copy(settings, heavySettings)
			for k, v := range settings {
				if err := s.Settings.Set(k, v); err != nil {
					t.Fatal(err)
				}
			}
			want := localRows(t, cat, heavyQuery)
			for _, mode := range []string{"blocking", "pipelined"} {
				if err := s.Settings.Set("execution.mode", mode); err != nil {
					t.Fatal(err)
				}
				calls, peers := emb.SessionDirectCalls(), emb.PeerReads()
				sameRows(t, mode, sessionRows(t, ctx, s, heavyQuery), want, true)
				switch {
				case wire && (emb.SessionDirectCalls() != 0 || emb.PeerReads() != 0):
					t.Errorf("%s over the wire: %d direct session calls, %d direct reads", mode, emb.SessionDirectCalls(), emb.PeerReads())
				case !wire && emb.SessionDirectCalls() <= calls:
					t.Errorf("%s: no call of the session was made directly", mode)
				case !wire && emb.PeerReads() <= peers:
					t.Errorf("%s: the session read no output directly", mode)
				}
			}
			n := 0
			for _, line := range strings.Split(logged.String(), "\n") {
				if strings.Contains(line, `msg="statement done"`) && strings.Contains(line, "state=JOB_SUCCESSFUL") {
					n++
				}
			}
			if n != 2 {
				t.Errorf("the scheduler logged %d successful statements, want 2:\n%s", n, logged.String())
			}
		})
	}
}

// hungStage2 returns a task hook under which stage 2's tasks wait
// (ignoring cancellation, like a slow operator) until release is called,
// and a channel closed when the first of them started. Register release
// as a cleanup after starting the cluster, so that it runs before the
// cluster's Close, which waits for the tasks.
func hungStage2() (hook func(*rpc.TaskDefinition) error, entered <-chan struct{}, release func()) {
	in, out := make(chan struct{}), make(chan struct{})
	var inOnce, outOnce sync.Once
	release = func() { outOnce.Do(func() { close(out) }) }
	hook = func(def *rpc.TaskDefinition) error {
		if def.Id.StageId == 2 {
			inOnce.Do(func() { close(in) })
			<-out
		}
		return nil
	}
	return hook, in, release
}

// directClient is a session's direct client of emb's scheduler, with key
// as the session's key, over a gRPC connection for when the scheduler no
// longer serves here.
func directClient(t *testing.T, emb *Embedded, key string) rpc.SchedulerServiceClient {
	t.Helper()
	conn, err := grpc.NewClient(emb.SchedulerAddr(), append(emb.Security().DialOptions(), rpc.SessionCredentials(key))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return emb.SchedulerClient(rpc.NewSchedulerServiceClient(conn), key)
}

// A direct call carries its session's key: another session can neither see
// nor cancel the job, and the job's own session can; ending the status
// stream's context cancels the job, as a client going away over gRPC does.
func TestSessionDirectCallsKeepJobsApart(t *testing.T) {
	hook, entered, release := hungStage2()
	emb, _ := startCluster(t, EmbeddedConfig{Executors: 2, TaskFailureHook: hook})
	t.Cleanup(release)
	a, b := directClient(t, emb, rpc.RandomHex(16)), directClient(t, emb, rpc.RandomHex(16))
	ctx := testContext(t, 60*time.Second)
	sctx, cancelStream := context.WithCancel(ctx)
	defer cancelStream()
	stream, err := a.ExecuteQuery(sctx, &rpc.ExecuteQueryRequest{Sql: heavyQuery, Settings: clusterSettings})
	if err != nil {
		t.Fatal(err)
	}
	st, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	id := st.JobId
	select {
	case <-entered:
	case <-ctx.Done():
		t.Fatal("stage 2 never started")
	}
	if _, err := b.GetJobStatus(ctx, &rpc.GetJobStatusRequest{JobId: id}); status.Code(err) != codes.NotFound {
		t.Errorf("another session's GetJobStatus: %v, want NotFound", err)
	}
	if _, err := b.CancelJob(ctx, &rpc.CancelJobRequest{JobId: id}); status.Code(err) != codes.NotFound {
		t.Errorf("another session's CancelJob: %v, want NotFound", err)
	}
	if st, err := a.GetJobStatus(ctx, &rpc.GetJobStatusRequest{JobId: id}); err != nil || st.State != rpc.JobState_JOB_RUNNING {
		t.Fatalf("the job's session: %v, %v; want it running", st.GetState(), err)
	}
	cancelStream()
	for {
		_, err := stream.Recv()
		if err == nil {
			continue
		}
		if status.Code(err) != codes.Canceled {
			t.Errorf("status stream after its context ended: %v, want Canceled", err)
		}
		break
	}
	waitFor(t, "the job cancelled", func() bool {
		st, err := a.GetJobStatus(ctx, &rpc.GetJobStatusRequest{JobId: id})
		return err == nil && st.State == rpc.JobState_JOB_CANCELLED
	})
	release()
	if _, err := a.ReleaseJob(ctx, &rpc.ReleaseJobRequest{JobId: id}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.GetJobStatus(ctx, &rpc.GetJobStatusRequest{JobId: id}); status.Code(err) != codes.NotFound {
		t.Errorf("a released job: %v, want NotFound", err)
	}
}

// A scheduler that stops ends the statuses streams it serves directly with
// an error, and later calls go over gRPC, where it no longer answers.
func TestSessionDirectStreamEndsWithScheduler(t *testing.T) {
	hook, entered, release := hungStage2()
	emb, _ := startCluster(t, EmbeddedConfig{Executors: 2, TaskFailureHook: hook})
	t.Cleanup(release)
	c := directClient(t, emb, rpc.RandomHex(16))
	ctx := testContext(t, 60*time.Second)
	stream, err := c.ExecuteQuery(ctx, &rpc.ExecuteQueryRequest{Sql: heavyQuery, Settings: clusterSettings})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-entered:
	case <-ctx.Done():
		t.Fatal("stage 2 never started")
	}
	ended := make(chan error, 1)
	go func() {
		for {
			if _, err := stream.Recv(); err != nil {
				ended <- err
				return
			}
		}
	}()
	closed := make(chan struct{})
	go func() {
		emb.Scheduler().Close()
		close(closed)
	}()
	select {
	case err := <-ended:
		if errors.Is(err, io.EOF) || status.Code(err) == codes.OK {
			t.Errorf("status stream ended with %v, want an error", err)
		}
	case <-ctx.Done():
		t.Fatal("the status stream outlived its scheduler")
	}
	release()
	<-closed
	if emb.local.scheduler() != nil {
		t.Fatal("a closed scheduler is still reached directly")
	}
	if _, err := c.GetClusterState(ctx, &rpc.GetClusterStateRequest{}); status.Code(err) != codes.Unavailable {
		t.Errorf("a call after the scheduler stopped: %v, want Unavailable", err)
	}
}

// A pipelined query's last rows can reach the session before its tasks'
// reports reach the scheduler. Closing the result then waits for the job
// to succeed rather than ending its status stream, which would cancel a
// job that is finishing (and log a successful statement as cancelled).
func TestSessionClosesAfterTheJobSucceeds(t *testing.T) {
	for _, wire := range []bool{false, true} {
		t.Run(fmt.Sprintf("wire=%v", wire), func(t *testing.T) {
			var logged syncBuffer
			delay := func(st *rpc.TaskStatus) {
				if st.State == rpc.TaskState_TASK_SUCCESSFUL {
					time.Sleep(300 * time.Millisecond)
				}
			}
			emb, cat := startCluster(t, EmbeddedConfig{Executors: 2, ControlOverGRPC: wire, FlightBetweenExecutors: wire,
				TaskReportHook: delay, Logger: slog.New(slog.NewTextHandler(&logged, nil))})
			s, err := session.ConnectInProcess(emb)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			ctx := testContext(t, 60*time.Second)
			settings := maps.Clone(clusterSettings)
			settings["execution.mode"] = "pipelined"
			for k, v := range settings {
				if err := s.Settings.Set(k, v); err != nil {
					t.Fatal(err)
				}
			}
			sameRows(t, "pipelined", sessionRows(t, ctx, s, heavyQuery), localRows(t, cat, heavyQuery), true)
			for _, line := range strings.Split(logged.String(), "\n") {
				if strings.Contains(line, `msg="job ended"`) && !strings.Contains(line, "state=JOB_SUCCESSFUL") {
					t.Errorf("the job did not succeed: %s", line)
				}
			}
			if !strings.Contains(logged.String(), "state=JOB_SUCCESSFUL") {
				t.Errorf("no job succeeded:\n%s", logged.String())
			}
		})
	}
}
