package scheduler

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"sluice/physical"
	"sluice/rpc"
	"sluice/scheduler/dplan"
)

// PipelinedConfig configures a pipelined execution graph.
type PipelinedConfig struct {
	JobID string
	Plan  *dplan.Graph
	// Exchanges builds pipelined writers and readers; Encode turns a
	// stage's wired plan into the message tasks carry.
	Exchanges Exchanges
	Encode    func(physical.Operator) (*rpc.PhysicalPlan, error)
	// Settings are passed to every task.
	Settings map[string]string
	// MaxPartitionsPerTask caps a task's partitions (and vcores).
	MaxPartitionsPerTask int
	// QueueBatches is the capacity, in batches, of every queue the
	// stages' writers fill (setting exchange.queue_batches).
	QueueBatches int
	// Cluster reports the executors registered now, so that a job that
	// does not fit yet (it waits) can be told from one that never can (it
	// fails). NewPipelinedGraph and Offer call it; the scheduler calls
	// both under its lock, which guards what Cluster reads.
	Cluster func() ClusterCapacity
	// Avoid names executors the job must not be placed on: a retried
	// job's suspects (an executor its first attempt could not reach, or
	// one that was stopping), which may still be registered while the
	// scheduler checks on them.
	Avoid []string
}

// LostExecutorError is why a pipelined job failed when the cause was not
// the query: an executor was lost, could not be reached, or was stopping
// while it held part of the job. Such a job may be run again from the
// start (whole-query retry) if none of its rows reached the client.
type LostExecutorError struct {
	// Executor is the executor lost or unreachable.
	Executor string
	Msg      string
}

func (e *LostExecutorError) Error() string { return e.Msg }

// ClusterCapacity is the size of the cluster: how many executors are
// registered and their vcores in total, busy or not.
type ClusterCapacity struct {
	Executors int
	Vcores    int
}

// StreamingGraph is an execution graph whose final stage can be read while
// the job runs: once every task is placed, the client reads the final
// partitions straight from the producer tasks (pipelined mode).
type StreamingGraph interface {
	ExecutionGraph
	// FinalProducers lists, per final partition, the tasks holding it;
	// nil until the job is placed and once it failed or was cancelled.
	FinalProducers() []*rpc.PipelinedProducers
	// FinalCapabilities are the capabilities of the queues FinalProducers
	// lists, which the client's tickets carry; nil when FinalProducers is.
	FinalCapabilities() []*rpc.PartitionCapability
}

// NewPipelinedGraph returns the graph of a pipelined job, as proposed for
// Apache Ballista (#2652): every task of every stage is placed at once or
// none is, stages stream to each other through bounded queues, and any
// failure fails the job. The graph itself re-runs nothing: when the
// cause was a lost executor (LostExecutorError) the scheduler may run the
// whole query again as a new job (execution.query_retries).
//
// It fails when the job can never fit the cluster as it is now: some stage
// runs more partitions than the cluster has vcores, and every partition of
// a pipelined stage runs at the same time.
func NewPipelinedGraph(cfg PipelinedConfig) (ExecutionGraph, error) {
	if cfg.Plan == nil || len(cfg.Plan.Stages) == 0 {
		return nil, errors.New("internal: pipelined graph without stages")
	}
	if cfg.Exchanges == nil || cfg.Encode == nil || cfg.Cluster == nil {
		return nil, errors.New("internal: pipelined graph without exchanges, plan encoder or cluster capacity")
	}
	cfg.MaxPartitionsPerTask = max(cfg.MaxPartitionsPerTask, 1)
	cfg.QueueBatches = max(cfg.QueueBatches, 1)
	g := &pipelinedGraph{cfg: cfg, reserved: map[string]int{}, wiringKey: rpc.NewWiringKey()}
	for i, s := range cfg.Plan.Stages {
		if s.ID != i+1 {
			return nil, fmt.Errorf("internal: stage %d at position %d", s.ID, i)
		}
		switch s.Output.Kind {
		case physical.PartHash:
		case physical.PartUnknown:
			if s.Output.Count != s.Partitions() {
				return nil, fmt.Errorf("internal: stage %d passes %d partitions through but runs %d", s.ID, s.Output.Count, s.Partitions())
			}
		default:
			return nil, fmt.Errorf("internal: stage %d has output %s; pipelined writers split by hash or pass partitions through", s.ID, s.Output)
		}
		for _, in := range s.Inputs {
			if in < 1 || in >= s.ID {
				return nil, fmt.Errorf("internal: stage %d reads stage %d", s.ID, in)
			}
		}
		g.stages = append(g.stages, &pStage{Stage: s})
		if n := s.Partitions(); n > g.need {
			g.need, g.widest = n, s.ID
		}
	}
	if err := g.checkFits(); err != nil {
		return nil, err
	}
	// Wiring depends on placement only through producer addresses, so a
	// trial run surfaces plans that cannot be built or encoded now, at
	// submission, rather than when the job is placed.
	trial := g.trialPlacement()
	if _, err := g.wire(trial); err != nil {
		return nil, err
	}
	for i, s := range g.stages {
		if _, err := g.readCapabilities(s, trial[i][0], trial); err != nil {
			return nil, err
		}
	}
	if g.final().Partitions() == 0 {
		// Nothing to read: the query's result is empty without running.
		g.state = GraphSuccessful
	}
	return g, nil
}

// pTask is one task of a pipelined stage, bound to an executor.
type pTask struct {
	id         *rpc.TaskId
	partitions []int
	executor   string
	flight     string
	state      rpc.TaskState
	lost       bool // its executor vanished while it ran
	// released: the job succeeded while this task still ran, and Cancel
	// marked it cancelled. If the task had in fact finished (its report
	// was on the way), a late success report still counts.
	released bool
	// filters are the dynamic filter keys it reported on success.
	filters filterContributions
}

func (t *pTask) producer() *rpc.PipelinedProducer {
	return &rpc.PipelinedProducer{TaskId: t.id.TaskId, ExecutorId: t.executor, FlightAddress: t.flight}
}

type pStage struct {
	*dplan.Stage
	tasks []*pTask // every task, once the job is placed
}

// done reports whether every task of the stage succeeded.
func (s *pStage) done() bool {
	for _, t := range s.tasks {
		if t.state != rpc.TaskState_TASK_SUCCESSFUL {
			return false
		}
	}
	return true
}

type pipelinedGraph struct {
	cfg    PipelinedConfig
	stages []*pStage
	// need is the vcores the job needs at once: its widest stage's
	// partitions (stage widest).
	need, widest int
	placed       bool
	// reserved holds, per executor, the vcores of the job's busiest stage
	// there.
	reserved map[string]int
	state    GraphState
	err      error
	rowsOut  int64
	// wiringKey derives the key of every task's queues and the
	// capabilities of the queues (rpc.PipelinedTaskKey): it never leaves
	// the scheduler.
	wiringKey []byte
	// pushes are dynamic filters merged and not yet taken by the
	// scheduler to push to executors (dynamic_filters.go).
	pushes []filterPush
}

var _ StreamingGraph = (*pipelinedGraph)(nil)

func (g *pipelinedGraph) JobID() string { return g.cfg.JobID }

func (g *pipelinedGraph) final() *pStage { return g.stages[len(g.stages)-1] }

func (g *pipelinedGraph) fail(err error) {
	if g.state != GraphRunning {
		return
	}
	g.state, g.err = GraphFailed, err
}

// tasks lists every task of the job, stage by stage.
func (g *pipelinedGraph) tasks() []*pTask {
	var out []*pTask
	for _, s := range g.stages {
		out = append(out, s.tasks...)
	}
	return out
}

// Reserved is the job's busiest stage's vcores on the executor, held while
// any of the job's tasks there runs.
func (g *pipelinedGraph) Reserved(executorID string) int {
	for _, t := range g.tasks() {
		if t.executor == executorID && t.state == rpc.TaskState_TASK_RUNNING {
			return g.reserved[executorID]
		}
	}
	return 0
}

func (g *pipelinedGraph) task(id *rpc.TaskId) *pTask {
	if id.GetJobId() != g.cfg.JobID || id.StageId < 1 || int(id.StageId) > len(g.stages) {
		return nil
	}
	s := g.stages[id.StageId-1]
	if id.TaskId < 0 || int(id.TaskId) >= len(s.tasks) || id.StageAttempt != 0 || id.Attempt != 0 {
		return nil
	}
	return s.tasks[id.TaskId]
}

// UpdateTask records a task's report. Any failure fails the job; the job
// succeeds when every task of the final stage has, even if tasks of
// earlier stages still run (a LIMIT needed only part of their output).
func (g *pipelinedGraph) UpdateTask(st *rpc.TaskStatus) {
	if g.state == GraphSuccessful {
		// After an early finish: a task that had finished all its output
		// before the job ended is recorded as successful, not cancelled.
		t := g.task(st.GetId())
		if t == nil || !t.released || t.executor != st.ExecutorId || st.State == rpc.TaskState_TASK_RUNNING {
			return
		}
		t.released = false // its one final report
		if st.State == rpc.TaskState_TASK_SUCCESSFUL {
			t.state = rpc.TaskState_TASK_SUCCESSFUL
		}
		return
	}
	if g.state != GraphRunning {
		return
	}
	t := g.task(st.GetId())
	if t == nil || t.executor != st.ExecutorId || t.state != rpc.TaskState_TASK_RUNNING {
		return
	}
	where := fmt.Sprintf("stage %d task %d (partitions %v) on executor %s", t.id.StageId, t.id.TaskId, t.partitions, t.executor)
	switch st.State {
	case rpc.TaskState_TASK_RUNNING:
		return
	case rpc.TaskState_TASK_SUCCESSFUL:
		t.state = rpc.TaskState_TASK_SUCCESSFUL
		t.filters = contributionsOf(st)
		g.mergeFilters(g.stages[t.id.StageId-1])
		if int(t.id.StageId) == g.final().ID {
			g.rowsOut += st.RowsOut
			if g.final().done() {
				g.state = GraphSuccessful
			}
		}
	case rpc.TaskState_TASK_FAILED:
		t.state = rpc.TaskState_TASK_FAILED
		switch ff := st.GetFetchFailure(); {
		case st.QueryError != "":
			g.fail(&QueryError{Msg: st.QueryError, Detail: fmt.Sprintf("%s failed: %s", where, st.Error)})
		case ff != nil && ff.ExecutorId != "":
			// A producer's executor could not be reached: the work is
			// lost with it, whatever the task itself would have done.
			g.fail(&LostExecutorError{Executor: ff.ExecutorId, Msg: fmt.Sprintf("%s failed: %s", where, st.Error)})
		case st.ExecutorStopping:
			g.fail(&LostExecutorError{Executor: t.executor, Msg: fmt.Sprintf("%s failed: %s", where, st.Error)})
		default:
			g.fail(fmt.Errorf("%s failed: %s", where, st.Error))
		}
	case rpc.TaskState_TASK_CANCELLED:
		t.state = rpc.TaskState_TASK_CANCELLED
		g.fail(fmt.Errorf("%s was cancelled on its executor", where))
	}
}

// ExecutorLost fails a placed job that had tasks on the executor: their
// queues, and any output not yet read, are gone, and nothing is re-run. A
// job still waiting fails if the executors left can never hold it.
func (g *pipelinedGraph) ExecutorLost(executorID string) {
	if g.state != GraphRunning {
		return
	}
	if !g.placed {
		if err := g.checkFits(); err != nil {
			g.fail(err)
		}
		return
	}
	var held []string
	for _, t := range g.tasks() {
		if t.executor != executorID {
			continue
		}
		held = append(held, fmt.Sprintf("stage %d task %d", t.id.StageId, t.id.TaskId))
		if t.state == rpc.TaskState_TASK_RUNNING {
			t.state, t.lost = rpc.TaskState_TASK_FAILED, true
		}
	}
	if len(held) == 0 {
		return
	}
	g.fail(&LostExecutorError{Executor: executorID, Msg: fmt.Sprintf("executor %s was lost while it held %s of this pipelined job (a pipelined job is retried from the start only while no row has reached the client, up to execution.query_retries times; SET execution.mode = 'blocking' re-runs only the lost tasks)",
		executorID, strings.Join(held, ", "))})
}

// Cancel stops the job unless it already ended, and returns every task
// still running: on a cancelled or failed job, and on a successful one
// whose final stage finished before the stages feeding it (early finish).
func (g *pipelinedGraph) Cancel() []*Assignment {
	if g.state == GraphRunning {
		g.state = GraphCancelled
	}
	var out []*Assignment
	for _, t := range g.tasks() {
		if t.state == rpc.TaskState_TASK_RUNNING {
			t.state = rpc.TaskState_TASK_CANCELLED
			t.released = g.state == GraphSuccessful
			out = append(out, &Assignment{ExecutorID: t.executor, Task: &rpc.TaskDefinition{Id: t.id}})
		}
	}
	return out
}

func (g *pipelinedGraph) State() (GraphState, error) { return g.state, g.err }

func (g *pipelinedGraph) Progress() *rpc.JobProgress {
	p := &rpc.JobProgress{StagesTotal: int32(len(g.stages)), RowsOut: g.rowsOut}
	if !g.placed {
		return p
	}
	for _, s := range g.stages {
		if s.done() {
			p.StagesDone++
		}
		for _, t := range s.tasks {
			p.TasksTotal++
			switch t.state {
			case rpc.TaskState_TASK_RUNNING:
				p.TasksRunning++
			case rpc.TaskState_TASK_SUCCESSFUL:
				p.TasksDone++
			}
		}
	}
	return p
}

func (g *pipelinedGraph) FinalStageID() int { return g.final().ID }

// FinalLocations is always empty: a pipelined job's output lives in
// queues, found through FinalProducers.
func (g *pipelinedGraph) FinalLocations() []*rpc.PartitionLocation { return nil }

func (g *pipelinedGraph) FinalProducers() []*rpc.PipelinedProducers {
	if !g.placed || g.state == GraphFailed || g.state == GraphCancelled {
		return nil
	}
	parts := producersOf(g.final())
	out := make([]*rpc.PipelinedProducers, len(parts))
	for i, p := range parts {
		out[i] = &rpc.PipelinedProducers{Producers: p}
	}
	return out
}

func (g *pipelinedGraph) FinalCapabilities() []*rpc.PartitionCapability {
	if !g.placed || g.state == GraphFailed || g.state == GraphCancelled {
		return nil
	}
	s := g.final()
	var out []*rpc.PartitionCapability
	for p, ps := range producersOf(s) {
		for _, t := range ps {
			out = append(out, g.capability(int32(s.ID), t.TaskId, int32(p)))
		}
	}
	return out
}

func (g *pipelinedGraph) Executors() []string {
	var out []string
	for _, t := range g.tasks() {
		if !slices.Contains(out, t.executor) {
			out = append(out, t.executor)
		}
	}
	slices.Sort(out)
	return out
}

// Describe shows what the job waits for, or where its vcores are reserved,
// then each stage with its tasks: id@executor [partitions] state.
func (g *pipelinedGraph) Describe() string {
	var b strings.Builder
	if g.placed {
		var res []string
		for _, e := range g.Executors() {
			res = append(res, fmt.Sprintf("%s=%d", e, g.reserved[e]))
		}
		fmt.Fprintf(&b, "Pipelined: all tasks placed; vcores reserved %s\n", strings.Join(res, " "))
	} else if g.state == GraphRunning {
		fmt.Fprintf(&b, "Pipelined: waiting for %d free vcores at once (stage %d runs %d partitions)\n", g.need, g.widest, g.need)
	}
	for _, s := range g.stages {
		fmt.Fprintf(&b, "Stage %d [%s] partitions=%d", s.ID, g.stageState(s), s.Partitions())
		if s.Broadcast {
			b.WriteString(" broadcast")
		}
		for _, t := range s.tasks {
			state := strings.ToLower(strings.TrimPrefix(t.state.String(), "TASK_"))
			if t.lost {
				state = "lost"
			}
			fmt.Fprintf(&b, "\n  task %d@%s %v %s", t.id.TaskId, t.executor, t.partitions, state)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// stageState names where a stage stands: waiting (not placed), running,
// successful, failed (one of its tasks failed or was lost) or cancelled.
func (g *pipelinedGraph) stageState(s *pStage) string {
	if !g.placed {
		if g.state == GraphRunning {
			return "waiting"
		}
		return graphStateNames[g.state]
	}
	failed, cancelled, running := false, false, false
	for _, t := range s.tasks {
		switch t.state {
		case rpc.TaskState_TASK_FAILED:
			failed = true
		case rpc.TaskState_TASK_CANCELLED:
			cancelled = true
		case rpc.TaskState_TASK_RUNNING:
			running = true
		}
	}
	switch {
	case failed:
		return "failed"
	case cancelled:
		return "cancelled"
	case running:
		return "running"
	}
	return "successful"
}

var graphStateNames = [...]string{"running", "successful", "failed", "cancelled"}
