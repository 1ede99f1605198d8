package mempool

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// DefaultFraction is the share of the machine's memory (or of the
// process's cgroup limit, when lower) that a process lets queries reserve
// when no limit is set, so that a query that needs more fails with a
// "resources exhausted" error instead of the process being killed for
// running out of memory. The rest is for what reservations do not count
// (batches in flight, the Go runtime) and for the machine.
const DefaultFraction = 0.75

// DefaultLimit is DefaultFraction of the memory this process
// may use (ProcessMemory). It returns 0 (no limit) when that is unknown.
func DefaultLimit() int64 {
	return int64(float64(ProcessMemory()) * DefaultFraction)
}

// ProcessMemory is the memory this process may use: the smaller of the
// machine's memory and its cgroup's limit, 0 when neither can be read.
func ProcessMemory() int64 {
	return processMemory(machineMemory("/proc/meminfo"),
		cgroupMemoryLimit("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"))
}

// processMemory is the smaller of the known ones (> 0) of the machine's
// memory and the cgroup's limit.
func processMemory(machine, cgroup int64) int64 {
	if cgroup > 0 && (machine <= 0 || cgroup < machine) {
		return cgroup
	}
	return max(machine, 0)
}

// machineMemory reads MemTotal from a meminfo file, in bytes (0 if absent).
func machineMemory(path string) int64 {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemTotal:" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}

// cgroupMemoryLimit reads the first of the cgroup v2 or v1 limit files that
// holds a number (0 if none does: absent, or "max").
func cgroupMemoryLimit(paths ...string) int64 {
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err == nil && n > 0 && n < 1<<60 {
			return n
		}
	}
	return 0
}
