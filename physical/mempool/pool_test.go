package mempool

import "testing"

// TestPoolRelease: a released pool gives what it still holds back to its
// parent, once, and what it reserves or frees afterwards no longer moves
// the parent.
func TestPoolRelease(t *testing.T) {
	parent := NewPool("executor", 1000, nil)
	task := NewPool("task", 0, parent)
	leaked := task.NewReservation("leaky operator")
	if err := leaked.Grow(300); err != nil {
		t.Fatal(err)
	}
	freed := task.NewReservation("late operator")
	if err := freed.Grow(200); err != nil {
		t.Fatal(err)
	}
	if got := task.Release(); got != 500 || parent.Used() != 0 {
		t.Fatalf("Release returned %d, parent holds %d; want 500 and 0", got, parent.Used())
	}
	freed.Free() // after the task ended, as a pipelined queue's buffer may be
	if err := task.NewReservation("after").Grow(100); err != nil {
		t.Fatal(err)
	}
	if parent.Used() != 0 || task.Release() != 0 {
		t.Errorf("after Release the parent holds %d; want 0, and a second Release to give nothing", parent.Used())
	}
	// A new task can use the whole parent again.
	if err := NewPool("next task", 0, parent).NewReservation("op").Grow(1000); err != nil {
		t.Errorf("the parent is not whole again: %v", err)
	}
}
