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
