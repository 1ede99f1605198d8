package scheduler

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"sluice/engine"
	"sluice/physical"
	"sluice/rpc"
)

// job is a query being run (or recently run) on the cluster.
type job struct {
	id string
	// owner is the secret of the session that submitted the job: only a
	// caller presenting it may follow, cancel or release the job ("": the
	// job was submitted without one, and nobody may).
	owner string
	// secret is the job's: its tasks carry it to the executors, which
	// serve the job's data only to tickets with it; the owner gets it in
	// the job's status.
	secret string
	graph  ExecutionGraph
	state  rpc.JobState
	// ran is set once the job is placed (it was, or is, running).
	ran      bool
	err      *rpc.UserError
	schema   *rpc.Schema
	settings map[string]string
	// changed is closed (and replaced) whenever the job's status changes,
	// waking every status stream following it.
	changed chan struct{}
	created time.Time
	ended   time.Time
	// analysis follows an EXPLAIN ANALYZE job's metrics; nil otherwise.
	analysis *analysis
	// write is set for a job that writes files: finished (files
	// committed, catalog updated, leftovers removed) once, when the job
	// ends.
	write *engine.Write
	// written are the files the write's commit task reported, renamed
	// when the job succeeds.
	written []physical.CommitFile
	// modeChoice is how the job runs and, in auto mode, why.
	modeChoice string
	// Whole-query retry (pipelined jobs): attempt counts from 1, of at
	// most attempts; spec builds a new attempt (nil: the job is never
	// retried). delivered is set once the client claimed its first row:
	// from then on a failure is final. retry is the job that replaced
	// this one; the status stream moves on to it. notice is what the
	// client shows about this attempt.
	attempt, attempts int
	spec              *jobSpec
	delivered         bool
	retry             *job
	notice            string
	// Admission (admission.go): placedAt is when the job's first tasks
	// were placed (zero while it waits); held is how many vcores were
	// held back for it, the oldest waiting pipelined job, in the last
	// placement round; overtaken is set once a waiting pipelined job went
	// ahead of it, which happens to a job at most once.
	placedAt  time.Time
	held      int
	overtaken bool
}

func (j *job) finished() bool {
	switch j.state {
	case rpc.JobState_JOB_SUCCESSFUL, rpc.JobState_JOB_FAILED, rpc.JobState_JOB_CANCELLED:
		return true
	}
	return false
}

func (j *job) notify() {
	close(j.changed)
	j.changed = make(chan struct{})
}

// jobKey is what a new job is known by: its ID, its owner's session
// secret and its own secret.
type jobKey struct {
	id, owner, secret string
}

// newJobKey returns a key with a fresh, unguessable ID (128 random bits)
// and secret for a job of the session presenting owner.
func newJobKey(owner string) jobKey {
	return jobKey{id: rpc.RandomHex(16), owner: owner, secret: rpc.RandomHex(16)}
}

func newJob(key jobKey, g ExecutionGraph, schema *rpc.Schema, settings map[string]string) *job {
	return &job{id: key.id, owner: key.owner, secret: key.secret, graph: g, state: rpc.JobState_JOB_QUEUED,
		schema: schema, settings: settings, changed: make(chan struct{}), created: time.Now()}
}

// ownedLocked returns the job if the call comes from the session that
// submitted it, else nil: another session is told the job does not exist.
func (s *Scheduler) ownedLocked(ctx context.Context, id string) *job {
	j := s.jobs[id]
	if j == nil {
		return nil
	}
	key := rpc.SessionKey(ctx)
	if j.owner == "" || key == "" || !rpc.Equal(key, j.owner) {
		return nil
	}
	return j
}

// statusLocked is the job's status as its owner sees it.
func (s *Scheduler) statusLocked(j *job) *rpc.JobStatus { return s.statusOfLocked(j, true) }

// statusOfLocked is statusLocked, without the stage report and the
// settings unless full.
func (s *Scheduler) statusOfLocked(j *job, full bool) *rpc.JobStatus {
	st := &rpc.JobStatus{
		JobId: j.id, State: j.state, Error: j.err, Schema: j.schema,
		FinalStageId: int32(j.graph.FinalStageID()), Progress: j.graph.Progress(),
		JobSecret: j.secret,
		Write:     j.write != nil,
		Attempt:   int32(j.attempt), RetryNotice: j.notice, ModeChoice: j.modeChoice,
		QueuedMs: j.queued(time.Now()).Milliseconds(), Admission: j.admissionText(time.Now()),
	}
	if full {
		st.Stages, st.Settings = j.graph.Describe(), j.settings
	}
	if j.state == rpc.JobState_JOB_SUCCESSFUL {
		// Clients fetch by job, stage, file name and batches: the
		// executor's paths are not theirs to know.
		for _, l := range j.graph.FinalLocations() {
			l = proto.Clone(l).(*rpc.PartitionLocation)
			l.Path = filepath.Base(l.Path)
			st.FinalLocations = append(st.FinalLocations, l)
		}
	}
	if j.analysis != nil {
		st.Analyze = true
		if j.state == rpc.JobState_JOB_SUCCESSFUL {
			st.AnalyzedPlan = j.analysis.format(j.graph)
		}
	}
	// A pipelined job is read while it runs; a status stream may skip
	// Running when the job ends quickly, so Successful carries them too.
	if sg, ok := j.graph.(StreamingGraph); ok {
		st.FinalProducers = sg.FinalProducers()
		st.FinalCapabilities = sg.FinalCapabilities()
	}
	return st
}

// addJobLocked registers a new job and queues it for placement.
func (s *Scheduler) addJobLocked(j *job) {
	s.jobs[j.id] = j
	s.order = append(s.order, j)
	s.syncJobLocked(j)
}

// endLocked records that the job reached a final state.
func (s *Scheduler) endLocked(j *job, state rpc.JobState) {
	j.state = state
	j.ended = time.Now()
	if state != rpc.JobState_JOB_FAILED { // failJobLocked logs failures, with the error
		s.cfg.Logger.Info("job ended", "job", j.id, "state", state.String(), "took", j.ended.Sub(j.created).Round(time.Millisecond))
	}
	s.order = slices.DeleteFunc(s.order, func(o *job) bool { return o == j })
	if w := j.write; w != nil && state != rpc.JobState_JOB_SUCCESSFUL {
		// The write's files go, whatever of them its tasks left; a task
		// still running removes its own when its cancellation reaches it.
		s.goLocked(func() {
			if err := w.Finish(false, nil); err != nil {
				s.cfg.Logger.Warn("removing a failed write's files", "job", j.id, "err", err.Error())
			}
		})
	}
}

// syncJobLocked carries the graph's state over to the job. A failed job's
// remaining tasks are cancelled and its data removed in the background.
func (s *Scheduler) syncJobLocked(j *job) {
	if j.finished() {
		return
	}
	state, err := j.graph.State()
	switch state {
	case GraphSuccessful:
		if a := j.analysis; a != nil {
			first := !a.waiting()
			if !a.complete(time.Now()) {
				// EXPLAIN ANALYZE: the result is complete, but the job
				// ends only when its tasks have reported their metrics.
				// Tasks no longer needed (a LIMIT was satisfied) are
				// cancelled now and report what they did until then.
				if first {
					if running := j.graph.Cancel(); len(running) > 0 {
						s.goLocked(func() { s.cleanup(j, running, nil) })
					}
				}
				j.notify()
				return
			}
		}
		if j.write != nil {
			// The result is complete: the write's files are renamed
			// now, once, and the job succeeds once the catalog knows
			// them, so the next statement sees the table.
			if err := j.write.Finish(true, j.written); err != nil {
				s.failJobLocked(j, err)
				return
			}
		}
		s.endLocked(j, rpc.JobState_JOB_SUCCESSFUL)
		// Early finish (pipelined): the final stage is complete, so tasks
		// still feeding it (a LIMIT was satisfied) are no longer needed.
		// The data is removed when the client releases the job.
		if running := j.graph.Cancel(); len(running) > 0 {
			s.goLocked(func() { s.cleanup(j, running, nil) })
		}
	case GraphFailed:
		if s.retryLocked(j, err) {
			return
		}
		s.failJobLocked(j, err)
		return
	}
	j.notify()
}

// cleanup cancels a job's running tasks on their executors and removes the
// job's data from every executor that ran part of it. Executors that
// cannot be reached are skipped: whatever they held is gone with them, or
// is swept by their own TTL.
func (s *Scheduler) cleanup(j *job, running []*Assignment, executors []string) {
	tasks := map[string][]*rpc.TaskId{}
	for _, a := range running {
		tasks[a.ExecutorID] = append(tasks[a.ExecutorID], a.Task.Id)
	}
	ids := make([]string, 0, len(tasks))
	for id := range tasks {
		ids = append(ids, id)
	}
	_ = s.callExecutors(ids, func(ctx context.Context, c rpc.ExecutorServiceClient) error {
		_, err := c.CancelTasks(ctx, &rpc.CancelTasksRequest{JobId: j.id, JobSecret: j.secret})
		return err
	})
	_ = s.callExecutors(executors, func(ctx context.Context, c rpc.ExecutorServiceClient) error {
		_, err := c.RemoveJobData(ctx, &rpc.RemoveJobDataRequest{JobId: j.id, JobSecret: j.secret})
		return err
	})
}

// CancelJob cancels a queued or running job of the caller's session: its
// running tasks are cancelled on their executors and its data removed.
func (s *Scheduler) CancelJob(ctx context.Context, req *rpc.CancelJobRequest) (*rpc.CancelJobResponse, error) {
	s.mu.Lock()
	j := s.ownedLocked(ctx, req.JobId)
	s.mu.Unlock()
	if j == nil {
		return nil, status.Errorf(codes.NotFound, "cancel: unknown job %q", req.JobId)
	}
	return &rpc.CancelJobResponse{Cancelled: s.cancelJob(j)}, nil
}

// cancelJob ends j as cancelled unless it already ended, and says whether it
// did.
func (s *Scheduler) cancelJob(j *job) bool {
	s.mu.Lock()
	if j.finished() {
		s.mu.Unlock()
		return false
	}
	running := j.graph.Cancel()
	executors := j.graph.Executors()
	s.endLocked(j, rpc.JobState_JOB_CANCELLED)
	j.err = &rpc.UserError{Kind: "execution", Message: "query cancelled"}
	j.notify()
	s.mu.Unlock()
	s.cleanup(j, running, executors)
	s.poke()
	return true
}

// GetJobStatus returns the current status of a job of the caller's
// session.
func (s *Scheduler) GetJobStatus(ctx context.Context, req *rpc.GetJobStatusRequest) (*rpc.JobStatus, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j := s.ownedLocked(ctx, req.JobId)
	if j == nil {
		return nil, status.Errorf(codes.NotFound, "unknown job %q (finished jobs are forgotten once released or after their TTL)", req.JobId)
	}
	if id := req.UnreachableExecutor; id != "" && !j.finished() && slices.Contains(j.graph.Executors(), id) {
		// Only an executor holding part of the caller's job: a client
		// cannot make the scheduler probe arbitrary executors.
		if !s.closed {
			s.wg.Add(1)
			go s.probeExecutor(id)
		}
	}
	if req.ClaimDelivery && (j.state == rpc.JobState_JOB_RUNNING || j.state == rpc.JobState_JOB_SUCCESSFUL) {
		// Decided under the lock that also decides retries: either this
		// claim is recorded and the job is never retried, or the job has
		// already failed and the client drops the rows it read.
		j.delivered = true
	}
	return s.statusLocked(j), nil
}

// ReleaseJob: the client has read every result partition; the job's data
// is removed and the job forgotten. Only the job's session may release it;
// for any other caller it is a job that does not exist.
func (s *Scheduler) ReleaseJob(ctx context.Context, req *rpc.ReleaseJobRequest) (*rpc.ReleaseJobResponse, error) {
	s.mu.Lock()
	j := s.ownedLocked(ctx, req.JobId)
	if j == nil {
		s.mu.Unlock()
		return &rpc.ReleaseJobResponse{}, nil
	}
	if !j.finished() {
		// Read the state under the lock: the job may end meanwhile.
		state := j.state
		s.mu.Unlock()
		return nil, status.Errorf(codes.FailedPrecondition, "release: job %q is still %s (cancel it instead)", req.JobId, state)
	}
	delete(s.jobs, j.id)
	executors := j.graph.Executors()
	s.mu.Unlock()
	s.cleanup(j, nil, executors)
	return &rpc.ReleaseJobResponse{}, nil
}

// sweepJobs forgets finished jobs older than the TTL, removing their data.
func (s *Scheduler) sweepJobs(now time.Time) {
	s.mu.Lock()
	for _, j := range slices.Clone(s.order) {
		// A job still queued past its session's scheduler.queue_timeout
		// fails, saying why, rather than waiting for good.
		if j.state != rpc.JobState_JOB_QUEUED {
			continue
		}
		limit, err := time.ParseDuration(j.settings["scheduler.queue_timeout"])
		if err != nil || limit <= 0 || now.Sub(j.created) <= limit {
			continue
		}
		s.failJobLocked(j, fmt.Errorf("the job waited %s for free vcores (scheduler.queue_timeout) and was not placed: the cluster's %d vcores are held by %d other jobs; run it again later, or SET scheduler.queue_timeout higher",
			limit, s.totalVcores.Load(), len(s.order)-1))
	}
	old := map[*job][]string{}
	for id, j := range s.jobs {
		if j.finished() && now.Sub(j.ended) > s.cfg.JobDataTTL {
			old[j] = j.graph.Executors()
			delete(s.jobs, id)
		}
	}
	s.mu.Unlock()
	for j, executors := range old {
		s.cleanup(j, nil, executors)
	}
}
