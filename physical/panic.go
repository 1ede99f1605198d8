package physical

import (
	"fmt"
	"log/slog"
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"testing"
)

// A panic in query code (an operator, an expression kernel, a scan reader,
// a planner bug) must fail its query, not the process: a scheduler or an
// executor serves every user of the cluster, and the shell's in-process
// engine holds the user's session. Every goroutine boundary that runs query
// code therefore recovers: operator goroutines (via Safe and RunSafe), task
// runners, RPC handlers and the in-process session. The query fails with
// "internal error: <panic value>"; the stack goes to the log (slog's
// default logger), not to the user.
//
// In test binaries runtime errors (nil dereferences, index out of range)
// are re-panicked, so a bug crashes the test that hit it instead of
// surfacing as one failed query among many; injected panics (failpoints)
// are plain values and are recovered as in production.

// PanicError is a panic recovered at a goroutine boundary.
type PanicError struct {
	Value any    // what was passed to panic
	Stack []byte // the panicking goroutine's stack
}

// Error implements error.
func (e *PanicError) Error() string { return fmt.Sprintf("internal error: %v", e.Value) }

// Unwrap returns the panic value when it is an error.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// Recovered turns r, a non-nil value returned by recover, into a
// *PanicError and logs it with its stack. It must be called from the
// deferred function that called recover, so the stack is the panic's.
func Recovered(r any) error {
	if _, ok := r.(runtime.Error); ok && testing.Testing() {
		panic(r)
	}
	pe := &PanicError{Value: r, Stack: debug.Stack()}
	slog.Default().Error("recovered a panic in query code", "panic", fmt.Sprint(r), "stack", string(pe.Stack))
	return pe
}

// CatchPanic, deferred at the top of a function with a named error result,
// turns a panic in that function into a *PanicError result:
//
//	func f() (err error) { defer physical.CatchPanic(&err); ... }
func CatchPanic(errp *error) {
	if r := recover(); r != nil {
		*errp = Recovered(r)
	}
}

// RunSafe calls f, turning a panic into a *PanicError.
func RunSafe(f func() error) (err error) {
	defer CatchPanic(&err)
	return f()
}

// Safe wraps f for errgroup.Go and other goroutine starters: the returned
// function runs f and turns a panic into a *PanicError.
func Safe(f func() error) func() error {
	return func() error { return RunSafe(f) }
}

// failpoint names the place where query code panics on purpose; nil (the
// only value outside tests) costs one atomic load per check.
var failpoint atomic.Pointer[string]

// Failpoints checked by query code. Each is at a different kind of
// goroutine boundary: a stream's Next on its consumer's goroutine, an
// operator's own goroutines, a scan's reader goroutine.
const (
	FailpointProjection    = "projection"      // Projection's Next
	FailpointHashJoinBuild = "hash-join-build" // a hash join's build goroutines
	FailpointRepartition   = "repartition"     // a repartition's input goroutines
	FailpointScan          = "scan"            // a CSV or Parquet scan's reader goroutine
)

// SetPanicFailpoint makes the named failpoint panic (with a plain string,
// which is recovered even in tests) until the returned function is called.
// It is for tests that prove a panic in query code fails only its query;
// it is process-wide, so such tests must not run in parallel.
func SetPanicFailpoint(name string) (clear func()) {
	failpoint.Store(&name)
	return func() { failpoint.Store(nil) }
}

// checkFailpoint panics if the named failpoint is set.
func checkFailpoint(name string) {
	if p := failpoint.Load(); p != nil && *p == name {
		panic("injected panic at failpoint " + name)
	}
}
