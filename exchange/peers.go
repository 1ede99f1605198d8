package exchange

import (
	"sync"
	"sync/atomic"
)

// Peers are the executors of one process (the embedded cluster's): a
// blocking reader on one of them takes another's held outputs and reads its
// shuffle files directly, as it does its own executor's (readLocal), instead
// of fetching them over loopback Flight.
//
// Why: the embedded cluster's executors share a process, and a stage reads
// the outputs of stages that ran on the other executor (both branches of
// a join, a broadcast): each such read encoded every batch as Arrow IPC, sent
// it through gRPC's HTTP/2 framing and decoded it again. A CPU profile of
// TPC-DS q11 in blocking mode (25 runs in one process) put 13 % of the CPU
// in gRPC, Flight and IPC frames against none in process.
//
// An executor is a peer from its start until it begins to stop: a killed
// executor's outputs are lost to its peers at once, as they are to the
// rest of a cluster, and the producers are re-run.
type Peers struct {
	mu    sync.RWMutex
	envs  map[string]*peer // by Flight address, unique among live listeners
	reads atomic.Int64
}

type peer struct {
	env  *Env
	left chan struct{} // closed when the executor stops being a peer
}

// NewPeers returns an empty set of peers.
func NewPeers() *Peers { return &Peers{envs: map[string]*peer{}} }

// Add makes env's outputs readable by the other peers.
func (p *Peers) Add(env *Env) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.envs[env.FlightAddress] = &peer{env: env, left: make(chan struct{})}
}

// Remove stops env's outputs from being read directly; later reads go over
// Flight (and fail once its service is down).
func (p *Peers) Remove(env *Env) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if pe := p.envs[env.FlightAddress]; pe != nil && pe.env == env {
		close(pe.left)
		delete(p.envs, env.FlightAddress)
	}
}

// Reads is how many locations and queues readers took from a peer
// directly.
func (p *Peers) Reads() int64 { return p.reads.Load() }

// lookup returns the peer serving addr as executor id, or nil.
func (p *Peers) lookup(addr, id string) *Env {
	env, _ := p.lookupPeer(addr, id)
	return env
}

// lookupPeer is lookup with a channel closed when the peer leaves.
func (p *Peers) lookupPeer(addr, id string) (*Env, <-chan struct{}) {
	if p == nil {
		return nil, nil
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	if pe := p.envs[addr]; pe != nil && pe.env.ExecutorID == id {
		return pe.env, pe.left
	}
	return nil, nil
}

// Has reports whether env is one of the peers.
func (p *Peers) Has(env *Env) bool {
	return p.lookup(env.FlightAddress, env.ExecutorID) == env
}
