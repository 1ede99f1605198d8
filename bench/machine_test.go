package bench

import (
	"strings"
	"testing"
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

func TestParseLoadAvg(t *testing.T) {
	if v, err := parseLoadAvg("1.25 0.80 0.50 2/345 6789\n"); err != nil || v != 1.25 {
		t.Errorf("parseLoadAvg = %v, %v; want 1.25", v, err)
	}
	for _, bad := range []string{"", "x 1 2"} {
		if _, err := parseLoadAvg(bad); err == nil {
			t.Errorf("parseLoadAvg(%q) succeeded", bad)
		}
	}
	if _, err := LoadAverage(); err != nil {
		t.Errorf("LoadAverage: %v", err)
	}
}

// TestWriteExtrasLoad: the memory table gives each suite's load average,
// and a suite that started on a busy machine is named in a warning.
func TestWriteExtrasLoad(t *testing.T) {
	rep := &Report{Machine: Machine{CPUs: 2}, Memory: []Memory{
		{Mode: "pipelined", PeakRSSBytes: 1 << 20, LoadStart: 0.4, LoadEnd: 1.1},
		{Mode: "duckdb", PeakRSSBytes: 1 << 20, LoadStart: 3.5, LoadEnd: 2},
	}}
	var b strings.Builder
	if err := WriteExtras(&b, rep); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"| 0.40, 1.10 |", "| 3.50, 2.00 |", "busy when these suites started", "duckdb (3.50)"} {
		if !strings.Contains(out, want) {
			t.Errorf("extras lack %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "pipelined (") {
		t.Errorf("an idle suite is named busy:\n%s", out)
	}
}
