package scheduler

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"sluice/physical"
	"sluice/rpc"
)

// executor is a registered executor as the scheduler sees it.
type executor struct {
	meta     *rpc.ExecutorMetadata
	lastSeen time.Time
	client   rpc.ExecutorServiceClient
	closeFn  func() error
}

func (e *executor) close() {
	if e.closeFn != nil {
		_ = e.closeFn()
	}
}

// RegisterExecutor adds an executor. An executor registering again under a
// known ID has restarted: whatever it held is gone.
func (s *Scheduler) RegisterExecutor(ctx context.Context, req *rpc.RegisterExecutorRequest) (*rpc.RegisterExecutorResponse, error) {
	m := req.GetMeta()
	if m.GetId() == "" || m.GetVcores() <= 0 {
		return nil, status.Errorf(codes.InvalidArgument, "register executor: need an id and a positive vcores count, got id=%q vcores=%d", m.GetId(), m.GetVcores())
	}
	client, closeFn, err := s.cfg.Dial(m.GrpcAddress)
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "register executor %s: %v", m.Id, err)
	}
	s.mu.Lock()
	old := s.removeExecutorLocked(m.Id)
	s.executors[m.Id] = &executor{meta: m, lastSeen: time.Now(), client: client, closeFn: closeFn}
	s.totalVcores.Add(int64(m.Vcores))
	dead := s.deadJobsLocked(req.HeldJobs)
	s.mu.Unlock()
	if old != nil {
		old.close()
	}
	if len(dead) > 0 {
		s.cfg.Logger.Info("executor holds data of jobs this scheduler does not know; it removes them", "executor", m.Id, "jobs", len(dead))
	}
	s.poke()
	return &rpc.RegisterExecutorResponse{Policy: s.cfg.Policy, DeadJobs: dead}, nil
}

// deadJobsLocked returns the jobs of held that the scheduler does not know:
// an earlier scheduler process's, or released or swept. Their data is no
// one's, and nothing will ask the executor to remove it but this answer.
func (s *Scheduler) deadJobsLocked(held []string) []string {
	var dead []string
	for _, id := range held {
		if _, ok := s.jobs[id]; !ok {
			dead = append(dead, id)
		}
	}
	return dead
}

// Heartbeat keeps an executor alive; an unknown executor (expired, or the
// scheduler restarted) is told to register again.
func (s *Scheduler) Heartbeat(ctx context.Context, req *rpc.HeartbeatRequest) (*rpc.HeartbeatResponse, error) {
	if req.Stopping {
		// A graceful shutdown: the executor has reported its tasks and is
		// going, so it is removed now rather than after its heartbeats stop.
		s.executorLost(req.ExecutorId, "stopped")
		return &rpc.HeartbeatResponse{}, nil
	}
	s.mu.Lock()
	e := s.executors[req.ExecutorId]
	var dead []string
	if e != nil {
		e.lastSeen = time.Now()
		dead = s.deadJobsLocked(req.HeldJobs)
	}
	s.mu.Unlock()
	if e == nil {
		return &rpc.HeartbeatResponse{Reregister: true}, nil
	}
	s.poke()
	return &rpc.HeartbeatResponse{DeadJobs: dead}, nil
}

// expireExecutors drops executors whose last heartbeat is older than the
// timeout.
func (s *Scheduler) expireExecutors(now time.Time) {
	s.mu.Lock()
	var expired []string
	for id, e := range s.executors {
		if now.Sub(e.lastSeen) > s.cfg.ExecutorTimeout {
			expired = append(expired, id)
		}
	}
	s.mu.Unlock()
	for _, id := range expired {
		s.executorLost(id, "no heartbeat for "+s.cfg.ExecutorTimeout.String())
	}
}

// executorLost removes an executor and tells every job; their graphs
// re-run what was lost there. why says how it was found gone, for the log.
func (s *Scheduler) executorLost(id, why string) {
	s.mu.Lock()
	e := s.removeExecutorLocked(id)
	if e != nil {
		s.cfg.Logger.Info("executor removed", "executor", id, "why", why, "executors_left", len(s.executors))
	}
	if e != nil && len(s.executors) == 0 {
		// Nothing is left to run the work: fail the unfinished jobs now
		// rather than have their clients wait for executors that may never
		// come.
		for _, j := range slices.Clone(s.order) {
			s.failJobLocked(j, fmt.Errorf("no executors available: every executor was lost (the last was %s); start executors and run the query again", id))
		}
	}
	s.mu.Unlock()
	if e != nil {
		e.close()
		s.poke()
	}
}

// removeExecutorLocked forgets an executor and notifies the jobs; the
// caller closes the returned executor's connection outside the lock.
func (s *Scheduler) removeExecutorLocked(id string) *executor {
	e := s.executors[id]
	if e == nil {
		return nil
	}
	delete(s.executors, id)
	// Before the jobs hear of it: a pipelined job retried now is planned
	// for the vcores that remain.
	s.totalVcores.Add(-int64(e.meta.Vcores))
	for _, j := range slices.Clone(s.order) {
		j.graph.ExecutorLost(id)
		if j.analysis != nil {
			j.analysis.executorLost(id)
		}
		s.syncJobLocked(j)
	}
	return e
}

// failJobLocked ends an unfinished job as failed, cancelling what still
// runs and removing its data.
func (s *Scheduler) failJobLocked(j *job, err error) {
	if j.finished() {
		return
	}
	s.endLocked(j, rpc.JobState_JOB_FAILED)
	j.err = &rpc.UserError{Kind: "execution", Message: err.Error()}
	var qe *QueryError
	if errors.As(err, &qe) {
		// The user sees what went wrong; where it went wrong is the log's.
		j.err.Message, j.err.Detail = qe.Msg, qe.Detail
	}
	s.cfg.Logger.Info("job ended", "job", j.id, "state", rpc.JobState_JOB_FAILED.String(), "took", j.ended.Sub(j.created).Round(time.Millisecond), "err", err.Error())
	running := j.graph.Cancel()
	executors := j.graph.Executors()
	s.goLocked(func() { s.cleanup(j, running, executors) })
	j.notify()
}

// offersLocked is every executor's free capacity: its vcores minus what
// the jobs hold there.
func (s *Scheduler) offersLocked() []*Offer {
	ids := make([]string, 0, len(s.executors))
	for id := range s.executors {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var out []*Offer
	for _, id := range ids {
		if free := s.freeLocked(id); free > 0 {
			out = append(out, &Offer{ExecutorID: id, FlightAddress: s.executors[id].meta.FlightAddress, Free: free})
		}
	}
	return out
}

func (s *Scheduler) freeLocked(id string) int {
	e := s.executors[id]
	if e == nil {
		return 0
	}
	free := int(e.meta.Vcores)
	for _, j := range s.order {
		free -= j.graph.Reserved(id)
	}
	return max(free, 0)
}

// PollWork hands an executor (pull policy) tasks for its free vcores.
func (s *Scheduler) PollWork(ctx context.Context, req *rpc.PollWorkRequest) (*rpc.PollWorkResponse, error) {
	if s.cfg.Policy != PolicyPull {
		return nil, status.Errorf(codes.FailedPrecondition, "PollWork: the scheduler pushes tasks (policy %q); executors must not poll", s.cfg.Policy)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.executors[req.ExecutorId]
	if e == nil {
		return nil, status.Errorf(codes.NotFound, "PollWork: unknown executor %q (register again)", req.ExecutorId)
	}
	e.lastSeen = time.Now()
	free := min(int(req.FreeVcores), s.freeLocked(req.ExecutorId))
	if free <= 0 {
		return &rpc.PollWorkResponse{}, nil
	}
	offer := []*Offer{{ExecutorID: req.ExecutorId, FlightAddress: e.meta.FlightAddress, Free: free}}
	resp := &rpc.PollWorkResponse{}
	for _, a := range s.placeLocked(offer) {
		resp.Tasks = append(resp.Tasks, a.Task)
	}
	return resp, nil
}

// UpdateTaskStatus feeds task reports to their jobs' graphs.
func (s *Scheduler) UpdateTaskStatus(ctx context.Context, req *rpc.UpdateTaskStatusRequest) (*rpc.UpdateTaskStatusResponse, error) {
	s.mu.Lock()
	if e := s.executors[req.ExecutorId]; e != nil {
		e.lastSeen = time.Now()
	}
	for _, st := range req.Statuses {
		if st.ExecutorId == "" {
			st.ExecutorId = req.ExecutorId
		}
		j := s.jobs[st.GetId().GetJobId()]
		if j == nil {
			continue
		}
		if j.analysis != nil {
			j.analysis.report(st)
		}
		if j.finished() {
			// Only the report of a task that finished just as its job
			// did: the graph records it (the job's state stays).
			if j.state == rpc.JobState_JOB_SUCCESSFUL {
				j.graph.UpdateTask(st)
			} else if w := j.write; w != nil && st.State != rpc.TaskState_TASK_RUNNING {
				// A write task that ended after its job failed may
				// have created its file after the job's files were
				// removed, and finished before its cancellation came:
				// remove what it left now that it has stopped.
				s.goLocked(func() {
					if err := w.Finish(false, nil); err != nil {
						s.cfg.Logger.Warn("removing a failed write's files", "job", j.id, "err", err.Error())
					}
				})
			}
			continue
		}
		if ff := st.GetFetchFailure(); ff != nil && ff.ExecutorId != "" && ff.ExecutorId != req.ExecutorId {
			s.wg.Add(1)
			go s.probeExecutor(ff.ExecutorId)
		}
		if j.write != nil && st.State == rpc.TaskState_TASK_SUCCESSFUL && int(st.GetId().GetStageId()) == j.graph.FinalStageID() {
			// The commit task's report ends the job's final stage: its
			// files are the ones to rename.
			j.written = j.written[:0]
			for _, f := range st.WrittenFiles {
				j.written = append(j.written, physical.CommitFile{Temp: f.GetTemp(), Final: f.GetFinal()})
			}
		}
		j.graph.UpdateTask(st)
		s.pushFiltersLocked(j)
		s.syncJobLocked(j)
	}
	s.mu.Unlock()
	s.placeNow()
	return &rpc.UpdateTaskStatusResponse{}, nil
}

// probeExecutor checks on an executor another one could not fetch from,
// and declares it lost at once if it does not answer, instead of waiting
// for its heartbeats to expire: the next job must not be placed on it.
func (s *Scheduler) probeExecutor(id string) {
	defer s.wg.Done()
	s.mu.Lock()
	e := s.executors[id]
	s.mu.Unlock()
	if e == nil {
		return
	}
	ctx, cancel := context.WithTimeout(s.ctx, min(s.cfg.RPCTimeout, 2*time.Second))
	defer cancel()
	// An empty cancel request changes nothing; any answer, even a refusal,
	// shows the executor is there. Only an unreachable one is lost.
	_, err := e.client.CancelTasks(ctx, &rpc.CancelTasksRequest{})
	if c := status.Code(err); (c == codes.Unavailable || c == codes.DeadlineExceeded) && s.ctx.Err() == nil {
		s.executorLost(id, "unreachable: "+err.Error())
	}
}

// GetClusterState lists executors and unfinished jobs. The caller's own
// jobs come in full; other sessions' show only their ID, state and
// progress (no plan, locations or settings), unless the caller presents
// the operator's token. No listing carries another job's secret.
func (s *Scheduler) GetClusterState(ctx context.Context, req *rpc.GetClusterStateRequest) (*rpc.ClusterState, error) {
	admin := s.cfg.Security.IsAdmin(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	cs := &rpc.ClusterState{Policy: s.cfg.Policy}
	ids := make([]string, 0, len(s.executors))
	for id := range s.executors {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		e := s.executors[id]
		cs.Executors = append(cs.Executors, &rpc.ExecutorState{Meta: e.meta, FreeVcores: int32(s.freeLocked(id)), LastHeartbeatUnixMs: e.lastSeen.UnixMilli()})
	}
	for _, j := range s.order {
		switch {
		case s.ownedLocked(ctx, j.id) != nil:
			cs.RunningJobs = append(cs.RunningJobs, s.statusLocked(j))
		case admin:
			st := s.statusLocked(j)
			st.JobSecret, st.FinalCapabilities = "", nil
			cs.RunningJobs = append(cs.RunningJobs, st)
		default:
			cs.RunningJobs = append(cs.RunningJobs, &rpc.JobStatus{JobId: j.id, State: j.state, Progress: j.graph.Progress()})
		}
	}
	return cs, nil
}
