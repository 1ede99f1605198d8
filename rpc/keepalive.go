package rpc

import (
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"
)

// Keepalive: every sluice connection pings its peer when it has been quiet
// for a while, and closes when a ping goes unanswered. A peer that is
// frozen (SIGSTOP), or whose host vanished without closing its sockets,
// then fails the calls on that connection within KeepaliveTime plus
// KeepaliveTimeout, instead of leaving a Flight fetch or a status stream
// waiting for good: the scheduler re-runs what a lost executor held, and a
// pipelined job fails with the connection's error.
const (
	KeepaliveTime    = 10 * time.Second
	KeepaliveTimeout = 10 * time.Second
)

// KeepaliveDialOption is the client side: ping after KeepaliveTime without
// traffic, even with no call open.
func KeepaliveDialOption() grpc.DialOption {
	return grpc.WithKeepaliveParams(keepalive.ClientParameters{
		Time: KeepaliveTime, Timeout: KeepaliveTimeout, PermitWithoutStream: true,
	})
}

// KeepaliveServerOptions are the server side: accept the clients' pings
// (gRPC's default refuses pings more often than every 5 minutes, closing
// the connection), and ping quiet clients, so a frozen client's streams
// end too.
func KeepaliveServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: KeepaliveTime / 2, PermitWithoutStream: true}),
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: 2 * KeepaliveTime, Timeout: KeepaliveTimeout}),
	}
}
