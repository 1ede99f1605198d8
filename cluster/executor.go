// Package cluster runs sluice's distributed processes: the executor (task
// slots, task runner, control service and Arrow Flight server), the
// standalone scheduler server, and the embedded cluster (a scheduler and N
// executors in one process, talking over loopback gRPC exactly as separate
// processes would).
package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"sluice/exchange"
	"sluice/physical"
	"sluice/physical/mempool"
	"sluice/rpc"
)

// Placement policies, as the scheduler names them.
const (
	PolicyPush = "push"
	PolicyPull = "pull"
)

// ExecutorConfig configures an executor. Zero values take defaults.
type ExecutorConfig struct {
	// SchedulerAddr is the scheduler's gRPC address (host:port).
	SchedulerAddr string
	// BindAddr is where the executor's control service (LaunchTasks,
	// CancelTasks, RemoveJobData) listens; ":0" picks a free port.
	BindAddr string
	// FlightAddr is where the Arrow Flight service serving shuffle files
	// and pipelined queues listens; ":0" picks a free port.
	FlightAddr string
	// AdvertiseHost is the host other processes use to reach this
	// executor. Default: the host of the bind address, or 127.0.0.1 when
	// the bind address has none (":0", "0.0.0.0:0"); set it when executors
	// run on several machines and bind every interface.
	AdvertiseHost string
	// Vcores is how many partitions the executor runs at once (default 2).
	Vcores int
	// WorkDir holds shuffle files (required).
	WorkDir string
	// Compression encodes the executor's shuffle files and Flight streams
	// (default: exchange.CompressLZ4).
	Compression exchange.Compression
	// ID names the executor (default: generated).
	ID string
	// HeartbeatInterval is how often the executor tells the scheduler it is
	// alive (default 2s). Keep it well under the scheduler's executor
	// timeout.
	HeartbeatInterval time.Duration
	// Policy is PolicyPush (the scheduler launches tasks) or PolicyPull
	// (the executor polls for work when it has free vcores); empty follows
	// the scheduler's, which the executor learns when it registers. A
	// policy other than the scheduler's fails the start.
	Policy string
	// MemoryLimit caps what all of the executor's tasks reserve together,
	// in bytes (0: mempool.DefaultLimit, three quarters of the
	// machine's or the cgroup's memory; negative: no cap). A task that
	// would pass it fails with "resources exhausted" instead of the
	// process running out of memory.
	MemoryLimit int64
	// HeldOutputBytes is how many bytes of its blocking tasks' outputs the
	// executor keeps in memory, reserved from its memory limit, instead of
	// writing them to shuffle files (exchange.HeldOutputs; 0: an eighth of
	// its memory limit, at most 256 MiB; negative: none, every output is a
	// file).
	HeldOutputBytes int64
	// Peers are the executors of this process (an embedded cluster's):
	// this one joins them once it serves and leaves as it stops, and its
	// blocking readers take the others' outputs directly rather than over
	// Flight (nil: every other executor is read over Flight).
	Peers *exchange.Peers
	// local, when set, carries the control calls to and from the
	// scheduler of this process directly (an embedded cluster's): the
	// executor joins it once it serves and leaves as it stops.
	local *localCalls
	// PollInterval is how long a pull-mode executor waits after an empty
	// poll (default 100ms).
	PollInterval time.Duration
	// JobDataMaxAge is how long a job's data may sit untouched before the
	// executor's sweep asks the scheduler whether the job is still known,
	// removing it if not (default 1h): the scheduler's own cleanup call
	// can be lost with a connection, or with the scheduler.
	JobDataMaxAge time.Duration
	// TaskFailureHook is for tests: it is called before each task runs, and
	// an error it returns fails that task (a panic is recovered like any
	// task panic).
	TaskFailureHook func(task *rpc.TaskDefinition) error
	// TaskReportHook is for tests: it is called with each task's final
	// status before the executor reports it (to delay the report).
	TaskReportHook func(st *rpc.TaskStatus)
	// Logger receives one line per important event (nil: discarded).
	Logger *slog.Logger
	// Security is the cluster's token and TLS (nil: none): the executor
	// presents the token to the scheduler and to other executors, and its
	// own servers refuse calls without it.
	Security *rpc.Security
}

// Executor runs tasks for a scheduler. Start it with StartExecutor; stop it
// with Close (graceful) or Kill (abrupt).
type Executor struct {
	cfg       ExecutorConfig
	id        string
	log       *slog.Logger
	env       *exchange.Env
	flightSvc *exchange.FlightService
	tables    *physical.TableCache
	memory    *mempool.Pool

	grpcSrv, flightSrv *grpc.Server
	grpcAddr           string
	conn               *grpc.ClientConn
	sched              rpc.SchedulerServiceClient

	// ctx bounds the executor's background work and status reports;
	// stop cancels it.
	ctx  context.Context
	stop context.CancelFunc
	// loops counts the heartbeat and poll loops and the two servers;
	// tasks counts task goroutines.
	loops sync.WaitGroup
	tasks sync.WaitGroup
	// removals counts the deletions of removed jobs' files, which run
	// after RemoveJobData has answered (exchange.Env.RemoveLater).
	removals sync.WaitGroup

	slots *slots
	// dyn holds the cross-stage dynamic filters pushed for running tasks.
	dyn dynamicFilters

	mu      sync.Mutex
	running map[taskKey]*runningTask
	removed *exchange.Remembered // jobs whose data was removed
	closing bool
	once    sync.Once
	// leftLocal: the executor began to stop and no longer calls the
	// scheduler directly (ExecutorConfig.local).
	leftLocal atomic.Bool
}

var _ rpc.ExecutorServiceServer = (*executorService)(nil)

// StartExecutor listens on the configured addresses, registers with the
// scheduler and starts heartbeating (and polling, under the pull policy).
// ctx bounds only the start: registration waits for the scheduler until
// ctx is done.
func StartExecutor(ctx context.Context, cfg ExecutorConfig) (*Executor, error) {
	if cfg.SchedulerAddr == "" {
		return nil, errors.New("executor: no scheduler address given (--scheduler HOST:PORT)")
	}
	if cfg.WorkDir == "" {
		return nil, errors.New("executor: no work dir given (--work-dir DIR)")
	}
	if cfg.Vcores <= 0 {
		cfg.Vcores = 2
	}
	if cfg.ID == "" {
		cfg.ID = newExecutorID()
	}
	if cfg.HeartbeatInterval <= 0 {
		cfg.HeartbeatInterval = 2 * time.Second
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = 100 * time.Millisecond
	}
	if cfg.JobDataMaxAge <= 0 {
		cfg.JobDataMaxAge = time.Hour
	}
	switch cfg.Policy {
	case "", PolicyPush, PolicyPull:
	default:
		return nil, fmt.Errorf("executor: unknown policy %q (expected push or pull)", cfg.Policy)
	}
	if cfg.BindAddr == "" {
		cfg.BindAddr = ":0"
	}
	if cfg.FlightAddr == "" {
		cfg.FlightAddr = ":0"
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	// Shuffle files an earlier process left (it was killed, or stopped
	// before its jobs were cleaned up) are no one's now.
	if dirs, bytes, err := exchange.RemoveStaleJobs(cfg.WorkDir); err != nil {
		log.Warn("removing stale job data failed", "work_dir", cfg.WorkDir, "err", err)
	} else if dirs > 0 {
		log.Info("removed stale job data", "work_dir", cfg.WorkDir, "jobs", dirs, "bytes", bytes)
	}

	grpcLis, err := net.Listen("tcp", cfg.BindAddr)
	if err != nil {
		return nil, fmt.Errorf("executor: listening for the control service on %s: %w", cfg.BindAddr, err)
	}
	flightLis, err := net.Listen("tcp", cfg.FlightAddr)
	if err != nil {
		grpcLis.Close()
		return nil, fmt.Errorf("executor: listening for Flight on %s: %w", cfg.FlightAddr, err)
	}
	for _, b := range []struct{ what, addr string }{{"the executor's control service", cfg.BindAddr}, {"the executor's Flight service", cfg.FlightAddr}} {
		if w := cfg.Security.ExposedWarning(b.what, b.addr); w != "" {
			log.Warn(w)
		}
	}
	grpcAddr := advertised(grpcLis.Addr(), cfg.BindAddr, cfg.AdvertiseHost)
	flightAddr := advertised(flightLis.Addr(), cfg.FlightAddr, cfg.AdvertiseHost)

	conn, err := grpc.NewClient(cfg.SchedulerAddr, append(cfg.Security.DialOptions(), rpc.KeepaliveDialOption(), rpc.ReconnectDialOption())...)
	if err != nil {
		grpcLis.Close()
		flightLis.Close()
		return nil, fmt.Errorf("executor: connecting to scheduler at %s: %w", cfg.SchedulerAddr, err)
	}

	pool := mempool.NewPool("executor "+cfg.ID, memoryLimit(cfg.MemoryLimit), nil).
		WithHint("an executor's tasks take at most its --memory-limit together (default three quarters of the machine's memory); run fewer queries at once or add executors")
	env := &exchange.Env{
		Held:          exchange.NewHeldOutputs(heldOutputBytes(cfg.HeldOutputBytes, pool.Limit()), pool),
		ExecutorID:    cfg.ID,
		FlightAddress: flightAddr,
		WorkDir:       cfg.WorkDir,
		Compression:   cfg.Compression,
		Registry:      exchange.NewRegistry(),
		Clients:       exchange.NewClientPool(cfg.Security),
		Secrets:       exchange.NewJobSecrets(),
		Peers:         cfg.Peers,
	}
	bg, stop := context.WithCancel(context.Background())
	e := &Executor{
		cfg: cfg, id: cfg.ID, log: log.With("executor", cfg.ID),
		env: env, flightSvc: exchange.NewFlightService(env),
		tables: physical.NewTableCache(), memory: pool,
		grpcSrv: newServer(cfg.Security, nil, nil), flightSrv: newServer(cfg.Security, nil, nil), grpcAddr: grpcAddr,
		conn: conn, sched: rpc.NewSchedulerServiceClient(conn),
		ctx: bg, stop: stop, slots: newSlots(cfg.Vcores),
		running: map[taskKey]*runningTask{}, removed: exchange.NewRemembered(removedJobTTL),
	}
	env.RemoveLater = e.removeLater
	svc := &executorService{e: e}
	rpc.RegisterExecutorServiceServer(e.grpcSrv, svc)
	flight.RegisterFlightServiceServer(e.flightSrv, e.flightSvc)
	if cfg.local != nil {
		e.sched = &localSchedulerClient{SchedulerServiceClient: e.sched, local: cfg.local, alive: func() bool { return !e.leftLocal.Load() }}
	}
	e.serve(e.grpcSrv, grpcLis)
	e.serve(e.flightSrv, flightLis)
	if cfg.local != nil {
		cfg.local.addExecutor(grpcAddr, svc)
	}
	if cfg.Peers != nil {
		cfg.Peers.Add(env)
	}

	policy, err := e.register(ctx, true)
	if err != nil {
		e.Kill()
		return nil, err
	}
	switch {
	case cfg.Policy == "" && policy == "":
		// A scheduler that does not say is a push scheduler.
		e.cfg.Policy = PolicyPush
	case cfg.Policy == "":
		e.cfg.Policy = policy
	case policy != "" && policy != cfg.Policy:
		e.Close()
		return nil, fmt.Errorf("executor: policy %s does not match the scheduler's (%s): jobs would wait for work this executor never takes; start it without --policy to follow the scheduler", cfg.Policy, policy)
	}
	cfg = e.cfg
	e.log.Info("executor registered", "scheduler", cfg.SchedulerAddr, "grpc", grpcAddr, "flight", flightAddr,
		"vcores", cfg.Vcores, "policy", cfg.Policy, "work_dir", cfg.WorkDir, "memory_limit", e.memory.Limit())
	e.loops.Add(1)
	go e.heartbeatLoop()
	e.loops.Add(1)
	go func() {
		defer e.loops.Done()
		idleMemory{busy: func() bool { return e.RunningTasks() > 0 }, free: freeOSMemory, delay: idleMemoryDelay, tick: time.Second}.run(e.ctx)
	}()
	if cfg.Policy == PolicyPull {
		e.loops.Add(1)
		go e.pollLoop()
	}
	return e, nil
}

// removeLater deletes a removed job's directory in the background: the
// scheduler's RemoveJobData call, which a client releasing its job waits
// for, returns once the directory is renamed away.
func (e *Executor) removeLater(dir string) {
	e.removals.Add(1)
	go func() {
		defer e.removals.Done()
		if err := os.RemoveAll(dir); err != nil {
			e.log.Warn("deleting a removed job's files failed", "dir", dir, "err", err)
		}
	}()
}

// memoryLimit resolves ExecutorConfig.MemoryLimit to a pool limit (0: none).
func memoryLimit(configured int64) int64 {
	switch {
	case configured < 0:
		return 0
	case configured == 0:
		return mempool.DefaultLimit()
	}
	return configured
}

// defaultHeldOutputBytes caps the default budget for held outputs. They
// stay until their job ends, and what they reserve is what the tasks of
// later stages cannot: an eighth of the executor's memory, and no more
// than this, leaves the tasks nearly all of it.
const defaultHeldOutputBytes = 256 << 20

// heldOutputBytes is the budget for held outputs: the configured one, or
// an eighth of the executor's memory limit, at most
// defaultHeldOutputBytes.
func heldOutputBytes(configured, limit int64) int64 {
	switch {
	case configured < 0:
		return 0
	case configured > 0:
		return configured
	case limit > 0:
		return min(limit/8, defaultHeldOutputBytes)
	}
	return defaultHeldOutputBytes
}

func newExecutorID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return "exec-" + hex.EncodeToString(b[:])
}

// advertised is the address other processes dial for a listener: the
// listener's port with the configured host.
func advertised(a net.Addr, bind, advertiseHost string) string {
	_, port, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	host := advertiseHost
	if host == "" {
		if h, _, err := net.SplitHostPort(bind); err == nil {
			host = h
		}
		if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
			host = "127.0.0.1"
		}
	}
	return net.JoinHostPort(host, port)
}

func (e *Executor) serve(srv *grpc.Server, lis net.Listener) {
	e.loops.Add(1)
	go func() {
		defer e.loops.Done()
		if err := srv.Serve(lis); err != nil {
			e.log.Error("server stopped", "addr", lis.Addr().String(), "err", err)
		}
	}()
}

// ID is the executor's ID.
func (e *Executor) ID() string { return e.id }

// FlightAddress is where the executor's Flight service can be reached.
func (e *Executor) FlightAddress() string { return e.env.FlightAddress }

// GRPCAddress is where the executor's control service can be reached.
func (e *Executor) GRPCAddress() string { return e.grpcAddr }

// WorkDir is the directory holding the executor's shuffle files.
func (e *Executor) WorkDir() string { return e.cfg.WorkDir }

// RunningTasks is how many tasks are queued or running.
func (e *Executor) RunningTasks() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.running)
}

// register tells the scheduler about this executor and the jobs it holds
// data of, removes the data of those the scheduler does not know (it
// restarted since, or released them while this executor was cut off),
// and returns the scheduler's policy. At start it waits for the scheduler
// to come up until ctx is done.
func (e *Executor) register(ctx context.Context, waitForReady bool) (string, error) {
	resp, err := e.sched.RegisterExecutor(ctx, &rpc.RegisterExecutorRequest{Meta: &rpc.ExecutorMetadata{
		Id: e.id, GrpcAddress: e.grpcAddr, FlightAddress: e.env.FlightAddress, Vcores: int32(e.cfg.Vcores),
	}, HeldJobs: e.heldJobs(0)}, grpc.WaitForReady(waitForReady))
	if err != nil {
		return "", fmt.Errorf("executor %s: registering with the scheduler at %s: %w", e.id, e.cfg.SchedulerAddr, err)
	}
	e.removeDeadJobs(resp.DeadJobs)
	return resp.GetPolicy(), nil
}

// heldJobs lists the jobs this executor holds anything of: shuffle
// directories (with olderThan > 0, only those untouched for that long),
// pipelined queues and, when olderThan is 0, running tasks. A sweep
// (olderThan > 0) leaves out jobs with a task running here: they are
// alive.
func (e *Executor) heldJobs(olderThan time.Duration) []string {
	set := map[string]bool{}
	dirs, err := exchange.JobDirs(e.cfg.WorkDir, olderThan, time.Now())
	if err != nil {
		e.log.Warn("listing job data failed", "err", err)
	}
	for _, j := range dirs {
		set[j] = true
	}
	for _, j := range e.env.Registry.Jobs() {
		set[j] = true
	}
	for _, j := range e.env.Held.Jobs(olderThan, time.Now()) {
		set[j] = true
	}
	e.mu.Lock()
	for k := range e.running {
		if olderThan > 0 {
			delete(set, k.job)
		} else {
			set[k.job] = true
		}
	}
	e.mu.Unlock()
	jobs := make([]string, 0, len(set))
	for j := range set {
		jobs = append(jobs, j)
	}
	slices.Sort(jobs)
	return jobs
}

// removeDeadJobs cancels the tasks of jobs the scheduler no longer knows
// and removes their data.
func (e *Executor) removeDeadJobs(jobs []string) {
	for _, job := range jobs {
		ctx, cancel := context.WithTimeout(e.ctx, 30*time.Second)
		err := e.removeJob(ctx, job)
		cancel()
		if err != nil {
			e.log.Warn("removing data of a job the scheduler does not know failed", "job", job, "err", err)
			continue
		}
		e.log.Info("removed data of a job the scheduler does not know", "job", job)
	}
}

// registerTimeout bounds a registration again after the scheduler forgot
// this executor.
const registerTimeout = 10 * time.Second

// heartbeatLoop keeps the executor known to the scheduler, registering
// again when the scheduler has forgotten it (it expired the executor, or
// restarted).
func (e *Executor) heartbeatLoop() {
	defer e.loops.Done()
	tick := time.NewTicker(e.cfg.HeartbeatInterval)
	defer tick.Stop()
	failing := false
	// Every sweepEvery a heartbeat carries the jobs whose data has sat
	// untouched for JobDataMaxAge, and the scheduler names the dead ones.
	sweepEvery := min(max(e.cfg.JobDataMaxAge/2, e.cfg.HeartbeatInterval), 10*time.Minute)
	lastSweep := time.Now()
	for {
		select {
		case <-e.ctx.Done():
			return
		case <-tick.C:
		}
		req := &rpc.HeartbeatRequest{ExecutorId: e.id, FreeVcores: int32(e.slots.free())}
		if time.Since(lastSweep) >= sweepEvery {
			lastSweep = time.Now()
			req.HeldJobs = e.heldJobs(e.cfg.JobDataMaxAge)
		}
		ctx, cancel := context.WithTimeout(e.ctx, e.cfg.HeartbeatInterval)
		resp, err := e.sched.Heartbeat(ctx, req)
		cancel()
		switch {
		case err == nil && resp.Reregister:
			e.log.Warn("scheduler does not know this executor; registering again")
			// Registering gets a deadline of its own: what is left of a
			// short heartbeat interval after the heartbeat can be too
			// little on a loaded host, and then every attempt would fail.
			ctx, cancel := context.WithTimeout(e.ctx, max(e.cfg.HeartbeatInterval, registerTimeout))
			_, err = e.register(ctx, false)
			cancel()
		case err == nil:
			e.removeDeadJobs(resp.DeadJobs)
		}
		switch {
		case err != nil && e.ctx.Err() == nil && !failing:
			e.log.Warn("heartbeat failed", "err", err)
			failing = true
		case err == nil && failing:
			e.log.Info("heartbeat restored")
			failing = false
		}
	}
}

// pollLoop asks the scheduler for work whenever vcores are free (pull
// policy): at once after a poll that returned tasks or a task that ended,
// otherwise every PollInterval.
func (e *Executor) pollLoop() {
	defer e.loops.Done()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-e.ctx.Done():
			return
		case <-timer.C:
		case <-e.slots.freed:
		}
		for e.ctx.Err() == nil {
			free := e.slots.free()
			if free <= 0 {
				break
			}
			ctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
			resp, err := e.sched.PollWork(ctx, &rpc.PollWorkRequest{ExecutorId: e.id, FreeVcores: int32(free)})
			if status.Code(err) == codes.NotFound {
				e.log.Warn("scheduler does not know this executor; registering again")
				_, err = e.register(ctx, false)
			}
			cancel()
			if err != nil {
				if e.ctx.Err() == nil {
					e.log.Warn("polling for work failed", "err", err)
				}
				break
			}
			if len(resp.Tasks) == 0 {
				break
			}
			e.launch(resp.Tasks)
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(e.cfg.PollInterval)
	}
}

// errShuttingDown is the cause of task cancellation when the executor
// closes.
var errShuttingDown = errors.New("executor shutting down")

// Close stops the executor gracefully: it stops taking tasks, cancels
// running ones and reports them failed (so the scheduler re-runs them
// elsewhere), stops the servers once in-flight fetches end, and waits for
// every goroutine. Its last heartbeat tells the scheduler it is stopping,
// so the scheduler removes it at once.
func (e *Executor) Close() {
	e.shutdown(true)
}

// Kill stops the executor abruptly, as kill -9 would: servers and
// heartbeats stop at once, running tasks are abandoned without a report,
// and shuffle files stay where they are. Tests use it to simulate a lost
// executor in process.
func (e *Executor) Kill() {
	e.shutdown(false)
}

func (e *Executor) shutdown(graceful bool) {
	e.once.Do(func() {
		if e.cfg.Peers != nil {
			// Its outputs are lost to the other executors from now on,
			// as they are to the rest of a cluster.
			e.cfg.Peers.Remove(e.env)
		}
		if e.cfg.local != nil {
			// Calls either way go over gRPC from now on, and fail as
			// its servers stop.
			e.leftLocal.Store(true)
			e.cfg.local.removeExecutor(e.grpcAddr)
		}
		e.mu.Lock()
		e.closing = true
		e.mu.Unlock()
		if graceful {
			e.cancelTasks(func(*runningTask) bool { return true }, errShuttingDown)
			e.tasks.Wait() // tasks report while e.ctx is alive
			e.stop()
			stopGracefully(e.grpcSrv, 5*time.Second)
			stopGracefully(e.flightSrv, 5*time.Second)
		} else {
			e.stop()
			e.grpcSrv.Stop()
			e.flightSrv.Stop()
			e.cancelTasks(func(*runningTask) bool { return true }, errShuttingDown)
			e.tasks.Wait()
		}
		e.loops.Wait()
		e.removals.Wait()
		// Held outputs live in this process's memory: they end with the
		// executor, as a lost executor's files are lost to the cluster.
		e.env.Held.Close()
		if graceful {
			// Tell the scheduler at once, so it stops offering this
			// executor's vcores instead of waiting for its heartbeats to stop.
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			if _, err := e.sched.Heartbeat(ctx, &rpc.HeartbeatRequest{ExecutorId: e.id, Stopping: true}); err != nil {
				e.log.Warn("telling the scheduler this executor stops failed", "err", err)
			}
			cancel()
		}
		_ = e.conn.Close()
		_ = e.env.Clients.Close()
		e.log.Info("executor stopped", "graceful", graceful)
	})
}

// stopGracefully lets in-flight calls finish for up to wait, then cuts
// them off.
func stopGracefully(srv *grpc.Server, wait time.Duration) {
	done := make(chan struct{})
	go func() {
		srv.GracefulStop()
		close(done)
	}()
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		srv.Stop()
		<-done
	}
}
