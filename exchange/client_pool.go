package exchange

import (
	"errors"
	"fmt"
	"sync"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc"

	"sluice/rpc"
)

// maxFlightMessage bounds one Flight message (one record batch). gRPC's
// default receive limit of 4 MiB is smaller than a wide 8192-row batch.
const maxFlightMessage = 256 << 20

// ClientPool dials Flight services and keeps one client per address; gRPC
// multiplexes concurrent streams over each connection and reconnects by
// itself after a failure. It is safe for concurrent use.
type ClientPool struct {
	dial    []grpc.DialOption
	mu      sync.Mutex
	clients map[string]flight.Client
	closed  bool
}

// NewClientPool returns an empty pool whose connections use sec's
// transport and tokens (nil: plaintext, no token).
func NewClientPool(sec *rpc.Security) *ClientPool {
	return &ClientPool{dial: sec.DialOptions(), clients: make(map[string]flight.Client)}
}

// Get returns the client for addr ("host:port"), dialing it on first use.
// Dialing is lazy: an unreachable address fails on the first call, not here.
func (p *ClientPool) Get(addr string) (flight.Client, error) {
	if addr == "" {
		return nil, errors.New("no Flight address given")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, errors.New("flight client pool is closed")
	}
	if c, ok := p.clients[addr]; ok {
		return c, nil
	}
	opts := append([]grpc.DialOption{rpc.KeepaliveDialOption(),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxFlightMessage))}, p.dial...)
	c, err := flight.NewClientWithMiddleware(addr, nil, nil, opts...)
	if err != nil {
		return nil, fmt.Errorf("dialing Flight service at %s: %w", addr, err)
	}
	p.clients[addr] = c
	return c, nil
}

// Close closes every connection; later Gets fail.
func (p *ClientPool) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	var errs []error
	for addr, c := range p.clients {
		if err := c.Close(); err != nil {
			errs = append(errs, fmt.Errorf("closing Flight client for %s: %w", addr, err))
		}
		delete(p.clients, addr)
	}
	return errors.Join(errs...)
}
