package cluster

import (
	"context"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"
)

// TestIdleMemoryFreesOncePerIdlePeriod: nothing is freed while tasks run
// or before anything ran; memory is freed once after the delay, and again
// only after another busy spell. The delay is random, so the behaviour
// does not hang on its tuned value.
func TestIdleMemoryFreesOncePerIdlePeriod(t *testing.T) {
	var busy atomic.Bool
	var frees atomic.Int32
	delay := time.Duration(20+rand.IntN(60)) * time.Millisecond
	m := idleMemory{busy: busy.Load, free: func() { frees.Add(1) }, delay: delay, tick: 5 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go m.run(ctx)

	time.Sleep(delay + 50*time.Millisecond)
	if n := frees.Load(); n != 0 {
		t.Fatalf("freed %d times before any task ran", n)
	}
	busy.Store(true)
	time.Sleep(delay + 50*time.Millisecond)
	if n := frees.Load(); n != 0 {
		t.Fatalf("freed %d times while busy", n)
	}
	busy.Store(false)
	waitFor(t, "memory freed after the delay", func() bool { return frees.Load() == 1 })
	time.Sleep(delay + 50*time.Millisecond)
	if n := frees.Load(); n != 1 {
		t.Fatalf("freed %d times in one idle period, want 1", n)
	}
	busy.Store(true)
	time.Sleep(20 * time.Millisecond)
	busy.Store(false)
	waitFor(t, "memory freed after the second busy spell", func() bool { return frees.Load() == 2 })
}
