package scheduler

import (
	"bytes"
	"strings"
	"testing"

	"sluice/rpc"
)

// LargestIntermediate counts what crosses an exchange: join inputs,
// grouped outputs and sort inputs, not a scan or filter that only streams.
func TestLargestIntermediate(t *testing.T) {
	eng := testEngine(t)
	est := func(q string) int64 {
		t.Helper()
		return LargestIntermediate(physicalPlan(t, eng, q, 2).Logical)
	}
	if n := est("select c_name from customer where c_custkey > 10"); n != 0 {
		t.Errorf("a filtered scan: %d, want 0 (nothing crosses an exchange)", n)
	}
	orders := est("select o_orderkey from orders order by o_orderkey")
	if orders < 1 {
		t.Errorf("a sort's input: %d, want its estimate", orders)
	}
	join := est("select c_name, o_orderkey from customer join orders on c_custkey = o_custkey")
	if join < orders {
		t.Errorf("a join with orders: %d, want at least the orders estimate %d", join, orders)
	}
}

// Auto mode runs a job pipelined when it fits the free vcores now and
// its intermediates are small, blocking otherwise; EXPLAIN says which
// and why.
func TestAutoMode(t *testing.T) {
	h := newPipelinedHarness(t, Config{})
	a := h.addExecutor("a", 2, false, pipelinedSuccess)
	b := h.addExecutor("b", 2, false, pipelinedSuccess)
	cases := []struct {
		settings map[string]string
		want     string
	}{
		{map[string]string{"execution.mode": "auto", "execution.target_partitions": "4"}, "auto: pipelined (needs 4 vcores at once, 4 free"},
		{map[string]string{"execution.mode": "auto", "execution.target_partitions": "8"}, "auto: blocking (pipelined needs 8 vcores at once, 4 are free now)"},
		{map[string]string{"execution.mode": "auto", "execution.target_partitions": "4", "execution.auto_max_pipelined_rows": "0"}, "auto: blocking (largest estimated intermediate"},
		{map[string]string{"execution.mode": "pipelined", "execution.target_partitions": "4"}, "pipelined"},
	}
	for _, c := range cases {
		explain := last(t, h.execute("explain "+groupBySQL, c.settings))
		if c.settings["execution.mode"] == "auto" && !bytes.Contains(explain.InlineResult, []byte(c.want)) {
			t.Errorf("%v: EXPLAIN does not say %q", c.settings, c.want)
		}
		if c.settings["execution.mode"] != "auto" && bytes.Contains(explain.InlineResult, []byte("execution_mode")) {
			t.Errorf("%v: EXPLAIN has an execution_mode line outside auto mode", c.settings)
		}
		sts := h.execute(groupBySQL, c.settings)
		final := last(t, sts)
		if !strings.HasPrefix(final.ModeChoice, c.want) {
			t.Errorf("%v: mode %q, want %q...", c.settings, final.ModeChoice, c.want)
		}
		if final.State != rpc.JobState_JOB_SUCCESSFUL {
			t.Errorf("%v: %v %v", c.settings, final.State, final.Error)
		}
		pipelinedRun := len(final.FinalProducers) > 0
		want := ModeBlocking
		if strings.HasPrefix(c.want, "auto: pipelined") || c.want == "pipelined" {
			want = ModePipelined
		}
		if pipelinedRun != (want == ModePipelined) {
			t.Errorf("%v: ran pipelined=%v, chose %q", c.settings, pipelinedRun, final.ModeChoice)
		}
		// Tasks carry the mode chosen: executors run a pipelined job's
		// tasks outside their slots.
		for _, task := range append(tasksOf(a, final.JobId), tasksOf(b, final.JobId)...) {
			if got := task.Settings["execution.mode"]; got != want {
				t.Errorf("%v: a task carries execution.mode %q, want %q", c.settings, got, want)
			}
		}
	}
}
