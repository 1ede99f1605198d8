package scheduler

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"google.golang.org/protobuf/proto"

	"sluice/engine"
	"sluice/physical"
	"sluice/physical/expr"
	"sluice/rpc"
	"sluice/scheduler/dplan"
	"sluice/sql"
)

// Execution modes (setting execution.mode).
const (
	ModeBlocking  = "blocking"
	ModePipelined = "pipelined"
	// ModeAuto runs a query pipelined when it fits the free vcores now and
	// its estimated intermediates are small, blocking otherwise.
	ModeAuto = "auto"
)

// ExecuteQuery runs one statement. Statements the scheduler answers itself
// (DDL, SET, SHOW, DESCRIBE, EXPLAIN) produce a single final status;
// queries become jobs whose status is streamed until they end. If the
// client goes away before its job ends, the job is cancelled.
func (s *Scheduler) ExecuteQuery(req *rpc.ExecuteQueryRequest, stream rpc.SchedulerService_ExecuteQueryServer) error {
	st, j := s.prepare(newJobKey(rpc.SessionKey(stream.Context())), req)
	if j == nil {
		return stream.Send(st)
	}
	s.placeNow()
	var last *rpc.JobStatus
	sentRunning := false
	for {
		s.mu.Lock()
		for j.retry != nil {
			// The job failed and runs again as a new job (whole-query
			// retry): the stream follows the new one, whose statuses carry
			// its ID and the notice, and never shows the failed attempt's
			// end.
			j, last, sentRunning = j.retry, nil, false
		}
		// While the job runs, its statuses carry what changes (state,
		// progress, where to read): the stage report and the settings go
		// with the first Running status and the others (queued, final),
		// not with every later one (clients read the report from the
		// final status or GetJobStatus). A blocking job sends a status per
		// task update, and its whole report grows with its stages.
		full := j.state != rpc.JobState_JOB_RUNNING || !sentRunning
		cur := s.statusOfLocked(j, full)
		ran := j.ran
		changed := j.changed
		s.mu.Unlock()
		// Every stream shows the whole lifecycle, however quickly the job
		// went through it before this goroutine looked: every job starts
		// queued, and one that was placed, or succeeded, ran.
		var passed []rpc.JobState
		if last == nil && cur.State != rpc.JobState_JOB_QUEUED {
			passed = append(passed, rpc.JobState_JOB_QUEUED)
		}
		ran = ran || cur.State == rpc.JobState_JOB_SUCCESSFUL
		if (last == nil || last.State == rpc.JobState_JOB_QUEUED) && isFinal(cur.State) && ran {
			passed = append(passed, rpc.JobState_JOB_RUNNING)
		}
		for _, state := range passed {
			st := proto.Clone(cur).(*rpc.JobStatus)
			st.State, st.Error, st.FinalLocations, st.AnalyzedPlan = state, nil, nil, ""
			if state == rpc.JobState_JOB_QUEUED {
				st.FinalProducers, st.FinalCapabilities = nil, nil
			}
			if err := stream.Send(st); err != nil {
				s.cancelIfRunning(j)
				return err
			}
			last = st
		}
		if !proto.Equal(cur, last) {
			if err := stream.Send(cur); err != nil {
				s.cancelIfRunning(j)
				return err
			}
			last = cur
			sentRunning = sentRunning || cur.State == rpc.JobState_JOB_RUNNING
		}
		if isFinal(cur.State) {
			return nil
		}
		select {
		case <-changed:
		case <-stream.Context().Done():
			s.cancelIfRunning(j)
			return stream.Context().Err()
		case <-s.ctx.Done():
			return fmt.Errorf("scheduler shutting down while job %s runs", j.id)
		}
	}
}

func isFinal(s rpc.JobState) bool {
	return s == rpc.JobState_JOB_SUCCESSFUL || s == rpc.JobState_JOB_FAILED || s == rpc.JobState_JOB_CANCELLED
}

func (s *Scheduler) cancelIfRunning(j *job) {
	s.cancelJob(j)
}

// prepare handles the statement: it returns either a final status, or a
// registered job whose status the caller follows.
func (s *Scheduler) prepare(key jobKey, req *rpc.ExecuteQueryRequest) (*rpc.JobStatus, *job) {
	jobID := key.id
	failed := func(err error) (*rpc.JobStatus, *job) {
		return &rpc.JobStatus{JobId: jobID, State: rpc.JobState_JOB_FAILED, Error: userError(err), Settings: req.Settings}, nil
	}
	settings, err := engine.SettingsFromMap(req.Settings)
	if err != nil {
		return failed(err)
	}
	stmts, err := sql.Parse(req.Sql)
	if err != nil {
		return failed(err)
	}
	if len(stmts) != 1 {
		return failed(fmt.Errorf("expected exactly one statement, got %d (send statements one at a time)", len(stmts)))
	}
	bound, err := (&sql.Binder{Catalog: s.cfg.Catalog}).Bind(stmts[0])
	if err != nil {
		return failed(err)
	}
	done := &rpc.JobStatus{JobId: jobID, State: rpc.JobState_JOB_SUCCESSFUL, Settings: settings.Map()}
	switch st := bound.(type) {
	case *sql.Query:
		q, err := s.engine.PlanQuery(st, settings)
		if err != nil {
			return failed(err)
		}
		j, err := s.submit(key, st, q, settings, false)
		if err != nil {
			return failed(err)
		}
		return nil, j
	case *sql.Write:
		out, err := s.engine.PlanWrite(st, settings)
		if err != nil {
			return failed(err)
		}
		if out.Query == nil { // CREATE TABLE IF NOT EXISTS of an existing table
			done.Message = out.Message
			return done, nil
		}
		j, err := s.submit(key, nil, out.Query, settings, false)
		if err != nil {
			return failed(err)
		}
		return nil, j
	case *sql.Explain:
		if st.Analyze {
			// EXPLAIN ANALYZE runs the query as a job whose tasks report
			// their operators' metrics; the client reads (and discards)
			// its rows and shows the job's final analyzed_plan.
			q, err := s.engine.PlanQuery(st.Query, settings)
			if err != nil {
				return failed(err)
			}
			j, err := s.submit(key, st.Query, q, settings, true)
			if err != nil {
				return failed(err)
			}
			return nil, j
		}
		rows, err := s.explain(st, settings)
		if err != nil {
			return failed(err)
		}
		defer rows.Release()
		if err := inline(done, rows); err != nil {
			return failed(err)
		}
		return done, nil
	}
	// Everything else is the engine's: DDL, SET, SHOW, DESCRIBE.
	out, err := s.engine.Prepare(req.Sql, settings)
	if err != nil {
		return failed(err)
	}
	done.Settings = settings.Map()
	done.Message = out.Message
	if out.Rows != nil {
		defer out.Rows.Release()
		if err := inline(done, out.Rows); err != nil {
			return failed(err)
		}
	}
	return done, nil
}

// inline puts a small result into the status: its schema and its rows as
// an Arrow IPC stream.
func inline(st *rpc.JobStatus, rows arrow.RecordBatch) error {
	var err error
	if st.Schema, err = expr.SchemaToProto(rows.Schema()); err != nil {
		return err
	}
	st.InlineResult, err = ipcBytes(rows)
	return err
}

// explain renders the logical, physical and distributed plans; the caller
// releases the rows.
func (s *Scheduler) explain(st *sql.Explain, settings *engine.Settings) (arrow.RecordBatch, error) {
	q, logical, err := s.engine.PlanExplained(st, settings)
	if err != nil {
		return nil, err
	}
	mode, _ := settings.Get("execution.mode")
	g, err := planStages(q, settings, mode)
	if err != nil {
		return nil, err
	}
	out := [][]string{
		{"logical_plan", logical},
		{"physical_plan", strings.TrimRight(physical.Format(q.Physical), "\n")},
		{"distributed_plan", strings.TrimRight(dplan.Format(g), "\n")},
	}
	if mode == ModeAuto {
		// What auto mode would choose were the query run now.
		s.mu.Lock()
		c := s.chooseModeLocked(q, g, settings, nil)
		s.mu.Unlock()
		out = append(out, []string{"execution_mode", c.String()})
	}
	return engine.StringRows([]string{"plan_type", "plan"}, out), nil
}

// submit plans a query into stages and registers its job; analyze makes
// it an EXPLAIN ANALYZE's.
func (s *Scheduler) submit(key jobKey, st *sql.Query, q *engine.Query, settings *engine.Settings, analyze bool) (*job, error) {
	mode, _ := settings.Get("execution.mode")
	switch mode {
	case ModeBlocking, ModeAuto:
	case ModePipelined:
		if s.cfg.Policy == PolicyPull {
			return nil, errors.New("pipelined mode needs the push scheduling policy, and this scheduler runs with pull (SET execution.mode = 'blocking')")
		}
	default:
		return nil, fmt.Errorf("unknown execution mode %q (expected blocking, pipelined or auto)", mode)
	}
	schema, err := expr.SchemaToProto(q.Schema)
	if err != nil {
		return nil, err
	}
	spec := &jobSpec{mode: mode, schema: schema, settings: settings, analyze: analyze}
	if st != nil {
		// A write (st nil) is never run again.
		spec.replan = func() (*engine.Query, error) { return s.engine.PlanQuery(st, settings) }
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	j, err := s.newJobLocked(key, spec, q, 1, nil)
	if err != nil {
		return nil, err
	}
	s.addJobLocked(j)
	return j, nil
}

// newJobLocked builds attempt number attempt of a job from its spec and
// its plan q, not placed on the executors in avoid. The caller registers
// it. Callers hold s.mu (auto mode and pipelined graphs read the cluster).
func (s *Scheduler) newJobLocked(key jobKey, spec *jobSpec, q *engine.Query, attempt int, avoid []string) (*job, error) {
	dg, err := planStages(q, spec.settings, spec.mode)
	if err != nil {
		return nil, err
	}
	mode, choice := spec.mode, spec.mode
	if mode == ModeAuto {
		c := s.chooseModeLocked(q, dg, spec.settings, avoid)
		mode, choice = c.Mode, c.String()
		if mode == ModeBlocking {
			if dg, err = planStages(q, spec.settings, mode); err != nil {
				return nil, err
			}
		}
	}
	var g ExecutionGraph
	if mode == ModePipelined {
		g, err = s.newPipelinedGraphLocked(key.id, dg, spec.settings, avoid)
	} else {
		g, err = NewBlockingGraph(BlockingConfig{
			JobID: key.id, Plan: dg, Exchanges: s.cfg.Exchanges, Encode: s.cfg.Encode,
			Settings: taskSettings(spec.settings, ModeBlocking), MaxPartitionsPerTask: int(spec.settings.Int("scheduler.max_partitions_per_task")),
			TaskRetries:          s.cfg.TaskRetries,
			Adaptive:             spec.settings.Bool("execution.adaptive"),
			TargetPartitionBytes: spec.settings.Int("execution.aqe_target_partition_bytes"),
			BroadcastThreshold:   spec.settings.Int("optimizer.broadcast_join_threshold_bytes"),
			Parallelism:          int(s.totalVcores.Load()),
		})
	}
	if err != nil {
		return nil, err
	}
	j := newJob(key, g, spec.schema, spec.settings.Map())
	j.modeChoice, j.attempt, j.attempts = choice, attempt, attempt
	j.write = q.Write
	if spec.analyze {
		j.analysis = newAnalysis(dg)
	}
	if mode == ModePipelined {
		// Blocking jobs re-run lost tasks instead; pipelined ones may run
		// again whole.
		j.spec = spec
		j.attempts = 1 + int(spec.settings.Int("execution.query_retries"))
	}
	return j, nil
}

// userError maps an error to what the client shows: the parser's and
// binder's errors keep their kind and position.
func userError(err error) *rpc.UserError {
	var se *sql.Error
	if errors.As(err, &se) {
		return &rpc.UserError{Kind: se.Kind, Message: se.Msg, Line: int32(se.Line), Column: int32(se.Column), Near: se.Near, Hint: se.Hint}
	}
	kind := "execution"
	if strings.HasPrefix(err.Error(), "internal") {
		kind = "internal"
	}
	return &rpc.UserError{Kind: kind, Message: err.Error()}
}

// ipcBytes encodes a batch as an Arrow IPC stream.
func ipcBytes(b arrow.RecordBatch) ([]byte, error) {
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(b.Schema()))
	if err := w.Write(b); err != nil {
		return nil, fmt.Errorf("encoding result: %w", err)
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("encoding result: %w", err)
	}
	return buf.Bytes(), nil
}

// planStages cuts a query's physical plan into stages for mode, with
// cross-stage dynamic filters unless execution.dynamic_filters is off.
// Only blocking mode keeps small build sides in their join's stage: there
// a broadcast stage has to finish before its join's stage starts, while
// pipelined stages run at once, and a broadcast stage's output serves every
// reader of it.
func planStages(q *engine.Query, settings *engine.Settings, mode string) (*dplan.Graph, error) {
	var opts dplan.Options
	if mode == ModeBlocking {
		opts.InlineBuildBytes = settings.Int("execution.blocking_inline_build_bytes")
		opts.SwapMaxRatio = settings.Int("execution.blocking_swap_max_ratio")
	}
	g, err := dplan.PlanWith(q.Physical, q.Estimates, opts)
	if err != nil {
		return nil, err
	}
	if v, _ := settings.Get("execution.dynamic_filters"); v != "off" {
		if err := dplan.AddDynamicFilters(g); err != nil {
			return nil, err
		}
	}
	return g, nil
}
