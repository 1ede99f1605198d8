package scheduler

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"sluice/physical"
	"sluice/rpc"
	"sluice/scheduler/dplan"
)

// StageState is where one stage of a blocking job stands.
type StageState int

// Stage states. A stage moves unresolved → resolved → running →
// successful; losing an input's output sends it back to unresolved, losing
// its own output sends it back to running (it re-runs what was lost).
const (
	// StageUnresolved: an input stage has not (or no longer) succeeded.
	StageUnresolved StageState = iota
	// StageResolved: every input succeeded; readers are built, no task ran.
	StageResolved
	// StageRunning: some of its partitions are running or done.
	StageRunning
	// StageSuccessful: every partition's output is complete.
	StageSuccessful
	// StageFailed: the job failed in this stage.
	StageFailed
	// StageSkipped: adaptive execution merged the stage into its
	// consumer, which computes its body itself; it never runs.
	StageSkipped
)

var stageStateNames = [...]string{"unresolved", "resolved", "running", "successful", "failed", "skipped"}

func (s StageState) String() string { return stageStateNames[s] }

// BlockingConfig configures a blocking execution graph.
type BlockingConfig struct {
	JobID string
	Plan  *dplan.Graph
	// Exchanges builds shuffle writers and readers; Encode turns a
	// stage's resolved plan into the message tasks carry.
	Exchanges Exchanges
	Encode    func(physical.Operator) (*rpc.PhysicalPlan, error)
	// Settings are passed to every task.
	Settings map[string]string
	// MaxPartitionsPerTask caps a task's partitions (and vcores).
	MaxPartitionsPerTask int
	// TaskRetries is how often a partition is re-run after a failure, and
	// how often a stage may lose its output, before the job fails.
	TaskRetries int
	// Adaptive lets the graph change a stage's plan from the exact sizes
	// of its finished inputs (adaptive.go): coalesce small shuffle
	// partitions into fewer, up to TargetPartitionBytes each (0: never),
	// and broadcast the build side of a partitioned hash join that turned
	// out under BroadcastThreshold bytes (0: never).
	Adaptive             bool
	TargetPartitionBytes int64
	BroadcastThreshold   int64
	// Parallelism is the cluster's vcores when the job was submitted:
	// coalescing never leaves a stage fewer partitions than this (0: no
	// floor), as Spark's coalescing keeps the default parallelism.
	Parallelism int
}

// NewBlockingGraph returns the graph of a blocking job: stages run when all
// their inputs have succeeded, write their output to shuffle files, and are
// re-run in part when outputs are lost.
func NewBlockingGraph(cfg BlockingConfig) (ExecutionGraph, error) {
	if cfg.Plan == nil || len(cfg.Plan.Stages) == 0 {
		return nil, errors.New("internal: blocking graph without stages")
	}
	if cfg.Exchanges == nil || cfg.Encode == nil {
		return nil, errors.New("internal: blocking graph without exchanges or plan encoder")
	}
	cfg.MaxPartitionsPerTask = max(cfg.MaxPartitionsPerTask, 1)
	cfg.TaskRetries = max(cfg.TaskRetries, 0)
	g := &blockingGraph{cfg: cfg, executors: map[string]bool{}, filters: map[int]*rpc.DynamicFilterKeys{}}
	for i, s := range cfg.Plan.Stages {
		if s.ID != i+1 {
			return nil, fmt.Errorf("internal: stage %d at position %d", s.ID, i)
		}
		// Each graph has its own copy of the stage: adaptive execution
		// changes its body, inputs and output count.
		own := *s
		g.stages = append(g.stages, &bStage{Stage: &own, parts: make([]bPart, s.Partitions()), running: map[int32]*bTask{}})
	}
	for _, s := range g.stages {
		for _, in := range s.Inputs {
			if in < 1 || in >= s.ID {
				return nil, fmt.Errorf("internal: stage %d reads stage %d", s.ID, in)
			}
			g.stages[in-1].consumers = append(g.stages[in-1].consumers, s.ID)
		}
	}
	if cfg.Adaptive {
		g.findSwitches()
	}
	g.refresh()
	return g, nil
}

type partState int

const (
	partPending partState = iota
	partRunning
	partDone
)

type bPart struct {
	state    partState
	failures int
	executor string                   // partDone: where the output lives
	outputs  []*rpc.PartitionLocation // partDone: the files it wrote
	filters  filterContributions      // partDone: its task's dynamic filter keys
}

type bTask struct {
	id         *rpc.TaskId
	partitions []int
	executor   string
	state      rpc.TaskState
	lost       bool
}

type bStage struct {
	*dplan.Stage
	state     StageState
	consumers []int
	attempt   int // times a successful stage lost output and re-ran
	parts     []bPart
	running   map[int32]*bTask
	finished  []*bTask
	nextTask  int32
	plan      *rpc.PhysicalPlan // resolved and encoded; nil until resolved
	// Adaptive execution (adaptive.go): decided is set once the stage's
	// partitions are fixed (at its first resolution); ranges, when not
	// nil, are the contiguous input partitions each of its partitions
	// reads; notes say what was decided, for EXPLAIN ANALYZE.
	decided bool
	ranges  []partRange
	notes   []string
}

type blockingGraph struct {
	cfg    BlockingConfig
	stages []*bStage
	// filters are the merged keys of dynamic filters whose build stage
	// has succeeded (dynamic_filters.go).
	filters   map[int]*rpc.DynamicFilterKeys
	state     GraphState
	err       error
	executors map[string]bool
	launched  int
	done      int
	rowsOut   int64
	// switches are the partitioned hash joins that may become broadcast
	// ones once their build stage has finished (adaptive.go).
	switches []*joinSwitch
}

var _ ExecutionGraph = (*blockingGraph)(nil)

func (g *blockingGraph) JobID() string { return g.cfg.JobID }

func (g *blockingGraph) stage(id int32) *bStage {
	if id < 1 || int(id) > len(g.stages) {
		return nil
	}
	return g.stages[id-1]
}

func (g *blockingGraph) final() *bStage { return g.stages[len(g.stages)-1] }

func (s *bStage) count(st partState) int {
	n := 0
	for i := range s.parts {
		if s.parts[i].state == st {
			n++
		}
	}
	return n
}

// refresh recomputes every stage's state, producers first, resolving the
// stages whose inputs have all succeeded.
func (g *blockingGraph) refresh() {
	if g.state != GraphRunning {
		return
	}
	g.decideSwitches()
	for _, s := range g.stages {
		if s.state == StageSkipped {
			continue
		}
		inputsDone := true
		for _, in := range s.Inputs {
			if g.stages[in-1].state != StageSuccessful {
				inputsDone = false
			}
		}
		// A dynamic filter's probe stage waits for its build stage, so
		// that its tasks start with the filter.
		for _, f := range g.cfg.Plan.Filters {
			if f.Probe == s.ID && g.filters[f.ID] == nil {
				inputsDone = false
			}
		}
		switch {
		case s.count(partDone) == len(s.parts):
			s.state = StageSuccessful
		case !inputsDone:
			s.state, s.plan = StageUnresolved, nil
		case len(s.running) > 0 || s.count(partDone) > 0:
			s.state = StageRunning
		default:
			s.state = StageResolved
		}
		if s.state == StageSuccessful {
			g.mergeFilters(s)
		}
		if (s.state == StageResolved || s.state == StageRunning) && s.plan == nil {
			if err := g.resolve(s); err != nil {
				g.fail(s, fmt.Errorf("stage %d: %w", s.ID, err))
				return
			}
		}
	}
	if g.final().state == StageSuccessful {
		g.state = GraphSuccessful
	}
}

// resolve replaces the stage's placeholders by shuffle readers of its
// inputs' files, puts the shuffle writer on top and encodes the result.
// The first time, adaptive execution may choose fewer partitions than the
// plan has (coalesce); they are kept from then on, so that a stage
// resolved again after an input lost its output runs the same partitions.
func (g *blockingGraph) resolve(s *bStage) error {
	if !s.decided {
		if g.cfg.Adaptive {
			g.coalesce(s)
		}
		s.decided = true
	}
	body, err := g.replaceExchanges(s.Body, s.ranges)
	if err != nil {
		return err
	}
	if n := body.OutputPartitioning().Count; n != len(s.parts) {
		if s.count(partPending) != len(s.parts) || len(s.running) > 0 {
			return fmt.Errorf("internal: stage %d resolved to %d partitions after running %d", s.ID, n, len(s.parts))
		}
		s.parts = make([]bPart, n)
	}
	if n := len(s.parts); n != s.Body.OutputPartitioning().Count {
		s.RunPartitions = n
	}
	if s.Output.Kind == physical.PartUnknown {
		s.Output.Count = len(s.parts)
	}
	w, err := g.cfg.Exchanges.ShuffleWriter(body, g.cfg.JobID, s.ID, s.Output)
	if err != nil {
		return err
	}
	p, err := g.cfg.Encode(w)
	if err != nil {
		return fmt.Errorf("encoding the stage plan: %w", err)
	}
	s.plan = p
	return nil
}

// replaceExchanges replaces op's placeholders by shuffle readers. With
// ranges (a coalesced stage), partition i of each hash-partitioned input
// is made of that input's partitions ranges[i]; an input read whole (a
// broadcast build side) keeps its own partitions.
func (g *blockingGraph) replaceExchanges(op physical.Operator, ranges []partRange) (physical.Operator, error) {
	if u, ok := op.(*physical.UnresolvedExchange); ok {
		p := g.stages[u.StageID-1]
		parts := p.readerPartitions()
		if ranges != nil && p.Output.Kind == physical.PartHash {
			parts = coalesceLocations(parts, ranges)
		}
		return g.cfg.Exchanges.ShuffleReader(u.StageID, u.Schema(), parts)
	}
	children := op.Children()
	if len(children) == 0 {
		return op, nil
	}
	if whole, ok := wholeInput(op); ok && ranges != nil {
		// A broadcast build side: every task reads all of it.
		outs := slices.Clone(children)
		o, err := g.replaceExchanges(whole, nil)
		if err != nil {
			return nil, err
		}
		outs[0] = o
		for i := 1; i < len(children); i++ {
			if outs[i], err = g.replaceExchanges(children[i], ranges); err != nil {
				return nil, err
			}
		}
		return dplan.WithNewChildren(op, outs)
	}
	outs := make([]physical.Operator, len(children))
	for i, c := range children {
		o, err := g.replaceExchanges(c, ranges)
		if err != nil {
			return nil, err
		}
		outs[i] = o
	}
	return dplan.WithNewChildren(op, outs)
}

// readerPartitions groups a finished stage's files by output partition:
// for a hash output, partition i is every producer's file i; for a
// pass-through output, partition i is what input partition i wrote.
func (s *bStage) readerPartitions() [][]*rpc.PartitionLocation {
	out := make([][]*rpc.PartitionLocation, s.Output.Count)
	for i := range s.parts {
		for _, l := range s.parts[i].outputs {
			out[l.Partition] = append(out[l.Partition], l)
		}
	}
	return out
}

// needed reports whether the stage's missing output is wanted: it is the
// final stage, or a consumer has yet to read it. Output lost after every
// consumer finished is not re-created.
func (g *blockingGraph) needed(s *bStage) bool {
	if s == g.final() {
		return true
	}
	for _, c := range s.consumers {
		if g.stages[c-1].state != StageSuccessful {
			return true
		}
	}
	return false
}

// Offer deals each runnable stage's pending partitions out to the offers
// (dealTasks: spread over hosts, packed within one), each task taking up
// to the offer's free vcores and at most MaxPartitionsPerTask partitions.
// Runnable stages are served longest remaining chain first (byHeight), so
// that when they do not all fit, the vcores go to the stage the job's end
// waits on longest; each goes to the executors holding its inputs first
// (localFirst).
func (g *blockingGraph) Offer(offers []*Offer) []*Assignment {
	if g.state != GraphRunning {
		return nil
	}
	var out []*Assignment
	for _, s := range g.byHeight() {
		if (s.state != StageResolved && s.state != StageRunning) || !g.needed(s) || g.deferred(s) {
			continue
		}
		var pending []int
		for i := range s.parts {
			if s.parts[i].state == partPending {
				pending = append(pending, i)
			}
		}
		local := g.localFirst(s, offers)
		free := make([]int, len(local))
		for i, o := range local {
			free[i] = o.Free
		}
		for _, d := range dealTasks(len(pending), local, free, g.cfg.MaxPartitionsPerTask) {
			out = append(out, g.launch(s, pending[:d.n], local[d.offer].ExecutorID))
			pending = pending[d.n:]
			local[d.offer].Free -= d.n
		}
		if s.state == StageResolved && len(s.running) > 0 {
			s.state = StageRunning
		}
	}
	return out
}

// byHeight returns the stages ordered by height, highest first, then by
// ID. A stage's height is the number of stages on the longest chain from it
// to the final stage, itself included: the stage transitions the job must
// still go through once it ends. In blocking mode each transition costs
// the consumer's whole run, so a stage at the bottom of a long chain of
// broadcast joins (TPC-DS q72: 8 stages deep) holds the job up more than
// a dimension scan read only by the last join, however cheap either is.
// Among stages of one height, the one the planner expects to write more
// goes first (the longest job first: the short ones fill in after it).
// Heights follow the stages' current inputs, which adaptive execution may
// change; skipped stages have none.
func (g *blockingGraph) byHeight() []*bStage {
	height := make([]int, len(g.stages)+1)
	for i := len(g.stages) - 1; i >= 0; i-- {
		s := g.stages[i]
		if s.state == StageSkipped {
			continue
		}
		height[s.ID] = max(height[s.ID], 1)
		for _, in := range s.Inputs {
			height[in] = max(height[in], height[s.ID]+1)
		}
	}
	out := slices.Clone(g.stages)
	slices.SortStableFunc(out, func(a, b *bStage) int {
		return cmp.Or(cmp.Compare(height[b.ID], height[a.ID]), cmp.Compare(estBytes(b), estBytes(a)))
	})
	return out
}

// localFirst returns the offers with those of the executors holding more
// of the stage's input bytes first (stable otherwise), so that its tasks,
// packed onto the first executors of a host (dealTasks), read their inputs
// from local files rather than over Flight. The offers are the same
// values, so taking vcores from one takes them from the caller's.
func (g *blockingGraph) localFirst(s *bStage, offers []*Offer) []*Offer {
	held := map[string]int64{}
	for _, in := range s.Inputs {
		p := g.stages[in-1]
		for i := range p.parts {
			for _, l := range p.parts[i].outputs {
				held[p.parts[i].executor] += max(l.NumBytes, 1)
			}
		}
	}
	out := slices.Clone(offers)
	if len(held) > 0 {
		slices.SortStableFunc(out, func(a, b *Offer) int { return cmp.Compare(held[b.ExecutorID], held[a.ExecutorID]) })
	}
	return out
}

// estBytes is the planner's guess of the stage's output bytes (0: none).
func estBytes(s *bStage) float64 {
	if !s.Estimated {
		return 0
	}
	return s.EstBytes
}

func (g *blockingGraph) launch(s *bStage, parts []int, executor string) *Assignment {
	attempt := 0
	ps := make([]int32, len(parts))
	for i, p := range parts {
		attempt = max(attempt, s.parts[p].failures)
		ps[i] = int32(p)
	}
	id := &rpc.TaskId{JobId: g.cfg.JobID, StageId: int32(s.ID), StageAttempt: int32(s.attempt), TaskId: s.nextTask, Attempt: int32(attempt)}
	s.nextTask++
	t := &bTask{id: id, partitions: slices.Clone(parts), executor: executor, state: rpc.TaskState_TASK_RUNNING}
	s.running[id.TaskId] = t
	for _, p := range parts {
		s.parts[p].state = partRunning
	}
	g.executors[executor] = true
	g.launched++
	return &Assignment{ExecutorID: executor, Task: &rpc.TaskDefinition{
		Id: id, Partitions: ps, Plan: s.plan, Settings: g.cfg.Settings, Vcores: int32(len(parts)),
		DynamicFilters: filterUses(g.cfg.Plan.Filters, s.ID, g.filters),
	}}
}

// mergeFilters merges the keys of the dynamic filters built by stage s,
// which has succeeded, once: a stage re-run later writes the same keys.
func (g *blockingGraph) mergeFilters(s *bStage) {
	for _, f := range g.cfg.Plan.Filters {
		if f.Build != s.ID || g.filters[f.ID] != nil {
			continue
		}
		var tasks []filterContributions
		seen := map[*rpc.DynamicFilterKeys]bool{}
		for i := range s.parts {
			c := s.parts[i].filters
			if k := c[int32(f.ID)]; k != nil && seen[k] {
				continue // another partition of the same task
			} else if k != nil {
				seen[k] = true
			}
			tasks = append(tasks, c)
		}
		g.filters[f.ID] = mergeFilter(f.ID, tasks)
	}
}

func (g *blockingGraph) Reserved(executorID string) int {
	n := 0
	for _, s := range g.stages {
		for _, t := range s.running {
			if t.executor == executorID {
				n += len(t.partitions)
			}
		}
	}
	return n
}

func (g *blockingGraph) UpdateTask(st *rpc.TaskStatus) {
	id := st.GetId()
	if g.state != GraphRunning || id.GetJobId() != g.cfg.JobID {
		return
	}
	s := g.stage(id.StageId)
	if s == nil {
		return
	}
	t := s.running[id.TaskId]
	if t == nil || t.executor != st.ExecutorId {
		return
	}
	switch st.State {
	case rpc.TaskState_TASK_RUNNING:
		return
	case rpc.TaskState_TASK_SUCCESSFUL:
		outputs, err := s.checkOutputs(t, st.Outputs)
		if err != nil {
			g.taskFailed(s, t, fmt.Sprintf("internal: %v", err))
			break
		}
		g.finish(s, t, rpc.TaskState_TASK_SUCCESSFUL)
		filters := contributionsOf(st)
		for _, p := range t.partitions {
			s.parts[p] = bPart{state: partDone, failures: s.parts[p].failures, executor: st.ExecutorId, outputs: outputs[p], filters: filters}
		}
		g.done++
		if s == g.final() {
			g.rowsOut += st.RowsOut
		}
	case rpc.TaskState_TASK_FAILED:
		if ff := st.FetchFailure; ff != nil && g.rollback(ff.StageId, ff.ExecutorId) {
			// The task did nothing wrong: its input vanished. It runs again,
			// without counting a failure, once the input is re-created.
			g.finish(s, t, rpc.TaskState_TASK_FAILED)
			for _, p := range t.partitions {
				s.parts[p].state = partPending
			}
			break
		}
		if st.QueryError != "" {
			// The query's own error: it would fail again anywhere.
			g.finish(s, t, rpc.TaskState_TASK_FAILED)
			g.fail(s, &QueryError{Msg: st.QueryError, Detail: fmt.Sprintf("stage %d task %d (partitions %v) on executor %s failed: %s", s.ID, t.id.TaskId, t.partitions, t.executor, st.Error)})
			break
		}
		g.taskFailed(s, t, st.Error)
	case rpc.TaskState_TASK_CANCELLED:
		g.taskFailed(s, t, "cancelled on executor "+st.ExecutorId)
	}
	g.refresh()
}

// checkOutputs groups a successful task's files by the partition that
// wrote them, rejecting files the task cannot have written.
func (s *bStage) checkOutputs(t *bTask, locs []*rpc.PartitionLocation) (map[int][]*rpc.PartitionLocation, error) {
	out := map[int][]*rpc.PartitionLocation{}
	for _, l := range locs {
		mp := int(l.MapPartition)
		if !slices.Contains(t.partitions, mp) {
			return nil, fmt.Errorf("task %d reported output of partition %d, which it did not run", t.id.TaskId, mp)
		}
		if l.Partition < 0 || int(l.Partition) >= s.Output.Count {
			return nil, fmt.Errorf("task %d reported output partition %d of %d", t.id.TaskId, l.Partition, s.Output.Count)
		}
		out[mp] = append(out[mp], l)
	}
	return out, nil
}

func (g *blockingGraph) finish(s *bStage, t *bTask, state rpc.TaskState) {
	delete(s.running, t.id.TaskId)
	t.state = state
	s.finished = append(s.finished, t)
}

// taskFailed puts the task's partitions back to pending, or fails the job
// when one of them has failed more than TaskRetries times.
func (g *blockingGraph) taskFailed(s *bStage, t *bTask, msg string) {
	g.finish(s, t, rpc.TaskState_TASK_FAILED)
	exhausted := false
	for _, p := range t.partitions {
		s.parts[p].state = partPending
		s.parts[p].failures++
		exhausted = exhausted || s.parts[p].failures > g.cfg.TaskRetries
	}
	if exhausted {
		g.fail(s, fmt.Errorf("stage %d task %d (partitions %v) failed %d times, last on executor %s: %s",
			s.ID, t.id.TaskId, t.partitions, g.cfg.TaskRetries+1, t.executor, msg))
	}
}

// rollback marks the stage's outputs on executor as lost, so the partitions
// that wrote them run again. It reports whether anything was lost.
func (g *blockingGraph) rollback(stageID int32, executor string) bool {
	s := g.stage(stageID)
	if s == nil {
		return false
	}
	wasDone := s.state == StageSuccessful
	lost := false
	for i := range s.parts {
		if s.parts[i].state == partDone && s.parts[i].executor == executor {
			s.parts[i] = bPart{failures: s.parts[i].failures}
			lost = true
		}
	}
	if lost && wasDone {
		s.attempt++
		if s.attempt > g.cfg.TaskRetries {
			g.fail(s, fmt.Errorf("stage %d lost its output %d times (last on executor %s)", s.ID, s.attempt, executor))
		}
	}
	return lost
}

func (g *blockingGraph) fail(s *bStage, err error) {
	if g.state != GraphRunning {
		return
	}
	s.state = StageFailed
	g.state, g.err = GraphFailed, err
}

func (g *blockingGraph) ExecutorLost(executorID string) {
	for _, s := range g.stages {
		for _, t := range s.running {
			if t.executor != executorID {
				continue
			}
			t.lost = true
			g.finish(s, t, rpc.TaskState_TASK_FAILED)
			for _, p := range t.partitions {
				s.parts[p].state = partPending
			}
		}
	}
	if g.state != GraphRunning {
		return
	}
	for _, s := range g.stages {
		g.rollback(int32(s.ID), executorID)
	}
	g.refresh()
}

func (g *blockingGraph) Cancel() []*Assignment {
	if g.state == GraphRunning {
		g.state = GraphCancelled
	}
	var out []*Assignment
	for _, s := range g.stages {
		for _, t := range s.running {
			out = append(out, &Assignment{ExecutorID: t.executor, Task: &rpc.TaskDefinition{Id: t.id}})
			g.finish(s, t, rpc.TaskState_TASK_CANCELLED)
		}
	}
	return out
}

func (g *blockingGraph) State() (GraphState, error) { return g.state, g.err }

func (g *blockingGraph) Progress() *rpc.JobProgress {
	p := &rpc.JobProgress{StagesTotal: int32(len(g.stages)), TasksTotal: int32(g.launched), TasksDone: int32(g.done), RowsOut: g.rowsOut}
	for _, s := range g.stages {
		if s.state == StageSuccessful || s.state == StageSkipped {
			p.StagesDone++
		}
		p.TasksRunning += int32(len(s.running))
	}
	return p
}

func (g *blockingGraph) FinalStageID() int { return g.final().ID }

func (g *blockingGraph) FinalLocations() []*rpc.PartitionLocation {
	if g.state != GraphSuccessful {
		return nil
	}
	var out []*rpc.PartitionLocation
	for _, p := range g.final().parts {
		out = append(out, p.outputs...)
	}
	slices.SortStableFunc(out, func(a, b *rpc.PartitionLocation) int {
		return cmp.Or(cmp.Compare(a.Partition, b.Partition), cmp.Compare(a.MapPartition, b.MapPartition))
	})
	return out
}

func (g *blockingGraph) Executors() []string {
	out := make([]string, 0, len(g.executors))
	for e := range g.executors {
		out = append(out, e)
	}
	slices.Sort(out)
	return out
}

// Describe lists each stage with its state, what adaptive execution
// decided about it, and its tasks: id@executor [partitions] state.
func (g *blockingGraph) Describe() string {
	var b strings.Builder
	for _, s := range g.stages {
		fmt.Fprintf(&b, "Stage %d [%s] partitions=%d", s.ID, s.state, len(s.parts))
		if s.attempt > 0 {
			fmt.Fprintf(&b, " attempt=%d", s.attempt)
		}
		if len(s.notes) > 0 {
			fmt.Fprintf(&b, " adaptive=[%s]", strings.Join(s.notes, "; "))
		}
		tasks := append(slices.Clone(s.finished), slices.Collect(maps.Values(s.running))...)
		slices.SortFunc(tasks, func(a, b *bTask) int { return cmp.Compare(a.id.TaskId, b.id.TaskId) })
		for _, t := range tasks {
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
