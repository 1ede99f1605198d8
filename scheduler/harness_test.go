package scheduler

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"

	"sluice/rpc"
	"sluice/scheduler/internal/testdb"
)

// harness serves a Scheduler over an in-process gRPC connection and
// dials fake executors instead of real ones.
type harness struct {
	t      *testing.T
	sched  *Scheduler
	client rpc.SchedulerServiceClient

	mu    sync.Mutex
	execs map[string]*fakeExecutor // by grpc address
}

func newHarness(t *testing.T, cfg Config) *harness {
	t.Helper()
	h := &harness{t: t, execs: map[string]*fakeExecutor{}}
	cfg.Dial = h.dial
	cfg.Exchanges = fakeExchanges{}
	cfg.Encode = fakeEncode
	cfg.Catalog = testdb.Catalog(t)
	h.sched = New(cfg)
	lis := bufconn.Listen(1 << 20)
	srv := grpc.NewServer()
	rpc.RegisterSchedulerServiceServer(srv, h.sched)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = srv.Serve(lis)
	}()
	conn, err := grpc.NewClient("passthrough:///bufnet",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()), rpc.SessionCredentials("harness-session"))
	if err != nil {
		t.Fatal(err)
	}
	h.client = rpc.NewSchedulerServiceClient(conn)
	t.Cleanup(func() {
		h.mu.Lock()
		execs := h.execs
		h.mu.Unlock()
		for _, e := range execs {
			e.shutdown()
		}
		_ = conn.Close()
		srv.Stop()
		wg.Wait()
		h.sched.Close()
	})
	return h
}

func (h *harness) dial(addr string) (rpc.ExecutorServiceClient, func() error, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	e := h.execs[addr]
	if e == nil {
		return nil, nil, errors.New("no fake executor at " + addr)
	}
	return e, func() error { return nil }, nil
}

// behaviour decides what a fake executor reports for a task; nil means the
// task hangs until cancelled.
type behaviour func(task *rpc.TaskDefinition, executorID string) *rpc.TaskStatus

func succeed(task *rpc.TaskDefinition, id string) *rpc.TaskStatus { return success(task, id) }

// fakeExecutor registers with the scheduler, heartbeats, runs tasks by
// reporting what its behaviour says, and records the control calls it
// receives. It implements rpc.ExecutorServiceClient directly: the
// scheduler's dialer hands it out.
type fakeExecutor struct {
	h      *harness
	id     string
	vcores int
	pull   bool
	act    behaviour

	mu       sync.Mutex
	silent   bool // vanished: no heartbeats, no reports, launches swallowed
	refuse   bool // LaunchTasks fails as if the executor were unreachable
	busy     int  // vcores held by tasks not yet reported (pull policy)
	launched []*rpc.TaskDefinition
	cancels  []*rpc.CancelTasksRequest
	removed  []string

	stop chan struct{}
	wg   sync.WaitGroup
}

func (h *harness) addExecutor(id string, vcores int, pull bool, act behaviour) *fakeExecutor {
	h.t.Helper()
	e := &fakeExecutor{h: h, id: id, vcores: vcores, pull: pull, act: act, stop: make(chan struct{})}
	h.mu.Lock()
	h.execs[id+":grpc"] = e
	h.mu.Unlock()
	if err := e.register(); err != nil {
		h.t.Fatal(err)
	}
	e.wg.Add(1)
	go e.loop()
	return e
}

func (e *fakeExecutor) register() error {
	_, err := e.h.client.RegisterExecutor(context.Background(), &rpc.RegisterExecutorRequest{Meta: &rpc.ExecutorMetadata{
		Id: e.id, GrpcAddress: e.id + ":grpc", FlightAddress: e.id + ":flight", Vcores: int32(e.vcores),
	}})
	return err
}

// loop heartbeats and, under the pull policy, polls for work.
func (e *fakeExecutor) loop() {
	defer e.wg.Done()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-e.stop:
			return
		case <-tick.C:
		}
		e.mu.Lock()
		silent, free := e.silent, e.vcores-e.busy
		e.mu.Unlock()
		if silent {
			continue
		}
		ctx := context.Background()
		hb, err := e.h.client.Heartbeat(ctx, &rpc.HeartbeatRequest{ExecutorId: e.id, FreeVcores: int32(free)})
		if err == nil && hb.Reregister {
			_ = e.register()
		}
		if !e.pull || free <= 0 {
			continue
		}
		resp, err := e.h.client.PollWork(ctx, &rpc.PollWorkRequest{ExecutorId: e.id, FreeVcores: int32(free)})
		if err != nil {
			continue
		}
		e.start(resp.Tasks)
	}
}

func (e *fakeExecutor) start(tasks []*rpc.TaskDefinition) {
	for _, task := range tasks {
		e.mu.Lock()
		e.launched = append(e.launched, task)
		e.busy += int(task.Vcores)
		silent := e.silent
		e.mu.Unlock()
		if silent {
			continue
		}
		st := e.act(task, e.id)
		if st == nil {
			continue
		}
		e.wg.Add(1)
		go func() {
			defer e.wg.Done()
			_, _ = e.h.client.UpdateTaskStatus(context.Background(), &rpc.UpdateTaskStatusRequest{ExecutorId: e.id, Statuses: []*rpc.TaskStatus{st}})
			e.mu.Lock()
			e.busy -= int(task.Vcores)
			e.mu.Unlock()
		}()
	}
}

func (e *fakeExecutor) vanish() {
	e.mu.Lock()
	e.silent = true
	e.mu.Unlock()
}

func (e *fakeExecutor) shutdown() {
	select {
	case <-e.stop:
	default:
		close(e.stop)
	}
	e.wg.Wait()
}

func (e *fakeExecutor) tasks() []*rpc.TaskDefinition {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]*rpc.TaskDefinition(nil), e.launched...)
}

func (e *fakeExecutor) removedJobs() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.removed...)
}

func (e *fakeExecutor) cancelled() []*rpc.CancelTasksRequest {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]*rpc.CancelTasksRequest(nil), e.cancels...)
}

func (e *fakeExecutor) LaunchTasks(ctx context.Context, in *rpc.LaunchTasksRequest, _ ...grpc.CallOption) (*rpc.LaunchTasksResponse, error) {
	e.mu.Lock()
	refuse := e.refuse
	e.mu.Unlock()
	if refuse {
		return nil, status.Error(codes.Unavailable, "connection refused")
	}
	e.start(in.Tasks)
	return &rpc.LaunchTasksResponse{}, nil
}

func (e *fakeExecutor) CancelTasks(ctx context.Context, in *rpc.CancelTasksRequest, _ ...grpc.CallOption) (*rpc.CancelTasksResponse, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.cancels = append(e.cancels, in)
	return &rpc.CancelTasksResponse{}, nil
}

func (e *fakeExecutor) RemoveJobData(ctx context.Context, in *rpc.RemoveJobDataRequest, _ ...grpc.CallOption) (*rpc.RemoveJobDataResponse, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.removed = append(e.removed, in.JobId)
	return &rpc.RemoveJobDataResponse{}, nil
}

func (e *fakeExecutor) PushDynamicFilters(ctx context.Context, in *rpc.PushDynamicFiltersRequest, _ ...grpc.CallOption) (*rpc.PushDynamicFiltersResponse, error) {
	return &rpc.PushDynamicFiltersResponse{}, nil
}

var _ rpc.ExecutorServiceClient = (*fakeExecutor)(nil)

// blocking are the settings of a blocking query with 4 partitions. The
// fake executors' files are all of 0 bytes, which adaptive execution
// would coalesce into one partition, so it is off unless a test turns it
// on (adaptive_test.go).
func blocking(extra ...string) map[string]string {
	m := map[string]string{"execution.mode": "blocking", "execution.target_partitions": "4", "execution.adaptive": "off"}
	for i := 0; i+1 < len(extra); i += 2 {
		m[extra[i]] = extra[i+1]
	}
	return m
}

// execute runs one statement and collects its status stream.
func (h *harness) execute(sql string, settings map[string]string) []*rpc.JobStatus {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	stream, err := h.client.ExecuteQuery(ctx, &rpc.ExecuteQueryRequest{Sql: sql, Settings: settings})
	if err != nil {
		h.t.Fatal(err)
	}
	var out []*rpc.JobStatus
	for {
		st, err := stream.Recv()
		if err == io.EOF {
			return out
		}
		if err != nil {
			h.t.Fatalf("%s: status stream: %v", sql, err)
		}
		out = append(out, st)
	}
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
