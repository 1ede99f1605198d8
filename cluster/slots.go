package cluster

import (
	"context"
	"sync"

	"golang.org/x/sync/semaphore"
)

// slots are an executor's vcores. A task holds as many as it has
// partitions while it runs; tasks launched beyond the free vcores wait for
// slots rather than oversubscribing the CPU (the scheduler's view of free
// vcores can lag behind the executor's by a heartbeat).
type slots struct {
	total int
	sem   *semaphore.Weighted
	// freed gets a value (without blocking) whenever accepted work ends,
	// waking a pull-mode executor to poll.
	freed chan struct{}

	mu       sync.Mutex
	accepted int // vcores of tasks queued or running
}

func newSlots(total int) *slots {
	return &slots{total: total, sem: semaphore.NewWeighted(int64(total)), freed: make(chan struct{}, 1)}
}

// size is the slots a task asking for n vcores takes: at least one, at
// most all of them (a bigger task would wait forever).
func (s *slots) size(n int) int { return min(max(n, 1), s.total) }

// accept counts a task's vcores as taken from the moment it is accepted.
func (s *slots) accept(n int) {
	s.mu.Lock()
	s.accepted += n
	s.mu.Unlock()
}

// acquire waits until n slots are free or ctx is done.
func (s *slots) acquire(ctx context.Context, n int) error {
	return s.sem.Acquire(ctx, int64(n))
}

// release returns a task's vcores: running (held) says whether acquire
// succeeded.
func (s *slots) release(n int, held bool) {
	if held {
		s.sem.Release(int64(n))
	}
	s.mu.Lock()
	s.accepted -= n
	s.mu.Unlock()
	select {
	case s.freed <- struct{}{}:
	default:
	}
}

// free is the vcores not taken by accepted tasks.
func (s *slots) free() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return max(s.total-s.accepted, 0)
}
