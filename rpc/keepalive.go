package rpc

import (
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
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

// ReconnectMaxDelay caps the wait between attempts to reconnect to a peer
// that went away. gRPC's default grows to two minutes, so an executor
// whose scheduler restarted could stay unregistered (no tasks, its dead
// jobs' data left in place) that long after the scheduler was back.
const ReconnectMaxDelay = 3 * time.Second

// ReconnectDialOption retries a lost connection after 100 ms, then backs
// off by 1.6 per failed attempt up to ReconnectMaxDelay.
func ReconnectDialOption() grpc.DialOption {
	cfg := backoff.DefaultConfig
	cfg.BaseDelay = 100 * time.Millisecond
	cfg.MaxDelay = ReconnectMaxDelay
	return grpc.WithConnectParams(grpc.ConnectParams{Backoff: cfg, MinConnectTimeout: 20 * time.Second})
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
