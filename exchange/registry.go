package exchange

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"sluice/physical"
	"sluice/physical/mempool"
	"sluice/rpc"
)

// QueueKey names one pipelined queue: output partition Partition of task
// TaskID of stage StageID of job JobID.
type QueueKey struct {
	JobID     string
	StageID   int
	TaskID    int
	Partition int
}

func (k QueueKey) String() string {
	return fmt.Sprintf("job %s stage %d task %d partition %d", k.JobID, k.StageID, k.TaskID, k.Partition)
}

// ErrJobReleased is returned (wrapped) to producers and consumers of a job
// whose queues were dropped by DropJob: the job finished, failed or was
// cancelled.
var ErrJobReleased = errors.New("the job's exchange queues were released")

// droppedJobTTL is how long DropJob remembers a job, so that a producer
// task that starts after cleanup (it was launched just before the job
// failed) cannot re-create queues nobody will ever drop.
const droppedJobTTL = time.Hour

// Registry is the executor-wide set of pipelined queues, keyed by
// QueueKey. A producer (PipelinedWriter) registers its task's queues,
// pushes batches and finishes each queue with an end-of-stream marker or
// an error; consumers (the Flight service, or a local PipelinedReader)
// take a queue and read it.
//
// A queue holds at most its capacity in batches: Push blocks while it is
// full, which is how a slow consumer slows its producers (backpressure).
// A consumer sees io.EOF only after the producer's end-of-stream marker; a
// producer error or cancellation reaches it as an error, never as a short
// result.
//
// Broadcast queues keep every batch so that each consumer task can replay
// the whole output; Push never blocks on them (a broadcast output is a
// join build side small enough to broadcast), and they are released by
// DropJob. A non-broadcast queue has one consumer and is dropped once that
// consumer has read it to the end (or gave up and the producer finished).
//
// All methods are safe for concurrent use.
type Registry struct {
	mu      sync.Mutex
	jobs    map[string]*jobQueues
	dropped *Remembered   // released jobs
	changed chan struct{} // closed (and replaced) on every Register and DropJob
	// total is the bytes queued over all jobs; peakTotal its high-water
	// mark since the last ResetPeak.
	total, peakTotal int64
	// taken counts the queues consumers have taken (a broadcast queue
	// once per reader), local or over Flight.
	taken int64
}

type jobQueues struct {
	queues map[QueueKey]*queue
	bytes  int64
	peak   int64
}

type queue struct {
	key QueueKey
	job *jobQueues
	// taskKey is the producer task's key: a remote reader must present
	// the capability it gives the queue's partition (TakeCapable).
	taskKey   []byte
	schema    *arrow.Schema
	capacity  int
	broadcast bool

	batches  []arrow.RecordBatch // non-broadcast: unread; broadcast: all
	sizes    []int64
	finished bool  // the producer called Finish
	err      error // the producer's error, if any
	taken    bool  // non-broadcast: a consumer has it
	demanded bool  // a consumer has taken it (any kind): see AwaitDemand
	gone     bool  // non-broadcast: the consumer closed before the end
	released bool  // DropJob released the queue
	removed  bool
	changed  chan struct{} // closed (and replaced) on every state change

	// res charges the queued bytes to the producer task's memory pool
	// (nil: not charged): grown by Push, shrunk when the consumer takes
	// a batch or the queue is discarded. Guarded by the registry's lock.
	res *mempool.Reservation
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{
		jobs:    make(map[string]*jobQueues),
		dropped: NewRemembered(droppedJobTTL),
		changed: make(chan struct{}),
	}
}

func (r *Registry) signal() {
	close(r.changed)
	r.changed = make(chan struct{})
}

func (q *queue) signal() {
	close(q.changed)
	q.changed = make(chan struct{})
}

func (r *Registry) lookup(k QueueKey) *queue {
	if j := r.jobs[k.JobID]; j != nil {
		return j.queues[k]
	}
	return nil
}

func releasedErr(job string) error { return fmt.Errorf("job %s: %w", job, ErrJobReleased) }

// Register creates the queues of one producer task: one per output
// partition in partitions, each holding up to capacity batches (at least
// one) of the given schema. taskKey is the task's key
// (TaskDefinition.output_key), which TakeCapable checks tickets against.
func (r *Registry) Register(job string, stage, task int, schema *arrow.Schema, partitions []int, capacity int, broadcast bool, taskKey []byte) error {
	return r.RegisterCharged(job, stage, task, schema, partitions, capacity, broadcast, taskKey, nil)
}

// RegisterCharged is Register with the queued bytes charged to mem, the
// producer task's memory pool (nil: not charged): a push that the pool
// refuses fails with its error, and the bytes are given back as the
// consumer takes the batches, locally or over Flight, or as the queue is
// discarded. Once the task has ended and its pool was released, what its
// queues still hold no longer counts against the executor's pool.
func (r *Registry) RegisterCharged(job string, stage, task int, schema *arrow.Schema, partitions []int, capacity int, broadcast bool, taskKey []byte, mem *mempool.Pool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.dropped.Has(job) {
		return releasedErr(job)
	}
	j := r.jobs[job]
	if j == nil {
		j = &jobQueues{queues: make(map[QueueKey]*queue)}
		r.jobs[job] = j
	}
	for _, p := range partitions {
		k := QueueKey{JobID: job, StageID: stage, TaskID: task, Partition: p}
		if j.queues[k] != nil {
			return fmt.Errorf("internal: pipelined queue for %s registered twice", k)
		}
	}
	for _, p := range partitions {
		k := QueueKey{JobID: job, StageID: stage, TaskID: task, Partition: p}
		q := &queue{key: k, job: j, taskKey: taskKey, schema: schema, capacity: max(capacity, 1), broadcast: broadcast, changed: make(chan struct{})}
		if mem != nil {
			q.res = mem.NewReservation("exchange queue")
		}
		j.queues[k] = q
	}
	r.signal()
	return nil
}

// ErrClientIdle is returned (wrapped) by PushIdle when the queue's
// consumer, the client, read nothing for the idle timeout.
var ErrClientIdle = errors.New("the client stopped reading the result")

// Push appends b to queue k, taking ownership of it. It blocks while a
// non-broadcast queue is full, until the consumer reads, ctx is done
// (returning ctx's error) or the job is released. If the consumer has
// gone, b is discarded and Push returns nil: the rows are not wanted.
func (r *Registry) Push(ctx context.Context, k QueueKey, b arrow.RecordBatch) error {
	return r.PushIdle(ctx, k, b, 0)
}

// PushIdle is Push for a queue the client reads: with idle > 0 it gives up
// with an error wrapping ErrClientIdle once the queue has stayed full, its
// reader taking nothing, for idle. A client that stops reading (a paused
// shell) would otherwise hold its job's vcores on every executor for as
// long as it stays connected.
func (r *Registry) PushIdle(ctx context.Context, k QueueKey, b arrow.RecordBatch, idle time.Duration) error {
	var timer *time.Timer
	var timeout <-chan time.Time
	if idle > 0 {
		timer = time.NewTimer(idle)
		defer timer.Stop()
		timeout = timer.C
	}
	r.mu.Lock()
	q := r.lookup(k)
	if q == nil {
		dropped := r.dropped.Has(k.JobID)
		r.mu.Unlock()
		b.Release()
		if dropped {
			return releasedErr(k.JobID)
		}
		return fmt.Errorf("internal: push to unregistered pipelined queue %s", k)
	}
	for {
		switch {
		case q.released:
			r.mu.Unlock()
			b.Release()
			return releasedErr(k.JobID)
		case q.finished:
			r.mu.Unlock()
			b.Release()
			return fmt.Errorf("internal: push to finished pipelined queue %s", k)
		case q.gone:
			r.mu.Unlock()
			b.Release()
			return nil
		case q.broadcast || len(q.batches) < q.capacity:
			n := physical.BatchBytes(b)
			if q.res != nil {
				if err := q.res.Grow(n); err != nil {
					r.mu.Unlock()
					b.Release()
					return fmt.Errorf("queueing a batch for %s: %w", k, err)
				}
			}
			q.batches = append(q.batches, b)
			q.sizes = append(q.sizes, n)
			q.job.bytes += n
			q.job.peak = max(q.job.peak, q.job.bytes)
			r.total += n
			r.peakTotal = max(r.peakTotal, r.total)
			q.signal()
			r.mu.Unlock()
			return nil
		}
		ch := q.changed
		r.mu.Unlock()
		select {
		case <-ch:
			// The queue changed (a read, above all): the client is
			// still there, and the idle wait starts again.
			if timer != nil {
				timer.Reset(idle)
			}
		case <-timeout:
			b.Release()
			return fmt.Errorf("%w: it read none of %s for %s (execution.idle_client_timeout), so the query was cancelled to free its executors", ErrClientIdle, k, idle)
		case <-ctx.Done():
			b.Release()
			return ctx.Err()
		}
		r.mu.Lock()
	}
}

// Finish ends queue k: with err nil it is the end-of-stream marker; with an
// error every consumer gets that error after the batches already queued.
// Only the first Finish counts.
func (r *Registry) Finish(k QueueKey, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	q := r.lookup(k)
	if q == nil || q.finished {
		return
	}
	q.finished, q.err = true, err
	q.signal()
	if q.gone {
		r.remove(q)
	}
}

// remove deletes a non-broadcast queue and its batches.
func (r *Registry) remove(q *queue) {
	if q.removed {
		return
	}
	q.removed = true
	r.discard(q)
	delete(q.job.queues, q.key)
}

// discard releases q's batches.
func (r *Registry) discard(q *queue) {
	for i, b := range q.batches {
		b.Release()
		q.job.bytes -= q.sizes[i]
		r.total -= q.sizes[i]
		if q.res != nil {
			q.res.Shrink(q.sizes[i])
		}
	}
	q.batches, q.sizes = nil, nil
}

// Take returns a reader of queue k, waiting up to wait for its producer to
// register it. A non-broadcast queue can be taken once; a broadcast queue
// any number of times, each reader replaying it from the start. It checks
// no capability: it is for readers in the producer's own process.
func (r *Registry) Take(ctx context.Context, k QueueKey, wait time.Duration) (*QueueReader, error) {
	return r.take(ctx, k, wait, nil)
}

// ErrNoCapability is returned (wrapped) by TakeCapable when the ticket
// does not carry the queue's capability.
var ErrNoCapability = errors.New("the ticket does not carry the capability of the pipelined partition")

// TakeCapable is Take for a reader in another process (a consumer task on
// another executor, or the client): once the queue is registered,
// capability must be the one the producer task's key gives its partition
// (rpc.ValidCapability, in constant time), or TakeCapable fails with an
// error wrapping ErrNoCapability. A refused reader leaves the queue as it
// was, for the consumer wired to it: the job's secret alone, which every
// task of the job holds, cannot take another consumer's input.
func (r *Registry) TakeCapable(ctx context.Context, k QueueKey, wait time.Duration, capability []byte) (*QueueReader, error) {
	return r.take(ctx, k, wait, func(q *queue) error {
		if len(q.taskKey) == 0 {
			return fmt.Errorf("%w: %s was registered without a key, so no ticket may take it", ErrNoCapability, k)
		}
		if !rpc.ValidCapability(q.taskKey, int32(k.Partition), capability) {
			return fmt.Errorf("%w %s: only its wired consumer may take it (a pipelined partition is read once, and the job's secret alone is not enough)", ErrNoCapability, k)
		}
		return nil
	})
}

// take is Take with check, when set, run on the registered queue (under
// the lock) before it is taken.
func (r *Registry) take(ctx context.Context, k QueueKey, wait time.Duration, check func(*queue) error) (*QueueReader, error) {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	r.mu.Lock()
	for {
		if r.dropped.Has(k.JobID) {
			r.mu.Unlock()
			return nil, releasedErr(k.JobID)
		}
		if q := r.lookup(k); q != nil {
			defer r.mu.Unlock()
			if check != nil {
				if err := check(q); err != nil {
					return nil, err
				}
			}
			if !q.broadcast {
				if q.taken {
					return nil, fmt.Errorf("pipelined queue %s is already being read (no retries in pipelined mode)", k)
				}
				q.taken = true
			}
			if !q.demanded {
				q.demanded = true
				r.signal()
			}
			r.taken++
			return &QueueReader{r: r, q: q}, nil
		}
		ch := r.changed
		r.mu.Unlock()
		select {
		case <-ch:
		case <-timer.C:
			return nil, fmt.Errorf("producer of %s did not start within %s (was the task launched on this executor?)", k, wait)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		r.mu.Lock()
	}
}

// AwaitDemand waits until a consumer has taken one of the queues of task
// task of stage stage of job, which the task has registered: a lazy
// producer (TaskEnv.LazyStart) starts its work only then. It returns an
// error wrapping ErrJobReleased if the job is released first, or ctx's.
// With idle > 0 (the queues are the client's) it gives up with an error
// wrapping ErrClientIdle after idle without a take, as PushIdle does on a
// full queue: a client that never reads must not hold the job's vcores.
func (r *Registry) AwaitDemand(ctx context.Context, job string, stage, task int, idle time.Duration) error {
	var timeout <-chan time.Time
	if idle > 0 {
		timer := time.NewTimer(idle)
		defer timer.Stop()
		timeout = timer.C
	}
	r.mu.Lock()
	for {
		if r.dropped.Has(job) {
			r.mu.Unlock()
			return releasedErr(job)
		}
		if j := r.jobs[job]; j != nil {
			for k, q := range j.queues {
				if k.StageID == stage && k.TaskID == task && q.demanded {
					r.mu.Unlock()
					return nil
				}
			}
		}
		ch := r.changed
		r.mu.Unlock()
		select {
		case <-ch:
		case <-timeout:
			return fmt.Errorf("%w: it read none of job %s stage %d task %d's output for %s (execution.idle_client_timeout), so the query was cancelled to free its executors", ErrClientIdle, job, stage, task, idle)
		case <-ctx.Done():
			return ctx.Err()
		}
		r.mu.Lock()
	}
}

// DropJob releases every queue of job: their batches are freed, blocked
// producers and consumers return an error wrapping ErrJobReleased, and
// later registrations for the job are refused.
func (r *Registry) DropJob(job string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.dropped.Add(job, time.Now())
	if j := r.jobs[job]; j != nil {
		for _, q := range j.queues {
			q.released = true
			r.discard(q)
			q.signal()
		}
		delete(r.jobs, job)
	}
	r.signal()
}

// QueuedBytes is the memory held by job's queued batches.
func (r *Registry) QueuedBytes(job string) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if j := r.jobs[job]; j != nil {
		return j.bytes
	}
	return 0
}

// PeakQueuedBytes is the most memory job's queues held at once.
func (r *Registry) PeakQueuedBytes(job string) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if j := r.jobs[job]; j != nil {
		return j.peak
	}
	return 0
}

// Entries is the number of job's queues still registered.
func (r *Registry) Entries(job string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if j := r.jobs[job]; j != nil {
		return len(j.queues)
	}
	return 0
}

// QueueReader reads one queue. It is used by one goroutine.
type QueueReader struct {
	r      *Registry
	q      *queue
	cursor int  // broadcast: next batch to replay
	ended  bool // returned EOF or the producer's error
	closed bool
}

// Schema is the schema of the queue's batches.
func (qr *QueueReader) Schema() *arrow.Schema { return qr.q.schema }

// Next returns the next batch (the caller owns it), io.EOF after the
// producer's end-of-stream marker, or an error: the producer's, one
// wrapping ErrJobReleased, or ctx's.
func (qr *QueueReader) Next(ctx context.Context) (arrow.RecordBatch, error) {
	r, q := qr.r, qr.q
	if qr.closed {
		return nil, fmt.Errorf("internal: read of closed pipelined queue %s", q.key)
	}
	r.mu.Lock()
	for {
		if q.released {
			r.mu.Unlock()
			return nil, releasedErr(q.key.JobID)
		}
		if q.broadcast {
			if qr.cursor < len(q.batches) {
				b := q.batches[qr.cursor]
				qr.cursor++
				b.Retain()
				r.mu.Unlock()
				return b, nil
			}
		} else if len(q.batches) > 0 {
			b := q.batches[0]
			q.job.bytes -= q.sizes[0]
			r.total -= q.sizes[0]
			if q.res != nil {
				// The consumer owns the batch now: it is no longer the
				// producer's to account for.
				q.res.Shrink(q.sizes[0])
			}
			q.batches[0] = nil
			q.batches, q.sizes = q.batches[1:], q.sizes[1:]
			q.signal()
			r.mu.Unlock()
			return b, nil
		}
		if q.finished {
			qr.ended = true
			if !q.broadcast {
				r.remove(q)
			}
			err := q.err
			r.mu.Unlock()
			if err != nil {
				return nil, fmt.Errorf("producer of %s failed: %w", q.key, err)
			}
			return nil, io.EOF
		}
		ch := q.changed
		r.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		r.mu.Lock()
	}
}

// Close ends the read. A non-broadcast queue closed before its end is
// abandoned: its batches are freed and its producer's further pushes are
// discarded (LIMIT stops reading early).
func (qr *QueueReader) Close() {
	if qr.closed {
		return
	}
	qr.closed = true
	if qr.q.broadcast || qr.ended {
		return
	}
	r, q := qr.r, qr.q
	r.mu.Lock()
	defer r.mu.Unlock()
	if q.released {
		return
	}
	q.gone = true
	r.discard(q)
	q.signal()
	if q.finished {
		r.remove(q)
	}
}

// Jobs lists the jobs that have queues.
func (r *Registry) Jobs() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	jobs := make([]string, 0, len(r.jobs))
	for j := range r.jobs {
		jobs = append(jobs, j)
	}
	return jobs
}

// TotalEntries counts the queues of every job still in the registry.
func (r *Registry) TotalEntries() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, j := range r.jobs {
		n += len(j.queues)
	}
	return n
}

// PeakTotalBytes is the most bytes queued at once over all jobs since the
// registry was made or ResetPeak was called.
func (r *Registry) PeakTotalBytes() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.peakTotal
}

// Taken is how many queue reads consumers have started since the registry
// was made: by a local reader, or by the Flight service for a remote one.
func (r *Registry) Taken() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.taken
}

// ResetPeak restarts PeakTotalBytes from the bytes queued now.
func (r *Registry) ResetPeak() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.peakTotal = r.total
}
