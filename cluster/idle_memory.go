package cluster

import (
	"context"
	"runtime/debug"
	"time"
)

// idleMemoryDelay is how long an executor must have run no task before it
// gives its free memory back to the operating system.
const idleMemoryDelay = 5 * time.Second

// idleMemory returns a process's free heap to the operating system once
// its executor has been idle for delay after running something.
//
// Why: the buffers of a finished query stay in the allocator's pools
// (mempool.Allocator, sync.Pools that drop what two garbage collections
// find unused) and then in the Go heap, which the runtime returns to the
// system only gradually; an idle executor that had just run TPC-H q9, q18
// and q21 held 458 MB for minutes. Freeing runs two collections (the
// second empties the pools' victim caches) and then returns the pages.
type idleMemory struct {
	busy  func() bool // whether a task is queued or running
	free  func()      // gives memory back (debug.FreeOSMemory in production)
	delay time.Duration
	tick  time.Duration
}

// freeOSMemory collects twice, so pooled buffers unused since the first
// collection are dropped, and returns the free heap to the system.
func freeOSMemory() {
	debug.FreeOSMemory()
	debug.FreeOSMemory()
}

// run checks every tick until ctx is done; memory is freed once per idle
// period, after the executor has been idle for delay.
func (m idleMemory) run(ctx context.Context) {
	t := time.NewTicker(m.tick)
	defer t.Stop()
	lastBusy, dirty := time.Now(), false
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			switch {
			case m.busy():
				lastBusy, dirty = now, true
			case dirty && now.Sub(lastBusy) >= m.delay:
				m.free()
				dirty = false
			}
		}
	}
}
