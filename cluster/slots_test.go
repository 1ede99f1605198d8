package cluster

import (
	"context"
	"testing"
	"time"
)

func TestSlots(t *testing.T) {
	s := newSlots(4)
	for _, tt := range []struct{ ask, want int }{{0, 1}, {-1, 1}, {3, 3}, {4, 4}, {9, 4}} {
		if got := s.size(tt.ask); got != tt.want {
			t.Errorf("size(%d) = %d, want %d", tt.ask, got, tt.want)
		}
	}
	ctx := context.Background()
	s.accept(3)
	if err := s.acquire(ctx, 3); err != nil {
		t.Fatal(err)
	}
	s.accept(2)
	if got := s.free(); got != 0 {
		t.Errorf("free = %d with 5 of 4 vcores accepted, want 0", got)
	}
	// The second task waits for slots until cancelled.
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if err := s.acquire(short, 2); err == nil {
		t.Fatal("acquired 2 slots with 1 free")
	}
	s.release(2, false)
	if got := s.free(); got != 1 {
		t.Errorf("free = %d, want 1", got)
	}
	select {
	case <-s.freed:
	default:
		t.Error("release did not signal freed")
	}
	s.release(3, true)
	if got := s.free(); got != 4 {
		t.Errorf("free = %d after releasing everything, want 4", got)
	}
	if err := s.acquire(ctx, 4); err != nil {
		t.Fatal(err)
	}
}
