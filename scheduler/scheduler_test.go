package scheduler

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"sluice/rpc"
)

func states(sts []*rpc.JobStatus) []rpc.JobState {
	var out []rpc.JobState
	for _, s := range sts {
		if len(out) == 0 || out[len(out)-1] != s.State {
			out = append(out, s.State)
		}
	}
	return out
}

func last(t *testing.T, sts []*rpc.JobStatus) *rpc.JobStatus {
	t.Helper()
	if len(sts) == 0 {
		t.Fatal("no status")
	}
	return sts[len(sts)-1]
}

func TestQueryLifecycle(t *testing.T) {
	for _, policy := range []string{PolicyPush, PolicyPull} {
		t.Run(policy, func(t *testing.T) {
			h := newHarness(t, Config{Policy: policy})
			a := h.addExecutor("a", 3, policy == PolicyPull, succeed)
			b := h.addExecutor("b", 2, policy == PolicyPull, succeed)
			sts := h.execute(groupBySQL, blocking("scheduler.max_partitions_per_task", "2"))
			got := states(sts)
			want := []rpc.JobState{rpc.JobState_JOB_QUEUED, rpc.JobState_JOB_RUNNING, rpc.JobState_JOB_SUCCESSFUL}
			if !slices.Equal(got, want) {
				t.Fatalf("states %v, want %v (last error %v)", got, want, last(t, sts).Error)
			}
			final := last(t, sts)
			if len(final.FinalLocations) != 4 || final.FinalStageId != 2 {
				t.Errorf("final stage %d, locations %v", final.FinalStageId, final.FinalLocations)
			}
			for i, l := range final.FinalLocations {
				if l.Partition != int32(i) || l.StageId != 2 || l.JobId != final.JobId {
					t.Errorf("final location %d: %v", i, l)
				}
			}
			if names := fieldNames(final.Schema); names != "c_mktsegment,count" {
				t.Errorf("schema %s", names)
			}
			if p := final.Progress; p.StagesDone != 2 || p.StagesTotal != 2 || p.TasksRunning != 0 || p.TasksDone != p.TasksTotal {
				t.Errorf("progress %v", p)
			}
			if !strings.Contains(final.Stages, "Stage 2 [successful]") {
				t.Errorf("stages:\n%s", final.Stages)
			}
			var all []*rpc.TaskDefinition
			for _, e := range []*fakeExecutor{a, b} {
				for _, task := range e.tasks() {
					if len(task.Partitions) > 2 || int(task.Vcores) > e.vcores || int(task.Vcores) != len(task.Partitions) {
						t.Errorf("task %v on %s: %d partitions, %d vcores", task.Id, e.id, len(task.Partitions), task.Vcores)
					}
					if task.Settings["execution.mode"] != "blocking" {
						t.Errorf("task settings %v", task.Settings)
					}
					all = append(all, task)
				}
			}
			if len(all) < 4 {
				t.Errorf("%d tasks for 2 stages of 4 partitions, at most 2 per task", len(all))
			}

			if _, err := h.client.ReleaseJob(context.Background(), &rpc.ReleaseJobRequest{JobId: final.JobId}); err != nil {
				t.Fatal(err)
			}
			for _, e := range []*fakeExecutor{a, b} {
				if len(e.tasks()) > 0 && !slices.Contains(e.removedJobs(), final.JobId) {
					t.Errorf("executor %s ran tasks but its job data was not removed", e.id)
				}
			}
			_, err := h.client.GetJobStatus(context.Background(), &rpc.GetJobStatusRequest{JobId: final.JobId})
			if status.Code(err) != codes.NotFound {
				t.Errorf("released job status: %v", err)
			}
		})
	}
}

func fieldNames(s *rpc.Schema) string {
	var names []string
	for _, f := range s.GetFields() {
		names = append(names, f.Name)
	}
	return strings.Join(names, ",")
}

// failFirst fails every task's first attempt.
func failFirst(task *rpc.TaskDefinition, id string) *rpc.TaskStatus {
	if task.Id.Attempt == 0 {
		return failure(task, id, "injected failure")
	}
	return success(task, id)
}

func TestTaskRetryThenSuccess(t *testing.T) {
	h := newHarness(t, Config{})
	e := h.addExecutor("a", 4, false, failFirst)
	final := last(t, h.execute("select count(*) from orders", blocking()))
	if final.State != rpc.JobState_JOB_SUCCESSFUL {
		t.Fatalf("job %v: %v", final.State, final.Error)
	}
	attempts := map[int32]int{}
	for _, task := range e.tasks() {
		attempts[task.Id.Attempt]++
	}
	if attempts[0] == 0 || attempts[1] != attempts[0] {
		t.Errorf("attempts %v: every first attempt should have one retry", attempts)
	}
}

func TestRetryExhaustionFailsJob(t *testing.T) {
	h := newHarness(t, Config{TaskRetries: 2})
	e := h.addExecutor("a", 4, false, func(task *rpc.TaskDefinition, id string) *rpc.TaskStatus {
		return failure(task, id, "boom")
	})
	final := last(t, h.execute("select count(*) from orders", blocking()))
	if final.State != rpc.JobState_JOB_FAILED || final.Error.GetKind() != "execution" ||
		!strings.Contains(final.Error.GetMessage(), "failed 3 times") || !strings.Contains(final.Error.GetMessage(), "boom") {
		t.Fatalf("job %v: %v", final.State, final.Error)
	}
	if n := len(e.tasks()); n != 3 {
		t.Errorf("%d launches, want 3 (first attempt and 2 retries)", n)
	}
	eventually(t, "job data removal", func() bool { return slices.Contains(e.removedJobs(), final.JobId) })
}

// An executor that stops heartbeating is expired; the tasks it held run
// elsewhere and the job succeeds.
func TestLostExecutorHeartbeatExpiry(t *testing.T) {
	h := newHarness(t, Config{ExecutorTimeout: 150 * time.Millisecond})
	a := h.addExecutor("a", 2, false, func(*rpc.TaskDefinition, string) *rpc.TaskStatus { return nil })
	b := h.addExecutor("b", 2, false, succeed)
	a.vanish()
	final := last(t, h.execute(groupBySQL, blocking()))
	if final.State != rpc.JobState_JOB_SUCCESSFUL {
		t.Fatalf("job %v: %v", final.State, final.Error)
	}
	if len(a.tasks()) == 0 {
		t.Fatalf("the vanishing executor got no task; the test proves nothing")
	}
	for _, l := range final.FinalLocations {
		if l.ExecutorId != "b" {
			t.Errorf("final output on %s", l.ExecutorId)
		}
	}
	cs, err := h.client.GetClusterState(context.Background(), &rpc.GetClusterStateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cs.Executors) != 1 || cs.Executors[0].Meta.Id != "b" || cs.Policy != PolicyPush {
		t.Errorf("cluster state %v", cs)
	}
	hb, err := h.client.Heartbeat(context.Background(), &rpc.HeartbeatRequest{ExecutorId: "a"})
	if err != nil || !hb.Reregister {
		t.Errorf("expired executor's heartbeat: %v, %v", hb, err)
	}
	_ = b
}

// An executor whose LaunchTasks fails is dropped at once; its tasks go to
// the others.
func TestUnreachableExecutor(t *testing.T) {
	h := newHarness(t, Config{})
	a := h.addExecutor("a", 2, false, succeed)
	a.mu.Lock()
	a.refuse = true
	a.mu.Unlock()
	h.addExecutor("b", 2, false, succeed)
	final := last(t, h.execute(groupBySQL, blocking()))
	if final.State != rpc.JobState_JOB_SUCCESSFUL {
		t.Fatalf("job %v: %v", final.State, final.Error)
	}
	for _, l := range final.FinalLocations {
		if l.ExecutorId != "b" {
			t.Errorf("final output on %s", l.ExecutorId)
		}
	}
	_, err := h.client.RegisterExecutor(context.Background(), &rpc.RegisterExecutorRequest{Meta: &rpc.ExecutorMetadata{Id: "c", GrpcAddress: "c:grpc", Vcores: 2}})
	if status.Code(err) != codes.Unavailable {
		t.Errorf("register with an undialable address: %v", err)
	}
}

func TestCancelJob(t *testing.T) {
	h := newHarness(t, Config{})
	e := h.addExecutor("a", 4, false, func(*rpc.TaskDefinition, string) *rpc.TaskStatus { return nil })
	var (
		wg  sync.WaitGroup
		sts []*rpc.JobStatus
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		sts = h.execute(groupBySQL, blocking())
	}()
	eventually(t, "a running task", func() bool { return len(e.tasks()) > 0 })
	jobID := e.tasks()[0].Id.JobId
	resp, err := h.client.CancelJob(context.Background(), &rpc.CancelJobRequest{JobId: jobID})
	if err != nil || !resp.Cancelled {
		t.Fatalf("cancel: %v %v", resp, err)
	}
	wg.Wait()
	final := last(t, sts)
	if final.State != rpc.JobState_JOB_CANCELLED || !strings.Contains(final.Error.GetMessage(), "cancelled") {
		t.Fatalf("job %v: %v", final.State, final.Error)
	}
	if cs := e.cancelled(); len(cs) != 1 || cs[0].JobId != jobID {
		t.Errorf("cancel requests %v", cs)
	}
	if !slices.Contains(e.removedJobs(), jobID) {
		t.Errorf("job data not removed")
	}
	again, err := h.client.CancelJob(context.Background(), &rpc.CancelJobRequest{JobId: jobID})
	if err != nil || again.Cancelled {
		t.Errorf("second cancel: %v %v", again, err)
	}
	cs, err := h.client.GetClusterState(context.Background(), &rpc.GetClusterStateRequest{})
	if err != nil || len(cs.RunningJobs) != 0 || cs.Executors[0].FreeVcores != 4 {
		t.Errorf("cluster after cancel: %v %v", cs, err)
	}
}

// A client that goes away cancels its job.
func TestClientGoneCancelsJob(t *testing.T) {
	h := newHarness(t, Config{})
	e := h.addExecutor("a", 4, false, func(*rpc.TaskDefinition, string) *rpc.TaskStatus { return nil })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stream, err := h.client.ExecuteQuery(ctx, &rpc.ExecuteQueryRequest{Sql: groupBySQL, Settings: blocking()})
	if err != nil {
		t.Fatal(err)
	}
	first, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "a running task", func() bool { return len(e.tasks()) > 0 })
	cancel()
	eventually(t, "tasks cancelled on the executor", func() bool { return len(e.cancelled()) == 1 })
	st, err := h.client.GetJobStatus(context.Background(), &rpc.GetJobStatusRequest{JobId: first.JobId})
	if err != nil || st.State != rpc.JobState_JOB_CANCELLED {
		t.Errorf("job after the client left: %v %v", st.GetState(), err)
	}
}

// A job that cannot be placed stays queued until an executor appears.
func TestQueuedUntilExecutorJoins(t *testing.T) {
	h := newHarness(t, Config{})
	var (
		wg  sync.WaitGroup
		sts []*rpc.JobStatus
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		sts = h.execute("select count(*) from orders", blocking())
	}()
	eventually(t, "a queued job", func() bool {
		cs, err := h.client.GetClusterState(context.Background(), &rpc.GetClusterStateRequest{})
		return err == nil && len(cs.RunningJobs) == 1 && cs.RunningJobs[0].State == rpc.JobState_JOB_QUEUED
	})
	h.addExecutor("a", 1, false, succeed)
	wg.Wait()
	if final := last(t, sts); final.State != rpc.JobState_JOB_SUCCESSFUL {
		t.Fatalf("job %v: %v", final.State, final.Error)
	}
}

func inlineRows(t *testing.T, st *rpc.JobStatus) [][]string {
	t.Helper()
	r, err := ipc.NewReader(bytes.NewReader(st.InlineResult))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	var out [][]string
	for r.Next() {
		rec := r.RecordBatch()
		for i := 0; i < int(rec.NumRows()); i++ {
			var row []string
			for c := 0; c < int(rec.NumCols()); c++ {
				row = append(row, rec.Column(c).(*array.String).Value(i))
			}
			out = append(out, row)
		}
	}
	return out
}

func TestStatements(t *testing.T) {
	h := newHarness(t, Config{})
	tests := []struct {
		name     string
		sql      string
		settings map[string]string
		check    func(t *testing.T, st *rpc.JobStatus)
	}{
		{"create view", "create view v as select c_name from customer", nil, func(t *testing.T, st *rpc.JobStatus) {
			if st.State != rpc.JobState_JOB_SUCCESSFUL || st.Message != "CREATE VIEW" {
				t.Errorf("%v %q %v", st.State, st.Message, st.Error)
			}
		}},
		{"set", "set execution.batch_size = 100", blocking(), func(t *testing.T, st *rpc.JobStatus) {
			if st.Message != "SET" || st.Settings["execution.batch_size"] != "100" || st.Settings["execution.mode"] != "blocking" {
				t.Errorf("%q %v %v", st.Message, st.Settings, st.Error)
			}
		}},
		{"show", "show execution.mode", blocking(), func(t *testing.T, st *rpc.JobStatus) {
			if rows := inlineRows(t, st); len(rows) != 1 || rows[0][1] != "blocking" || fieldNames(st.Schema) != "name,value" {
				t.Errorf("rows %v schema %v", rows, st.Schema)
			}
		}},
		{"describe", "describe v", nil, func(t *testing.T, st *rpc.JobStatus) {
			if rows := inlineRows(t, st); len(rows) != 1 || rows[0][0] != "c_name" {
				t.Errorf("rows %v (%v)", rows, st.Error)
			}
		}},
		{"explain", "explain select count(*) from orders", blocking(), func(t *testing.T, st *rpc.JobStatus) {
			rows := inlineRows(t, st)
			if len(rows) != 3 || rows[2][0] != "distributed_plan" || !strings.Contains(rows[2][1], "Stage 2: partitions=1") {
				t.Errorf("rows %v (%v)", rows, st.Error)
			}
		}},
		{"syntax error", "selec 1", nil, func(t *testing.T, st *rpc.JobStatus) {
			e := st.Error
			if st.State != rpc.JobState_JOB_FAILED || e.GetKind() != "syntax" || e.GetLine() != 1 || e.GetColumn() == 0 || e.GetNear() == "" {
				t.Errorf("%v %v", st.State, e)
			}
		}},
		{"bind error", "select nope from customer", nil, func(t *testing.T, st *rpc.JobStatus) {
			if st.State != rpc.JobState_JOB_FAILED || st.Error.GetKind() != "bind" || !strings.Contains(st.Error.GetMessage(), "nope") {
				t.Errorf("%v %v", st.State, st.Error)
			}
		}},
		{"bad setting", "select 1", map[string]string{"execution.mode": "fast"}, func(t *testing.T, st *rpc.JobStatus) {
			if st.State != rpc.JobState_JOB_FAILED || !strings.Contains(st.Error.GetMessage(), "execution.mode") {
				t.Errorf("%v %v", st.State, st.Error)
			}
		}},
		{"two statements", "select 1; select 2", blocking(), func(t *testing.T, st *rpc.JobStatus) {
			if st.State != rpc.JobState_JOB_FAILED || !strings.Contains(st.Error.GetMessage(), "one statement") {
				t.Errorf("%v %v", st.State, st.Error)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sts := h.execute(tc.sql, tc.settings)
			if len(sts) != 1 {
				t.Fatalf("%d statuses, want 1", len(sts))
			}
			if sts[0].JobId == "" {
				t.Errorf("no job id")
			}
			tc.check(t, sts[0])
		})
	}
}

func TestExecutorProtocolErrors(t *testing.T) {
	h := newHarness(t, Config{})
	ctx := context.Background()
	hb, err := h.client.Heartbeat(ctx, &rpc.HeartbeatRequest{ExecutorId: "ghost"})
	if err != nil || !hb.Reregister {
		t.Errorf("unknown executor heartbeat: %v %v", hb, err)
	}
	if _, err := h.client.PollWork(ctx, &rpc.PollWorkRequest{ExecutorId: "ghost", FreeVcores: 1}); status.Code(err) != codes.FailedPrecondition {
		t.Errorf("poll under push: %v", err)
	}
	if _, err := h.client.RegisterExecutor(ctx, &rpc.RegisterExecutorRequest{Meta: &rpc.ExecutorMetadata{Id: "x"}}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("register without vcores: %v", err)
	}
	if _, err := h.client.GetJobStatus(ctx, &rpc.GetJobStatusRequest{JobId: "nope"}); status.Code(err) != codes.NotFound {
		t.Errorf("unknown job: %v", err)
	}
}

// Finished jobs nobody released are swept after their TTL.
func TestJobDataTTL(t *testing.T) {
	h := newHarness(t, Config{JobDataTTL: 50 * time.Millisecond})
	e := h.addExecutor("a", 4, false, succeed)
	final := last(t, h.execute("select count(*) from orders", blocking()))
	if final.State != rpc.JobState_JOB_SUCCESSFUL {
		t.Fatalf("job %v: %v", final.State, final.Error)
	}
	eventually(t, "TTL sweep", func() bool { return slices.Contains(e.removedJobs(), final.JobId) })
	_, err := h.client.GetJobStatus(context.Background(), &rpc.GetJobStatusRequest{JobId: final.JobId})
	if status.Code(err) != codes.NotFound {
		t.Errorf("swept job status: %v", err)
	}
}

// A running job's statuses carry the stage report and the settings once,
// with the first Running status, and again with the final one; the
// statuses between carry what changes.
func TestStatusStreamSendsReportOnce(t *testing.T) {
	h := newHarness(t, Config{Policy: PolicyPush})
	// Tasks that take a while: the stream sends the job's latest status,
	// so updates arriving faster than it sends them are merged (5 of 200
	// runs saw a single running status with instant tasks).
	h.addExecutor("a", 1, false, func(task *rpc.TaskDefinition, id string) *rpc.TaskStatus {
		time.Sleep(20 * time.Millisecond)
		return success(task, id)
	})
	sts := h.execute(groupBySQL, blocking("scheduler.max_partitions_per_task", "1"))
	var running []*rpc.JobStatus
	for _, st := range sts {
		if st.State == rpc.JobState_JOB_RUNNING {
			running = append(running, st)
		}
	}
	if len(running) < 2 {
		t.Fatalf("%d running statuses (%v), want one per task update", len(running), states(sts))
	}
	if running[0].Stages == "" || len(running[0].Settings) == 0 {
		t.Errorf("the first running status lacks the report or the settings: %v", running[0])
	}
	for i, st := range running[1:] {
		if st.Stages != "" || st.Settings != nil {
			t.Errorf("running status %d carries the report or the settings again", i+1)
		}
		if st.Progress == nil {
			t.Errorf("running status %d has no progress", i+1)
		}
	}
	final := last(t, sts)
	if final.State != rpc.JobState_JOB_SUCCESSFUL || !strings.Contains(final.Stages, "Stage 2 [") || len(final.Settings) == 0 {
		t.Errorf("final status %v, want success with the report and the settings", final)
	}
}
