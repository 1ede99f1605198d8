package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"time"

	"sluice/catalog"
	"sluice/engine"
	"sluice/exchange"
	"sluice/physical/mempool"
	"sluice/rpc"
)

// EmbeddedConfig configures an embedded cluster. Zero values take
// defaults.
type EmbeddedConfig struct {
	// Executors is how many executors start (default 2).
	Executors int
	// VcoresPerExecutor (default: the CPUs shared out among the executors,
	// at least 2 each).
	VcoresPerExecutor int
	// Policy is PolicyPush (default) or PolicyPull.
	Policy string
	// WorkDir holds one directory per executor (default: a temporary
	// directory removed by Close).
	WorkDir string
	// Compression encodes shuffle files and Flight streams (default:
	// exchange.CompressNone, since every byte stays on this machine).
	Compression exchange.Compression
	// TaskFailureHook is passed to every executor (tests only).
	TaskFailureHook func(task *rpc.TaskDefinition) error
	// TaskReportHook is passed to every executor (tests only).
	TaskReportHook func(st *rpc.TaskStatus)
	// Catalog holds the tables queries see (default: empty).
	Catalog *catalog.Catalog
	// Warehouse keeps managed tables' files (default: a temporary
	// warehouse of the cluster's own, removed by Close; one given here is
	// its owner's to close).
	Warehouse *engine.Warehouse
	// ExecutorTimeout is how long an executor may miss heartbeats before
	// the scheduler considers it lost (default: the scheduler's). Fault
	// tests shorten it.
	ExecutorTimeout time.Duration
	// HeartbeatInterval (default: 2s, or a fifth of ExecutorTimeout when
	// that is shorter).
	HeartbeatInterval time.Duration
	// Logger receives the scheduler's and executors' events (nil:
	// discarded).
	Logger *slog.Logger
	// Security is the cluster's token and TLS (default: a random token of
	// its own, so the loopback ports are not open to every local user;
	// clients in this process get it from Security()).
	Security *rpc.Security
	// ExecutorMemoryLimit caps what each executor's tasks reserve
	// together, in bytes (0: the executors share
	// mempool.DefaultLimit, since they share this process).
	ExecutorMemoryLimit int64
	// HeldOutputBytes is each executor's budget for blocking outputs kept
	// in memory (ExecutorConfig.HeldOutputBytes: 0, an eighth of its
	// memory limit, at most 256 MiB; negative, none).
	HeldOutputBytes int64
	// FlightBetweenExecutors makes the executors read each other's
	// blocking outputs over loopback Flight, as separate processes would,
	// rather than directly (exchange.Peers). Tests use it to run the
	// Flight path on one machine.
	FlightBetweenExecutors bool
	// ControlOverGRPC makes the scheduler and the executors call each
	// other over loopback gRPC, as separate processes would, rather than
	// directly (localCalls). Tests use it to run the gRPC path on one
	// machine.
	ControlOverGRPC bool
}

// Embedded is a scheduler and its executors in one process, talking over
// loopback gRPC and Flight as separate processes would, except that an
// executor's blocking readers take the other executors' outputs directly
// (exchange.Peers; FlightBetweenExecutors turns that off) and the
// scheduler and executors make their control calls to each other as Go
// calls (localCalls; ControlOverGRPC turns that off). A session of this
// process connected with session.ConnectInProcess calls the scheduler as
// Go calls too and reads the final stage from the executors directly
// (local_session.go; ControlOverGRPC and FlightBetweenExecutors turn
// those off); other clients reach the scheduler over gRPC and results
// over Flight.
type Embedded struct {
	cfg     EmbeddedConfig
	sched   *SchedulerServer
	workDir string
	tempDir bool
	// warehouse is the cluster's own temporary warehouse, removed by
	// Close (nil when the config gave one).
	warehouse *engine.Warehouse
	// peers are the executors, which read each other's outputs directly
	// (nil with FlightBetweenExecutors).
	peers *exchange.Peers
	// local carries the control calls between the scheduler and the
	// executors (nil with ControlOverGRPC).
	local *localCalls

	mu        sync.Mutex
	executors []*Executor
	next      int
	closed    bool
}

// StartEmbedded starts the scheduler on 127.0.0.1 and cfg.Executors
// executors registered with it.
func StartEmbedded(ctx context.Context, cfg EmbeddedConfig) (*Embedded, error) {
	if cfg.Executors <= 0 {
		cfg.Executors = 2
	}
	if cfg.VcoresPerExecutor <= 0 {
		cfg.VcoresPerExecutor = max(2, runtime.NumCPU()/cfg.Executors)
	}
	if cfg.HeartbeatInterval <= 0 {
		cfg.HeartbeatInterval = 2 * time.Second
		if cfg.ExecutorTimeout > 0 {
			cfg.HeartbeatInterval = min(cfg.HeartbeatInterval, cfg.ExecutorTimeout/5)
		}
	}
	if cfg.Compression == "" {
		cfg.Compression = exchange.CompressNone
	}
	if cfg.Security == nil {
		cfg.Security = &rpc.Security{Token: rpc.NewToken()}
	}
	e := &Embedded{cfg: cfg, workDir: cfg.WorkDir}
	if !cfg.FlightBetweenExecutors {
		e.peers = exchange.NewPeers()
	}
	if !cfg.ControlOverGRPC {
		e.local = newLocalCalls()
	}
	if e.workDir == "" {
		dir, err := os.MkdirTemp("", "sluice-cluster-")
		if err != nil {
			return nil, fmt.Errorf("embedded cluster: creating a work dir: %w", err)
		}
		e.workDir, e.tempDir = dir, true
	}
	warehouse := cfg.Warehouse
	if warehouse == nil {
		e.warehouse = engine.TempWarehouse()
		warehouse = e.warehouse
	}
	sched, err := StartScheduler(SchedulerConfig{
		Policy: cfg.Policy, Catalog: cfg.Catalog, ExecutorTimeout: cfg.ExecutorTimeout, Logger: cfg.Logger,
		Security: cfg.Security, Warehouse: warehouse, local: e.local,
	})
	if err != nil {
		e.removeWorkDir()
		return nil, fmt.Errorf("embedded cluster: %w", err)
	}
	e.sched = sched
	for range cfg.Executors {
		if _, err := e.AddExecutor(ctx); err != nil {
			e.Close()
			return nil, err
		}
	}
	return e, nil
}

// SchedulerAddr is the scheduler's gRPC address.
func (e *Embedded) SchedulerAddr() string { return e.sched.Addr() }

// Security is the cluster's token and TLS: what a client needs to connect
// (session.ConnectWith).
func (e *Embedded) Security() *rpc.Security { return e.cfg.Security }

// Scheduler is the scheduler server.
func (e *Embedded) Scheduler() *SchedulerServer { return e.sched }

// Executors lists the executors started so far, including stopped ones.
func (e *Embedded) Executors() []*Executor {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.executors)
}

// executorMemoryLimit is each executor's memory cap: the configured one, or
// its share of the default, since the executors share this process's
// memory.
func (e *Embedded) executorMemoryLimit() int64 {
	if e.cfg.ExecutorMemoryLimit != 0 {
		return e.cfg.ExecutorMemoryLimit
	}
	return max(mempool.DefaultLimit()/int64(max(e.cfg.Executors, 1)), 0)
}

// AddExecutor starts one more executor, with its own work dir under the
// cluster's.
func (e *Embedded) AddExecutor(ctx context.Context) (*Executor, error) {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil, errors.New("embedded cluster is closed")
	}
	e.next++
	id := fmt.Sprintf("exec-%d", e.next)
	e.mu.Unlock()
	dir := filepath.Join(e.workDir, id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("embedded cluster: creating work dir of %s: %w", id, err)
	}
	x, err := StartExecutor(ctx, ExecutorConfig{
		SchedulerAddr: e.sched.Addr(), BindAddr: "127.0.0.1:0", FlightAddr: "127.0.0.1:0",
		Vcores: e.cfg.VcoresPerExecutor, WorkDir: dir, Compression: e.cfg.Compression, ID: id, HeartbeatInterval: e.cfg.HeartbeatInterval,
		Policy: e.cfg.Policy, TaskFailureHook: e.cfg.TaskFailureHook, TaskReportHook: e.cfg.TaskReportHook, Logger: e.cfg.Logger, Security: e.cfg.Security,
		MemoryLimit: e.executorMemoryLimit(), HeldOutputBytes: e.cfg.HeldOutputBytes, Peers: e.peers, local: e.local,
	})
	if err != nil {
		return nil, fmt.Errorf("embedded cluster: %w", err)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		x.Kill()
		return nil, errors.New("embedded cluster is closed")
	}
	e.executors = append(e.executors, x)
	return x, nil
}

// PeerReads is how many shuffle locations the executors read from each
// other directly (0 with FlightBetweenExecutors).
func (e *Embedded) PeerReads() int64 {
	if e.peers == nil {
		return 0
	}
	return e.peers.Reads()
}

// DirectCalls is how many control calls between the scheduler and the
// executors were made directly (0 with ControlOverGRPC).
func (e *Embedded) DirectCalls() int64 {
	if e.local == nil {
		return 0
	}
	return e.local.Calls()
}

// Close stops the executors and the scheduler, waits for their goroutines
// and removes the work dir if the cluster created it.
func (e *Embedded) Close() {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return
	}
	e.closed = true
	execs := e.executors
	e.mu.Unlock()
	var wg sync.WaitGroup
	for _, x := range execs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			x.Close()
		}()
	}
	wg.Wait()
	if e.sched != nil {
		e.sched.Close()
	}
	e.removeWorkDir()
	_ = e.warehouse.Close()
}

func (e *Embedded) removeWorkDir() {
	if e.tempDir {
		_ = os.RemoveAll(e.workDir)
	}
}
