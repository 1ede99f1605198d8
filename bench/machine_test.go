package bench

import "testing"

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
