// Package metrics renders the numbers operators measure (durations, byte
// counts) the way EXPLAIN ANALYZE and error messages show them: short,
// with three significant digits at most.
package metrics

import (
	"fmt"
	"strings"
	"time"
)

// FormatDuration renders a duration with three significant digits at most
// (1.23ms, 456µs, 2.5s).
func FormatDuration(d time.Duration) string {
	switch {
	case d >= time.Second:
		return trimFloat(d.Seconds()) + "s"
	case d >= time.Millisecond:
		return trimFloat(float64(d)/float64(time.Millisecond)) + "ms"
	case d >= time.Microsecond:
		return trimFloat(float64(d)/float64(time.Microsecond)) + "µs"
	}
	return fmt.Sprintf("%dns", int64(d))
}

// FormatBytes renders a byte count in binary units (512 B, 1.5 KiB).
func FormatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	f, units := float64(n)/unit, "KMGTPE"
	i := 0
	for f >= unit && i < len(units)-1 {
		f /= unit
		i++
	}
	return trimFloat(f) + " " + units[i:i+1] + "iB"
}

// trimFloat prints f with at most three significant digits, no trailing
// zeros.
func trimFloat(f float64) string {
	var s string
	switch {
	case f >= 100:
		s = fmt.Sprintf("%.0f", f)
	case f >= 10:
		s = fmt.Sprintf("%.1f", f)
	default:
		s = fmt.Sprintf("%.2f", f)
	}
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}
