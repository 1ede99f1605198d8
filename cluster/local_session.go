package cluster

import (
	"context"
	"io"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"sluice/exchange"
	"sluice/rpc"
)

// A session in the embedded cluster's own process (the shell's, the
// bench's, `sluice serve`'s) reaches the scheduler with Go calls, as the
// executors do (localCalls), instead of loopback gRPC; and it reads the
// final stage from the executors directly: blocking outputs through Peers,
// as they read each other's, and pipelined queues from the producing
// executor's registry (exchange.PipelinedReader). Over loopback, every
// statement cost a gRPC stream whose statuses (one per task update in
// blocking mode) were each marshalled, framed, written, read and
// unmarshalled, a Flight call per final partition and a unary call to
// release the job, which on short queries was much of what the cluster
// modes spent beyond one process.
//
// The calls behave as the gRPC calls would, as localCalls' do: requests
// and responses are copies, the scheduler sees the session's key in the
// call's metadata and logs the statement as it does any, a handler's panic
// reaches the session as an Internal error, and the call returns when its
// context ends. What it skips is the token check: both ends are this
// process. Once the scheduler stops serving here (it is closing), calls go
// over gRPC and fail as they would from another process.

// SchedulerClient returns the scheduler client of a session of this
// process whose key is sessionKey: client (its gRPC client) with the
// session's calls made directly while the scheduler serves here.
// ControlOverGRPC leaves client as it is.
func (e *Embedded) SchedulerClient(client rpc.SchedulerServiceClient, sessionKey string) rpc.SchedulerServiceClient {
	if e.local == nil {
		return client
	}
	return &localSessionClient{SchedulerServiceClient: client, local: e.local, server: e.sched, key: sessionKey}
}

// SessionDirectCalls is how many calls sessions of this process made to
// the scheduler directly (0 with ControlOverGRPC).
func (e *Embedded) SessionDirectCalls() int64 {
	if e.local == nil {
		return 0
	}
	return e.local.sessionCalls.Load()
}

// Peers are the executors a session of this process reads final outputs
// from directly (nil with FlightBetweenExecutors: over Flight).
func (e *Embedded) Peers() *exchange.Peers { return e.peers }

// localSessionClient is a session's client of the scheduler: direct while
// the scheduler serves in this process, gRPC otherwise.
type localSessionClient struct {
	rpc.SchedulerServiceClient
	local  *localCalls
	server *SchedulerServer
	key    string
}

// incoming is ctx as the scheduler's handler sees it: with the session's
// key in the call's metadata, as the session's credentials send it.
func (c *localSessionClient) incoming(ctx context.Context) context.Context {
	c.local.sessionCalls.Add(1)
	return metadata.NewIncomingContext(ctx, metadata.Pairs(rpc.SessionMetadataKey, c.key))
}

func (c *localSessionClient) CancelJob(ctx context.Context, in *rpc.CancelJobRequest, opts ...grpc.CallOption) (*rpc.CancelJobResponse, error) {
	if s := c.local.scheduler(); s != nil {
		info := &grpc.UnaryServerInfo{FullMethod: rpc.SchedulerService_CancelJob_FullMethodName}
		return direct(c.incoming(ctx), c.local, in, func(ctx context.Context, in *rpc.CancelJobRequest) (*rpc.CancelJobResponse, error) {
			// Through the server's log, which records cancellations.
			resp, err := c.server.logUnary(ctx, in, info, func(ctx context.Context, req any) (any, error) {
				return s.CancelJob(ctx, req.(*rpc.CancelJobRequest))
			})
			if err != nil {
				return nil, err
			}
			return resp.(*rpc.CancelJobResponse), nil
		})
	}
	return c.SchedulerServiceClient.CancelJob(ctx, in, opts...)
}

func (c *localSessionClient) GetJobStatus(ctx context.Context, in *rpc.GetJobStatusRequest, opts ...grpc.CallOption) (*rpc.JobStatus, error) {
	if s := c.local.scheduler(); s != nil {
		return direct(c.incoming(ctx), c.local, in, s.GetJobStatus)
	}
	return c.SchedulerServiceClient.GetJobStatus(ctx, in, opts...)
}

func (c *localSessionClient) ReleaseJob(ctx context.Context, in *rpc.ReleaseJobRequest, opts ...grpc.CallOption) (*rpc.ReleaseJobResponse, error) {
	if s := c.local.scheduler(); s != nil {
		return direct(c.incoming(ctx), c.local, in, s.ReleaseJob)
	}
	return c.SchedulerServiceClient.ReleaseJob(ctx, in, opts...)
}

func (c *localSessionClient) GetClusterState(ctx context.Context, in *rpc.GetClusterStateRequest, opts ...grpc.CallOption) (*rpc.ClusterState, error) {
	if s := c.local.scheduler(); s != nil {
		return direct(c.incoming(ctx), c.local, in, s.GetClusterState)
	}
	return c.SchedulerServiceClient.GetClusterState(ctx, in, opts...)
}

// ExecuteQuery runs the scheduler's handler of the statement's status
// stream in a goroutine of its own, through the server's panic recovery
// and statement log, with a statusPipe between it and the session.
func (c *localSessionClient) ExecuteQuery(ctx context.Context, in *rpc.ExecuteQueryRequest, opts ...grpc.CallOption) (grpc.ServerStreamingClient[rpc.JobStatus], error) {
	s := c.local.scheduler()
	if s == nil {
		return c.SchedulerServiceClient.ExecuteQuery(ctx, in, opts...)
	}
	if err := ctx.Err(); err != nil {
		return nil, status.FromContextError(err).Err()
	}
	sctx, cancel := context.WithCancel(c.incoming(ctx))
	p := &statusPipe{req: proto.Clone(in).(*rpc.ExecuteQueryRequest), ready: make(chan struct{}, 1)}
	desc := rpc.SchedulerService_ServiceDesc.Streams[0]
	info := &grpc.StreamServerInfo{FullMethod: rpc.SchedulerService_ExecuteQuery_FullMethodName, IsServerStream: true}
	c.local.calls.Add(1)
	go func() {
		defer cancel()
		err := recoverStream(s, &pipeServer{p, sctx}, info, func(srv any, ss grpc.ServerStream) error {
			return c.server.logStream(srv, ss, info, desc.Handler)
		})
		p.finish(err)
	}()
	return &pipeClient{p, ctx}, nil
}

// statusPipe carries a status stream called directly: the handler
// receives a copy of the request and sends copies of its statuses, which
// queue for the client's Recv without bound (over gRPC they would wait in
// the stream's flow-control window; the scheduler sends one per change of
// the job, so the queue stays short).
type statusPipe struct {
	req *rpc.ExecuteQueryRequest

	mu    sync.Mutex
	read  bool // the handler took the request
	queue []*rpc.JobStatus
	ended bool
	err   error         // what Recv returns once the queue is empty and ended is set
	ready chan struct{} // a token after each send and at the end
}

// finish ends the stream with the handler's error (nil: io.EOF), as the
// gRPC status the server would have sent.
func (p *statusPipe) finish(err error) {
	p.mu.Lock()
	p.ended = true
	if err == nil {
		p.err = io.EOF
	} else {
		p.err = status.Convert(err).Err()
	}
	p.mu.Unlock()
	p.signal()
}

func (p *statusPipe) signal() {
	select {
	case p.ready <- struct{}{}:
	default:
	}
}

// pipeServer is the handler's end; its context ends when the client's does
// or the handler returns.
type pipeServer struct {
	p   *statusPipe
	ctx context.Context
}

func (s *pipeServer) Context() context.Context     { return s.ctx }
func (s *pipeServer) SetHeader(metadata.MD) error  { return nil }
func (s *pipeServer) SendHeader(metadata.MD) error { return nil }
func (s *pipeServer) SetTrailer(metadata.MD)       {}

func (s *pipeServer) SendMsg(m any) error {
	if err := s.ctx.Err(); err != nil {
		return status.FromContextError(err).Err()
	}
	st, ok := m.(*rpc.JobStatus)
	if !ok {
		return status.Errorf(codes.Internal, "status stream: sending a %T", m)
	}
	st = proto.Clone(st).(*rpc.JobStatus)
	s.p.mu.Lock()
	s.p.queue = append(s.p.queue, st)
	s.p.mu.Unlock()
	s.p.signal()
	return nil
}

func (s *pipeServer) RecvMsg(m any) error {
	s.p.mu.Lock()
	defer s.p.mu.Unlock()
	if s.p.read {
		return io.EOF
	}
	msg, ok := m.(proto.Message)
	if !ok {
		return status.Errorf(codes.Internal, "status stream: receiving into a %T", m)
	}
	s.p.read = true
	proto.Merge(msg, s.p.req)
	return nil
}

// pipeClient is the session's end.
type pipeClient struct {
	p   *statusPipe
	ctx context.Context
}

func (c *pipeClient) Recv() (*rpc.JobStatus, error) {
	p := c.p
	for {
		p.mu.Lock()
		if len(p.queue) > 0 {
			st := p.queue[0]
			p.queue[0] = nil
			p.queue = p.queue[1:]
			p.mu.Unlock()
			return st, nil
		}
		if p.ended {
			err := p.err
			p.mu.Unlock()
			return nil, err
		}
		p.mu.Unlock()
		select {
		case <-p.ready:
		case <-c.ctx.Done():
			return nil, status.FromContextError(c.ctx.Err()).Err()
		}
	}
}

func (c *pipeClient) RecvMsg(m any) error {
	st, err := c.Recv()
	if err != nil {
		return err
	}
	msg, ok := m.(proto.Message)
	if !ok {
		return status.Errorf(codes.Internal, "status stream: receiving into a %T", m)
	}
	proto.Merge(msg, st)
	return nil
}

func (c *pipeClient) Context() context.Context     { return c.ctx }
func (c *pipeClient) Header() (metadata.MD, error) { return metadata.MD{}, nil }
func (c *pipeClient) Trailer() metadata.MD         { return metadata.MD{} }
func (c *pipeClient) CloseSend() error             { return nil }
func (c *pipeClient) SendMsg(any) error            { return nil }
