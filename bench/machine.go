package bench

import (
	"bufio"
	"fmt"
	"os"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cpuModel is the CPU's model name from /proc/cpuinfo, or "" elsewhere.
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// PeakRSS is the process's resident-set high-water mark (VmHWM) in bytes.
// It is process-wide and only grows.
func PeakRSS() (int64, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, fmt.Errorf("peak RSS: %w (only Linux reports it)", err)
	}
	return parseVmHWM(string(b))
}

func parseVmHWM(status string) (int64, error) {
	for _, line := range strings.Split(status, "\n") {
		v, ok := strings.CutPrefix(line, "VmHWM:")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("peak RSS: unexpected VmHWM line %q", line)
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("peak RSS: %w", err)
		}
		return kb * 1024, nil
	}
	return 0, fmt.Errorf("peak RSS: no VmHWM in /proc/self/status")
}

func sortInts(xs []int) { slices.Sort(xs) }

// CPUSample is a reading of the machine's busy CPU time and this
// process's own, both in clock ticks (Linux's USER_HZ, 100 a second).
// Two samples tell how much CPU other processes used in between, which a
// load average cannot: it counts this process too.
type CPUSample struct {
	At   time.Time
	Busy int64 // all CPUs: user, nice, system, irq, softirq, steal
	Self int64 // this process: user and system
}

// SampleCPU reads /proc/stat and /proc/self/stat (Linux).
func SampleCPU() (CPUSample, error) {
	st, err := os.ReadFile("/proc/stat")
	if err != nil {
		return CPUSample{}, fmt.Errorf("CPU sample: %w (only Linux reports it)", err)
	}
	self, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return CPUSample{}, fmt.Errorf("CPU sample: %w", err)
	}
	busy, err := parseProcStatBusy(string(st))
	if err != nil {
		return CPUSample{}, err
	}
	own, err := parseSelfStatTicks(string(self))
	if err != nil {
		return CPUSample{}, err
	}
	return CPUSample{At: time.Now(), Busy: busy, Self: own}, nil
}

// OtherCPUs is how many CPUs, on average, processes other than this one
// kept busy between s and later (steal time, another guest's, counts).
func (s CPUSample) OtherCPUs(later CPUSample) float64 {
	secs := later.At.Sub(s.At).Seconds()
	if secs <= 0 {
		return 0
	}
	other := float64((later.Busy-s.Busy)-(later.Self-s.Self)) / clockTicks
	return max(other/secs, 0)
}

// clockTicks is USER_HZ, the unit of /proc's CPU times: 100 on every
// Linux architecture Go runs on.
const clockTicks = 100

// parseProcStatBusy sums the busy fields of /proc/stat's "cpu" line: user,
// nice, system, irq, softirq and steal (not idle, not iowait; guest time
// is already inside user and nice).
func parseProcStatBusy(stat string) (int64, error) {
	line, _, _ := strings.Cut(stat, "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0, fmt.Errorf("CPU sample: unexpected /proc/stat line %q", line)
	}
	var sum int64
	for _, i := range []int{1, 2, 3, 6, 7, 8} {
		v, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("CPU sample: %w", err)
		}
		sum += v
	}
	return sum, nil
}

// parseSelfStatTicks returns utime+stime from /proc/self/stat, whose
// second field (the command, in parentheses) may hold spaces.
func parseSelfStatTicks(stat string) (int64, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("CPU sample: unexpected /proc/self/stat %q", stat)
	}
	f := strings.Fields(stat[i+1:])
	// f[0] is field 3 (state): utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("CPU sample: short /proc/self/stat %q", stat)
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	k, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("CPU sample: bad times in /proc/self/stat %q", stat)
	}
	return u + k, nil
}

// Usage is what this process has used so far: CPU time, page faults, and
// the garbage collector's cycles. A run's share is the difference of two
// samples (Sub).
type Usage struct {
	CPU time.Duration
	// PageFaults counts the faults that mapped a page (minor and major):
	// memory the process touched for the first time or again after
	// returning it to the system.
	PageFaults int64
	GCCycles   uint64
}

// ProcessUsage samples this process's Usage; a figure the system does not
// give stays 0.
func ProcessUsage() Usage {
	var u Usage
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err == nil {
		u.CPU = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		u.PageFaults = int64(ru.Minflt) + int64(ru.Majflt)
	}
	gc := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(gc)
	if gc[0].Value.Kind() == metrics.KindUint64 {
		u.GCCycles = gc[0].Value.Uint64()
	}
	return u
}

// Sub is what was used between an earlier sample and u.
func (u Usage) Sub(earlier Usage) Usage {
	return Usage{CPU: u.CPU - earlier.CPU, PageFaults: u.PageFaults - earlier.PageFaults, GCCycles: u.GCCycles - earlier.GCCycles}
}
