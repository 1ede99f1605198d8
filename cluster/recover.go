package cluster

import (
	"context"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"sluice/physical"
	"sluice/rpc"
)

// recoverUnary and recoverStream are the outermost interceptors of every
// gRPC server (scheduler, executor control, executor Flight): gRPC does not
// recover a handler's panic, so without them one bad request (a planner
// bug hit by some SQL, a corrupt ticket) would end the process for every
// user. The call fails with codes.Internal and "internal error: ..."; the
// stack goes to the log (physical.Recovered).
func recoverUnary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
	defer func() {
		if r := recover(); r != nil {
			resp, err = nil, status.Error(codes.Internal, physical.Recovered(r).Error())
		}
	}()
	return handler(ctx, req)
}

func recoverStream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = status.Error(codes.Internal, physical.Recovered(r).Error())
		}
	}()
	return handler(srv, ss)
}

// newServer returns a gRPC server whose handlers' panics are recovered,
// which refuses calls without sec's token (and speaks TLS when sec says
// so), with the given interceptors inside both.
func newServer(sec *rpc.Security, unary []grpc.UnaryServerInterceptor, stream []grpc.StreamServerInterceptor) *grpc.Server {
	opts := append(rpc.KeepaliveServerOptions(), sec.ServerOptions()...)
	return grpc.NewServer(append(opts,
		grpc.ChainUnaryInterceptor(append([]grpc.UnaryServerInterceptor{recoverUnary, sec.UnaryInterceptor()}, unary...)...),
		grpc.ChainStreamInterceptor(append([]grpc.StreamServerInterceptor{recoverStream, sec.StreamInterceptor()}, stream...)...),
	)...)
}

// NewServer is newServer for the servers other packages run beside the
// cluster's own (the Flight SQL endpoint): the same panic recovery, token
// check and TLS.
func NewServer(sec *rpc.Security, unary []grpc.UnaryServerInterceptor, stream []grpc.StreamServerInterceptor) *grpc.Server {
	return newServer(sec, unary, stream)
}

// StopGracefully stops srv, letting running calls finish for up to wait
// before cutting them off.
func StopGracefully(srv *grpc.Server, wait time.Duration) { stopGracefully(srv, wait) }
