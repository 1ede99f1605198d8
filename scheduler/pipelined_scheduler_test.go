package scheduler

import (
	"context"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"sluice/rpc"
)

// following is a job's status stream read step by step.
type following struct {
	t      *testing.T
	stream rpc.SchedulerService_ExecuteQueryClient
	cancel context.CancelFunc
	seen   []*rpc.JobStatus
}

func (h *harness) follow(sql string, settings map[string]string) *following {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	stream, err := h.client.ExecuteQuery(ctx, &rpc.ExecuteQueryRequest{Sql: sql, Settings: settings})
	if err != nil {
		cancel()
		h.t.Fatal(err)
	}
	f := &following{t: h.t, stream: stream, cancel: cancel}
	h.t.Cleanup(cancel)
	return f
}

// until reads statuses until one satisfies cond and returns it.
func (f *following) until(what string, cond func(*rpc.JobStatus) bool) *rpc.JobStatus {
	f.t.Helper()
	for {
		st, err := f.stream.Recv()
		if err != nil {
			f.t.Fatalf("waiting for %s: %v (statuses so far %v)", what, err, states(f.seen))
		}
		f.seen = append(f.seen, st)
		if cond(st) {
			return st
		}
		if isFinal(st.State) {
			f.t.Fatalf("job ended %v (%v) while waiting for %s", st.State, st.Error, what)
		}
	}
}

// rest reads the stream to its end and returns the last status.
func (f *following) rest() *rpc.JobStatus {
	f.t.Helper()
	for {
		st, err := f.stream.Recv()
		if err == io.EOF {
			return last(f.t, f.seen)
		}
		if err != nil {
			f.t.Fatalf("status stream: %v", err)
		}
		f.seen = append(f.seen, st)
	}
}

func running(st *rpc.JobStatus) bool { return st.State == rpc.JobState_JOB_RUNNING }

// tasksOf lists the tasks of a job an executor was asked to run.
func tasksOf(e *fakeExecutor, jobID string) []*rpc.TaskDefinition {
	var out []*rpc.TaskDefinition
	for _, task := range e.tasks() {
		if task.Id.JobId == jobID {
			out = append(out, task)
		}
	}
	return out
}

// launchedAll waits until the executors have been given n tasks of the job.
func launchedAll(t *testing.T, jobID string, n int32, execs ...*fakeExecutor) {
	t.Helper()
	eventually(t, "every task launched", func() bool {
		got := 0
		for _, e := range execs {
			got += len(tasksOf(e, jobID))
		}
		return int32(got) == n
	})
}

func cancelledJob(e *fakeExecutor, jobID string) bool {
	return slices.ContainsFunc(e.cancelled(), func(r *rpc.CancelTasksRequest) bool { return r.JobId == jobID })
}

// A placed job reports where the client reads its final partitions while
// every task still runs; it succeeds when they finish, and releasing it
// removes its data from every executor that ran part of it.
func TestPipelinedQueryLifecycle(t *testing.T) {
	h := newPipelinedHarness(t, Config{})
	a := h.addExecutor("a", 2, false, hang)
	b := h.addExecutor("b", 2, false, hang)
	f := h.follow(groupBySQL, pipelined("scheduler.max_partitions_per_task", "2"))
	st := f.until("running with final producers", func(st *rpc.JobStatus) bool {
		return running(st) && len(st.FinalProducers) > 0
	})
	// An executor that joins once the job is placed takes no part in it.
	c := h.addExecutor("c", 2, false, hang)
	if st.FinalStageId != 2 || len(st.FinalProducers) != 4 {
		t.Fatalf("final stage %d, producers %v", st.FinalStageId, st.FinalProducers)
	}
	for i, ps := range st.FinalProducers {
		if len(ps.Producers) != 1 || ps.Producers[0].FlightAddress != ps.Producers[0].ExecutorId+":flight" {
			t.Errorf("final partition %d from %v", i, ps.Producers)
		}
	}
	if p := st.Progress; p.TasksTotal != 4 || p.TasksRunning != 4 || p.TasksDone != 0 {
		t.Errorf("progress %v: every task runs, none finished", p)
	}
	if !strings.Contains(st.Stages, "Pipelined: all tasks placed") || !strings.Contains(st.Stages, "Stage 2 [running]") {
		t.Errorf("stages:\n%s", st.Stages)
	}
	launchedAll(t, st.JobId, 4, a, b, c)
	for _, e := range []*fakeExecutor{a, b, c} {
		for _, task := range tasksOf(e, st.JobId) {
			if task.Plan.GetPipelinedWriter() == nil || task.Settings["execution.mode"] != "pipelined" {
				t.Errorf("task %v on %s: plan %v settings %v", task.Id, e.id, task.Plan, task.Settings)
			}
		}
	}
	if len(tasksOf(c, st.JobId)) != 0 {
		t.Errorf("an executor that joined after placement was given tasks")
	}
	for _, e := range []*fakeExecutor{a, b} {
		for _, task := range tasksOf(e, st.JobId) {
			h.report(e.id, pipelinedSuccess(task, e.id))
		}
	}
	final := f.rest()
	if got, want := states(f.seen), []rpc.JobState{rpc.JobState_JOB_QUEUED, rpc.JobState_JOB_RUNNING, rpc.JobState_JOB_SUCCESSFUL}; !slices.Equal(got, want) {
		t.Errorf("states %v, want %v", got, want)
	}
	if len(final.FinalProducers) != 4 || len(final.FinalLocations) != 0 || final.Progress.StagesDone != 2 {
		t.Errorf("final status: producers %v locations %v progress %v", final.FinalProducers, final.FinalLocations, final.Progress)
	}
	if len(a.removedJobs())+len(b.removedJobs()) != 0 {
		t.Errorf("job data removed before the client released the job")
	}
	if _, err := h.client.ReleaseJob(context.Background(), &rpc.ReleaseJobRequest{JobId: final.JobId}); err != nil {
		t.Fatal(err)
	}
	for _, e := range []*fakeExecutor{a, b} {
		if !slices.Contains(e.removedJobs(), final.JobId) {
			t.Errorf("job data not removed on %s", e.id)
		}
	}
	if len(c.removedJobs()) != 0 {
		t.Errorf("job data removal sent to an executor the job never used")
	}
}

// A job that cannot fit the cluster even when idle fails at submission.
func TestPipelinedNeverFittingJobFails(t *testing.T) {
	h := newPipelinedHarness(t, Config{})
	a := h.addExecutor("a", 2, false, hang)
	h.addExecutor("b", 1, false, hang)
	sts := h.execute(groupBySQL, pipelined())
	if len(sts) != 1 {
		t.Fatalf("%d statuses (%v), want one failure", len(sts), states(sts))
	}
	msg := sts[0].Error.GetMessage()
	if sts[0].State != rpc.JobState_JOB_FAILED || !strings.Contains(msg, "needs 4 vcores") || !strings.Contains(msg, "the cluster has 3 vcores on 2 executors") {
		t.Fatalf("%v: %q", sts[0].State, msg)
	}
	if len(a.tasks()) != 0 {
		t.Errorf("tasks launched for a job that cannot fit")
	}
}

// A job that does not fit now waits, queued, and runs once vcores free up.
func TestPipelinedWaitsForVcores(t *testing.T) {
	h := newPipelinedHarness(t, Config{})
	a := h.addExecutor("a", 4, false, hang)
	first := h.follow(groupBySQL, pipelined())
	st1 := first.until("the first job running", running)
	launchedAll(t, st1.JobId, st1.Progress.TasksTotal, a)

	second := h.follow("select count(*) from orders", pipelined())
	queued := second.until("the second job queued", func(st *rpc.JobStatus) bool { return st.State == rpc.JobState_JOB_QUEUED })
	if !strings.Contains(queued.Stages, "waiting for 4 free vcores") {
		t.Errorf("queued job's stages:\n%s", queued.Stages)
	}
	cs, err := h.client.GetClusterState(context.Background(), &rpc.GetClusterStateRequest{})
	if err != nil || cs.Executors[0].FreeVcores != 0 || len(cs.RunningJobs) != 2 {
		t.Fatalf("cluster state %v %v", cs, err)
	}
	for _, task := range tasksOf(a, st1.JobId) {
		h.report("a", pipelinedSuccess(task, "a"))
	}
	if final := first.rest(); final.State != rpc.JobState_JOB_SUCCESSFUL {
		t.Fatalf("first job %v: %v", final.State, final.Error)
	}
	st2 := second.until("the second job running", running)
	launchedAll(t, st2.JobId, st2.Progress.TasksTotal, a)
	for _, task := range tasksOf(a, st2.JobId) {
		h.report("a", pipelinedSuccess(task, "a"))
	}
	if final := second.rest(); final.State != rpc.JobState_JOB_SUCCESSFUL {
		t.Fatalf("second job %v: %v", final.State, final.Error)
	}
}

func TestPipelinedNeedsPushPolicy(t *testing.T) {
	h := newPipelinedHarness(t, Config{Policy: PolicyPull})
	a := h.addExecutor("a", 4, true, hang)
	sts := h.execute("select count(*) from orders", pipelined())
	if len(sts) != 1 {
		t.Fatalf("%d statuses (%v), want one failure", len(sts), states(sts))
	}
	msg := sts[0].Error.GetMessage()
	if sts[0].State != rpc.JobState_JOB_FAILED || !strings.Contains(msg, "needs the push scheduling policy") || !strings.Contains(msg, "runs with pull") {
		t.Fatalf("%v: %q", sts[0].State, msg)
	}
	if len(a.tasks()) != 0 {
		t.Errorf("a rejected job handed out tasks")
	}
}

// One failed task fails the job: the other tasks are cancelled on their
// executors and the job's data removed everywhere.
func TestPipelinedTaskFailureFailsJob(t *testing.T) {
	h := newPipelinedHarness(t, Config{})
	a := h.addExecutor("a", 2, false, func(task *rpc.TaskDefinition, id string) *rpc.TaskStatus {
		if task.Id.StageId == 1 {
			return failure(task, id, "injected failure")
		}
		return nil
	})
	b := h.addExecutor("b", 2, false, hang)
	final := last(t, h.execute(groupBySQL, pipelined("scheduler.max_partitions_per_task", "2")))
	msg := final.Error.GetMessage()
	if final.State != rpc.JobState_JOB_FAILED || !strings.Contains(msg, "stage 1 task 0 (partitions [0 1]) on executor a failed: injected failure") {
		t.Fatalf("%v: %q", final.State, msg)
	}
	if len(final.FinalProducers) != 0 {
		t.Errorf("a failed job lists final producers")
	}
	for _, e := range []*fakeExecutor{a, b} {
		eventually(t, "tasks cancelled on "+e.id, func() bool { return cancelledJob(e, final.JobId) })
		eventually(t, "job data removed on "+e.id, func() bool { return slices.Contains(e.removedJobs(), final.JobId) })
	}
}

// A lost executor fails the job with an error naming it when retries are
// off; the tasks on the other executors are cancelled.
func TestPipelinedLostExecutorFailsJob(t *testing.T) {
	h := newPipelinedHarness(t, Config{ExecutorTimeout: 150 * time.Millisecond})
	a := h.addExecutor("a", 2, false, hang)
	b := h.addExecutor("b", 2, false, hang)
	f := h.follow(groupBySQL, pipelined("scheduler.max_partitions_per_task", "2", "execution.query_retries", "0"))
	st := f.until("running", running)
	launchedAll(t, st.JobId, 4, a, b)
	a.vanish()
	final := f.rest()
	msg := final.Error.GetMessage()
	if final.State != rpc.JobState_JOB_FAILED || !strings.Contains(msg, "executor a was lost") || !strings.Contains(msg, "execution.query_retries") {
		t.Fatalf("%v: %q", final.State, msg)
	}
	eventually(t, "tasks cancelled on b", func() bool { return cancelledJob(b, final.JobId) })
	eventually(t, "job data removed on b", func() bool { return slices.Contains(b.removedJobs(), final.JobId) })
	if !strings.Contains(final.Stages, "lost") {
		t.Errorf("stages:\n%s", final.Stages)
	}
}

// When the final stage completes (its LIMIT is satisfied) the job
// succeeds and the tasks still feeding it are cancelled; the data stays
// until the client releases the job.
func TestPipelinedEarlyFinish(t *testing.T) {
	h := newPipelinedHarness(t, Config{})
	a := h.addExecutor("a", 2, false, hang)
	b := h.addExecutor("b", 2, false, hang)
	f := h.follow("select o_orderkey from orders limit 5", pipelined("scheduler.max_partitions_per_task", "2"))
	st := f.until("running", running)
	launchedAll(t, st.JobId, st.Progress.TasksTotal, a, b)
	for _, e := range []*fakeExecutor{a, b} {
		for _, task := range tasksOf(e, st.JobId) {
			if task.Id.StageId == st.FinalStageId {
				h.report(e.id, &rpc.TaskStatus{Id: task.Id, ExecutorId: e.id, State: rpc.TaskState_TASK_SUCCESSFUL, RowsOut: 5})
			}
		}
	}
	final := f.rest()
	if final.State != rpc.JobState_JOB_SUCCESSFUL || final.Progress.RowsOut != 5 || len(final.FinalProducers) != 1 {
		t.Fatalf("%v (%v): progress %v producers %v", final.State, final.Error, final.Progress, final.FinalProducers)
	}
	for _, e := range []*fakeExecutor{a, b} {
		eventually(t, "leftover tasks cancelled on "+e.id, func() bool { return cancelledJob(e, final.JobId) })
	}
	if len(a.removedJobs())+len(b.removedJobs()) != 0 {
		t.Errorf("data removed while the client may still be reading the final partitions")
	}
	cs, err := h.client.GetClusterState(context.Background(), &rpc.GetClusterStateRequest{})
	if err != nil || cs.Executors[0].FreeVcores != 2 || cs.Executors[1].FreeVcores != 2 {
		t.Errorf("vcores still reserved after the job: %v %v", cs, err)
	}
	if _, err := h.client.ReleaseJob(context.Background(), &rpc.ReleaseJobRequest{JobId: final.JobId}); err != nil {
		t.Fatal(err)
	}
	for _, e := range []*fakeExecutor{a, b} {
		if !slices.Contains(e.removedJobs(), final.JobId) {
			t.Errorf("job data not removed on %s after release", e.id)
		}
	}
}

// Cancelling a running pipelined job cancels its tasks and removes its
// data on every executor it used.
func TestPipelinedCancel(t *testing.T) {
	h := newPipelinedHarness(t, Config{})
	a := h.addExecutor("a", 2, false, hang)
	b := h.addExecutor("b", 2, false, hang)
	f := h.follow(groupBySQL, pipelined("scheduler.max_partitions_per_task", "2"))
	st := f.until("running", running)
	launchedAll(t, st.JobId, 4, a, b)
	if resp, err := h.client.CancelJob(context.Background(), &rpc.CancelJobRequest{JobId: st.JobId}); err != nil || !resp.Cancelled {
		t.Fatalf("cancel: %v %v", resp, err)
	}
	if final := f.rest(); final.State != rpc.JobState_JOB_CANCELLED {
		t.Fatalf("%v: %v", final.State, final.Error)
	}
	for _, e := range []*fakeExecutor{a, b} {
		if !cancelledJob(e, st.JobId) || !slices.Contains(e.removedJobs(), st.JobId) {
			t.Errorf("%s: cancels %v, removed %v", e.id, e.cancelled(), e.removedJobs())
		}
	}
}

// A job that waits for vcores longer than its scheduler.queue_timeout
// fails, saying why, instead of waiting for good.
func TestQueuedJobTimesOut(t *testing.T) {
	h := newPipelinedHarness(t, Config{ExecutorTimeout: 200 * time.Millisecond})
	a := h.addExecutor("a", 4, false, hang)
	first := h.follow(groupBySQL, pipelined())
	st1 := first.until("the first job running", running)
	launchedAll(t, st1.JobId, st1.Progress.TasksTotal, a)

	second := h.follow("select count(*) from orders", pipelined("scheduler.queue_timeout", "100ms"))
	final := second.rest()
	if final.State != rpc.JobState_JOB_FAILED || !strings.Contains(final.Error.GetMessage(), "scheduler.queue_timeout") {
		t.Fatalf("second job %v: %v, want failed for waiting past its queue timeout", final.State, final.Error)
	}
	for _, task := range tasksOf(a, st1.JobId) {
		h.report("a", pipelinedSuccess(task, "a"))
	}
	if final := first.rest(); final.State != rpc.JobState_JOB_SUCCESSFUL {
		t.Fatalf("first job %v: %v", final.State, final.Error)
	}
}
