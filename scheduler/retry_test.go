package scheduler

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"sluice/rpc"
)

// jobsLaunched lists the distinct jobs whose tasks the executors were
// given, in the order first seen.
func jobsLaunched(execs ...*fakeExecutor) []string {
	var out []string
	for _, e := range execs {
		for _, task := range e.tasks() {
			if !slices.Contains(out, task.Id.JobId) {
				out = append(out, task.Id.JobId)
			}
		}
	}
	return out
}

// succeedAll reports every task of the job as successful.
func succeedAll(h *harness, jobID string, execs ...*fakeExecutor) {
	for _, e := range execs {
		for _, task := range tasksOf(e, jobID) {
			h.report(e.id, pipelinedSuccess(task, e.id))
		}
	}
}

// A pipelined job that loses an executor before any row was claimed runs
// again as a new job (new ID, new secret) on the executors that remain;
// the status stream moves on to it, saying why, and the first attempt's
// tasks are cancelled and its data removed.
func TestPipelinedLostExecutorRetried(t *testing.T) {
	h := newPipelinedHarness(t, Config{ExecutorTimeout: 150 * time.Millisecond})
	a := h.addExecutor("a", 2, false, hang)
	b := h.addExecutor("b", 2, false, hang)
	c := h.addExecutor("c", 2, false, hang)
	f := h.follow(groupBySQL, pipelined("scheduler.max_partitions_per_task", "2"))
	first := f.until("running", running)
	launchedAll(t, first.JobId, 6, a, b, c)
	if first.Attempt != 1 || first.RetryNotice != "" {
		t.Fatalf("first attempt: attempt %d notice %q", first.Attempt, first.RetryNotice)
	}
	victim := a
	if len(tasksOf(a, first.JobId)) == 0 {
		victim = b
	}
	victim.vanish()
	second := f.until("the retry running", func(st *rpc.JobStatus) bool { return st.JobId != first.JobId && running(st) })
	if second.Attempt != 2 || !strings.Contains(second.RetryNotice, "executor "+victim.id+" was lost (attempt 2 of 2)") {
		t.Fatalf("retry: attempt %d notice %q", second.Attempt, second.RetryNotice)
	}
	if second.JobSecret == first.JobSecret || len(second.FinalCapabilities) == 0 || second.FinalCapabilities[0].String() == first.FinalCapabilities[0].String() {
		t.Errorf("the retry reuses the first attempt's secret or capabilities")
	}
	others := slices.DeleteFunc([]*fakeExecutor{a, b, c}, func(e *fakeExecutor) bool { return e == victim })
	launchedAll(t, second.JobId, 4, others...)
	if n := len(tasksOf(victim, second.JobId)); n != 0 {
		t.Errorf("the retry placed %d tasks on the lost executor", n)
	}
	for _, e := range others {
		if len(tasksOf(e, first.JobId)) > 0 {
			eventually(t, "first attempt cancelled on "+e.id, func() bool { return cancelledJob(e, first.JobId) })
			eventually(t, "first attempt's data removed on "+e.id, func() bool { return slices.Contains(e.removedJobs(), first.JobId) })
		}
	}
	succeedAll(h, second.JobId, others...)
	final := f.rest()
	if final.State != rpc.JobState_JOB_SUCCESSFUL || final.JobId != second.JobId {
		t.Fatalf("final %v of %s (%v), want the retry %s successful", final.State, final.JobId, final.Error, second.JobId)
	}
	for _, st := range f.seen {
		if st.JobId == first.JobId && isFinal(st.State) {
			t.Errorf("the stream showed the first attempt's end (%v)", st.State)
		}
	}
}

// Once the client claimed a row, losing an executor fails the job for
// good: no second job is launched.
func TestPipelinedDeliveredJobNotRetried(t *testing.T) {
	h := newPipelinedHarness(t, Config{ExecutorTimeout: 150 * time.Millisecond})
	a := h.addExecutor("a", 2, false, hang)
	b := h.addExecutor("b", 2, false, hang)
	c := h.addExecutor("c", 2, false, hang)
	f := h.follow(groupBySQL, pipelined("scheduler.max_partitions_per_task", "2", "execution.query_retries", "3"))
	first := f.until("running", running)
	launchedAll(t, first.JobId, 6, a, b, c)
	st, err := h.client.GetJobStatus(context.Background(), &rpc.GetJobStatusRequest{JobId: first.JobId, ClaimDelivery: true})
	if err != nil || st.State != rpc.JobState_JOB_RUNNING {
		t.Fatalf("claim: %v %v", st.GetState(), err)
	}
	victim := a
	if len(tasksOf(a, first.JobId)) == 0 {
		victim = b
	}
	victim.vanish()
	final := f.rest()
	if final.State != rpc.JobState_JOB_FAILED || final.JobId != first.JobId || !strings.Contains(final.Error.GetMessage(), "was lost") {
		t.Fatalf("final %v of %s: %v", final.State, final.JobId, final.Error)
	}
	if jobs := jobsLaunched(a, b, c); len(jobs) != 1 {
		t.Errorf("%d jobs launched, want 1 (no retry after a delivered row)", len(jobs))
	}
	// A claim on a failed job is refused.
	st, err = h.client.GetJobStatus(context.Background(), &rpc.GetJobStatusRequest{JobId: first.JobId, ClaimDelivery: true})
	if err != nil || st.State != rpc.JobState_JOB_FAILED {
		t.Fatalf("claim after the failure: %v %v", st.GetState(), err)
	}
}

// An error of the query itself is never retried.
func TestPipelinedQueryErrorNotRetried(t *testing.T) {
	h := newPipelinedHarness(t, Config{})
	act := func(task *rpc.TaskDefinition, id string) *rpc.TaskStatus {
		if task.Id.StageId == 1 {
			st := failure(task, id, "division by zero in (a / b)")
			st.QueryError = "division by zero"
			return st
		}
		return nil
	}
	a := h.addExecutor("a", 2, false, act)
	b := h.addExecutor("b", 2, false, act)
	c := h.addExecutor("c", 2, false, act)
	final := last(t, h.execute(groupBySQL, pipelined("scheduler.max_partitions_per_task", "2", "execution.query_retries", "5")))
	if final.State != rpc.JobState_JOB_FAILED || final.Error.GetMessage() != "division by zero" {
		t.Fatalf("%v: %v", final.State, final.Error)
	}
	if jobs := jobsLaunched(a, b, c); len(jobs) != 1 {
		t.Errorf("%d jobs launched, want 1", len(jobs))
	}
}

// A task that could not reach another executor's output fails the job
// with that executor as the suspect: the retry is placed elsewhere even
// while the suspect is still registered.
func TestPipelinedFetchFailureRetriedElsewhere(t *testing.T) {
	h := newPipelinedHarness(t, Config{})
	a := h.addExecutor("a", 2, false, hang)
	b := h.addExecutor("b", 2, false, hang)
	c := h.addExecutor("c", 2, false, hang)
	f := h.follow(groupBySQL, pipelined("scheduler.max_partitions_per_task", "2"))
	first := f.until("running", running)
	launchedAll(t, first.JobId, 6, a, b, c)
	var reporter, suspect *fakeExecutor
	for _, e := range []*fakeExecutor{a, b, c} {
		if len(tasksOf(e, first.JobId)) > 0 {
			if reporter == nil {
				reporter = e
			} else if suspect == nil {
				suspect = e
			}
		}
	}
	if reporter == nil || suspect == nil {
		t.Fatalf("the first attempt ran on fewer than two executors")
	}
	task := tasksOf(reporter, first.JobId)[0]
	st := failure(task, reporter.id, "reading partition 0 of stage 1 from task 0 on executor "+suspect.id+": connection refused")
	st.FetchFailure = &rpc.FetchFailure{ExecutorId: suspect.id, StageId: 1}
	h.report(reporter.id, st)
	second := f.until("the retry running", func(st *rpc.JobStatus) bool { return st.JobId != first.JobId && running(st) })
	if !strings.Contains(second.RetryNotice, "executor "+suspect.id) {
		t.Errorf("notice %q", second.RetryNotice)
	}
	launchedAll(t, second.JobId, 4, a, b, c)
	if n := len(tasksOf(suspect, second.JobId)); n != 0 {
		t.Errorf("the retry placed %d tasks on the suspect %s", n, suspect.id)
	}
}
