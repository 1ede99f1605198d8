package exchange

import (
	"fmt"
	"testing"
	"time"
)

// TestRemembered: a key stays for at least the TTL; older keys go at
// the next sweep, which runs at most every TTL/16 however many keys are
// added.
func TestRemembered(t *testing.T) {
	r := NewRemembered(16 * time.Minute)
	t0 := time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)
	r.Add("old", t0)
	for i := range 1000 {
		r.Add(fmt.Sprint("k", i), t0.Add(time.Duration(i)*time.Millisecond))
	}
	if !r.Has("old") || !r.Has("k999") || r.Has("other") {
		t.Fatal("a key added was not remembered, or one never added was")
	}
	// Within the TTL nothing goes.
	r.Add("mid", t0.Add(16*time.Minute))
	if !r.Has("old") {
		t.Error("a key went before its TTL")
	}
	// Past the TTL, the next add that sweeps removes it; one that comes
	// sooner than TTL/16 after the last sweep does not sweep.
	r.Add("a", t0.Add(16*time.Minute+30*time.Second))
	if !r.Has("old") {
		t.Error("swept again sooner than TTL/16 after the last sweep")
	}
	r.Add("b", t0.Add(17*time.Minute+time.Second))
	if r.Has("old") || r.Has("k0") || !r.Has("mid") || !r.Has("a") || !r.Has("b") {
		t.Errorf("after the sweep: old %v, k0 %v, mid %v, a %v, b %v; want only the last three", r.Has("old"), r.Has("k0"), r.Has("mid"), r.Has("a"), r.Has("b"))
	}
	if r.Len() != 3 {
		t.Errorf("%d keys remembered, want 3", r.Len())
	}
}
