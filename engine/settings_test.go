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
		stored     string // what SHOW gives, when not value
	}{
		{"execution.batch_size", "1", true, ""},
		{"execution.batch_size", "1048576", true, ""},
		{"execution.batch_size", "1048577", false, ""},
		{"execution.batch_size", "2147483648", false, ""},
		{"execution.batch_size", "0", false, ""},
		{"execution.batch_size", "-5", false, ""},
		{"execution.batch_size", "99999999999999999999999", false, ""},
		{"execution.target_partitions", "0", true, ""},
		{"execution.target_partitions", "1024", true, ""},
		{"execution.target_partitions", "1025", false, ""},
		{"execution.target_partitions", "-1", false, ""},
		{"scheduler.max_partitions_per_task", "0", false, ""},
		{"scheduler.max_partitions_per_task", "1025", false, ""},
		{"exchange.queue_batches", "1024", true, ""},
		{"exchange.queue_batches", "1025", false, ""},
		{"execution.memory_limit", "0", true, ""},
		{"execution.memory_limit", "1125899906842625", false, ""},
		{"optimizer.broadcast_join_threshold_bytes", "0", true, ""},
		{"optimizer.broadcast_join_threshold_bytes", "-1", false, ""},
		// Byte settings take sizes with units too, stored as bytes.
		{"execution.memory_limit", "512MiB", true, "536870912"},
		{"execution.memory_limit", "1.5 GB", true, "1500000000"},
		{"execution.memory_limit", "2g", true, "2147483648"},
		{"execution.memory_limit", "4 KB", true, "4000"},
		{"execution.memory_limit", "10b", true, "10"},
		{"execution.memory_limit", "1025TiB", false, ""},
		{"execution.memory_limit", "-1MiB", false, ""},
		{"execution.memory_limit", "MiB", false, ""},
		{"execution.memory_limit", "1 parsec", false, ""},
		{"execution.memory_limit", "1.2.3MB", false, ""},
		{"optimizer.broadcast_join_threshold_bytes", "64MiB", true, "67108864"},
		{"execution.aqe_target_partition_bytes", "1M", true, "1048576"},
		// Counts of rows are not sizes.
		{"execution.auto_max_pipelined_rows", "1M", false, ""},
	}
	for _, c := range cases {
		s := NewSettings()
		err := s.Set(c.key, c.value)
		if c.ok && c.stored == "" {
			c.stored = c.value
		}
		if c.ok {
			if err != nil {
				t.Errorf("SET %s = %s: %v", c.key, c.value, err)
			} else if v, _ := s.Get(c.key); v != c.stored {
				t.Errorf("SET %s = %s stored %q, want %q", c.key, c.value, v, c.stored)
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

func TestSettingsReset(t *testing.T) {
	s := NewSettings()
	if err := s.SetDefault("execution.mode", "blocking"); err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.Set("execution.mode", "pipelined"))
	must(s.Set("execution.batch_size", "7"))
	must(s.Set("exchange.queue_batches", "3"))

	// The defaults travel with the values, as they do to a scheduler.
	s, err := SettingsFromMap(s.Map())
	must(err)
	must(s.Reset("execution.batch_size"))
	if v, _ := s.Get("execution.batch_size"); v != "8192" {
		t.Errorf("batch_size after RESET = %s, want 8192", v)
	}
	if v, _ := s.Get("exchange.queue_batches"); v != "3" {
		t.Errorf("RESET of one key changed another: queue_batches = %s", v)
	}
	must(s.Reset("ALL"))
	want := map[string]string{"execution.mode": "blocking", "exchange.queue_batches": "8", "execution.batch_size": "8192"}
	for k, w := range want {
		if v, _ := s.Get(k); v != w {
			t.Errorf("%s after RESET ALL = %s, want %s", k, v, w)
		}
	}
	if err := s.Reset("no.such"); err == nil {
		t.Error("RESET of an unknown key succeeded")
	}
	if _, err := SettingsFromMap(map[string]string{"default:execution.mode": "fast"}); err == nil {
		t.Error("an invalid session default was accepted")
	}
}

// TestDynamicFiltersSetting checks the switch of cross-stage dynamic
// filters: on by default, on or off in any case, nothing else.
func TestDynamicFiltersSetting(t *testing.T) {
	s := NewSettings()
	if v, _ := s.Get("execution.dynamic_filters"); v != "on" {
		t.Fatalf("default %q, want on", v)
	}
	if err := s.Set("execution.dynamic_filters", "OFF"); err != nil {
		t.Fatal(err)
	}
	if v, _ := s.Get("execution.dynamic_filters"); v != "off" {
		t.Fatalf("stored %q, want off", v)
	}
	if err := s.Set("execution.dynamic_filters", "maybe"); err == nil || !strings.Contains(err.Error(), "execution.dynamic_filters") {
		t.Fatalf("SET to maybe: %v, want an error naming the setting", err)
	}
}
