package cluster

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"sluice/engine"
	"sluice/exchange"
	"sluice/physical"
	"sluice/physical/expr"
	"sluice/physical/mempool"
	"sluice/rpc"
)

// taskKey identifies one attempt of one task.
type taskKey struct {
	job                                string
	stage, stageAttempt, task, attempt int32
}

func keyOf(id *rpc.TaskId) taskKey {
	return taskKey{job: id.GetJobId(), stage: id.GetStageId(), stageAttempt: id.GetStageAttempt(), task: id.GetTaskId(), attempt: id.GetAttempt()}
}

func (k taskKey) String() string {
	return fmt.Sprintf("job %s stage %d task %d attempt %d", k.job, k.stage, k.task, k.attempt)
}

// runningTask is a task accepted by the executor, queued for slots or
// running.
type runningTask struct {
	key    taskKey
	def    *rpc.TaskDefinition
	ctx    context.Context
	cancel context.CancelCauseFunc
	done   chan struct{} // closed once the task has reported and let go of its slots
	// accepted is when the executor took the task (EXPLAIN ANALYZE shows
	// how long it then waited for slots).
	accepted time.Time
}

// Causes of task cancellation.
var (
	errTaskCancelled = errors.New("task cancelled by the scheduler")
	errJobRemoved    = errors.New("the job's data was removed")
)

// launch accepts tasks and starts each on its own goroutine, which waits
// for slots, runs the task and reports its status. Tasks of jobs whose data
// was already removed, and tasks already running, are skipped.
func (e *Executor) launch(defs []*rpc.TaskDefinition) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closing {
		return errShuttingDown
	}
	for _, def := range defs {
		if def.GetId() == nil {
			e.log.Error("task without an id ignored")
			continue
		}
		k := keyOf(def.Id)
		if e.removed.Has(k.job) {
			e.log.Info("task of a removed job ignored", "task", k.String())
			continue
		}
		if _, ok := e.running[k]; ok {
			e.log.Warn("task launched twice; second launch ignored", "task", k.String())
			continue
		}
		// Known from the launch on, so that the job's tasks queued for a
		// slot cannot be cancelled by a caller without the secret. A
		// mismatch fails the task when it starts (taskContext).
		_ = e.env.Secrets.Bind(k.job, def.JobSecret)
		ctx, cancel := context.WithCancelCause(e.ctx)
		rt := &runningTask{key: k, def: def, ctx: ctx, cancel: cancel, done: make(chan struct{}), accepted: time.Now()}
		e.running[k] = rt
		n := e.slots.size(int(def.Vcores))
		if def.Vcores <= 0 {
			n = e.slots.size(len(def.Partitions))
		}
		if def.Settings["execution.mode"] == "pipelined" {
			// All of a pipelined job's tasks run at once: the scheduler
			// reserved their vcores (the busiest stage's, not the sum), and
			// a task queued behind a slot would deadlock against the
			// backpressure of the stages it feeds or reads.
			n = 0
		}
		e.slots.accept(n)
		e.tasks.Add(1)
		go e.runTask(ctx, rt, n)
	}
	return nil
}

// runTask is a task's goroutine.
func (e *Executor) runTask(ctx context.Context, rt *runningTask, n int) {
	defer e.tasks.Done()
	held := false
	defer func() {
		rt.cancel(nil)
		e.mu.Lock()
		delete(e.running, rt.key)
		e.mu.Unlock()
		e.slots.release(n, held)
		close(rt.done)
	}()
	start := time.Now()
	var st *rpc.TaskStatus
	if n == 0 {
		held = true
		st = e.execute(ctx, rt)
	} else if err := e.slots.acquire(ctx, n); err != nil {
		st = e.interrupted(ctx, rt.def)
	} else {
		held = true
		st = e.execute(ctx, rt)
	}
	if e.ctx.Err() != nil {
		return // killed: nobody is told
	}
	switch st.State {
	case rpc.TaskState_TASK_SUCCESSFUL:
		e.log.Info("task finished", "task", rt.key.String(), "partitions", rt.def.Partitions, "rows", st.RowsOut, "took", time.Since(start).Round(time.Millisecond))
	case rpc.TaskState_TASK_CANCELLED:
		e.log.Info("task cancelled", "task", rt.key.String())
	default:
		e.log.Warn("task failed", "task", rt.key.String(), "partitions", rt.def.Partitions, "err", st.Error, "fetch_failure", st.FetchFailure != nil)
	}
	e.report(st)
}

// execute runs a task and returns its final status, with its operators'
// metrics when the task is analyzed (EXPLAIN ANALYZE).
func (e *Executor) execute(ctx context.Context, rt *runningTask) *rpc.TaskStatus {
	def := rt.def
	started := time.Now()
	var a taskAnalysis
	st := e.outcome(ctx, def, &a)
	if def.Analyze && a.analyzer != nil && st.State != rpc.TaskState_TASK_FAILED {
		a.report(st, rt.accepted, started)
	}
	return st
}

// taskAnalysis is what an analyzed task measured.
type taskAnalysis struct {
	analyzer *physical.Analyzer
	memory   *mempool.Pool
	start    time.Time
}

// report adds the task's metrics to its final status: besides its
// operators', how long it waited for slots after the executor accepted it
// and how long it took from then to start its stage body.
func (a *taskAnalysis) report(st *rpc.TaskStatus, accepted, started time.Time) {
	st.ElapsedNs = int64(time.Since(a.start))
	st.QueuedNs = int64(started.Sub(accepted))
	st.SetupNs = int64(a.start.Sub(started))
	st.MemoryPeakBytes = a.memory.Peak()
	for i, m := range a.analyzer.Metrics() {
		st.OperatorMetrics = append(st.OperatorMetrics, &rpc.OperatorMetrics{
			Index: int32(i), Rows: m.Rows, Batches: m.Batches, TimeNs: int64(m.Time),
			MemoryPeakBytes: m.MemPeak, Reserved: m.Reserved,
			DynamicFiltersExpected: m.DynExpected, DynamicFiltersReceived: m.DynReceived, DynamicFilterRowsDropped: m.DynDropped,
			PageIndexRowsSkipped: m.PageSkipped,
			LocalQueueReads:      m.LocalReads, RemoteQueueReads: m.RemoteReads,
			MuxStreams: m.MuxStreams,
		})
	}
}

// outcome runs a task and returns its final status.
func (e *Executor) outcome(ctx context.Context, def *rpc.TaskDefinition, a *taskAnalysis) *rpc.TaskStatus {
	commit := &physical.CommitList{}
	var keys map[int]*physical.KeySet
	locs, err := e.run(ctx, def, a, commit, &keys)
	if err == nil {
		st := &rpc.TaskStatus{Id: def.Id, ExecutorId: e.id, State: rpc.TaskState_TASK_SUCCESSFUL, Outputs: locs}
		st.DynamicFilters = dynamicFilterStatus(keys)
		for _, l := range locs {
			st.RowsOut += l.NumRows
		}
		// A write's commit task: the scheduler renames these files once
		// the job has succeeded.
		for _, f := range commit.Files() {
			st.WrittenFiles = append(st.WrittenFiles, &rpc.WrittenFile{Temp: f.Temp, Final: f.Final})
		}
		return st
	}
	if ctx.Err() != nil {
		return e.interrupted(ctx, def)
	}
	// The scheduler shows the error to the job's user: it names no path
	// under this executor's work dir.
	st := &rpc.TaskStatus{Id: def.Id, ExecutorId: e.id, State: rpc.TaskState_TASK_FAILED, Error: exchange.ScrubWorkDir(err.Error(), e.cfg.WorkDir)}
	if msg, ok := expr.UserMessage(err); ok {
		st.QueryError = exchange.ScrubWorkDir(msg, e.cfg.WorkDir)
	}
	// A memory limit refuses the same reservation on a retry: the query
	// fails at once, saying which limit and what raises it.
	var me *mempool.LimitError
	if st.QueryError == "" && errors.As(err, &me) {
		st.QueryError = me.Error()
	}
	// So is a client that stopped reading: the user is told why the query
	// ended, and the log has where.
	if st.QueryError == "" && errors.Is(err, exchange.ErrClientIdle) {
		st.QueryError = clientIdleMessage(err)
	}
	var fe *exchange.FetchError
	if errors.As(err, &fe) {
		st.FetchFailure = &rpc.FetchFailure{ExecutorId: fe.ExecutorID, StageId: int32(fe.StageID), MapPartition: int32(fe.MapPartition)}
	}
	return st
}

// interrupted is the status of a task whose context ended: cancelled by
// the scheduler, or failed because this executor is shutting down (so the
// scheduler re-runs it elsewhere).
func (e *Executor) interrupted(ctx context.Context, def *rpc.TaskDefinition) *rpc.TaskStatus {
	st := &rpc.TaskStatus{Id: def.Id, ExecutorId: e.id, State: rpc.TaskState_TASK_CANCELLED}
	if errors.Is(context.Cause(ctx), errShuttingDown) {
		st.State = rpc.TaskState_TASK_FAILED
		st.Error = fmt.Sprintf("executor %s is shutting down", e.id)
		st.ExecutorStopping = true
	}
	return st
}

// run decodes the task's stage plan and drives its partitions. A panic
// becomes the task's error ("internal error: ..."; the stack goes to the
// log), so one bad task fails its job instead of the executor; in test
// binaries runtime errors (nil dereferences, index out of range) still
// crash, so bugs are not hidden (see physical.Recovered).
//
// keys receives the keys the task's DynamicFilterBuild collected, if any.
func (e *Executor) run(ctx context.Context, def *rpc.TaskDefinition, a *taskAnalysis, commit *physical.CommitList, keys *map[int]*physical.KeySet) (locs []*rpc.PartitionLocation, err error) {
	k := keyOf(def.Id)
	defer func() {
		if r := recover(); r != nil {
			locs, err = nil, fmt.Errorf("%s on executor %s: %w", k, e.id, physical.Recovered(r))
		}
	}()
	if hook := e.cfg.TaskFailureHook; hook != nil {
		if err := hook(def); err != nil {
			return nil, fmt.Errorf("%s: injected failure: %w", k, err)
		}
	}
	op, err := physical.DecodePlan(def.Plan, PlanCodec, e.tables)
	if err != nil {
		return nil, fmt.Errorf("%s: decoding the stage plan: %w", k, err)
	}
	w, ok := op.(exchange.StageWriter)
	if !ok {
		return nil, fmt.Errorf("internal: %s: the stage plan's root is %T, not a stage writer", k, op)
	}
	_, pipelined := w.(*exchange.PipelinedWriter)
	tc, err := e.taskContext(def, pipelined)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", k, err)
	}
	tc.Commit = commit
	defer func() {
		if n := tc.Memory.Release(); n > 0 {
			e.log.Debug("task ended holding reserved memory", "task", k.String(), "bytes", n)
		}
	}()
	parts := make([]int, len(def.Partitions))
	for i, p := range def.Partitions {
		parts[i] = int(p)
	}
	if def.Analyze {
		// The metrics are keyed by the operators' positions in the stage
		// body (the writer's input), as the scheduler numbers them.
		if body := w.Children(); len(body) == 1 {
			tc.Analyzer = physical.NewAnalyzer(body[0])
			*a = taskAnalysis{analyzer: tc.Analyzer, memory: tc.Memory, start: time.Now()}
		}
	}
	if body := w.Children(); len(body) == 1 {
		done, err := e.dyn.start(def, body[0], tc)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		defer done()
		// RunTask executes each of parts of the body once, all at the
		// same time: the scans below may share their row groups among
		// them.
		tc.ShareScans(body[0], parts)
	}
	locs, err = w.RunTask(ctx, parts, tc)
	if err == nil {
		*keys = tc.DynamicFilterKeys()
	}
	return locs, err
}

// taskContext builds what the task's operators share. The memory limit
// setting applies to each task: it is the budget one executor can enforce.
// A blocking task's operators spill to the executor's work directory when
// the limit is reached; a pipelined task's fail (its queues give an
// operator no place to wait), and the error says which mode spills.
func (e *Executor) taskContext(def *rpc.TaskDefinition, pipelined bool) (*physical.TaskContext, error) {
	batch, err := intSetting(def.Settings, "execution.batch_size", physical.DefaultBatchSize)
	if err != nil {
		return nil, err
	}
	if batch <= 0 || batch > engine.MaxBatchSize {
		return nil, fmt.Errorf("invalid execution.batch_size %d (expected an integer from 1 to %d)", batch, engine.MaxBatchSize)
	}
	limit, err := intSetting(def.Settings, "execution.memory_limit", 0)
	if err != nil {
		return nil, err
	}
	credit, err := intSetting(def.Settings, "exchange.queue_batches", 0)
	if err != nil {
		return nil, err
	}
	if credit < 0 || credit > engine.MaxQueueBatches {
		return nil, fmt.Errorf("invalid exchange.queue_batches %d (expected an integer from 1 to %d)", credit, engine.MaxQueueBatches)
	}
	var idle time.Duration
	if def.ClientOutput {
		if v := def.Settings["execution.idle_client_timeout"]; v != "" && v != "0" {
			if idle, err = time.ParseDuration(v); err != nil || idle < 0 {
				return nil, fmt.Errorf("invalid execution.idle_client_timeout %q (expected a duration such as 30s)", v)
			}
		}
	}
	id := def.Id
	// The executor serves the job's data only to tickets with this
	// secret, and the task's readers put it in theirs.
	if err := e.env.Secrets.Bind(id.JobId, def.JobSecret); err != nil {
		return nil, err
	}
	hint, spill := "SET execution.memory_limit to a larger value (it caps each task)", e.cfg.WorkDir
	if pipelined {
		hint += ", or run the query in blocking mode (SET execution.mode = 'blocking'), whose sorts, aggregates and joins spill to disk; pipelined mode does not spill"
		spill = ""
	}
	return &physical.TaskContext{
		Alloc:     mempool.Allocator,
		Memory:    mempool.NewPool("task "+keyOf(id).String(), int64(limit), e.memory).WithHint(hint),
		SpillDir:  spill,
		BatchSize: batch,
		Exchange: &exchange.TaskEnv{
			Env: e.env, JobID: id.JobId, StageID: int(id.StageId), TaskID: int(id.TaskId), Attempt: int(id.Attempt),
			JobSecret:         def.JobSecret,
			OutputKey:         def.OutputKey,
			Capabilities:      exchange.CapabilitiesOf(def.ReadCapabilities),
			ClientIdleTimeout: idle,
			LazyStart:         pipelined && def.Settings["execution.lazy_producers"] == "true",
			Multiplex:         pipelined && def.Settings["exchange.multiplex"] == "on",
			MuxCredit:         credit,
		},
	}, nil
}

func intSetting(settings map[string]string, key string, def int) (int, error) {
	v, ok := settings[key]
	if !ok || v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("invalid %s %q (expected an integer)", key, v)
	}
	return n, nil
}

// reportAttempts bounds how often a task status report is retried.
const reportAttempts = 5

// report sends a task's status to the scheduler, retrying transient
// failures with backoff. A status that cannot be delivered is dropped: the
// scheduler will consider the task lost with this executor if it cannot
// reach it either.
func (e *Executor) report(st *rpc.TaskStatus) {
	if hook := e.cfg.TaskReportHook; hook != nil {
		hook(st)
	}
	backoff := 50 * time.Millisecond
	for attempt := 1; ; attempt++ {
		ctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
		_, err := e.sched.UpdateTaskStatus(ctx, &rpc.UpdateTaskStatusRequest{ExecutorId: e.id, Statuses: []*rpc.TaskStatus{st}})
		cancel()
		if err == nil {
			return
		}
		if e.ctx.Err() != nil {
			return
		}
		if attempt == reportAttempts || !transient(err) {
			e.log.Error("reporting task status failed", "task", keyOf(st.Id).String(), "state", st.State.String(), "attempts", attempt, "err", err)
			return
		}
		t := time.NewTimer(backoff)
		select {
		case <-e.ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		backoff *= 2
	}
}

func transient(err error) bool {
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded, codes.ResourceExhausted, codes.Aborted:
		return true
	}
	return false
}

// cancelTasks cancels the accepted tasks match selects, with cause, and
// returns them.
func (e *Executor) cancelTasks(match func(*runningTask) bool, cause error) []*runningTask {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []*runningTask
	for _, rt := range e.running {
		if match(rt) {
			rt.cancel(cause)
			out = append(out, rt)
		}
	}
	return out
}

// clientIdleMessage is the part of err, a chain wrapping
// exchange.ErrClientIdle, from that error on: what the client is shown.
func clientIdleMessage(err error) string {
	msg := err.Error()
	if i := strings.Index(msg, exchange.ErrClientIdle.Error()); i >= 0 {
		return msg[i:]
	}
	return msg
}
