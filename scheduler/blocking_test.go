package scheduler

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"sluice/rpc"
	"sluice/scheduler/dplan"
)

const groupBySQL = "select c_mktsegment, count(*) from customer group by c_mktsegment"

func partsOf(as []*Assignment) map[string][][]int32 {
	out := map[string][][]int32{}
	for _, a := range as {
		out[a.ExecutorID] = append(out[a.ExecutorID], a.Task.Partitions)
	}
	return out
}

func stageOf(as []*Assignment) []int32 {
	var out []int32
	for _, a := range as {
		if !slices.Contains(out, a.Task.Id.StageId) {
			out = append(out, a.Task.Id.StageId)
		}
	}
	return out
}

func finishAll(t *testing.T, g *blockingGraph, as []*Assignment) {
	t.Helper()
	for _, a := range as {
		g.UpdateTask(success(a.Task, a.ExecutorID))
	}
}

func TestBlockingTaskSizing(t *testing.T) {
	eng := testEngine(t)
	tests := []struct {
		name       string
		sql        string
		partitions int
		maxPerTask int
		offers     []*Offer
		want       map[string][][]int32
		wantFree   []int
	}{
		{
			name: "split by free vcores and max per task", sql: groupBySQL, partitions: 8, maxPerTask: 4,
			offers: []*Offer{{ExecutorID: "a", Free: 3}, {ExecutorID: "b", Free: 8}},
			want:   map[string][][]int32{"a": {{0, 1, 2}}, "b": {{3, 4, 5, 6}, {7}}}, wantFree: []int{0, 3},
		},
		{
			name: "one partition per task", sql: groupBySQL, partitions: 4, maxPerTask: 1,
			offers: []*Offer{{ExecutorID: "a", Free: 2}, {ExecutorID: "b", Free: 1}},
			want:   map[string][][]int32{"a": {{0}, {1}}, "b": {{2}}}, wantFree: []int{0, 0},
		},
		{
			name: "not enough capacity leaves partitions pending", sql: groupBySQL, partitions: 8, maxPerTask: 8,
			offers: []*Offer{{ExecutorID: "a", Free: 5}},
			want:   map[string][][]int32{"a": {{0, 1, 2, 3, 4}}}, wantFree: []int{0},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g, _ := blockingGraphFor(t, eng, tc.sql, tc.partitions, tc.maxPerTask, 3)
			as := g.Offer(tc.offers)
			if got := partsOf(as); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("tasks %v, want %v", got, tc.want)
			}
			for i, o := range tc.offers {
				if o.Free != tc.wantFree[i] {
					t.Errorf("offer %s has %d free, want %d", o.ExecutorID, o.Free, tc.wantFree[i])
				}
			}
			for _, a := range as {
				if int(a.Task.Vcores) != len(a.Task.Partitions) || a.Task.Id.StageId != 1 || a.Task.Plan == nil {
					t.Errorf("task %v: vcores %d for %d partitions, plan %v", a.Task.Id, a.Task.Vcores, len(a.Task.Partitions), a.Task.Plan != nil)
				}
			}
			for _, o := range tc.offers {
				want := 0
				for _, ps := range tc.want[o.ExecutorID] {
					want += len(ps)
				}
				if got := g.Reserved(o.ExecutorID); got != want {
					t.Errorf("reserved on %s = %d, want %d", o.ExecutorID, got, want)
				}
			}
		})
	}
}

// A stage runs only when its inputs are complete; a one-partition stage is
// one task.
func TestBlockingStageOrderAndSingleTask(t *testing.T) {
	g, dg := blockingGraphFor(t, testEngine(t), "select count(*) from orders", 4, 4, 3)
	if len(dg.Stages) != 2 || dg.Final().Partitions() != 1 {
		t.Fatalf("unexpected plan:\n%d stages", len(dg.Stages))
	}
	first := g.Offer([]*Offer{{ExecutorID: "a", Free: 2}})
	if fmt.Sprint(stageOf(first)) != "[1]" {
		t.Fatalf("first offer placed stages %v", stageOf(first))
	}
	if more := g.Offer([]*Offer{{ExecutorID: "b", Free: 8}}); fmt.Sprint(partsOf(more)) != "map[b:[[2 3]]]" {
		t.Fatalf("second offer: %v", partsOf(more))
	}
	finishAll(t, g, first)
	if as := g.Offer([]*Offer{{ExecutorID: "c", Free: 8}}); len(as) != 0 {
		t.Fatalf("final stage placed before its input finished: %v", partsOf(as))
	}
	if g.stages[1].state != StageUnresolved {
		t.Errorf("final stage is %s", g.stages[1].state)
	}
	// Finish stage 1 (partitions 2, 3 ran on b).
	for _, s := range g.stages[0].running {
		g.UpdateTask(&rpc.TaskStatus{Id: s.id, ExecutorId: s.executor, State: rpc.TaskState_TASK_SUCCESSFUL,
			Outputs: outputsOf(&rpc.TaskDefinition{Id: s.id, Partitions: []int32{2, 3}, Plan: g.stages[0].plan}, s.executor)})
	}
	if g.stages[0].state != StageSuccessful || g.stages[1].state != StageResolved {
		t.Fatalf("stages %s, %s", g.stages[0].state, g.stages[1].state)
	}
	final := g.Offer([]*Offer{{ExecutorID: "c", Free: 8}})
	if fmt.Sprint(partsOf(final)) != "map[c:[[0]]]" {
		t.Fatalf("final stage tasks %v, want one task of partition 0", partsOf(final))
	}
	// Pass-through exchange: consumer partition i reads input partition i.
	rs := readers(final[0].Task.Plan)
	if len(rs) != 1 || len(rs[0].Partitions) != 4 {
		t.Fatalf("readers %v", rs)
	}
	for i, p := range rs[0].Partitions {
		if len(p.Locations) != 1 || p.Locations[0].MapPartition != int32(i) || p.Locations[0].Partition != int32(i) {
			t.Errorf("reader partition %d reads %v", i, p.Locations)
		}
	}
	finishAll(t, g, final)
	if st, err := g.State(); st != GraphSuccessful || err != nil {
		t.Fatalf("state %v %v", st, err)
	}
	if locs := g.FinalLocations(); len(locs) != 1 || locs[0].ExecutorId != "c" {
		t.Errorf("final locations %v", locs)
	}
}

// Runnable stages are offered vcores longest remaining chain first: the
// supplier scan (stage 1) is read only by the last join, the nation scan
// (stage 2) starts a chain of three joins, so it goes first when only one
// of them fits, and the supplier scan takes the next free vcores.
func TestBlockingLongestChainFirst(t *testing.T) {
	const sql = "select count(*) from supplier s, lineitem l, orders o, customer c, nation n where s_suppkey = l_suppkey and l_orderkey = o_orderkey and o_custkey = c_custkey and c_nationkey = n_nationkey and n_name = 'CHINA' and s_acctbal > 0"
	g, dg := blockingGraphFor(t, testEngine(t), sql, 2, 2, 3)
	if len(dg.Stages) != 6 || len(dg.Stages[0].Inputs) != 0 || len(dg.Stages[1].Inputs) != 0 ||
		fmt.Sprint(dg.Stages[2].Inputs, dg.Stages[3].Inputs, dg.Stages[4].Inputs) != "[2] [3] [1 4]" {
		t.Fatalf("unexpected plan:\n%s", dplan.Format(dg))
	}
	var heights []int
	for _, s := range g.byHeight() {
		heights = append(heights, s.ID)
	}
	if fmt.Sprint(heights) != "[2 3 1 4 5 6]" {
		t.Errorf("stages by height %v, want [2 3 1 4 5 6]", heights)
	}
	first := g.Offer([]*Offer{{ExecutorID: "a", Free: 2}})
	if fmt.Sprint(stageOf(first)) != "[2]" {
		t.Fatalf("first offer placed stages %v, want [2]", stageOf(first))
	}
	if next := g.Offer([]*Offer{{ExecutorID: "b", Free: 2}}); fmt.Sprint(stageOf(next)) != "[1]" {
		t.Fatalf("second offer placed stages %v, want [1]", stageOf(next))
	}
}

// Consumer partition i of a hash exchange reads output partition i of
// every producer partition.
func TestBlockingHashReaders(t *testing.T) {
	g, _ := blockingGraphFor(t, testEngine(t), groupBySQL, 3, 4, 3)
	finishAll(t, g, g.Offer([]*Offer{{ExecutorID: "a", Free: 2}, {ExecutorID: "b", Free: 2}}))
	final := g.Offer([]*Offer{{ExecutorID: "a", Free: 8}})
	if len(final) != 1 || final[0].Task.Id.StageId != 2 {
		t.Fatalf("final tasks %v", partsOf(final))
	}
	rs := readers(final[0].Task.Plan)
	if len(rs) != 1 || len(rs[0].Partitions) != 3 {
		t.Fatalf("readers %v", rs)
	}
	for i, p := range rs[0].Partitions {
		var got []string
		for _, l := range p.Locations {
			if l.Partition != int32(i) {
				t.Errorf("reader partition %d has a file of partition %d", i, l.Partition)
			}
			got = append(got, fmt.Sprintf("%s:%d", l.ExecutorId, l.MapPartition))
		}
		slices.Sort(got)
		if fmt.Sprint(got) != "[a:0 a:1 b:2]" {
			t.Errorf("reader partition %d reads %v", i, got)
		}
	}
}

func TestBlockingRetry(t *testing.T) {
	eng := testEngine(t)
	t.Run("then success", func(t *testing.T) {
		g, _ := blockingGraphFor(t, eng, "select count(*) from orders", 2, 4, 2)
		as := g.Offer([]*Offer{{ExecutorID: "a", Free: 4}})
		g.UpdateTask(failure(as[0].Task, "a", "disk full"))
		retry := g.Offer([]*Offer{{ExecutorID: "b", Free: 4}})
		if len(retry) != 1 || retry[0].Task.Id.Attempt != 1 || fmt.Sprint(retry[0].Task.Partitions) != "[0 1]" {
			t.Fatalf("retry %v", retry)
		}
		// A late report from the failed attempt changes nothing.
		g.UpdateTask(success(as[0].Task, "a"))
		if g.stages[0].state != StageRunning {
			t.Fatalf("stale report moved stage 1 to %s", g.stages[0].state)
		}
		finishAll(t, g, retry)
		finishAll(t, g, g.Offer([]*Offer{{ExecutorID: "b", Free: 4}}))
		if st, err := g.State(); st != GraphSuccessful {
			t.Fatalf("state %v %v", st, err)
		}
	})
	t.Run("query error is not retried", func(t *testing.T) {
		g, _ := blockingGraphFor(t, eng, "select count(*) from orders", 2, 4, 2)
		as := g.Offer([]*Offer{{ExecutorID: "a", Free: 4}})
		st := failure(as[0].Task, "a", "shuffle writer stage 1: projection: (a / b): division by zero")
		st.QueryError = "division by zero in (a / b)"
		g.UpdateTask(st)
		state, err := g.State()
		var qe *QueryError
		if state != GraphFailed || !errors.As(err, &qe) || qe.Msg != "division by zero in (a / b)" || !strings.Contains(qe.Detail, "on executor a") {
			t.Fatalf("state %v, err %v: want failed at once with the query's error", state, err)
		}
		if as := g.Offer([]*Offer{{ExecutorID: "b", Free: 4}}); len(as) != 0 {
			t.Errorf("a query error was retried: %v", as)
		}
	})
	t.Run("exhausted", func(t *testing.T) {
		g, _ := blockingGraphFor(t, eng, "select count(*) from orders", 2, 4, 2)
		for i := 0; i < 3; i++ {
			as := g.Offer([]*Offer{{ExecutorID: "a", Free: 4}})
			if len(as) != 1 {
				t.Fatalf("attempt %d: %d tasks", i, len(as))
			}
			g.UpdateTask(failure(as[0].Task, "a", "disk full"))
		}
		st, err := g.State()
		if st != GraphFailed || err == nil || !strings.Contains(err.Error(), "failed 3 times") || !strings.Contains(err.Error(), "disk full") {
			t.Fatalf("state %v, err %v", st, err)
		}
		if as := g.Offer([]*Offer{{ExecutorID: "a", Free: 4}}); len(as) != 0 {
			t.Errorf("failed graph placed tasks")
		}
	})
}

// Losing an executor re-runs only the producer partitions whose output
// lived there; work elsewhere is kept.
func TestBlockingExecutorLost(t *testing.T) {
	g, _ := blockingGraphFor(t, testEngine(t), groupBySQL, 4, 2, 3)
	finishAll(t, g, g.Offer([]*Offer{{ExecutorID: "a", Free: 2}, {ExecutorID: "b", Free: 2}}))
	// Stage 2: partitions 0, 1 on a (running), 2, 3 on b (done).
	consumers := g.Offer([]*Offer{{ExecutorID: "a", Free: 2}, {ExecutorID: "b", Free: 2}})
	for _, a := range consumers {
		if a.ExecutorID == "b" {
			g.UpdateTask(success(a.Task, "b"))
		}
	}
	g.ExecutorLost("a")
	if g.Reserved("a") != 0 {
		t.Errorf("lost executor still has %d vcores reserved", g.Reserved("a"))
	}
	if g.stages[0].state != StageRunning || g.stages[1].state != StageUnresolved {
		t.Fatalf("after loss: stages %s, %s", g.stages[0].state, g.stages[1].state)
	}
	rerun := g.Offer([]*Offer{{ExecutorID: "b", Free: 8}, {ExecutorID: "c", Free: 8}})
	if fmt.Sprint(partsOf(rerun)) != "map[b:[[0]] c:[[1]]]" || fmt.Sprint(stageOf(rerun)) != "[1]" {
		t.Fatalf("re-run %v of stages %v, want stage 1 partitions 0, 1 only", partsOf(rerun), stageOf(rerun))
	}
	if rerun[0].Task.Id.StageAttempt != 1 || rerun[0].Task.Id.Attempt != 0 {
		t.Errorf("re-run id %v: want stage attempt 1, task attempt 0", rerun[0].Task.Id)
	}
	finishAll(t, g, rerun)
	again := g.Offer([]*Offer{{ExecutorID: "c", Free: 8}})
	if fmt.Sprint(partsOf(again)) != "map[c:[[0 1]]]" || fmt.Sprint(stageOf(again)) != "[2]" {
		t.Fatalf("consumer re-run %v of stages %v, want stage 2 partitions 0, 1", partsOf(again), stageOf(again))
	}
	for _, p := range readers(again[0].Task.Plan)[0].Partitions {
		for _, l := range p.Locations {
			if l.ExecutorId == "a" {
				t.Errorf("consumer reads from the lost executor: %v", l)
			}
		}
	}
	finishAll(t, g, again)
	if st, err := g.State(); st != GraphSuccessful {
		t.Fatalf("state %v %v", st, err)
	}
}

// A fetch failure rolls back the producer's output on the named executor;
// the consumer's own retry count is untouched.
func TestBlockingFetchFailure(t *testing.T) {
	g, _ := blockingGraphFor(t, testEngine(t), groupBySQL, 2, 1, 1)
	finishAll(t, g, g.Offer([]*Offer{{ExecutorID: "a", Free: 1}, {ExecutorID: "b", Free: 1}}))
	consumers := g.Offer([]*Offer{{ExecutorID: "b", Free: 1}})
	st := failure(consumers[0].Task, "b", "fetch from a: connection refused")
	st.FetchFailure = &rpc.FetchFailure{ExecutorId: "a", StageId: 1, MapPartition: 0}
	g.UpdateTask(st)
	if s, err := g.State(); s != GraphRunning {
		t.Fatalf("fetch failure failed the job: %v", err)
	}
	rerun := g.Offer([]*Offer{{ExecutorID: "b", Free: 4}})
	if fmt.Sprint(partsOf(rerun)) != "map[b:[[0]]]" || rerun[0].Task.Id.StageId != 1 {
		t.Fatalf("re-run %v", partsOf(rerun))
	}
	finishAll(t, g, rerun)
	next := g.Offer([]*Offer{{ExecutorID: "b", Free: 1}})
	if len(next) != 1 || next[0].Task.Id.StageId != 2 || next[0].Task.Id.Attempt != 0 {
		t.Fatalf("consumer retry %v", next)
	}
	// A second loss of the same stage's output exceeds TaskRetries (1).
	st = failure(next[0].Task, "b", "fetch failed")
	st.FetchFailure = &rpc.FetchFailure{ExecutorId: "b", StageId: 1}
	g.UpdateTask(st)
	if s, err := g.State(); s != GraphFailed || !strings.Contains(err.Error(), "stage 1 lost its output 2 times") {
		t.Fatalf("state %v, %v", s, err)
	}
}

func TestBlockingCancel(t *testing.T) {
	g, _ := blockingGraphFor(t, testEngine(t), groupBySQL, 4, 2, 3)
	as := g.Offer([]*Offer{{ExecutorID: "a", Free: 2}, {ExecutorID: "b", Free: 2}})
	running := g.Cancel()
	if len(running) != len(as) || g.Reserved("a")+g.Reserved("b") != 0 {
		t.Fatalf("cancel returned %d tasks of %d; reserved %d", len(running), len(as), g.Reserved("a")+g.Reserved("b"))
	}
	if st, _ := g.State(); st != GraphCancelled {
		t.Errorf("state %v", st)
	}
	if more := g.Offer([]*Offer{{ExecutorID: "a", Free: 2}}); len(more) != 0 {
		t.Errorf("cancelled graph placed tasks")
	}
	if !strings.Contains(g.Describe(), "cancelled") {
		t.Errorf("describe:\n%s", g.Describe())
	}
}

// Output lost after all its consumers finished is not re-created.
func TestBlockingLostOutputNoLongerNeeded(t *testing.T) {
	g, dg := blockingGraphFor(t, testEngine(t), groupBySQL+" order by 2", 2, 1, 3)
	if len(dg.Stages) != 3 {
		t.Fatalf("%d stages", len(dg.Stages))
	}
	finishAll(t, g, g.Offer([]*Offer{{ExecutorID: "a", Free: 1}, {ExecutorID: "b", Free: 1}}))
	finishAll(t, g, g.Offer([]*Offer{{ExecutorID: "b", Free: 2}}))
	if g.stages[1].state != StageSuccessful {
		t.Fatalf("stage 2 is %s", g.stages[1].state)
	}
	g.ExecutorLost("a")
	as := g.Offer([]*Offer{{ExecutorID: "b", Free: 4}})
	if fmt.Sprint(stageOf(as)) != "[3]" {
		t.Fatalf("placed stages %v, want only the final stage", stageOf(as))
	}
	finishAll(t, g, as)
	if st, err := g.State(); st != GraphSuccessful {
		t.Fatalf("state %v %v", st, err)
	}
}

// Among stages of one height, the one expected to write more goes first;
// stages without an estimate count as writing nothing and keep ID order.
func TestBlockingHeightTiesByEstimate(t *testing.T) {
	stage := func(id int, est float64, inputs ...int) *bStage {
		return &bStage{Stage: &dplan.Stage{ID: id, Inputs: inputs, Estimated: est > 0, EstBytes: est}}
	}
	g := &blockingGraph{stages: []*bStage{
		stage(1, 0), stage(2, 8e3), stage(3, 0), stage(4, 1.5e6), stage(5, 0, 1, 2, 3, 4),
	}}
	var order []int
	for _, s := range g.byHeight() {
		order = append(order, s.ID)
	}
	if fmt.Sprint(order) != "[4 2 1 3 5]" {
		t.Errorf("stages in order %v, want [4 2 1 3 5]", order)
	}
}

// A stage's tasks go to the executors holding its inputs first, so that
// they read local files: the partial counts ran on b, and the final stage
// goes there although a comes first in the offers.
func TestBlockingPrefersExecutorsHoldingInputs(t *testing.T) {
	g, _ := blockingGraphFor(t, testEngine(t), "select count(*) from orders", 4, 4, 3)
	first := g.Offer([]*Offer{{ExecutorID: "b", Free: 4}})
	if fmt.Sprint(partsOf(first)) != "map[b:[[0 1 2 3]]]" {
		t.Fatalf("first offer: %v", partsOf(first))
	}
	finishAll(t, g, first)
	offers := []*Offer{{ExecutorID: "a", Free: 4}, {ExecutorID: "b", Free: 4}}
	final := g.Offer(offers)
	if fmt.Sprint(partsOf(final)) != "map[b:[[0]]]" {
		t.Fatalf("final stage placed %v, want on b", partsOf(final))
	}
	if offers[0].Free != 4 || offers[1].Free != 3 {
		t.Errorf("offers left with %d and %d free, want 4 and 3", offers[0].Free, offers[1].Free)
	}
}
