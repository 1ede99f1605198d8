package scheduler

import (
	"strings"
	"testing"
	"time"

	"sluice/rpc"
	"sluice/scheduler/dplan"
)

// An EXPLAIN ANALYZE job on a pipelined cluster whose LIMIT is satisfied
// early: its result is complete when the final stage reports, but the job
// ends only once the producers it cancels have reported what they did, and
// its final status carries every stage's summed metrics.
func TestPipelinedAnalyzeWaitsForEveryReport(t *testing.T) {
	h := newPipelinedHarness(t, Config{})
	a := h.addExecutor("a", 2, false, hang)
	b := h.addExecutor("b", 2, false, hang)
	f := h.follow("explain analyze select o_orderkey from orders limit 5", pipelined("scheduler.max_partitions_per_task", "2"))
	st := f.until("running", running)
	if !st.Analyze {
		t.Fatalf("status of an EXPLAIN ANALYZE job not marked analyze")
	}
	launchedAll(t, st.JobId, st.Progress.TasksTotal, a, b)
	var producers []*rpc.TaskStatus
	for _, e := range []*fakeExecutor{a, b} {
		for _, task := range tasksOf(e, st.JobId) {
			if !task.Analyze {
				t.Errorf("task %v launched without analyze", task.Id)
			}
			metrics := []*rpc.OperatorMetrics{{Index: 0, Rows: 5, Batches: 1, TimeNs: 1000}}
			if task.Id.StageId == st.FinalStageId {
				h.report(e.id, &rpc.TaskStatus{Id: task.Id, ExecutorId: e.id, State: rpc.TaskState_TASK_SUCCESSFUL, RowsOut: 5,
					OperatorMetrics: metrics, ElapsedNs: int64(time.Millisecond)})
				continue
			}
			producers = append(producers, &rpc.TaskStatus{Id: task.Id, ExecutorId: e.id, State: rpc.TaskState_TASK_CANCELLED,
				OperatorMetrics: metrics, MemoryPeakBytes: 1024, ElapsedNs: int64(time.Millisecond)})
		}
	}
	if len(producers) != 2 {
		t.Fatalf("%d producer tasks, want 2", len(producers))
	}
	for _, e := range []*fakeExecutor{a, b} {
		eventually(t, "leftover tasks cancelled on "+e.id, func() bool { return cancelledJob(e, st.JobId) })
	}
	if cur, err := h.client.GetJobStatus(t.Context(), &rpc.GetJobStatusRequest{JobId: st.JobId}); err != nil || cur.State != rpc.JobState_JOB_RUNNING || cur.AnalyzedPlan != "" {
		t.Fatalf("job before its producers reported: %v %v", cur, err)
	}
	for _, p := range producers {
		h.report(p.ExecutorId, p)
	}
	final := f.rest()
	if final.State != rpc.JobState_JOB_SUCCESSFUL {
		t.Fatalf("%v: %v", final.State, final.Error)
	}
	text := final.AnalyzedPlan
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	if len(lines) < 4 {
		t.Fatalf("analyzed plan:\n%s", text)
	}
	want := []string{
		"Stage 1: ", " metrics=[tasks=2, task_time=2ms, task_mem=2 KiB]",
		"metrics=[rows=10, batches=2, time=2µs]",
		" final metrics=[tasks=1, task_time=1ms, task_mem=0 B]",
		"metrics=[rows=5, batches=1, time=1µs]",
	}
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("analyzed plan lacks %q:\n%s", w, text)
		}
	}
}

// An analysis stops waiting for tasks whose executor is lost, and for
// every task once analyzeReportWait has passed.
func TestAnalysisCompletes(t *testing.T) {
	task := func(stage, id int32) *Assignment {
		return &Assignment{ExecutorID: "e" + string(rune('0'+id)), Task: &rpc.TaskDefinition{Id: &rpc.TaskId{JobId: "j", StageId: stage, TaskId: id}}}
	}
	an := newAnalysis(nil)
	an.launch([]*Assignment{task(1, 0), task(1, 1), task(1, 2)})
	now := time.Now()
	if an.complete(now) {
		t.Fatal("complete with every task out")
	}
	an.report(&rpc.TaskStatus{Id: task(1, 0).Task.Id, State: rpc.TaskState_TASK_RUNNING})
	an.report(&rpc.TaskStatus{Id: task(1, 0).Task.Id, State: rpc.TaskState_TASK_SUCCESSFUL})
	an.executorLost("e1")
	if an.complete(now) || len(an.pending) != 1 {
		t.Fatalf("pending %v, want task 2's attempt only", an.pending)
	}
	if !an.complete(now.Add(analyzeReportWait)) {
		t.Error("still waiting after analyzeReportWait")
	}
}

// A stage's timeline is measured from the job's creation: its start is its
// first launch, its end its last report, and its wait runs from the last
// of its inputs ending to its start; the executors' queue and setup times
// show when they are not negligible.
func TestAnalysisTimeline(t *testing.T) {
	an := newAnalysis(nil)
	at := func(d time.Duration) time.Time { return an.start.Add(d) }
	an.timeline[1] = &stageTimes{launched: at(time.Millisecond), ended: at(10 * time.Millisecond)}
	an.timeline[2] = &stageTimes{launched: at(2 * time.Millisecond), ended: at(20 * time.Millisecond), queued: 3 * time.Millisecond}
	an.timeline[3] = &stageTimes{launched: at(25 * time.Millisecond), ended: at(30 * time.Millisecond), setup: 50 * time.Microsecond}
	cases := []struct {
		stage *dplan.Stage
		want  string
	}{
		{&dplan.Stage{ID: 1}, " timeline=[start=+1ms, end=+10ms, wait=1ms]"},
		{&dplan.Stage{ID: 2}, " timeline=[start=+2ms, end=+20ms, wait=2ms, queued=3ms]"},
		{&dplan.Stage{ID: 3, Inputs: []int{1, 2}}, " timeline=[start=+25ms, end=+30ms, wait=5ms]"},
		{&dplan.Stage{ID: 4, Inputs: []int{3}}, ""}, // never launched
	}
	for _, c := range cases {
		if got := an.timelineText(c.stage); got != c.want {
			t.Errorf("stage %d: %q, want %q", c.stage.ID, got, c.want)
		}
	}
}

// Reports set a stage's end and keep its tasks' longest queue and setup
// times; launches set its start once.
func TestAnalysisTimelineRecords(t *testing.T) {
	an := newAnalysis(nil)
	id := func(task int32) *rpc.TaskId { return &rpc.TaskId{JobId: "j", StageId: 1, TaskId: task} }
	an.launch([]*Assignment{{ExecutorID: "a", Task: &rpc.TaskDefinition{Id: id(0)}}})
	first := an.timeline[1].launched
	an.launch([]*Assignment{{ExecutorID: "b", Task: &rpc.TaskDefinition{Id: id(1)}}})
	if an.timeline[1].launched != first {
		t.Error("a later launch moved the stage's start")
	}
	an.report(&rpc.TaskStatus{Id: id(0), State: rpc.TaskState_TASK_SUCCESSFUL, QueuedNs: int64(4 * time.Millisecond), SetupNs: 100})
	an.report(&rpc.TaskStatus{Id: id(1), State: rpc.TaskState_TASK_SUCCESSFUL, QueuedNs: int64(time.Millisecond), SetupNs: 200})
	tt := an.timeline[1]
	if tt.queued != 4*time.Millisecond || tt.setup != 200 || tt.ended.Before(first) {
		t.Errorf("timeline %+v", tt)
	}
}
