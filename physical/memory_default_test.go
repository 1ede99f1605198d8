package physical

import (
	"os"
	"path/filepath"
	"testing"
)

// TestDefaultMemoryLimitSources reads the machine's memory and a cgroup's
// limit from files as Linux writes them.
func TestDefaultMemoryLimitSources(t *testing.T) {
	dir := t.TempDir()
	meminfo := filepath.Join(dir, "meminfo")
	if err := os.WriteFile(meminfo, []byte("MemTotal:       24576000 kB\nMemFree:         1000 kB\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := machineMemory(meminfo); got != 24576000<<10 {
		t.Errorf("machineMemory = %d", got)
	}
	if got := machineMemory(filepath.Join(dir, "absent")); got != 0 {
		t.Errorf("an absent meminfo gave %d", got)
	}
	v2, v1 := filepath.Join(dir, "memory.max"), filepath.Join(dir, "limit_in_bytes")
	if err := os.WriteFile(v2, []byte("max\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(v1, []byte("4294967296\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := cgroupMemoryLimit(v2, v1); got != 4<<30 {
		t.Errorf("cgroup limit = %d, want the v1 file's 4 GiB after v2's max", got)
	}
	if got := cgroupMemoryLimit(v2); got != 0 {
		t.Errorf("an unlimited cgroup gave %d", got)
	}
	if got := DefaultMemoryLimit(); got < 0 {
		t.Errorf("DefaultMemoryLimit = %d", got)
	}
}

// TestPoolRelease: a released pool gives what it still holds back to its
// parent, once, and what it reserves or frees afterwards no longer moves
// the parent.
func TestPoolRelease(t *testing.T) {
	parent := NewMemoryPool("executor", 1000, nil)
	task := NewMemoryPool("task", 0, parent)
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
	if err := NewMemoryPool("next task", 0, parent).NewReservation("op").Grow(1000); err != nil {
		t.Errorf("the parent is not whole again: %v", err)
	}
}
