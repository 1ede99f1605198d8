package physical

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestJoinSharedBuildPanics: the partition that builds a task's shared
// table panics; it and the partition waiting for the table both get the
// panic as an error instead of the waiter blocking for ever.
func TestJoinSharedBuildPanics(t *testing.T) {
	s := newJoinShared()
	tc := &TaskContext{}
	e := s.acquire(tc)
	s.acquire(tc)
	building := make(chan struct{})
	waited := make(chan error, 1)
	go func() {
		<-building
		_, err := s.get(t.Context(), e, func(context.Context) (*joinBuildTable, error) {
			t.Error("a second partition built the table too")
			return nil, nil
		})
		waited <- err
	}()
	_, err := s.get(t.Context(), e, func(context.Context) (*joinBuildTable, error) {
		close(building)
		time.Sleep(10 * time.Millisecond) // let the other partition wait
		panic("build failed")
	})
	var pe *PanicError
	if !errors.As(err, &pe) {
		t.Fatalf("builder got %v, want a *PanicError", err)
	}
	select {
	case err := <-waited:
		if !errors.As(err, &pe) {
			t.Fatalf("waiter got %v, want a *PanicError", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting partition never woke")
	}
	s.release(tc, e)
	s.release(tc, e)
}
