package scheduler

import (
	"context"
	"strings"
	"testing"
	"time"

	"sluice/rpc"
)

// scanSQL is a blocking job of one stage: with
// scheduler.max_partitions_per_task = 1 each partition is a task of one
// vcore.
const scanSQL = "select c_name from customer"

// finish reports every task of job on e that is not reported yet as
// successful, and returns how many it reported.
func finish(h *harness, e *fakeExecutor, jobID string, done map[*rpc.TaskDefinition]bool, pipelinedJob bool) int {
	n := 0
	for _, task := range tasksOf(e, jobID) {
		if done[task] {
			continue
		}
		done[task] = true
		var st *rpc.TaskStatus
		if pipelinedJob {
			st = pipelinedSuccess(task, e.id)
		} else {
			st = success(task, e.id)
		}
		h.report(e.id, st)
		n++
	}
	return n
}

// The oldest waiting pipelined job keeps the vcores freed while it waits:
// a blocking job submitted after it does not take them, however long the
// pipelined job would otherwise wait for all of them to be free at once.
func TestAdmissionHoldsVcoresForWaitingPipelinedJob(t *testing.T) {
	h := newPipelinedHarness(t, Config{AdmissionWait: time.Hour})
	a := h.addExecutor("a", 4, false, hang)
	one := blocking("scheduler.max_partitions_per_task", "1")

	b1 := h.follow(scanSQL, one)
	st1 := b1.until("the first blocking job running", running)
	launchedAll(t, st1.JobId, 4, a)

	p := h.follow(groupBySQL, pipelined())
	pq := p.until("the pipelined job queued", func(st *rpc.JobStatus) bool { return st.State == rpc.JobState_JOB_QUEUED })
	b2 := h.follow(scanSQL, one)
	st2 := b2.until("the second blocking job queued", func(st *rpc.JobStatus) bool { return st.State == rpc.JobState_JOB_QUEUED })

	done := map[*rpc.TaskDefinition]bool{}
	tasks := tasksOf(a, st1.JobId)
	for i, task := range tasks[:3] {
		done[task] = true
		h.report("a", success(task, "a"))
		// The freed vcores are held for the pipelined job, not given to
		// the blocking job behind it.
		time.Sleep(20 * time.Millisecond)
		h.sched.pushTasks()
		if n := len(tasksOf(a, st2.JobId)); n != 0 {
			t.Fatalf("after %d of the first job's tasks ended, the later blocking job got %d tasks while the pipelined job waits", i+1, n)
		}
	}
	cs := h.status(pq.JobId)
	if !strings.Contains(cs.Admission, "for 4 free vcores at once; 3 held for it") || cs.QueuedMs <= 0 {
		t.Errorf("waiting job's admission %q, queued %d ms", cs.Admission, cs.QueuedMs)
	}
	finish(h, a, st1.JobId, done, false)
	pr := p.until("the pipelined job running", running)
	if !strings.Contains(pr.Admission, "queued") || pr.QueuedMs <= 0 {
		t.Errorf("placed job's admission %q, queued %d ms", pr.Admission, pr.QueuedMs)
	}
	launchedAll(t, pr.JobId, pr.Progress.TasksTotal, a)
	if n := len(tasksOf(a, st2.JobId)); n != 0 {
		t.Fatalf("the later blocking job got %d tasks on vcores the pipelined job holds", n)
	}
	finish(h, a, pr.JobId, done, true)
	b2.until("the second blocking job running", running)
	launchedAll(t, st2.JobId, 4, a)
}

// After AdmissionWait the waiting pipelined job goes ahead of an older
// blocking job's remaining tasks; that blocking job is then never
// overtaken again, so a second pipelined job waits behind it.
func TestAdmissionBoundedWaitOvertakesOnce(t *testing.T) {
	h := newPipelinedHarness(t, Config{AdmissionWait: 30 * time.Millisecond})
	a := h.addExecutor("a", 4, false, hang)
	// Eight one-vcore tasks on four vcores: four wait for the first four.
	b := h.follow(scanSQL, blocking("scheduler.max_partitions_per_task", "1", "execution.target_partitions", "8"))
	bst := b.until("the blocking job running", running)
	launchedAll(t, bst.JobId, 4, a)

	p1 := h.follow(groupBySQL, pipelined())
	p1.until("the first pipelined job queued", func(st *rpc.JobStatus) bool { return st.State == rpc.JobState_JOB_QUEUED })
	time.Sleep(60 * time.Millisecond) // past AdmissionWait
	done := map[*rpc.TaskDefinition]bool{}
	finish(h, a, bst.JobId, done, false)
	r1 := p1.until("the first pipelined job running", running)
	launchedAll(t, r1.JobId, r1.Progress.TasksTotal, a)
	if n := len(tasksOf(a, bst.JobId)); n != 4 {
		t.Fatalf("the blocking job has %d tasks launched, want the first 4 only: the pipelined job that waited past AdmissionWait goes first", n)
	}

	p2 := h.follow("select count(*) from orders", pipelined())
	p2q := p2.until("the second pipelined job queued", func(st *rpc.JobStatus) bool { return st.State == rpc.JobState_JOB_QUEUED })
	time.Sleep(60 * time.Millisecond)
	finish(h, a, r1.JobId, done, true)
	launchedAll(t, bst.JobId, 8, a)
	if st := h.status(p2q.JobId); st.State != rpc.JobState_JOB_QUEUED {
		t.Fatalf("second pipelined job %v: it must not overtake the blocking job a second time", st.State)
	}
	finish(h, a, bst.JobId, done, false)
	r2 := p2.until("the second pipelined job running", running)
	launchedAll(t, r2.JobId, r2.Progress.TasksTotal, a)
}

// status is a job's status now, as its session sees it.
func (h *harness) status(jobID string) *rpc.JobStatus {
	h.t.Helper()
	st, err := h.client.GetJobStatus(context.Background(), &rpc.GetJobStatusRequest{JobId: jobID})
	if err != nil {
		h.t.Fatal(err)
	}
	return st
}
