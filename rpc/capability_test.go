package rpc

import (
	"bytes"
	"testing"
)

func TestPipelinedCapability(t *testing.T) {
	wk := NewWiringKey()
	if len(wk) != 32 || bytes.Equal(wk, NewWiringKey()) {
		t.Fatalf("wiring keys are not random 256-bit keys: %x", wk)
	}
	k := PipelinedTaskKey(wk, "job", 2, 1)
	if !bytes.Equal(k, PipelinedTaskKey(wk, "job", 2, 1)) {
		t.Fatal("task key is not deterministic")
	}
	// Every input of the derivation changes the key.
	for _, other := range [][]byte{
		PipelinedTaskKey(NewWiringKey(), "job", 2, 1),
		PipelinedTaskKey(wk, "job2", 2, 1),
		PipelinedTaskKey(wk, "job", 1, 1),
		PipelinedTaskKey(wk, "job", 2, 0),
		// The job id and the numbers are kept apart.
		PipelinedTaskKey(wk, "job\x00", 2, 1),
	} {
		if bytes.Equal(k, other) {
			t.Errorf("task keys collide: %x", k)
		}
	}
	c := PipelinedCapability(k, 3)
	if !ValidCapability(k, 3, c) {
		t.Error("the partition's own capability is refused")
	}
	for name, bad := range map[string]bool{
		"another partition's":       ValidCapability(k, 4, c),
		"another task's":            ValidCapability(PipelinedTaskKey(wk, "job", 2, 0), 3, c),
		"empty":                     ValidCapability(k, 3, nil),
		"the task key itself":       ValidCapability(k, 3, k),
		"a truncated capability":    ValidCapability(k, 3, c[:16]),
		"any capability, no key":    ValidCapability(nil, 3, PipelinedCapability(nil, 3)),
		"a capability of wrong key": ValidCapability(k, 3, PipelinedCapability(wk, 3)),
	} {
		if bad {
			t.Errorf("%s capability accepted", name)
		}
	}
}
