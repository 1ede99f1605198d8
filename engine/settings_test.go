package engine

import (
	"strings"
	"testing"
)

// TestSettingsRanges checks every integer setting's bounds: values inside
// are stored, values outside are refused with the setting's name and range.
func TestSettingsRanges(t *testing.T) {
	cases := []struct {
		key, value string
		ok         bool
	}{
		{"execution.batch_size", "1", true},
		{"execution.batch_size", "1048576", true},
		{"execution.batch_size", "1048577", false},
		{"execution.batch_size", "2147483648", false},
		{"execution.batch_size", "0", false},
		{"execution.batch_size", "-5", false},
		{"execution.batch_size", "99999999999999999999999", false},
		{"execution.target_partitions", "0", true},
		{"execution.target_partitions", "1024", true},
		{"execution.target_partitions", "1025", false},
		{"execution.target_partitions", "-1", false},
		{"scheduler.max_partitions_per_task", "0", false},
		{"scheduler.max_partitions_per_task", "1025", false},
		{"exchange.queue_batches", "1024", true},
		{"exchange.queue_batches", "1025", false},
		{"execution.memory_limit", "0", true},
		{"execution.memory_limit", "1125899906842625", false},
		{"optimizer.broadcast_join_threshold_bytes", "0", true},
		{"optimizer.broadcast_join_threshold_bytes", "-1", false},
	}
	for _, c := range cases {
		s := NewSettings()
		err := s.Set(c.key, c.value)
		if c.ok {
			if err != nil {
				t.Errorf("SET %s = %s: %v", c.key, c.value, err)
			} else if v, _ := s.Get(c.key); v != c.value {
				t.Errorf("SET %s = %s stored %q", c.key, c.value, v)
			}
			continue
		}
		if err == nil {
			t.Errorf("SET %s = %s: accepted, want an error", c.key, c.value)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, c.key) || !strings.Contains(msg, " to ") {
			t.Errorf("SET %s = %s: error %q does not name the setting and its range", c.key, c.value, msg)
		}
	}
}

// TestSettingsFromMapValidates checks that settings sent by a remote
// client pass the same bounds as SET.
func TestSettingsFromMapValidates(t *testing.T) {
	if _, err := SettingsFromMap(map[string]string{"execution.batch_size": "2147483648"}); err == nil {
		t.Fatal("an out-of-range batch size from a client was accepted")
	}
}
