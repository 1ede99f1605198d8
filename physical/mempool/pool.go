// Package mempool owns the memory a query may use: pools with limits
// (a process, an executor, a task), the reservations operators take from
// them before they buffer rows, the error a refused reservation returns,
// the default limit derived from the machine or cgroup, and the recycling
// allocator column buffers come from.
package mempool

import (
	"errors"
	"fmt"
	"sync"

	"sluice/physical/metrics"
)

// ErrResourcesExhausted is returned (wrapped) when a memory reservation is
// refused.
var ErrResourcesExhausted = errors.New("resources exhausted")

// LimitError is a reservation a pool refused: it wraps
// ErrResourcesExhausted. It fails the same way when the task runs again
// with the same limits, so the cluster does not retry it, and its message
// is what the user sees.
type LimitError struct {
	Owner string // the operator that asked
	Bytes int64  // what it asked for
	Pool  string // the pool that refused
	Used  int64  // what the pool held
	Limit int64  // the pool's limit
	Hint  string // what raises the limit, if known
	// Share, when not zero, is the fair share (see SetSpillable) the
	// owner would have exceeded, of Spillers operators that spill.
	Share    int64
	Spillers int
}

func (e *LimitError) Error() string {
	hint := ""
	if e.Hint != "" {
		hint = "; " + e.Hint
	}
	share := ""
	if e.Share > 0 {
		share = fmt.Sprintf(" over its share %s (of %d operators that spill)", metrics.FormatBytes(e.Share), e.Spillers)
	}
	return fmt.Sprintf("%v: memory limit reached: %s cannot reserve %s%s: %s has %s of its %s in use%s",
		ErrResourcesExhausted, e.Owner, metrics.FormatBytes(e.Bytes), share, e.Pool, metrics.FormatBytes(e.Used), metrics.FormatBytes(e.Limit), hint)
}

// Unwrap returns ErrResourcesExhausted.
func (e *LimitError) Unwrap() error { return ErrResourcesExhausted }

// Pool accounts bytes held by operators against a limit. A pool may
// have a parent (a task's pool inside an executor's pool); growing a child
// grows the parent too. Safe for concurrent use.
type Pool struct {
	name   string
	limit  int64 // <= 0: unlimited
	parent *Pool
	// hint says, in a refusal, which setting or flag raises the limit.
	hint string

	mu   sync.Mutex
	used int64
	peak int64
	// spillers counts the spillable reservations (SetSpillable), which
	// hold spillUsed of used.
	spillers  int
	spillUsed int64
	// released is set by Release: what the pool reserves from then on is
	// not passed on to the parent, which already got it all back.
	released bool
}

// NewPool returns a pool with the given limit in bytes (<= 0: none).
func NewPool(name string, limit int64, parent *Pool) *Pool {
	return &Pool{name: name, limit: limit, parent: parent}
}

// WithHint sets what a refusal tells the user to change to raise the
// pool's limit (a setting, a flag), and returns p.
func (p *Pool) WithHint(hint string) *Pool {
	p.hint = hint
	return p
}

// grow, shrink and Release move the parent while holding the pool's lock
// (a child locks its parent, never the other way round), so a reservation
// freed by another goroutine as the task's pool is released cannot be
// taken from the parent twice: an executor's pool once showed -120 KB in
// use after a spilling query.
func (p *Pool) grow(n int64, owner string, r *Reservation) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.limit > 0 && p.used+n > p.limit {
		return &LimitError{Owner: owner, Bytes: n, Pool: p.name, Used: p.used, Limit: p.limit, Hint: p.hint}
	}
	spill := r != nil && r.spillable
	if spill && p.limit > 0 && p.spillers > 1 && r.size > 0 {
		// A reservation holding nothing yet has nothing to spill, so
		// it is never refused its share, only the limit.
		share := (p.limit - (p.used - p.spillUsed)) / int64(p.spillers)
		if r.size+n > share {
			return &LimitError{Owner: owner, Bytes: n, Pool: p.name, Used: p.used, Limit: p.limit, Hint: p.hint, Share: share, Spillers: p.spillers}
		}
	}
	if p.parent != nil && !p.released {
		if err := p.parent.grow(n, owner, nil); err != nil {
			return err
		}
	}
	p.used += n
	if spill {
		p.spillUsed += n
	}
	p.peak = max(p.peak, p.used)
	return nil
}

func (p *Pool) shrink(n int64, spill bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.used -= n
	if spill {
		p.spillUsed -= n
	}
	if p.parent != nil && !p.released {
		p.parent.shrink(n, false)
	}
}

// Release gives everything the pool still holds back to its parent and
// returns how much that was; the pool's later reservations no longer count
// against the parent. A task's pool is released when the task ends, so
// reservations an operator failed to free (or buffers that outlive the
// task, such as a pipelined queue's) do not pile up in the executor's pool
// from task to task.
func (p *Pool) Release() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.released {
		return 0
	}
	n := p.used
	p.released = true
	if n != 0 && p.parent != nil {
		p.parent.shrink(n, false)
	}
	return n
}

// Used returns the bytes currently reserved.
func (p *Pool) Used() int64 { p.mu.Lock(); defer p.mu.Unlock(); return p.used }

// Peak returns the most bytes ever reserved at once.
func (p *Pool) Peak() int64 { p.mu.Lock(); defer p.mu.Unlock(); return p.peak }

// ResetPeak restarts Peak from the bytes reserved now (benchmarks measure
// one suite at a time).
func (p *Pool) ResetPeak() { p.mu.Lock(); defer p.mu.Unlock(); p.peak = p.used }

// NewReservation starts an empty reservation for owner (an operator name).
func (p *Pool) NewReservation(owner string) *Reservation {
	return &Reservation{pool: p, owner: owner}
}

// Reservation is one operator's share of a pool. Not safe for concurrent use.
type Reservation struct {
	pool  *Pool
	owner string
	size  int64
	// track is the operator the reservation counts toward in an
	// EXPLAIN ANALYZE; nil otherwise.
	track Tracker
	// spillable: see SetSpillable.
	spillable bool
}

// SetSpillable marks r as held by an operator that answers a refusal by
// spilling what it holds (on), or no longer (off: it is done growing, or
// spilled for good). While several reservations of a pool with a limit
// are spillable, each that holds something may grow only to its fair
// share: what the limit leaves beside the reservations that do not
// spill, divided among the spillable ones (DataFusion's FairSpillPool).
// So the partitions of a task share its limit: one cannot build its whole
// table in memory and leave another's spilled buckets no room.
func (r *Reservation) SetSpillable(on bool) {
	if r.spillable == on {
		return
	}
	p := r.pool
	p.mu.Lock()
	defer p.mu.Unlock()
	r.spillable = on
	if on {
		p.spillers++
		p.spillUsed += r.size
	} else {
		p.spillers--
		p.spillUsed -= r.size
	}
}

// Tracker follows one operator's reservations, for EXPLAIN ANALYZE: it
// sees every byte a tracked reservation grows or shrinks by.
type Tracker interface {
	Grow(n int64)
	Shrink(n int64)
}

// Track makes t see every later change of r's size.
func (r *Reservation) Track(t Tracker) { r.track = t }

// Grow reserves n more bytes or returns a wrapped ErrResourcesExhausted.
func (r *Reservation) Grow(n int64) error {
	if n <= 0 {
		return nil
	}
	if err := r.pool.grow(n, r.owner, r); err != nil {
		return err
	}
	r.size += n
	if r.track != nil {
		r.track.Grow(n)
	}
	return nil
}

// Shrink returns n bytes (at most what is held).
func (r *Reservation) Shrink(n int64) {
	n = min(n, r.size)
	if n > 0 {
		r.size -= n
		r.pool.shrink(n, r.spillable)
		if r.track != nil {
			r.track.Shrink(n)
		}
	}
}

// Size is the bytes currently held.
func (r *Reservation) Size() int64 { return r.size }

// Free returns everything held.
func (r *Reservation) Free() { r.Shrink(r.size) }

// Limit is the most the pool lets its reservations hold (0: no limit).
func (p *Pool) Limit() int64 { return p.limit }
