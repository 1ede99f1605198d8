package scheduler

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"sluice/physical"
	"sluice/rpc"
	"sluice/scheduler/dplan"
)

// placement renders assignments as stage -> executor:[partitions] in
// task order.
func placement(as []*Assignment) map[int32][]string {
	out := map[int32][]string{}
	for _, a := range as {
		out[a.Task.Id.StageId] = append(out[a.Task.Id.StageId], fmt.Sprintf("%d@%s%v", a.Task.Id.TaskId, a.ExecutorID, a.Task.Partitions))
	}
	return out
}

func frees(offers []*Offer) []int {
	var out []int
	for _, o := range offers {
		out = append(out, o.Free)
	}
	return out
}

func offers(free ...any) []*Offer {
	var out []*Offer
	for i := 0; i+1 < len(free); i += 2 {
		id := free[i].(string)
		out = append(out, &Offer{ExecutorID: id, FlightAddress: id + ":flight", Free: free[i+1].(int)})
	}
	return out
}

func TestPipelinedPlacement(t *testing.T) {
	eng := testEngine(t)
	tests := []struct {
		name       string
		sql        string
		partitions int
		maxPerTask int
		offers     []*Offer
		want       map[int32][]string // nil: nothing placed
		wantFree   []int
		reserved   map[string]int
	}{
		{
			name: "tasks sized by free vcores and max per task", sql: groupBySQL, partitions: 4, maxPerTask: 2,
			offers: offers("a", 2, "b", 3),
			want: map[int32][]string{
				1: {"0@a[0 1]", "1@b[2 3]"},
				2: {"0@a[0 1]", "1@b[2 3]"},
			},
			wantFree: []int{0, 1}, reserved: map[string]int{"a": 2, "b": 2},
		},
		{
			name: "a one-partition stage is one task", sql: "select count(*) from orders", partitions: 4, maxPerTask: 4,
			offers: offers("a", 4, "b", 4),
			want: map[int32][]string{
				1: {"0@a[0 1]", "1@b[2 3]"},
				2: {"0@a[0]"},
			},
			wantFree: []int{2, 2}, reserved: map[string]int{"a": 2, "b": 2},
		},
		{
			name: "executors on one host are packed", sql: "select count(*) from orders", partitions: 4, maxPerTask: 4,
			offers: []*Offer{{ExecutorID: "a", FlightAddress: "h:1", Free: 4}, {ExecutorID: "b", FlightAddress: "h:2", Free: 4}},
			want: map[int32][]string{
				1: {"0@a[0 1 2 3]"},
				2: {"0@a[0]"},
			},
			wantFree: []int{0, 4}, reserved: map[string]int{"a": 4},
		},
		{
			name: "a host's share in tasks of max per task", sql: groupBySQL, partitions: 3, maxPerTask: 1,
			offers: offers("a", 2, "b", 1),
			want: map[int32][]string{
				1: {"0@a[0]", "1@a[1]", "2@b[2]"},
				2: {"0@a[0]", "1@a[1]", "2@b[2]"},
			},
			wantFree: []int{0, 0}, reserved: map[string]int{"a": 2, "b": 1},
		},
		{
			name: "a stage that does not fit binds nothing", sql: groupBySQL, partitions: 4, maxPerTask: 4,
			offers: offers("a", 2, "b", 1), wantFree: []int{2, 1}, reserved: map[string]int{},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g, _ := pipelinedGraphFor(t, eng, tc.sql, tc.partitions, tc.maxPerTask, cluster(2, 8))
			as := g.Offer(tc.offers)
			if got := placement(as); fmt.Sprint(got) != fmt.Sprint(tc.want) && !(len(got) == 0 && tc.want == nil) {
				t.Errorf("placed %v, want %v", got, tc.want)
			}
			if got := frees(tc.offers); !slices.Equal(got, tc.wantFree) {
				t.Errorf("free after the offer %v, want %v", got, tc.wantFree)
			}
			for _, o := range tc.offers {
				if got := g.Reserved(o.ExecutorID); got != tc.reserved[o.ExecutorID] {
					t.Errorf("reserved on %s = %d, want %d", o.ExecutorID, got, tc.reserved[o.ExecutorID])
				}
			}
			for _, a := range as {
				task := a.Task
				if int(task.Vcores) != len(task.Partitions) || task.Plan.GetPipelinedWriter() == nil ||
					task.Settings["execution.mode"] != "pipelined" || task.Id.JobId != "job" || task.Id.Attempt != 0 {
					t.Errorf("task %v: vcores %d, plan %v, settings %v", task.Id, task.Vcores, task.Plan, task.Settings)
				}
			}
			if st, err := g.State(); st != GraphRunning {
				t.Errorf("state %v %v", st, err)
			}
			if tc.want == nil {
				if p := g.Progress(); p.TasksTotal != 0 || p.StagesTotal != 2 {
					t.Errorf("progress of an unplaced job %v", p)
				}
				if d := g.Describe(); !strings.Contains(d, "waiting for 4 free vcores") || !strings.Contains(d, "Stage 1 [waiting]") {
					t.Errorf("describe:\n%s", d)
				}
				if g.FinalProducers() != nil {
					t.Errorf("final producers before placement")
				}
			}
		})
	}
}

// A job that did not fit waits; the next offer with room places all of
// it, and only once.
func TestPipelinedWaitsThenPlaces(t *testing.T) {
	g, _ := pipelinedGraphFor(t, testEngine(t), groupBySQL, 4, 4, cluster(1, 4))
	if as := g.Offer(offers("a", 3)); len(as) != 0 {
		t.Fatalf("placed %v on 3 vcores", placement(as))
	}
	as := g.Offer(offers("a", 4))
	if len(as) != 2 {
		t.Fatalf("placed %v", placement(as))
	}
	if again := g.Offer(offers("a", 4)); len(again) != 0 {
		t.Errorf("placed twice: %v", placement(again))
	}
}

// On each executor a job reserves its busiest stage's vcores there, not
// the sum over stages, until its tasks there have finished.
func TestPipelinedReservationMaxStage(t *testing.T) {
	eng := testEngine(t)
	t.Run("stages of 2, 2 and 1 vcores reserve 2", func(t *testing.T) {
		g, dg := pipelinedGraphFor(t, eng, groupBySQL+" order by 2", 2, 2, cluster(1, 2))
		if len(dg.Stages) != 3 {
			t.Fatalf("%d stages", len(dg.Stages))
		}
		o := offers("a", 2)
		as := g.Offer(o)
		want := map[int32][]string{1: {"0@a[0 1]"}, 2: {"0@a[0 1]"}, 3: {"0@a[0]"}}
		if fmt.Sprint(placement(as)) != fmt.Sprint(want) {
			t.Fatalf("placed %v, want %v", placement(as), want)
		}
		if got := g.Reserved("a"); got != 2 {
			t.Errorf("reserved %d, want 2 (the busiest stage), not 5 (the sum)", got)
		}
		if o[0].Free != 0 {
			t.Errorf("offer left with %d free", o[0].Free)
		}
	})
	t.Run("held until the job's tasks there finish", func(t *testing.T) {
		g, _ := pipelinedGraphFor(t, eng, groupBySQL+" order by 2", 4, 4, cluster(2, 7))
		as := g.Offer(offers("a", 3, "b", 4))
		want := map[int32][]string{1: {"0@a[0 1]", "1@b[2 3]"}, 2: {"0@a[0 1]", "1@b[2 3]"}, 3: {"0@a[0]"}}
		if fmt.Sprint(placement(as)) != fmt.Sprint(want) {
			t.Fatalf("placed %v, want %v", placement(as), want)
		}
		if a, b := g.Reserved("a"), g.Reserved("b"); a != 2 || b != 2 {
			t.Fatalf("reserved a=%d b=%d, want 2 and 2", a, b)
		}
		for _, x := range as {
			if x.Task.Id.StageId < 3 {
				g.UpdateTask(pipelinedSuccess(x.Task, x.ExecutorID))
			}
		}
		if a, b := g.Reserved("a"), g.Reserved("b"); a != 2 || b != 0 {
			t.Errorf("after stages 1 and 2: reserved a=%d b=%d, want 2 (a task still runs there) and 0", a, b)
		}
	})
}

func TestPipelinedNeverFits(t *testing.T) {
	eng := testEngine(t)
	dg, err := dplan.Plan(physicalPlan(t, eng, groupBySQL, 4).Physical)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		size    ClusterCapacity
		wantErr string
	}{
		{"more partitions than vcores", ClusterCapacity{Executors: 2, Vcores: 3}, "needs 4 vcores at once (stage 1 runs 4 partitions"},
		{"the message gives the cluster", ClusterCapacity{Executors: 2, Vcores: 3}, "the cluster has 3 vcores on 2 executors"},
		{"exactly enough", ClusterCapacity{Executors: 1, Vcores: 4}, ""},
		{"no executor yet: wait", ClusterCapacity{}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewPipelinedGraph(PipelinedConfig{JobID: "job", Plan: dg, Exchanges: pipelinedFakes{}, Encode: pipelinedEncode,
				Cluster: func() ClusterCapacity { return tc.size }})
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("unexpected error: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
	t.Run("cluster shrinks under a waiting job", func(t *testing.T) {
		size := ClusterCapacity{Executors: 2, Vcores: 4}
		g, _ := pipelinedGraphFor(t, eng, groupBySQL, 4, 4, func() ClusterCapacity { return size })
		size = ClusterCapacity{Executors: 1, Vcores: 2}
		g.ExecutorLost("b")
		if st, err := g.State(); st != GraphFailed || !strings.Contains(err.Error(), "needs 4 vcores") {
			t.Errorf("state %v %v", st, err)
		}
	})
}

// Readers list, per partition, the producer tasks holding it.
func TestPipelinedWiring(t *testing.T) {
	eng := testEngine(t)
	type producer = string // task@executor/flight
	list := func(ps *rpc.PipelinedProducers) []producer {
		var out []producer
		for _, p := range ps.Producers {
			out = append(out, fmt.Sprintf("%d@%s/%s", p.TaskId, p.ExecutorId, p.FlightAddress))
		}
		return out
	}
	tests := []struct {
		name       string
		sql        string
		partitions int
		maxPerTask int
		offers     []*Offer
		// writers is stage -> "partitioning broadcast"
		writers map[int32]string
		// readers is what every task of the consumer stage reads, per
		// partition.
		consumer int32
		readers  [][]producer
	}{
		{
			name: "hash: every producer task holds part of every partition", sql: groupBySQL, partitions: 3, maxPerTask: 1,
			offers:   offers("a", 2, "b", 1),
			writers:  map[int32]string{1: "Hash(3) false", 2: "Unknown(3) false"},
			consumer: 2,
			readers: [][]producer{
				{"0@a/a:flight", "1@a/a:flight", "2@b/b:flight"},
				{"0@a/a:flight", "1@a/a:flight", "2@b/b:flight"},
				{"0@a/a:flight", "1@a/a:flight", "2@b/b:flight"},
			},
		},
		{
			name: "pass-through: partition i lives in the task that ran it", sql: "select count(*) from orders", partitions: 3, maxPerTask: 2,
			offers:   offers("a", 2, "b", 1),
			writers:  map[int32]string{1: "Unknown(3) false", 2: "Unknown(1) false"},
			consumer: 2,
			readers:  [][]producer{{"0@a/a:flight"}, {"0@a/a:flight"}, {"1@b/b:flight"}},
		},
		{
			name:       "broadcast: every consumer task reads the whole build side",
			sql:        "select c_name, o_totalprice from customer join orders on c_custkey = o_custkey where c_mktsegment = 'BUILDING'",
			partitions: 3, maxPerTask: 2,
			offers:   offers("a", 2, "b", 2),
			writers:  map[int32]string{1: "Unknown(3) true", 2: "Unknown(3) false"},
			consumer: 2,
			readers:  [][]producer{{"0@a/a:flight"}, {"0@a/a:flight"}, {"1@b/b:flight"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g, _ := pipelinedGraphFor(t, eng, tc.sql, tc.partitions, tc.maxPerTask, cluster(2, 8))
			as := g.Offer(tc.offers)
			if len(as) == 0 {
				t.Fatal("nothing placed")
			}
			consumers := 0
			for _, a := range as {
				w := a.Task.Plan.GetPipelinedWriter()
				p := physical.Partitioning{Kind: physical.PartitioningKind(w.Partitioning.Kind), Count: int(w.Partitioning.Count)}
				got := fmt.Sprintf("%s(%d) %v", strings.SplitN(p.String(), "(", 2)[0], p.Count, w.Broadcast)
				if got != tc.writers[a.Task.Id.StageId] || w.JobId != "job" || w.StageId != a.Task.Id.StageId || w.QueueBatches != 5 {
					t.Errorf("stage %d writer %s (job %s stage %d queue %d), want %s", a.Task.Id.StageId, got, w.JobId, w.StageId, w.QueueBatches, tc.writers[a.Task.Id.StageId])
				}
				if a.Task.Id.StageId != tc.consumer {
					continue
				}
				consumers++
				rs := pipelinedReaders(a.Task.Plan)
				if len(rs) != 1 || rs[0].StageId != tc.consumer-1 || rs[0].JobId != "job" || len(rs[0].Partitions) != len(tc.readers) {
					t.Fatalf("task %d readers %v", a.Task.Id.TaskId, rs)
				}
				for i, ps := range rs[0].Partitions {
					if got := list(ps); !slices.Equal(got, tc.readers[i]) {
						t.Errorf("task %d reads partition %d from %v, want %v", a.Task.Id.TaskId, i, got, tc.readers[i])
					}
				}
			}
			if consumers == 0 {
				t.Fatalf("no consumer task in %v", placement(as))
			}
		})
	}
}

// The client reads the final stage straight from its tasks.
func TestPipelinedFinalProducers(t *testing.T) {
	g, _ := pipelinedGraphFor(t, testEngine(t), groupBySQL, 3, 2, cluster(2, 4))
	g.Offer(offers("a", 2, "b", 2))
	fp := g.FinalProducers()
	want := []string{"[0@a]", "[0@a]", "[1@b]"}
	if len(fp) != len(want) {
		t.Fatalf("final producers %v", fp)
	}
	for i, ps := range fp {
		var got []string
		for _, p := range ps.Producers {
			got = append(got, fmt.Sprintf("%d@%s", p.TaskId, p.ExecutorId))
		}
		if fmt.Sprint(got) != want[i] {
			t.Errorf("final partition %d from %v, want %s", i, got, want[i])
		}
	}
	if g.FinalStageID() != 2 || g.FinalLocations() != nil {
		t.Errorf("final stage %d, locations %v", g.FinalStageID(), g.FinalLocations())
	}
}

func TestPipelinedTaskFailure(t *testing.T) {
	for _, report := range []struct {
		name string
		st   func(task *rpc.TaskDefinition, executor string) *rpc.TaskStatus
		want string
	}{
		{"failed", func(task *rpc.TaskDefinition, e string) *rpc.TaskStatus { return failure(task, e, "disk on fire") },
			"stage 1 task 1 (partitions [2 3]) on executor b failed: disk on fire"},
		{"cancelled on the executor", func(task *rpc.TaskDefinition, e string) *rpc.TaskStatus {
			return &rpc.TaskStatus{Id: task.Id, ExecutorId: e, State: rpc.TaskState_TASK_CANCELLED}
		}, "stage 1 task 1 (partitions [2 3]) on executor b was cancelled"},
		{"query error", func(task *rpc.TaskDefinition, e string) *rpc.TaskStatus {
			st := failure(task, e, "projection: (a / b): division by zero")
			st.QueryError = "division by zero in (a / b)"
			return st
		}, "stage 1 task 1 (partitions [2 3]) on executor b failed: projection: (a / b): division by zero"},
	} {
		t.Run(report.name, func(t *testing.T) {
			g, _ := pipelinedGraphFor(t, testEngine(t), groupBySQL, 4, 2, cluster(2, 4))
			as := g.Offer(offers("a", 2, "b", 2))
			var victim *Assignment
			for _, a := range as {
				if a.Task.Id.StageId == 1 && a.ExecutorID == "b" {
					victim = a
				}
			}
			// Reports the graph must ignore: another executor, another attempt.
			g.UpdateTask(failure(victim.Task, "a", "not mine"))
			stale := &rpc.TaskDefinition{Id: &rpc.TaskId{JobId: "job", StageId: 1, TaskId: 1, Attempt: 1}}
			g.UpdateTask(failure(stale, "b", "stale"))
			if st, err := g.State(); st != GraphRunning {
				t.Fatalf("ignored reports changed the state: %v %v", st, err)
			}
			g.UpdateTask(report.st(victim.Task, "b"))
			st, err := g.State()
			if st != GraphFailed || !strings.Contains(err.Error(), report.want) {
				t.Fatalf("state %v, error %v, want one containing %q", st, err, report.want)
			}
			running := g.Cancel()
			if len(running) != len(as)-1 || slices.ContainsFunc(running, func(a *Assignment) bool { return a.Task.Id == victim.Task.Id }) {
				t.Errorf("cancel returned %d of %d tasks", len(running), len(as))
			}
			if g.Reserved("a")+g.Reserved("b") != 0 {
				t.Errorf("a failed job still reserves vcores")
			}
			if st, _ := g.State(); st != GraphFailed {
				t.Errorf("cancel turned a failed job into %v", st)
			}
			if g.FinalProducers() != nil {
				t.Errorf("a failed job still lists final producers")
			}
			if fmt.Sprint(g.Executors()) != "[a b]" {
				t.Errorf("executors %v", g.Executors())
			}
		})
	}
}

func TestPipelinedExecutorLost(t *testing.T) {
	g, _ := pipelinedGraphFor(t, testEngine(t), groupBySQL, 4, 2, cluster(3, 6))
	as := g.Offer(offers("a", 2, "b", 2, "c", 0))
	if fmt.Sprint(g.Executors()) != "[a b]" {
		t.Fatalf("placed on %v", g.Executors())
	}
	g.ExecutorLost("c")
	if st, err := g.State(); st != GraphRunning {
		t.Fatalf("losing an executor without tasks of the job: %v %v", st, err)
	}
	g.ExecutorLost("a")
	st, err := g.State()
	if st != GraphFailed || !strings.Contains(err.Error(), "executor a was lost while it held stage 1 task 0, stage 2 task 0") {
		t.Fatalf("state %v, error %v", st, err)
	}
	running := g.Cancel()
	for _, a := range running {
		if a.ExecutorID != "b" {
			t.Errorf("cancel asks the lost executor to cancel %v", a.Task.Id)
		}
	}
	if len(running) != len(as)/2 {
		t.Errorf("cancel returned %d tasks, want b's %d", len(running), len(as)/2)
	}
	if d := g.Describe(); !strings.Contains(d, "task 0@a [0 1] lost") || !strings.Contains(d, "Stage 1 [failed]") {
		t.Errorf("describe:\n%s", d)
	}
}

// The job succeeds as soon as its final stage has; tasks still feeding it
// are then cancelled.
func TestPipelinedGraphEarlyFinish(t *testing.T) {
	g, _ := pipelinedGraphFor(t, testEngine(t), "select o_orderkey from orders limit 5", 4, 2, cluster(2, 4))
	as := g.Offer(offers("a", 2, "b", 2))
	var final *Assignment
	for _, a := range as {
		if a.Task.Id.StageId == 2 {
			final = a
		}
	}
	g.UpdateTask(&rpc.TaskStatus{Id: final.Task.Id, ExecutorId: final.ExecutorID, State: rpc.TaskState_TASK_SUCCESSFUL, RowsOut: 5})
	if st, err := g.State(); st != GraphSuccessful {
		t.Fatalf("state %v %v", st, err)
	}
	if p := g.Progress(); p.RowsOut != 5 || p.TasksDone != 1 || p.TasksRunning != 2 || p.TasksTotal != 3 || p.StagesDone != 1 {
		t.Errorf("progress %v", p)
	}
	running := g.Cancel()
	if fmt.Sprint(placement(running)) != "map[1:[0@a[] 1@b[]]]" {
		t.Errorf("cancelled %v, want stage 1's two tasks", placement(running))
	}
	if st, _ := g.State(); st != GraphSuccessful {
		t.Errorf("cancelling the leftovers changed the state to %v", st)
	}
	if g.FinalProducers() == nil {
		t.Errorf("a successful job must still tell the client where to read")
	}
	if g.Reserved("a")+g.Reserved("b") != 0 {
		t.Errorf("vcores still reserved")
	}
	// A late report of a cancelled task changes nothing.
	g.UpdateTask(failure(running[0].Task, running[0].ExecutorID, "context canceled"))
	if st, _ := g.State(); st != GraphSuccessful {
		t.Errorf("late failure report changed the state to %v", st)
	}
	// A task that had finished all its output as the job ended reports
	// success late: it is shown as successful, not cancelled.
	g.UpdateTask(pipelinedSuccess(running[1].Task, running[1].ExecutorID))
	if st, _ := g.State(); st != GraphSuccessful {
		t.Errorf("late success report changed the state to %v", st)
	}
	d := g.Describe()
	if !strings.Contains(d, "task 0@a [0 1] cancelled") || !strings.Contains(d, "task 1@b [2 3] successful") {
		t.Errorf("describe after late reports:\n%s", d)
	}
	// Only once, and only from the executor that ran it.
	g.UpdateTask(pipelinedSuccess(running[0].Task, "b"))
	if d := g.Describe(); !strings.Contains(d, "task 0@a [0 1] cancelled") {
		t.Errorf("a report from the wrong executor counted:\n%s", d)
	}
}

func TestPipelinedProgressAndDescribe(t *testing.T) {
	g, _ := pipelinedGraphFor(t, testEngine(t), groupBySQL, 4, 2, cluster(2, 4))
	as := g.Offer(offers("a", 2, "b", 2))
	for _, a := range as {
		if a.Task.Id.StageId == 1 && a.ExecutorID == "a" {
			g.UpdateTask(pipelinedSuccess(a.Task, "a"))
		}
	}
	if p := g.Progress(); p.StagesTotal != 2 || p.StagesDone != 0 || p.TasksTotal != 4 || p.TasksRunning != 3 || p.TasksDone != 1 {
		t.Errorf("progress %v", p)
	}
	want := `Pipelined: all tasks placed; vcores reserved a=2 b=2
Stage 1 [running] partitions=4
  task 0@a [0 1] successful
  task 1@b [2 3] running
Stage 2 [running] partitions=4
  task 0@a [0 1] running
  task 1@b [2 3] running
`
	if d := g.Describe(); d != want {
		t.Errorf("describe:\n%s\nwant:\n%s", d, want)
	}
	for _, a := range as {
		if a.Task.Id.StageId != 1 || a.ExecutorID != "a" {
			g.UpdateTask(pipelinedSuccess(a.Task, a.ExecutorID))
		}
	}
	if st, err := g.State(); st != GraphSuccessful {
		t.Fatalf("state %v %v", st, err)
	}
	if p := g.Progress(); p.StagesDone != 2 || p.TasksDone != 4 || p.TasksRunning != 0 || p.RowsOut != 4 {
		t.Errorf("progress %v", p)
	}
}
