// Package scheduler runs queries on a cluster of executors: it plans each
// query into stages (package dplan), tracks every job in an execution graph
// (one per execution mode), places tasks on executors — pushing them
// (LaunchTasks) or handing them out when executors poll — and serves the
// rpc.SchedulerService that clients and executors talk to.
//
// Concurrency: one mutex guards executors, jobs and graphs; graphs never
// block. RPCs to executors are made outside the lock. The Scheduler owns
// its background goroutines (placement loop, heartbeat expiry, job data
// sweep) and Close waits for them.
package scheduler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"sluice/catalog"
	"sluice/engine"
	"sluice/physical"
	"sluice/rpc"
)

// Placement policies.
const (
	// PolicyPush: the scheduler binds tasks to executors with free vcores
	// and launches them (LaunchTasks).
	PolicyPush = "push"
	// PolicyPull: executors ask for work (PollWork).
	PolicyPull = "pull"
)

// Dialer connects to an executor's control service at its grpc_address;
// close releases the connection.
type Dialer func(grpcAddress string) (client rpc.ExecutorServiceClient, close func() error, err error)

// Config configures a Scheduler. Zero durations and counts take defaults.
type Config struct {
	// Policy is PolicyPush (default) or PolicyPull.
	Policy string
	// Encode turns a stage plan into the message tasks carry
	// (physical.EncodePlan with the exchange codec).
	Encode func(physical.Operator) (*rpc.PhysicalPlan, error)
	// Exchanges builds the stage writers and readers.
	Exchanges Exchanges
	// TaskRetries is how often a failed task is re-run before its job
	// fails (default 3; negative: none).
	TaskRetries int
	// ExecutorTimeout is how long an executor may go without a heartbeat
	// before it is considered lost (default 10s; executors beat every 2s).
	ExecutorTimeout time.Duration
	// JobDataTTL is how long a finished job's data is kept when the client
	// does not release it (default 10 minutes).
	JobDataTTL time.Duration
	// Catalog holds the tables and views all sessions share.
	Catalog *catalog.Catalog
	// Warehouse keeps managed tables' files (CREATE TABLE without
	// LOCATION) for sessions that do not set catalog.warehouse; nil:
	// those need it set.
	Warehouse *engine.Warehouse
	// Dial connects to executors (default: gRPC with Security's transport
	// and token).
	Dial Dialer
	// Security is the cluster's token and TLS, used to dial executors; its
	// AdminToken lets an operator see every session's jobs (nil: none).
	Security *rpc.Security
	// AdmissionWait is how long the oldest pipelined job waiting for its
	// vcores waits behind older jobs before it goes ahead of them
	// (default DefaultAdmissionWait; admission.go).
	AdmissionWait time.Duration
	// RPCTimeout bounds each call to an executor (default 10s).
	RPCTimeout time.Duration
	// Logger receives a line per executor lost and job failed (nil:
	// discarded).
	Logger *slog.Logger
}

// Scheduler implements rpc.SchedulerServiceServer. Create it with New and
// stop it with Close.
type Scheduler struct {
	rpc.UnimplementedSchedulerServiceServer

	cfg    Config
	engine *engine.Engine

	mu        sync.Mutex
	executors map[string]*executor
	jobs      map[string]*job
	order     []*job // unfinished jobs, in submission order
	closed    bool   // set by Close: no new background work may start

	// totalVcores is the registered executors' vcores, readable without
	// the lock (planning reads it for the default partition count).
	totalVcores atomic.Int64

	wake   chan struct{}
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

var _ rpc.SchedulerServiceServer = (*Scheduler)(nil)

// New returns a running scheduler.
func New(cfg Config) *Scheduler {
	if cfg.Policy == "" {
		cfg.Policy = PolicyPush
	}
	if cfg.TaskRetries == 0 {
		cfg.TaskRetries = 3
	}
	cfg.TaskRetries = max(cfg.TaskRetries, 0)
	if cfg.ExecutorTimeout <= 0 {
		cfg.ExecutorTimeout = 10 * time.Second
	}
	if cfg.JobDataTTL <= 0 {
		cfg.JobDataTTL = 10 * time.Minute
	}
	if cfg.AdmissionWait <= 0 {
		cfg.AdmissionWait = DefaultAdmissionWait
	}
	if cfg.RPCTimeout <= 0 {
		cfg.RPCTimeout = 10 * time.Second
	}
	if cfg.Dial == nil {
		cfg.Dial = func(addr string) (rpc.ExecutorServiceClient, func() error, error) {
			return DialGRPC(addr, cfg.Security)
		}
	}
	if cfg.Catalog == nil {
		cfg.Catalog = catalog.New()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Scheduler{
		cfg: cfg, engine: &engine.Engine{Catalog: cfg.Catalog, Warehouse: cfg.Warehouse},
		executors: map[string]*executor{}, jobs: map[string]*job{},
		wake: make(chan struct{}, 1), ctx: ctx, cancel: cancel,
	}
	// Half the cluster's vcores: a pipelined job needs a vcore for every
	// partition of its widest stage, and a stage reading a two-branch
	// UNION has the partitions of both branches.
	s.engine.DefaultPartitions = func() int { return max(1, int(s.totalVcores.Load())/2) }
	s.wg.Add(2)
	go s.placementLoop()
	go s.maintenanceLoop()
	return s
}

// Close stops the background loops, waits for them and for in-flight
// cleanup, and closes executor connections. Jobs still running are left
// as they are; their clients see their streams end.
func (s *Scheduler) Close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
	s.mu.Lock()
	execs := s.executors
	s.executors = map[string]*executor{}
	s.mu.Unlock()
	for _, e := range execs {
		e.close()
	}
}

// DialGRPC connects to the executor control service at addr over gRPC,
// with sec's transport and token: the default Dialer.
func DialGRPC(addr string, sec *rpc.Security) (rpc.ExecutorServiceClient, func() error, error) {
	conn, err := grpc.NewClient(addr, append(sec.DialOptions(), rpc.KeepaliveDialOption(), rpc.ReconnectDialOption())...)
	if err != nil {
		return nil, nil, fmt.Errorf("connecting to executor at %s: %w", addr, err)
	}
	return rpc.NewExecutorServiceClient(conn), conn.Close, nil
}

// placeNow places what a change made runnable in the caller's goroutine
// (push policy), rather than waking the placement loop: on a busy machine
// that wake-up is a scheduling delay paid at every stage boundary of a
// blocking job. Callers hold no lock.
func (s *Scheduler) placeNow() {
	if s.cfg.Policy == PolicyPush && s.ctx.Err() == nil {
		s.pushTasks()
		return
	}
	s.poke()
}

// poke wakes the placement loop; a wake-up already pending is enough.
func (s *Scheduler) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// goLocked runs f in a goroutine Close waits for, unless the scheduler is
// closing. Callers hold s.mu.
func (s *Scheduler) goLocked(f func()) {
	if s.closed {
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		f()
	}()
}

// placementLoop places tasks (push policy) whenever something changed, and
// periodically in case a change was missed.
func (s *Scheduler) placementLoop() {
	defer s.wg.Done()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-s.wake:
		case <-tick.C:
		}
		if s.cfg.Policy == PolicyPush {
			s.pushTasks()
		}
	}
}

// maintenanceLoop expires executors that stopped heartbeating and removes
// the data of finished jobs past their TTL.
func (s *Scheduler) maintenanceLoop() {
	defer s.wg.Done()
	every := min(s.cfg.ExecutorTimeout, s.cfg.JobDataTTL) / 4
	tick := time.NewTicker(max(every, 5*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-tick.C:
		}
		s.expireExecutors(time.Now())
		s.sweepJobs(time.Now())
		s.endAnalyses()
	}
}

// pushTasks binds runnable tasks to executors with free vcores and
// launches them. An executor that cannot be reached is considered lost.
func (s *Scheduler) pushTasks() {
	s.mu.Lock()
	offers := s.offersLocked()
	byExec := map[string][]*rpc.TaskDefinition{}
	for _, a := range s.placeLocked(offers) {
		byExec[a.ExecutorID] = append(byExec[a.ExecutorID], a.Task)
	}
	clients := map[string]rpc.ExecutorServiceClient{}
	for id := range byExec {
		clients[id] = s.executors[id].client
	}
	s.mu.Unlock()

	var wg sync.WaitGroup
	for id, tasks := range byExec {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(s.ctx, s.cfg.RPCTimeout)
			defer cancel()
			// An executor that cannot take the tasks is treated as gone: its
			// tasks (and any output it held) are re-run elsewhere.
			if _, err := clients[id].LaunchTasks(ctx, &rpc.LaunchTasksRequest{Tasks: tasks}); err != nil {
				s.executorLost(id, "launching tasks failed: "+err.Error())
			}
		}()
	}
	wg.Wait()
}

// placeLocked offers capacity to unfinished jobs in submission order,
// except that the oldest pipelined job waiting for its vcores holds them
// back from the jobs after it, and after a bounded wait goes ahead of
// older ones (admission.go).
func (s *Scheduler) placeLocked(offers []*Offer) []*Assignment {
	now := time.Now()
	order, head, promoted := s.admissionOrderLocked(now)
	var out []*Assignment
	for _, j := range order {
		if len(offers) == 0 {
			break
		}
		as := j.graph.Offer(offers)
		if len(as) > 0 && j.placedAt.IsZero() {
			s.admittedLocked(j, now, promoted && j == head)
		} else if j == head && len(as) == 0 {
			j.held = holdLocked(j, offers)
		}
		for _, a := range as {
			a.Task.JobSecret = j.secret
		}
		if j.analysis != nil {
			j.analysis.launch(as)
		}
		if len(as) > 0 && j.state == rpc.JobState_JOB_QUEUED {
			j.state, j.ran = rpc.JobState_JOB_RUNNING, true
		}
		if len(as) > 0 {
			j.notify()
		}
		out = append(out, as...)
	}
	return out
}

// callExecutors runs f against each executor's client concurrently, with
// the RPC timeout, and waits. Errors are returned joined; cleanup callers
// ignore them (a vanished executor has nothing left to clean). An executor
// that cannot be reached is declared lost right away, so no new job is
// placed on it while its heartbeats run out.
func (s *Scheduler) callExecutors(ids []string, f func(ctx context.Context, c rpc.ExecutorServiceClient) error) error {
	s.mu.Lock()
	clients := map[string]rpc.ExecutorServiceClient{}
	for _, id := range ids {
		if e := s.executors[id]; e != nil {
			clients[id] = e.client
		}
	}
	s.mu.Unlock()
	var (
		wg          sync.WaitGroup
		mu          sync.Mutex
		errs        []error
		unreachable []string
	)
	for id, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), s.cfg.RPCTimeout)
			defer cancel()
			if err := f(ctx, c); err != nil {
				mu.Lock()
				if status.Code(err) == codes.Unavailable {
					unreachable = append(unreachable, id)
				}
				errs = append(errs, fmt.Errorf("executor %s: %w", id, err))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	for _, id := range unreachable {
		s.executorLost(id, "unreachable")
	}
	return errors.Join(errs...)
}
