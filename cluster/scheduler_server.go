package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"sluice/catalog"
	"sluice/engine"
	"sluice/rpc"
	"sluice/scheduler"
)

// SchedulerConfig configures a scheduler server. Zero values take the
// scheduler's defaults.
type SchedulerConfig struct {
	// Bind is the gRPC listen address (default 127.0.0.1:0).
	Bind string
	// Policy is PolicyPush (default) or PolicyPull.
	Policy string
	// Catalog holds the tables every session sees (default: empty).
	Catalog *catalog.Catalog
	// Warehouse keeps managed tables' files (nil: none, so CREATE TABLE
	// without LOCATION needs the session's catalog.warehouse).
	Warehouse *engine.Warehouse
	// ExecutorTimeout is how long an executor may miss heartbeats before
	// it is considered lost.
	ExecutorTimeout time.Duration
	// AdmissionWait is how long the oldest pipelined job waiting for its
	// vcores waits behind older jobs before it goes ahead of them (0:
	// scheduler.DefaultAdmissionWait).
	AdmissionWait time.Duration
	// TaskRetries is how often a failed task is re-run.
	TaskRetries int
	// Logger receives one line per important event (nil: discarded).
	Logger *slog.Logger
	// Security is the cluster's token and TLS (nil: none): callers without
	// the token are refused, executors are dialled with it.
	Security *rpc.Security

	// local, when set, carries calls to and from the executors of this
	// process directly (an embedded cluster's).
	local *localCalls
}

// DefaultAdmissionWait is SchedulerConfig.AdmissionWait's default.
const DefaultAdmissionWait = scheduler.DefaultAdmissionWait

// SchedulerServer is a scheduler served over gRPC.
type SchedulerServer struct {
	sched *scheduler.Scheduler
	srv   *grpc.Server
	local *localCalls
	addr  string
	log   *slog.Logger
	wg    sync.WaitGroup
	once  sync.Once
}

// StartScheduler starts a scheduler and serves it on cfg.Bind.
func StartScheduler(cfg SchedulerConfig) (*SchedulerServer, error) {
	switch cfg.Policy {
	case "":
		cfg.Policy = PolicyPush
	case PolicyPush, PolicyPull:
	default:
		return nil, fmt.Errorf("scheduler: unknown policy %q (expected push or pull)", cfg.Policy)
	}
	if cfg.Bind == "" {
		cfg.Bind = "127.0.0.1:0"
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	lis, err := net.Listen("tcp", cfg.Bind)
	if err != nil {
		return nil, fmt.Errorf("scheduler: listening on %s: %w", cfg.Bind, err)
	}
	var dial scheduler.Dialer
	if cfg.local != nil {
		dial = cfg.local.dialer(cfg.Security)
	}
	s := &SchedulerServer{
		sched: scheduler.New(scheduler.Config{
			Policy: cfg.Policy, Encode: EncodePlan, Exchanges: Exchanges{}, Catalog: cfg.Catalog, Warehouse: cfg.Warehouse,
			ExecutorTimeout: cfg.ExecutorTimeout, TaskRetries: cfg.TaskRetries, Logger: log, AdmissionWait: cfg.AdmissionWait,
			Security: cfg.Security, Dial: dial,
		}),
		addr:  lis.Addr().String(),
		log:   log,
		local: cfg.local,
	}
	s.srv = newServer(cfg.Security, []grpc.UnaryServerInterceptor{s.logUnary}, []grpc.StreamServerInterceptor{s.logStream})
	rpc.RegisterSchedulerServiceServer(s.srv, s.sched)
	if s.local != nil {
		s.local.setScheduler(s.sched)
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := s.srv.Serve(lis); err != nil {
			log.Error("scheduler server stopped", "err", err)
		}
	}()
	log.Info("scheduler listening", "addr", s.addr, "policy", cfg.Policy,
		"auth", cfg.Security.Authenticated(), "tls", cfg.Security.Encrypted())
	if w := cfg.Security.ExposedWarning("the scheduler", cfg.Bind); w != "" {
		log.Warn(w)
	}
	return s, nil
}

// Addr is the address the scheduler listens on.
func (s *SchedulerServer) Addr() string { return s.addr }

// Scheduler is the scheduler being served.
func (s *SchedulerServer) Scheduler() *scheduler.Scheduler { return s.sched }

// Close stops the scheduler (ending every job status stream) and the
// server, and waits for both.
func (s *SchedulerServer) Close() {
	s.once.Do(func() {
		if s.local != nil {
			// From now on the executors reach it over gRPC, as
			// executors of other processes do, until it stops serving.
			s.local.setScheduler(nil)
		}
		s.sched.Close()
		stopGracefully(s.srv, 5*time.Second)
		s.wg.Wait()
		s.log.Info("scheduler stopped")
	})
}

// ServeScheduler runs a scheduler server until ctx is done: the standalone
// scheduler process.
func ServeScheduler(ctx context.Context, cfg SchedulerConfig) error {
	s, err := StartScheduler(cfg)
	if err != nil {
		return err
	}
	<-ctx.Done()
	s.Close()
	return nil
}

// logUnary logs executor registrations and job cancellations.
func (s *SchedulerServer) logUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	resp, err := handler(ctx, req)
	switch r := req.(type) {
	case *rpc.RegisterExecutorRequest:
		m := r.GetMeta()
		attrs := []any{"executor", m.GetId(), "grpc", m.GetGrpcAddress(), "flight", m.GetFlightAddress(), "vcores", m.GetVcores()}
		if err != nil {
			attrs = append(attrs, "err", err)
		}
		s.log.Info("executor registered", attrs...)
	case *rpc.CancelJobRequest:
		if err != nil {
			s.log.Info("job cancel refused", "job", r.GetJobId(), "err", err)
		} else {
			s.log.Info("job cancel requested", "job", r.GetJobId())
		}
	}
	return resp, err
}

// logStream logs each statement and how its job ended.
func (s *SchedulerServer) logStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if info.FullMethod != rpc.SchedulerService_ExecuteQuery_FullMethodName {
		return handler(srv, ss)
	}
	w := &statusRecorder{ServerStream: ss}
	start := time.Now()
	err := handler(srv, w)
	attrs := []any{"sql", truncate(w.sql, 80), "took", time.Since(start).Round(time.Millisecond)}
	// A client closes the status stream of a pipelined job once it has read
	// the results, while the job may still be running as far as the last
	// status sent said: that is no error, and the scheduler's "job ended"
	// line has the job's real end.
	clientClosed := status.Code(err) == codes.Canceled || errors.Is(err, context.Canceled)
	if w.last != nil {
		attrs = append(attrs, "job", w.last.JobId)
		if !clientClosed || w.last.State != rpc.JobState_JOB_RUNNING {
			attrs = append(attrs, "state", w.last.State.String())
		}
		if e := w.last.GetError(); e != nil {
			attrs = append(attrs, "error", e.GetMessage())
		}
	}
	if err != nil && !clientClosed {
		attrs = append(attrs, "err", err)
	}
	s.log.Info("statement done", attrs...)
	return err
}

// statusRecorder remembers the statement received and the last job
// status sent on a stream.
type statusRecorder struct {
	grpc.ServerStream
	sql  string
	last *rpc.JobStatus
}

func (r *statusRecorder) RecvMsg(m any) error {
	err := r.ServerStream.RecvMsg(m)
	if q, ok := m.(*rpc.ExecuteQueryRequest); ok && err == nil {
		r.sql = q.Sql
	}
	return err
}

func truncate(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func (r *statusRecorder) SendMsg(m any) error {
	if st, ok := m.(*rpc.JobStatus); ok {
		r.last = st
	}
	return r.ServerStream.SendMsg(m)
}
