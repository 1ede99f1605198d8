package scheduler

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"sluice/physical"
	"sluice/physical/metrics"
	"sluice/rpc"
	"sluice/scheduler/dplan"
)

// analyzeReportWait bounds how long an EXPLAIN ANALYZE job that has
// produced its result waits for the reports of tasks still out (the
// cancelled producers of a satisfied LIMIT, or reports lost with an
// executor that is not yet declared lost).
const analyzeReportWait = 10 * time.Second

// analysis follows an EXPLAIN ANALYZE job. Its tasks are launched with
// TaskDefinition.analyze and report their operators' metrics in their
// final status; the job ends only once every task it launched has
// reported (or analyzeReportWait has passed since its result was
// complete), so the metrics it shows are whole. Guarded by the
// scheduler's lock.
type analysis struct {
	plan *dplan.Graph
	// pending are the launched task attempts without a final report, and
	// the executors they run on.
	pending map[attemptKey]string
	// launched are the tasks of each stage ever launched.
	launched map[stageTask]bool
	// reports are, per stage task, the final report whose metrics count:
	// the last successful attempt's, else a cancelled attempt's.
	reports map[stageTask]*rpc.TaskStatus
	// succeeded is when the job's result was complete (zero: not yet).
	succeeded time.Time
	text      string // the rendering, once the job ended
	// The stages' timeline, relative to start (when the job was created):
	// when each stage's first task was launched and its last task
	// reported, and the longest its tasks waited on their executors.
	start    time.Time
	timeline map[int32]*stageTimes
}

// stageTimes is when a stage ran, as the scheduler saw it, and the
// longest time one of its tasks spent on its executor before its stage
// body ran: waiting for slots (queued) and decoding its plan (setup).
type stageTimes struct {
	launched, ended time.Time
	queued, setup   time.Duration
}

type attemptKey struct{ stage, stageAttempt, task, attempt int32 }

type stageTask struct{ stage, task int32 }

func newAnalysis(plan *dplan.Graph) *analysis {
	return &analysis{plan: plan, pending: map[attemptKey]string{}, launched: map[stageTask]bool{}, reports: map[stageTask]*rpc.TaskStatus{},
		start: time.Now(), timeline: map[int32]*stageTimes{}}
}

// times is the stage's timeline entry, created on first use.
func (a *analysis) times(stage int32) *stageTimes {
	t := a.timeline[stage]
	if t == nil {
		t = &stageTimes{}
		a.timeline[stage] = t
	}
	return t
}

func attemptOf(id *rpc.TaskId) attemptKey {
	return attemptKey{id.GetStageId(), id.GetStageAttempt(), id.GetTaskId(), id.GetAttempt()}
}

// launch marks the tasks to be analyzed and waits for their reports.
func (a *analysis) launch(as []*Assignment) {
	now := time.Now()
	for _, as := range as {
		if t := a.times(as.Task.Id.GetStageId()); t.launched.IsZero() {
			t.launched = now
		}
		as.Task.Analyze = true
		a.pending[attemptOf(as.Task.Id)] = as.ExecutorID
		a.launched[stageTask{as.Task.Id.GetStageId(), as.Task.Id.GetTaskId()}] = true
	}
}

// report takes a task's status; a final one ends its wait, and a
// successful or cancelled one carries metrics.
func (a *analysis) report(st *rpc.TaskStatus) {
	if st.State == rpc.TaskState_TASK_RUNNING {
		return
	}
	k := attemptOf(st.Id)
	if _, ok := a.pending[k]; !ok {
		return // not launched by this job, or reported already
	}
	delete(a.pending, k)
	times := a.times(k.stage)
	times.ended = time.Now()
	times.queued = max(times.queued, time.Duration(st.QueuedNs))
	times.setup = max(times.setup, time.Duration(st.SetupNs))
	t := stageTask{k.stage, k.task}
	switch st.State {
	case rpc.TaskState_TASK_SUCCESSFUL:
		a.reports[t] = st
	case rpc.TaskState_TASK_CANCELLED:
		if prev := a.reports[t]; prev == nil || prev.State != rpc.TaskState_TASK_SUCCESSFUL {
			a.reports[t] = st
		}
	}
}

// executorLost stops waiting for the tasks that ran on executor id.
func (a *analysis) executorLost(id string) {
	for k, e := range a.pending {
		if e == id {
			delete(a.pending, k)
		}
	}
}

// complete reports whether the job, whose result is complete, may end:
// every task reported, or the wait is over.
func (a *analysis) complete(now time.Time) bool {
	if a.succeeded.IsZero() {
		a.succeeded = now
	}
	return len(a.pending) == 0 || now.Sub(a.succeeded) >= analyzeReportWait
}

// waiting reports whether the job's result is complete and it waits for
// reports.
func (a *analysis) waiting() bool { return !a.succeeded.IsZero() }

// adaptiveGraph is a graph that re-plans stages as it runs (blocking
// mode's adaptive execution): EXPLAIN ANALYZE shows the stages as they
// ran, with what was estimated, what was measured and what was decided.
type adaptiveGraph interface {
	// StagePlan is the job's stages as they run now.
	StagePlan() *dplan.Graph
	// StageReport is what the stage line adds: the stage's estimated and
	// actual output and the adaptive decisions about it.
	StageReport(id int) string
	// Skipped reports whether a stage was merged into its consumer and
	// never ran (its body is shown there).
	Skipped(id int) bool
}

// format renders every stage, producers first: its header (as EXPLAIN's
// distributed plan shows it) with its tasks' summed metrics, then its
// body with each operator's metrics summed over the tasks. For an
// adaptive graph (g), the stages are those that ran, each followed by its
// report.
func (a *analysis) format(g ExecutionGraph) string {
	if a.text != "" {
		return a.text
	}
	plan := a.plan
	ag, adaptive := g.(adaptiveGraph)
	if adaptive {
		plan = ag.StagePlan()
	}
	var b strings.Builder
	for i, s := range plan.Stages {
		ops := len(physical.PreOrder(s.Body))
		sum := make([]physical.OperatorMetrics, ops)
		var tasks, reported int
		var taskTime time.Duration
		var taskMem int64
		for t := range a.launched {
			if t.stage != int32(s.ID) {
				continue
			}
			tasks++
			st := a.reports[t]
			if st == nil {
				continue
			}
			reported++
			taskTime += time.Duration(st.ElapsedNs)
			taskMem += st.MemoryPeakBytes
			for _, m := range st.OperatorMetrics {
				if m.Index < 0 || int(m.Index) >= ops {
					continue
				}
				sum[m.Index].Add(physical.OperatorMetrics{
					Rows: m.Rows, Batches: m.Batches, Time: time.Duration(m.TimeNs),
					MemPeak: m.MemoryPeakBytes, Reserved: m.Reserved,
					DynExpected: m.DynamicFiltersExpected, DynReceived: m.DynamicFiltersReceived, DynDropped: m.DynamicFilterRowsDropped,
					PageSkipped: m.PageIndexRowsSkipped,
					LocalReads:  m.LocalQueueReads, RemoteReads: m.RemoteQueueReads,
					MuxStreams: m.MuxStreams,
				})
			}
		}
		b.WriteString(dplan.StageHeader(plan, i))
		fmt.Fprintf(&b, " metrics=[tasks=%d, task_time=%s, task_mem=%s]", tasks, metrics.FormatDuration(taskTime), metrics.FormatBytes(taskMem))
		if reported < tasks {
			fmt.Fprintf(&b, " (%d of %d tasks reported metrics)", reported, tasks)
		}
		b.WriteString(a.timelineText(s))
		if adaptive {
			if r := ag.StageReport(s.ID); r != "" {
				b.WriteString(" " + r)
			}
		}
		b.WriteByte('\n')
		if adaptive && ag.Skipped(s.ID) {
			continue
		}
		for _, line := range strings.SplitAfter(physical.FormatAnalyzed(s.Body, sum), "\n") {
			if line != "" {
				b.WriteString("  " + line)
			}
		}
	}
	a.text = b.String()
	return a.text
}

// timelineText is what the stage line says about when the stage ran,
// relative to the job's creation: start (its first task launched), end (its
// last task reported), wait (from the last of its inputs ending to its
// start: the scheduler's reaction; for a stage without inputs, from the
// job's creation) and, when not negligible, the longest time a task waited
// on its executor for slots (queued) and took to start its body (setup).
func (a *analysis) timelineText(s *dplan.Stage) string {
	t := a.timeline[int32(s.ID)]
	if t == nil || t.launched.IsZero() || t.ended.IsZero() {
		return ""
	}
	ready := a.start
	for _, in := range s.Inputs {
		if it := a.timeline[int32(in)]; it != nil && it.ended.After(ready) {
			ready = it.ended
		}
	}
	parts := []string{
		"start=+" + metrics.FormatDuration(t.launched.Sub(a.start)),
		"end=+" + metrics.FormatDuration(t.ended.Sub(a.start)),
		"wait=" + metrics.FormatDuration(max(t.launched.Sub(ready), 0)),
	}
	if t.queued >= 100*time.Microsecond {
		parts = append(parts, "queued="+metrics.FormatDuration(t.queued))
	}
	if t.setup >= 100*time.Microsecond {
		parts = append(parts, "setup="+metrics.FormatDuration(t.setup))
	}
	return " timeline=[" + strings.Join(parts, ", ") + "]"
}

// endAnalyses ends the EXPLAIN ANALYZE jobs whose wait for task reports is
// over.
func (s *Scheduler) endAnalyses() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, j := range slices.Clone(s.order) {
		if j.analysis != nil && j.analysis.waiting() {
			s.syncJobLocked(j)
		}
	}
}
