package cluster

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"sluice/physical/mempool"
	"sluice/rpc"
)

// fakeScheduler records what an executor tells it.
type fakeScheduler struct {
	rpc.UnimplementedSchedulerServiceServer
	statuses chan *rpc.TaskStatus

	mu            sync.Mutex
	registrations int
	forget        bool // answer the next heartbeat with reregister
}

func (f *fakeScheduler) RegisterExecutor(ctx context.Context, req *rpc.RegisterExecutorRequest) (*rpc.RegisterExecutorResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.registrations++
	return &rpc.RegisterExecutorResponse{}, nil
}

func (f *fakeScheduler) Heartbeat(ctx context.Context, req *rpc.HeartbeatRequest) (*rpc.HeartbeatResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.forget
	f.forget = false
	return &rpc.HeartbeatResponse{Reregister: r}, nil
}

func (f *fakeScheduler) UpdateTaskStatus(ctx context.Context, req *rpc.UpdateTaskStatusRequest) (*rpc.UpdateTaskStatusResponse, error) {
	for _, st := range req.Statuses {
		f.statuses <- st
	}
	return &rpc.UpdateTaskStatusResponse{}, nil
}

func (f *fakeScheduler) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.registrations
}

// startWithFake starts an executor (2 vcores) registered with a fake
// scheduler and returns a client of its control service.
func startWithFake(t *testing.T, hook func(*rpc.TaskDefinition) error) (*Executor, *fakeScheduler, rpc.ExecutorServiceClient) {
	t.Helper()
	fake := &fakeScheduler{statuses: make(chan *rpc.TaskStatus, 16)}
	srv := grpc.NewServer()
	rpc.RegisterSchedulerServiceServer(srv, fake)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = srv.Serve(lis)
	}()
	t.Cleanup(func() {
		srv.Stop()
		wg.Wait()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	x, err := StartExecutor(ctx, ExecutorConfig{
		SchedulerAddr: lis.Addr().String(), BindAddr: "127.0.0.1:0", FlightAddr: "127.0.0.1:0",
		Vcores: 2, WorkDir: t.TempDir(), ID: "x1", HeartbeatInterval: 50 * time.Millisecond, TaskFailureHook: hook,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(x.Close)
	conn, err := grpc.NewClient(x.GRPCAddress(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return x, fake, rpc.NewExecutorServiceClient(conn)
}

func task(job string, id int32, vcores int32) *rpc.TaskDefinition {
	return &rpc.TaskDefinition{Id: &rpc.TaskId{JobId: job, StageId: 1, TaskId: id}, Partitions: []int32{0}, Vcores: vcores, JobSecret: "secret of " + job}
}

func nextStatus(t *testing.T, f *fakeScheduler) *rpc.TaskStatus {
	t.Helper()
	select {
	case st := <-f.statuses:
		return st
	case <-time.After(10 * time.Second):
		t.Fatal("no task status reported")
		return nil
	}
}

func TestExecutorQueuesCancelsAndReportsTasks(t *testing.T) {
	checkGoroutines(t)
	entered, release := make(chan struct{}), make(chan struct{})
	hook := func(def *rpc.TaskDefinition) error {
		if def.Id.JobId == "j" && def.Id.TaskId == 0 {
			close(entered)
			<-release
		}
		return nil
	}
	x, fake, c := startWithFake(t, hook)
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	t.Cleanup(unblock) // before the executor's Close, which waits for task 0
	ctx := testContext(t, 20*time.Second)
	// Task 0 takes both vcores and hangs in the hook; task 1 waits for
	// slots until it is cancelled.
	if _, err := c.LaunchTasks(ctx, &rpc.LaunchTasksRequest{Tasks: []*rpc.TaskDefinition{task("j", 0, 2)}}); err != nil {
		t.Fatal(err)
	}
	<-entered
	if _, err := c.LaunchTasks(ctx, &rpc.LaunchTasksRequest{Tasks: []*rpc.TaskDefinition{task("j", 1, 2)}}); err != nil {
		t.Fatal(err)
	}
	if n := x.RunningTasks(); n != 2 {
		t.Fatalf("%d tasks accepted, want 2", n)
	}
	if _, err := c.CancelTasks(ctx, &rpc.CancelTasksRequest{Tasks: []*rpc.TaskId{task("j", 1, 2).Id}}); err != nil {
		t.Fatal(err)
	}
	st := nextStatus(t, fake)
	if st.Id.TaskId != 1 || st.State != rpc.TaskState_TASK_CANCELLED || st.ExecutorId != "x1" {
		t.Fatalf("got %v, want task 1 cancelled on x1", st)
	}
	// Task 0 has no plan: once released it fails with a clear error.
	unblock()
	st = nextStatus(t, fake)
	if st.Id.TaskId != 0 || st.State != rpc.TaskState_TASK_FAILED || !strings.Contains(st.Error, "decoding the stage plan") {
		t.Fatalf("got %v, want task 0 failed decoding its plan", st)
	}
	waitFor(t, "no tasks", func() bool { return x.RunningTasks() == 0 })

	// Tasks of a job whose data was removed are refused.
	if _, err := c.RemoveJobData(ctx, &rpc.RemoveJobDataRequest{JobId: "j", JobSecret: "secret of j"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.LaunchTasks(ctx, &rpc.LaunchTasksRequest{Tasks: []*rpc.TaskDefinition{task("j", 2, 1)}}); err != nil {
		t.Fatal(err)
	}
	if n := x.RunningTasks(); n != 0 {
		t.Errorf("%d tasks of a removed job accepted", n)
	}

	// A task that cannot be set up fails alone; the executor carries on.
	bad := task("k", 0, 1)
	bad.Settings = map[string]string{"execution.batch_size": "many"}
	bad.Plan = &rpc.PhysicalPlan{}
	if _, err := c.LaunchTasks(ctx, &rpc.LaunchTasksRequest{Tasks: []*rpc.TaskDefinition{bad}}); err != nil {
		t.Fatal(err)
	}
	if st := nextStatus(t, fake); st.State != rpc.TaskState_TASK_FAILED {
		t.Errorf("got %v, want failed", st)
	}
}

func TestExecutorRegistersAgainWhenForgotten(t *testing.T) {
	_, fake, _ := startWithFake(t, nil)
	fake.mu.Lock()
	fake.forget = true
	fake.mu.Unlock()
	waitFor(t, "a second registration", func() bool { return fake.count() >= 2 })
}

func TestExecutorCloseAndKill(t *testing.T) {
	for _, kill := range []bool{false, true} {
		x, _, c := startWithFake(t, nil)
		if kill {
			x.Kill()
		} else {
			x.Close()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := c.LaunchTasks(ctx, &rpc.LaunchTasksRequest{})
		cancel()
		if err == nil {
			t.Errorf("kill=%v: the control service still answers", kill)
		}
		x.Close() // idempotent
	}
}

func TestAdvertised(t *testing.T) {
	addr := &net.TCPAddr{IP: net.IPv6unspecified, Port: 4242}
	for _, tt := range []struct{ bind, host, want string }{
		{":0", "", "127.0.0.1:4242"},
		{"0.0.0.0:0", "", "127.0.0.1:4242"},
		{"10.1.2.3:0", "", "10.1.2.3:4242"},
		{":0", "exec7.internal", "exec7.internal:4242"},
	} {
		if got := advertised(addr, tt.bind, tt.host); got != tt.want {
			t.Errorf("advertised(%s, %q) = %s, want %s", tt.bind, tt.host, got, tt.want)
		}
	}
}

// TestExecutorLearnsSchedulerPolicy: an executor started without a policy
// takes the scheduler's; one started with another fails with why, instead
// of registering and leaving blocking jobs queued for good.
func TestExecutorLearnsSchedulerPolicy(t *testing.T) {
	sched, err := StartScheduler(SchedulerConfig{Policy: PolicyPull})
	if err != nil {
		t.Fatal(err)
	}
	defer sched.Close()
	ctx := context.Background()
	start := func(policy string) (*Executor, error) {
		return StartExecutor(ctx, ExecutorConfig{SchedulerAddr: sched.Addr(), BindAddr: "127.0.0.1:0", FlightAddr: "127.0.0.1:0",
			Vcores: 1, WorkDir: t.TempDir(), Policy: policy, HeartbeatInterval: 50 * time.Millisecond})
	}
	if _, err := start(PolicyPush); err == nil || !strings.Contains(err.Error(), "does not match the scheduler's (pull)") {
		t.Errorf("a push executor under a pull scheduler: %v, want a policy mismatch", err)
	}
	x, err := start("")
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if x.cfg.Policy != PolicyPull {
		t.Errorf("executor policy %q, want the scheduler's pull", x.cfg.Policy)
	}
	cs, err := sched.Scheduler().GetClusterState(ctx, &rpc.GetClusterStateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cs.Executors) != 1 {
		t.Errorf("%d executors registered, want the one that follows the scheduler", len(cs.Executors))
	}
}

// TestExecutorRemovesStaleJobData: job directories an earlier executor
// process left in the work dir are removed at start; anything else there
// is left alone.
func TestExecutorRemovesStaleJobData(t *testing.T) {
	sched, err := StartScheduler(SchedulerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer sched.Close()
	work := t.TempDir()
	stale := filepath.Join(work, "0a1b2c3d-17", "1", "0")
	if err := os.MkdirAll(stale, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(stale, "data-0.arrow"), make([]byte, 1000), 0o644); err != nil {
		t.Fatal(err)
	}
	keep := []string{filepath.Join(work, "notes"), filepath.Join(work, "deadbeef-x")}
	for _, k := range keep {
		if err := os.MkdirAll(k, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	x, err := StartExecutor(context.Background(), ExecutorConfig{SchedulerAddr: sched.Addr(), BindAddr: "127.0.0.1:0", FlightAddr: "127.0.0.1:0",
		Vcores: 1, WorkDir: work})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if _, err := os.Stat(filepath.Join(work, "0a1b2c3d-17")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a stale job directory survived the executor's start: %v", err)
	}
	for _, k := range keep {
		if _, err := os.Stat(k); err != nil {
			t.Errorf("%s, which is no job's, was removed: %v", k, err)
		}
	}
}

// TestExecutorMemoryLimit: by default an executor caps what its tasks
// reserve at three quarters of the machine's memory; a configured limit
// replaces that, and a negative one removes the cap.
func TestExecutorMemoryLimit(t *testing.T) {
	sched, err := StartScheduler(SchedulerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer sched.Close()
	for _, c := range []struct{ configured, want int64 }{
		{0, mempool.DefaultLimit()},
		{1 << 30, 1 << 30},
		{-1, 0},
	} {
		x, err := StartExecutor(context.Background(), ExecutorConfig{SchedulerAddr: sched.Addr(), BindAddr: "127.0.0.1:0", FlightAddr: "127.0.0.1:0",
			Vcores: 1, WorkDir: t.TempDir(), MemoryLimit: c.configured})
		if err != nil {
			t.Fatal(err)
		}
		if got := x.memory.Limit(); got != c.want {
			t.Errorf("MemoryLimit %d: pool limit %d, want %d", c.configured, got, c.want)
		}
		x.Close()
	}
	if mempool.DefaultLimit() <= 0 {
		t.Errorf("no default memory limit on this machine")
	}
}

// runUnreleased runs a blocking query on the scheduler at addr and leaves
// its job unreleased: its final stage's files stay on the executors.
func runUnreleased(t *testing.T, addr string) string {
	t.Helper()
	j, err := newTestClient(t, addr, nil).submit(context.Background(), "SELECT x, x * 2 AS y FROM generate_series(1, 300000) t(x)", nil)
	if err != nil {
		t.Fatal(err)
	}
	st, err := j.wait()
	if err != nil {
		t.Fatal(err)
	}
	return st.JobId
}

// waitGone waits up to 10s for path to be removed.
func waitGone(t *testing.T, path, what string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; {
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s (%s) is still there after 30s", what, path)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestExecutorSweepsDeadJobData: job data untouched for JobDataMaxAge is
// removed when the scheduler no longer knows its job (its cleanup call was
// lost), and kept while the scheduler knows it, however old (a client is
// still to read it).
func TestExecutorSweepsDeadJobData(t *testing.T) {
	for _, c := range heldCases {
		t.Run(c.name, func(t *testing.T) {
			sched, err := StartScheduler(SchedulerConfig{})
			if err != nil {
				t.Fatal(err)
			}
			defer sched.Close()
			work := t.TempDir()
			x, err := StartExecutor(context.Background(), ExecutorConfig{SchedulerAddr: sched.Addr(), BindAddr: "127.0.0.1:0", FlightAddr: "127.0.0.1:0",
				Vcores: 2, WorkDir: work, HeartbeatInterval: 20 * time.Millisecond, JobDataMaxAge: 100 * time.Millisecond, HeldOutputBytes: c.held})
			if err != nil {
				t.Fatal(err)
			}
			defer x.Close()
			live := runUnreleased(t, sched.Addr())
			if !holdsJob(x, live) {
				t.Fatalf("the unreleased job left no data (%s)", c.name)
			}
			dead := filepath.Join(work, "0a1b2c3d-9")
			if err := os.MkdirAll(filepath.Join(dead, "1"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dead, "1", "data-0-0.arrow"), make([]byte, 100), 0o644); err != nil {
				t.Fatal(err)
			}
			waitGone(t, dead, "data of a job the scheduler does not know")
			// By now the live job's data is older than JobDataMaxAge too.
			time.Sleep(300 * time.Millisecond)
			if !holdsJob(x, live) {
				t.Errorf("the data of a job the scheduler knows was removed (%s)", c.name)
			}
		})
	}
}

// heldCases run a test with the executor's outputs written to files and
// held in memory.
var heldCases = []struct {
	name string
	held int64
}{{"files", -1}, {"held", 0}}

// holdsJob reports whether x holds output of job: held in memory, or in
// the job's directory.
func holdsJob(x *Executor, job string) bool {
	if slices.Contains(x.env.Held.Jobs(0, time.Now()), job) {
		return true
	}
	_, err := os.Stat(filepath.Join(x.WorkDir(), job))
	return err == nil
}

// waitReleased waits up to 30s for x to hold nothing of job.
func waitReleased(t *testing.T, x *Executor, job, what string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); holdsJob(x, job); {
		if time.Now().After(deadline) {
			t.Fatalf("%s (job %s) is still there after 30s", what, job)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestExecutorCleansUpAfterSchedulerRestart: the data of a job of a
// scheduler that restarted is no one's; the executor removes it when it
// registers with the new scheduler, which knows none of its jobs.
func TestExecutorCleansUpAfterSchedulerRestart(t *testing.T) {
	for _, c := range heldCases {
		t.Run(c.name, func(t *testing.T) {
			sched, err := StartScheduler(SchedulerConfig{})
			if err != nil {
				t.Fatal(err)
			}
			addr := sched.Addr()
			work := t.TempDir()
			x, err := StartExecutor(context.Background(), ExecutorConfig{SchedulerAddr: addr, BindAddr: "127.0.0.1:0", FlightAddr: "127.0.0.1:0",
				Vcores: 2, WorkDir: work, HeartbeatInterval: 20 * time.Millisecond, HeldOutputBytes: c.held})
			if err != nil {
				t.Fatal(err)
			}
			defer x.Close()
			old := runUnreleased(t, addr)
			if !holdsJob(x, old) {
				t.Fatalf("the unreleased job left no data (%s)", c.name)
			}
			sched.Close()
			// Down long enough that the executor's heartbeats fail and its
			// connection backs off before the scheduler is back.
			time.Sleep(300 * time.Millisecond)
			restarted, err := StartScheduler(SchedulerConfig{Bind: addr})
			if err != nil {
				t.Fatal(err)
			}
			defer restarted.Close()
			waitReleased(t, x, old, "data of the earlier scheduler's job")
			cs, err := restarted.Scheduler().GetClusterState(context.Background(), &rpc.GetClusterStateRequest{})
			if err != nil {
				t.Fatal(err)
			}
			if len(cs.Executors) != 1 {
				t.Errorf("%d executors registered with the restarted scheduler, want 1", len(cs.Executors))
			}
		})
	}
}

// TestHeldOutputBytes: the budget for held outputs is the configured one,
// none when negative, and by default an eighth of the memory limit, at
// most defaultHeldOutputBytes.
func TestHeldOutputBytes(t *testing.T) {
	for _, c := range []struct{ configured, limit, want int64 }{
		{-1, 1 << 30, 0},
		{5000, 1 << 30, 5000},
		{0, 1 << 30, 1 << 27},
		{0, 64 << 30, defaultHeldOutputBytes},
		{0, 0, defaultHeldOutputBytes},
	} {
		if got := heldOutputBytes(c.configured, c.limit); got != c.want {
			t.Errorf("heldOutputBytes(%d, %d) = %d, want %d", c.configured, c.limit, got, c.want)
		}
	}
}
