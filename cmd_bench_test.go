package main

import (
	"strings"
	"testing"

	"sluice/bench"
)

// TestBenchQueries: the default runs the 22 TPC-H queries and, unless
// turned off, the streaming ones; --queries picks either kind by label,
// and names the choices when a label is off.
func TestBenchQueries(t *testing.T) {
	all, err := benchQueries("", true)
	if err != nil {
		t.Fatal(err)
	}
	ns := streamingCount()
	if ns < 1 || len(all) != 22+ns || all[21].N != 22 || all[22].Set != bench.SetStreaming || all[22].N != 1 {
		t.Fatalf("default: %d queries (%d streaming ones embedded)", len(all), ns)
	}
	if tpch, err := benchQueries("", false); err != nil || len(tpch) != 22 {
		t.Fatalf("--streaming=false: %d queries, %v", len(tpch), err)
	}
	some, err := benchQueries(" q6, S2 ,1", true)
	if err != nil || len(some) != 3 || some[0].N != 6 || some[1].Set != bench.SetStreaming || some[1].N != 2 || some[2].N != 1 {
		t.Fatalf("picked: %+v, %v", some, err)
	}
	if !strings.Contains(some[1].Text, "orders") {
		t.Errorf("s2 is not the streaming script: %q", some[1].Text)
	}
	for _, bad := range []string{"0", "23", "s0", "s99", "x", "q"} {
		if _, err := benchQueries(bad, true); err == nil || !strings.Contains(err.Error(), "(1 to 22)") && !strings.Contains(err.Error(), "(s1 to s") {
			t.Errorf("%q: error %v, want one naming the choices", bad, err)
		}
	}
}
