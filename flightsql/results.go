package flightsql

import (
	"context"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"sluice/rpc"
	"sluice/session"
)

// result is a statement's result waiting for, or being read by, the
// client's DoGet. GetFlightInfo runs the statement (so its errors surface
// there and its schema is known) and hands out a ticket naming the
// result; DoGet streams it.
type result struct {
	handle  string
	res     *session.Result
	schema  *arrow.Schema
	created time.Time
	// cancel stops the DoGet reading the result (nil while pending).
	cancel context.CancelFunc
}

// results are the results handed out and not yet finished, by handle.
type results struct {
	mu       sync.Mutex
	byHandle map[string]*result
}

func newResults() *results { return &results{byHandle: map[string]*result{}} }

// add registers a result and returns its handle: a random secret, so a
// ticket cannot be guessed by another client.
func (rs *results) add(res *session.Result) *result {
	schema := res.Schema
	if schema == nil {
		schema = emptySchema
	}
	r := &result{handle: rpc.RandomHex(16), res: res, schema: schema, created: time.Now()}
	rs.mu.Lock()
	rs.byHandle[r.handle] = r
	rs.mu.Unlock()
	return r
}

// take hands a pending result to the DoGet that will read it, with the
// context it reads under; a result is read once.
func (rs *results) take(ctx context.Context, handle string) (*result, context.Context, bool) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	r, ok := rs.byHandle[handle]
	if !ok || r.cancel != nil {
		return nil, nil, false
	}
	ctx, r.cancel = context.WithCancel(ctx)
	return r, ctx, true
}

// finish forgets a result and releases it (cancelling its job if it has
// not ended).
func (rs *results) finish(r *result) {
	rs.mu.Lock()
	_, ok := rs.byHandle[r.handle]
	delete(rs.byHandle, r.handle)
	rs.mu.Unlock()
	if !ok {
		return
	}
	r.res.Close()
}

// cancelHandle cancels a result: a pending one is dropped, a streaming
// one's DoGet is stopped (it then finishes the result). It reports
// whether the handle named a live result.
func (rs *results) cancelHandle(handle string) bool {
	rs.mu.Lock()
	r, ok := rs.byHandle[handle]
	rs.mu.Unlock()
	if !ok {
		return false
	}
	if r.cancel != nil {
		r.cancel()
		return true
	}
	rs.finish(r)
	return true
}

// expire drops the pending results created before cutoff; it returns how
// many.
func (rs *results) expire(cutoff time.Time) int {
	rs.mu.Lock()
	var old []*result
	for _, r := range rs.byHandle {
		if r.cancel == nil && r.created.Before(cutoff) {
			old = append(old, r)
		}
	}
	rs.mu.Unlock()
	for _, r := range old {
		rs.finish(r)
	}
	return len(old)
}

// closeAll cancels every result: pending ones are dropped here,
// streaming ones by their DoGet once it stops.
func (rs *results) closeAll() {
	for _, r := range rs.snapshot() {
		rs.cancelHandle(r.handle)
	}
}

func (rs *results) snapshot() []*result {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	all := make([]*result, 0, len(rs.byHandle))
	for _, r := range rs.byHandle {
		all = append(all, r)
	}
	return all
}
