package bench

import (
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestParseVmHWM(t *testing.T) {
	tests := []struct {
		status string
		want   int64
		ok     bool
	}{
		{"Name:\tx\nVmPeak:\t  10 kB\nVmHWM:\t   2048 kB\nVmRSS: 1 kB\n", 2048 * 1024, true},
		{"Name:\tx\n", 0, false},
		{"VmHWM:\t 12 MB\n", 0, false},
	}
	for _, tc := range tests {
		got, err := parseVmHWM(tc.status)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("parseVmHWM(%q) = %d, %v; want %d, ok=%v", tc.status, got, err, tc.want, tc.ok)
		}
	}
	if n, err := PeakRSS(); err != nil || n <= 0 {
		t.Errorf("PeakRSS() = %d, %v", n, err)
	}
}

func TestCPUSample(t *testing.T) {
	busy, err := parseProcStatBusy("cpu  100 20 30 4000 50 6 7 8 9 10\ncpu0 1 2 3 4 5 6 7 8 9 10\n")
	if err != nil || busy != 100+20+30+6+7+8 {
		t.Errorf("parseProcStatBusy = %d, %v; want %d", busy, err, 100+20+30+6+7+8)
	}
	if _, err := parseProcStatBusy("intr 1 2 3\n"); err == nil {
		t.Errorf("parseProcStatBusy accepted a line that is not cpu's")
	}
	self, err := parseSelfStatTicks("123 (a b) c) S 1 2 3 4 5 6 7 8 9 10 700 300 1 2 20 0")
	if err != nil || self != 1000 {
		t.Errorf("parseSelfStatTicks = %d, %v; want 1000", self, err)
	}
	s0 := CPUSample{At: time.Unix(100, 0), Busy: 1000, Self: 200}
	s1 := CPUSample{At: time.Unix(102, 0), Busy: 1400, Self: 350}
	if got := s0.OtherCPUs(s1); got != 1.25 {
		t.Errorf("OtherCPUs = %v, want 1.25 (250 ticks of others over 2 s)", got)
	}
	a, err := SampleCPU()
	if err != nil {
		t.Fatal(err)
	}
	if b, err := SampleCPU(); err != nil || b.Busy < a.Busy || b.Self < a.Self {
		t.Errorf("samples went backwards: %+v then %+v, %v", a, b, err)
	}
}

// TestWriteExtrasOtherCPUs: the memory table gives the CPU other processes
// used during each suite, and a suite measured on a busy machine is named
// in a warning.
func TestWriteExtrasOtherCPUs(t *testing.T) {
	rep := &Report{Memory: []Memory{
		{Mode: "pipelined", PeakRSSBytes: 1 << 20, OtherCPUs: 0.04},
		{Mode: "duckdb", PeakRSSBytes: 1 << 20, OtherCPUs: 1.5},
	}}
	var b strings.Builder
	if err := WriteExtras(&b, rep); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"| 0.04 |", "| 1.50 |", "not comparable with an idle machine", "duckdb (1.50)"} {
		if !strings.Contains(out, want) {
			t.Errorf("extras lack %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "pipelined (") {
		t.Errorf("an idle suite is named busy:\n%s", out)
	}
}

// TestProcessUsage: busy work shows in the process's CPU time, touching
// memory the process never had in its page faults, a collection in the
// collector's cycles.
func TestProcessUsage(t *testing.T) {
	start := ProcessUsage()
	deadline := time.Now().Add(10 * time.Second)
	x := uint64(1)
	for ProcessUsage().Sub(start).CPU < 20*time.Millisecond {
		if time.Now().After(deadline) {
			t.Fatalf("10 s of busy work, CPU time %v -> %v", start.CPU, ProcessUsage().CPU)
		}
		for i := 0; i < 1_000_000; i++ {
			x = x*6364136223846793005 + 1
		}
	}
	if x == 0 {
		t.Log(x) // keep the loop
	}

	before := ProcessUsage()
	mem, err := syscall.Mmap(-1, 0, 64<<20, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(mem)
	for i := 0; i < len(mem); i += 4096 {
		mem[i] = 1
	}
	runtime.GC()
	used := ProcessUsage().Sub(before)
	// 16,384 pages: fewer faults only where the kernel maps huge pages.
	if used.PageFaults < 16 {
		t.Errorf("touching 64 MiB of fresh memory: %d page faults", used.PageFaults)
	}
	if used.GCCycles < 1 {
		t.Errorf("runtime.GC: %d collector cycles", used.GCCycles)
	}
}
