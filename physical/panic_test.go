package physical

import (
	"errors"
	"strings"
	"testing"
)

// TestSafeRecoversPanics checks that Safe and CatchPanic turn a panic into
// a *PanicError naming the value, and that runtime errors still crash in
// test binaries so bugs are not hidden.
func TestSafeRecoversPanics(t *testing.T) {
	err := Safe(func() error { panic("boom") })()
	var pe *PanicError
	if !errors.As(err, &pe) || err.Error() != "internal error: boom" || !strings.Contains(string(pe.Stack), "panic_test.go") {
		t.Fatalf("got %v", err)
	}
	cause := errors.New("cause")
	if err := RunSafe(func() error { panic(cause) }); !errors.Is(err, cause) {
		t.Errorf("an error panic value does not unwrap: %v", err)
	}
	if err := RunSafe(func() error { return cause }); err != cause {
		t.Errorf("a plain error changed: %v", err)
	}
	defer func() {
		if r := recover(); r == nil {
			t.Error("a runtime error was recovered in a test binary")
		}
	}()
	var m map[string]int
	_ = RunSafe(func() error { m["x"] = 1; return nil })
}
