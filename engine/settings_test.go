package engine

import "testing"

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
