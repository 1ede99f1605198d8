package mempool

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
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
	if got := DefaultLimit(); got < 0 {
		t.Errorf("DefaultLimit = %d", got)
	}
}

// TestProcessMemoryRandom: on random machine sizes and cgroup limits
// (known or not), the process may use the smaller known one, and the
// default cap is three quarters of that.
func TestProcessMemoryRandom(t *testing.T) {
	seed := rand.Uint64()
	r := rand.New(rand.NewPCG(seed, 3))
	for i := 0; i < 1000; i++ {
		machine, cgroup := r.Int64N(1<<40), r.Int64N(1<<40)
		if r.IntN(3) == 0 {
			machine = 0 // unreadable
		}
		if r.IntN(3) == 0 {
			cgroup = 0 // "max", or no cgroup
		}
		got := processMemory(machine, cgroup)
		var want int64
		switch {
		case machine > 0 && cgroup > 0:
			want = min(machine, cgroup)
		default:
			want = max(machine, cgroup)
		}
		if got != want {
			t.Fatalf("seed %d: processMemory(%d, %d) = %d, want %d", seed, machine, cgroup, got, want)
		}
		if limit := int64(float64(got) * DefaultFraction); limit > got || got > 0 && limit < got/2 {
			t.Fatalf("seed %d: a default cap of %d for %d bytes", seed, limit, got)
		}
	}
	if ProcessMemory() <= 0 || DefaultLimit() <= 0 || DefaultLimit() >= ProcessMemory() {
		t.Errorf("on this machine: process memory %d, default cap %d", ProcessMemory(), DefaultLimit())
	}
}

// TestMemoryLimitMessage: a refusal says a memory limit was reached, by
// whom, and what raises the limit.
func TestMemoryLimitMessage(t *testing.T) {
	parent := NewPool("executor e1", 1<<20, nil).WithHint("run fewer queries")
	task := NewPool("task 1/2/3", 0, parent).WithHint("SET execution.memory_limit")
	res := task.NewReservation("Sort[0]")
	err := res.Grow(2 << 20)
	if !errors.Is(err, ErrResourcesExhausted) {
		t.Fatalf("err = %v", err)
	}
	for _, want := range []string{"memory limit reached", "Sort[0] cannot reserve 2 MiB", "executor e1 has 0 B of its 1 MiB in use", "run fewer queries"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not say %q", err, want)
		}
	}
}
