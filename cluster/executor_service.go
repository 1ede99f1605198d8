package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"sluice/exchange"
	"sluice/rpc"
)

// removedJobTTL is how long an executor remembers that a job's data was
// removed, refusing tasks of that job launched late (the launch raced with
// the job's end), so they cannot write files nobody would remove.
const removedJobTTL = time.Hour

// executorService is the executor's control service. It is a separate
// type so that Executor's exported methods stay its Go API.
type executorService struct {
	rpc.UnimplementedExecutorServiceServer
	e *Executor
}

// LaunchTasks accepts tasks pushed by the scheduler. It returns at once;
// each task reports its outcome through UpdateTaskStatus. An error means
// the executor is going away, and the scheduler treats it as lost.
func (s *executorService) LaunchTasks(ctx context.Context, req *rpc.LaunchTasksRequest) (*rpc.LaunchTasksResponse, error) {
	if err := s.e.launch(req.Tasks); err != nil {
		return nil, status.Errorf(codes.Unavailable, "executor %s: %v", s.e.id, err)
	}
	return &rpc.LaunchTasksResponse{}, nil
}

// CancelTasks cancels the listed tasks, or with an empty list every task
// of req.JobId. It does not wait: cancelled tasks report TASK_CANCELLED.
func (s *executorService) CancelTasks(ctx context.Context, req *rpc.CancelTasksRequest) (*rpc.CancelTasksResponse, error) {
	if len(req.Tasks) == 0 {
		if req.JobId == "" {
			return nil, status.Error(codes.InvalidArgument, "cancel tasks: name the tasks or a job")
		}
		if err := s.e.checkJobSecret(req.JobId, req.JobSecret); err != nil {
			return nil, err
		}
		n := len(s.e.cancelTasks(func(rt *runningTask) bool { return rt.key.job == req.JobId }, errTaskCancelled))
		if n > 0 {
			s.e.log.Info("job's tasks cancelled", "job", req.JobId, "tasks", n)
		}
		return &rpc.CancelTasksResponse{}, nil
	}
	want := map[taskKey]bool{}
	for _, id := range req.Tasks {
		want[keyOf(id)] = true
	}
	s.e.cancelTasks(func(rt *runningTask) bool { return want[rt.key] }, errTaskCancelled)
	return &rpc.CancelTasksResponse{}, nil
}

// RemoveJobData cancels the job's remaining tasks, waits for them to stop
// (so none writes a file after the removal), then deletes the job's shuffle
// files and releases its pipelined queues.
func (s *executorService) RemoveJobData(ctx context.Context, req *rpc.RemoveJobDataRequest) (*rpc.RemoveJobDataResponse, error) {
	if req.JobId == "" {
		return nil, status.Error(codes.InvalidArgument, "remove job data: no job id given")
	}
	if err := s.e.checkJobSecret(req.JobId, req.JobSecret); err != nil {
		return nil, err
	}
	if err := s.e.removeJob(ctx, req.JobId); err != nil {
		if errors.Is(err, exchange.ErrInvalidJobID) {
			return nil, status.Error(codes.InvalidArgument, err.Error())
		}
		return nil, status.Error(codes.Internal, err.Error())
	}
	return &rpc.RemoveJobDataResponse{}, nil
}

// checkJobSecret refuses a request about a job this executor knows
// without the job's secret: only the scheduler, which made the secret,
// may cancel a job's tasks or remove its data. A job the executor does
// not know has nothing here to protect.
func (e *Executor) checkJobSecret(job, secret string) error {
	if known, ok := e.env.Secrets.Check(context.Background(), job, secret, 0); known && !ok {
		return status.Errorf(codes.PermissionDenied, "the request does not carry the secret of job %s", job)
	}
	return nil
}

func (e *Executor) removeJob(ctx context.Context, job string) error {
	e.mu.Lock()
	e.removed.Add(job, time.Now())
	e.mu.Unlock()
	for _, rt := range e.cancelTasks(func(rt *runningTask) bool { return rt.key.job == job }, errJobRemoved) {
		select {
		case <-rt.done:
		case <-ctx.Done():
			return fmt.Errorf("removing data of job %s: %s did not stop: %w", job, rt.key, ctx.Err())
		}
	}
	e.dyn.forget(job)
	if err := e.flightSvc.RemoveJob(job); err != nil {
		return err
	}
	e.log.Info("job data removed", "job", job)
	return nil
}
