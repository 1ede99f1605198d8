package cluster

import (
	"bytes"
	"context"
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"sluice/physical"
	"sluice/rpc"
	"sluice/scheduler"
)

// localCalls carries the control calls between the scheduler and the
// executors of one process (an embedded cluster's) as Go calls instead of
// loopback gRPC. Every stage of a blocking job costs a LaunchTasks and an
// UpdateTaskStatus on its critical path; over loopback gRPC each was a
// quarter of a millisecond of CPU and more of latency (TPC-DS q11, 13
// stages: 25 runs in one process, blocking 3.84 → 3.50 s).
//
// A server is reachable only while it serves: the scheduler from its start
// until it begins to close, an executor from when it listens until it
// begins to stop (a kill included). A call to a server not (or no longer)
// here goes over gRPC, as it did before, so a stopped executor's calls
// fail as they would from another process. A direct call behaves as the
// gRPC call would: the handler gets a copy of the request and runs in its
// own goroutine, the caller gets a copy of the response, returns when its
// context ends even if the handler has not, and sees a panic or an error
// as the gRPC status the server would have sent. What it skips is the
// token check: both ends are this process.
type localCalls struct {
	mu    sync.RWMutex
	sched rpc.SchedulerServiceServer
	execs map[string]rpc.ExecutorServiceServer // by control (gRPC) address
	calls atomic.Int64
	// sessionCalls counts the calls of sessions (local_session.go), which
	// calls counts too.
	sessionCalls atomic.Int64
}

func newLocalCalls() *localCalls {
	return &localCalls{execs: map[string]rpc.ExecutorServiceServer{}}
}

func (l *localCalls) setScheduler(s rpc.SchedulerServiceServer) {
	l.mu.Lock()
	l.sched = s
	l.mu.Unlock()
}

func (l *localCalls) scheduler() rpc.SchedulerServiceServer {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.sched
}

func (l *localCalls) addExecutor(addr string, s rpc.ExecutorServiceServer) {
	l.mu.Lock()
	l.execs[addr] = s
	l.mu.Unlock()
}

func (l *localCalls) removeExecutor(addr string) {
	l.mu.Lock()
	delete(l.execs, addr)
	l.mu.Unlock()
}

func (l *localCalls) executor(addr string) rpc.ExecutorServiceServer {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.execs[addr]
}

// Calls is how many calls went directly so far.
func (l *localCalls) Calls() int64 { return l.calls.Load() }

// dialer is the scheduler's way to executors: directly to those of this
// process, over gRPC (with sec) to the others.
func (l *localCalls) dialer(sec *rpc.Security) scheduler.Dialer {
	return func(addr string) (rpc.ExecutorServiceClient, func() error, error) {
		c, closeConn, err := scheduler.DialGRPC(addr, sec)
		if err != nil {
			return nil, nil, err
		}
		return &localExecutorClient{ExecutorServiceClient: c, addr: addr, local: l}, closeConn, nil
	}
}

// direct calls h as a gRPC call would reach it (see localCalls).
func direct[Req, Resp proto.Message](ctx context.Context, l *localCalls, in Req, h func(context.Context, Req) (Resp, error)) (Resp, error) {
	return directCopy(ctx, l, in, func(in Req) Req { return proto.Clone(in).(Req) }, h)
}

// directCopy is direct with the request copied by cp.
func directCopy[Req, Resp proto.Message](ctx context.Context, l *localCalls, in Req, cp func(Req) Req, h func(context.Context, Req) (Resp, error)) (Resp, error) {
	var zero Resp
	if err := ctx.Err(); err != nil {
		return zero, status.FromContextError(err).Err()
	}
	req := cp(in)
	type result struct {
		resp Resp
		err  error
	}
	done := make(chan result, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- result{err: status.Error(codes.Internal, physical.Recovered(r).Error())}
			}
		}()
		resp, err := h(ctx, req)
		done <- result{resp: resp, err: err}
	}()
	select {
	case r := <-done:
		l.calls.Add(1)
		if r.err != nil {
			return zero, status.Convert(r.err).Err()
		}
		return proto.Clone(r.resp).(Resp), nil
	case <-ctx.Done():
		return zero, status.FromContextError(ctx.Err()).Err()
	}
}

// localExecutorClient is the scheduler's client of one executor: direct
// while the executor serves in this process, gRPC otherwise.
type localExecutorClient struct {
	rpc.ExecutorServiceClient
	addr  string
	local *localCalls
}

func (c *localExecutorClient) LaunchTasks(ctx context.Context, in *rpc.LaunchTasksRequest, opts ...grpc.CallOption) (*rpc.LaunchTasksResponse, error) {
	if s := c.local.executor(c.addr); s != nil {
		return directCopy(ctx, c.local, in, launchCopy, s.LaunchTasks)
	}
	return c.ExecutorServiceClient.LaunchTasks(ctx, in, opts...)
}

// launchCopy is the copy of a LaunchTasks request a direct call hands the
// executor: every field copied, as gRPC's encoding would, except each
// task's stage plan, which the copy shares. A stage plan is not changed
// once encoded (the scheduler replaces a stage's plan when it resolves
// the stage again; the executor only decodes it), and copying its tree
// for every task was a large part of the cost of a small stage. The
// other fields are copied one by one (proto.Clone's reflection was most
// of what remained): TestLaunchCopySharesOnlyThePlan fails when a field
// is added to either message and not here.
func launchCopy(in *rpc.LaunchTasksRequest) *rpc.LaunchTasksRequest {
	out := &rpc.LaunchTasksRequest{Tasks: make([]*rpc.TaskDefinition, len(in.Tasks))}
	for i, t := range in.Tasks {
		out.Tasks[i] = taskCopy(t)
	}
	return out
}

func taskCopy(t *rpc.TaskDefinition) *rpc.TaskDefinition {
	if t == nil {
		return nil
	}
	return &rpc.TaskDefinition{
		Id:               cloneMessage(t.Id),
		Partitions:       slices.Clone(t.Partitions),
		Plan:             t.Plan, // shared: see launchCopy
		Settings:         maps.Clone(t.Settings),
		Vcores:           t.Vcores,
		Analyze:          t.Analyze,
		JobSecret:        t.JobSecret,
		ClientOutput:     t.ClientOutput,
		OutputKey:        bytes.Clone(t.OutputKey),
		ReadCapabilities: cloneMessages(t.ReadCapabilities),
		DynamicFilters:   cloneMessages(t.DynamicFilters),
	}
}

// cloneMessage is proto.Clone keeping m's type, nil for nil.
func cloneMessage[M proto.Message](m M) M {
	var zero M
	if !m.ProtoReflect().IsValid() {
		return zero
	}
	return proto.Clone(m).(M)
}

func cloneMessages[M proto.Message](ms []M) []M {
	if ms == nil {
		return nil
	}
	out := make([]M, len(ms))
	for i, m := range ms {
		out[i] = cloneMessage(m)
	}
	return out
}

func (c *localExecutorClient) CancelTasks(ctx context.Context, in *rpc.CancelTasksRequest, opts ...grpc.CallOption) (*rpc.CancelTasksResponse, error) {
	if s := c.local.executor(c.addr); s != nil {
		return direct(ctx, c.local, in, s.CancelTasks)
	}
	return c.ExecutorServiceClient.CancelTasks(ctx, in, opts...)
}

func (c *localExecutorClient) RemoveJobData(ctx context.Context, in *rpc.RemoveJobDataRequest, opts ...grpc.CallOption) (*rpc.RemoveJobDataResponse, error) {
	if s := c.local.executor(c.addr); s != nil {
		return direct(ctx, c.local, in, s.RemoveJobData)
	}
	return c.ExecutorServiceClient.RemoveJobData(ctx, in, opts...)
}

func (c *localExecutorClient) PushDynamicFilters(ctx context.Context, in *rpc.PushDynamicFiltersRequest, opts ...grpc.CallOption) (*rpc.PushDynamicFiltersResponse, error) {
	if s := c.local.executor(c.addr); s != nil {
		return direct(ctx, c.local, in, s.PushDynamicFilters)
	}
	return c.ExecutorServiceClient.PushDynamicFilters(ctx, in, opts...)
}

// localSchedulerClient is an executor's client of the scheduler: direct
// while the scheduler serves in this process and the executor has not
// begun to stop (alive), gRPC otherwise. Registration stays on gRPC,
// where the scheduler server logs it.
type localSchedulerClient struct {
	rpc.SchedulerServiceClient
	local *localCalls
	alive func() bool
}

func (c *localSchedulerClient) server() rpc.SchedulerServiceServer {
	if !c.alive() {
		return nil
	}
	return c.local.scheduler()
}

func (c *localSchedulerClient) UpdateTaskStatus(ctx context.Context, in *rpc.UpdateTaskStatusRequest, opts ...grpc.CallOption) (*rpc.UpdateTaskStatusResponse, error) {
	if s := c.server(); s != nil {
		return direct(ctx, c.local, in, s.UpdateTaskStatus)
	}
	return c.SchedulerServiceClient.UpdateTaskStatus(ctx, in, opts...)
}

func (c *localSchedulerClient) Heartbeat(ctx context.Context, in *rpc.HeartbeatRequest, opts ...grpc.CallOption) (*rpc.HeartbeatResponse, error) {
	if s := c.server(); s != nil {
		return direct(ctx, c.local, in, s.Heartbeat)
	}
	return c.SchedulerServiceClient.Heartbeat(ctx, in, opts...)
}

func (c *localSchedulerClient) PollWork(ctx context.Context, in *rpc.PollWorkRequest, opts ...grpc.CallOption) (*rpc.PollWorkResponse, error) {
	if s := c.server(); s != nil {
		return direct(ctx, c.local, in, s.PollWork)
	}
	return c.SchedulerServiceClient.PollWork(ctx, in, opts...)
}
