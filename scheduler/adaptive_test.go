package scheduler

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"sluice/engine"
	"sluice/physical"
	"sluice/scheduler/dplan"
)

// adaptiveGraphFor plans sql with partitions partitions, every join
// partitioned (the planner's broadcast threshold is 1 byte), and returns
// an adaptive blocking graph coalescing up to target bytes and
// broadcasting build sides under broadcast bytes.
func adaptiveGraphFor(t *testing.T, sql string, partitions int, target, broadcast int64) *blockingGraph {
	t.Helper()
	s := engine.NewSettings()
	for k, v := range map[string]string{"execution.target_partitions": fmt.Sprint(partitions), "optimizer.broadcast_join_threshold_bytes": "1"} {
		if err := s.Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	out, err := testEngine(t).Prepare(sql, s)
	if err != nil {
		t.Fatal(err)
	}
	dg, err := dplan.PlanEstimated(out.Query.Physical, out.Query.Estimates)
	if err != nil {
		t.Fatal(err)
	}
	g, err := NewBlockingGraph(BlockingConfig{
		JobID: "job", Plan: dg, Exchanges: fakeExchanges{}, Encode: fakeEncode, MaxPartitionsPerTask: 64,
		TaskRetries: 3, Adaptive: true, TargetPartitionBytes: target, BroadcastThreshold: broadcast,
	})
	if err != nil {
		t.Fatal(err)
	}
	return g.(*blockingGraph)
}

// finishWith reports every task successful, each of its files holding
// bytes(stage, output partition) bytes and 10 rows.
func finishWith(t *testing.T, g *blockingGraph, as []*Assignment, bytes func(stage, partition int32) int64) {
	t.Helper()
	for _, a := range as {
		st := success(a.Task, a.ExecutorID)
		for _, l := range st.Outputs {
			l.NumBytes, l.NumRows = bytes(l.StageId, l.Partition), 10
		}
		g.UpdateTask(st)
	}
}

func offerAll(g *blockingGraph) []*Assignment {
	return g.Offer([]*Offer{{ExecutorID: "a", Free: 64}, {ExecutorID: "b", Free: 64}})
}

func TestCoalesceRanges(t *testing.T) {
	tests := []struct {
		sizes  []int64
		target int64
		want   string
	}{
		{[]int64{1, 1, 1, 1}, 10, "[{0 4}]"},
		{[]int64{5, 5, 5, 5}, 10, "[{0 2} {2 4}]"},
		{[]int64{20, 1, 1, 20}, 10, "[{0 1} {1 3} {3 4}]"},
		{[]int64{0, 0, 0}, 10, "[{0 3}]"},
		{[]int64{11, 11}, 10, "[{0 1} {1 2}]"},
	}
	for _, tc := range tests {
		if got := fmt.Sprint(coalesceRanges(tc.sizes, tc.target)); got != tc.want {
			t.Errorf("coalesceRanges(%v, %d) = %s, want %s", tc.sizes, tc.target, got, tc.want)
		}
	}
}

// A final aggregate reads contiguous ranges of its input's hash
// partitions, every file of each exactly once.
func TestAdaptiveCoalescesPartitions(t *testing.T) {
	g := adaptiveGraphFor(t, groupBySQL, 8, 200, 0)
	first := offerAll(g)
	if fmt.Sprint(stageOf(first)) != "[1]" {
		t.Fatalf("first offer placed stages %v", stageOf(first))
	}
	// Each of the 8 producer partitions writes 10 bytes to output
	// partitions 0-3 and 30 to 4-7: 80 and 240 bytes per output
	// partition, which a target of 200 groups as {0,1} {2,3} {4} ... {7}.
	finishWith(t, g, first, func(_, p int32) int64 { return map[bool]int64{true: 10, false: 30}[p < 4] })
	next := offerAll(g)
	if fmt.Sprint(stageOf(next)) != "[2]" {
		t.Fatalf("second offer placed stages %v", stageOf(next))
	}
	s := g.stages[1]
	if len(s.parts) != 6 {
		t.Fatalf("stage 2 runs %d partitions, want 6; notes %v", len(s.parts), s.notes)
	}
	seen := map[string]int{}
	for _, a := range next {
		for _, r := range readers(a.Task.Plan) {
			if len(r.Partitions) != 6 {
				t.Errorf("reader of stage %d has %d partitions, want 6", r.StageId, len(r.Partitions))
			}
			for i, p := range r.Partitions {
				for _, l := range p.Locations {
					seen[l.Path]++
					want := map[int]int32{0: 0, 1: 2, 2: 4, 3: 5, 4: 6, 5: 7}[i]
					if l.Partition != want && l.Partition != want+1 {
						t.Errorf("coalesced partition %d reads output partition %d", i, l.Partition)
					}
				}
			}
		}
	}
	if len(seen) != 64 {
		t.Errorf("stage 2 reads %d files, want all 64", len(seen))
	}
	for p, n := range seen {
		if n != len(next) {
			t.Errorf("file %s read by %d of %d tasks' plans", p, n, len(next))
		}
	}
	if !strings.Contains(g.StageReport(2), "adaptive=[8 -> 6 partitions") {
		t.Errorf("report: %v", g.StageReport(2))
	}
	finishAll(t, g, next)
	if st, err := g.State(); st != GraphSuccessful {
		t.Fatalf("graph %v: %v", st, err)
	}
	if locs := g.FinalLocations(); len(locs) != 6 {
		t.Errorf("%d final locations, want 6", len(locs))
	}
}

const joinSQL = "select c_name, o_totalprice from customer join orders on c_custkey = o_custkey"

// The probe stage of a partitioned join waits for the build stage; a
// small build side turns the join into a broadcast join, the probe
// stage's body runs in the join's stage and the probe stage never runs.
func TestAdaptiveBroadcastJoin(t *testing.T) {
	g := adaptiveGraphFor(t, joinSQL, 4, 0, 1000)
	if len(g.stages) != 3 || len(g.switches) != 1 {
		t.Fatalf("%d stages, %d switchable joins:\n%s", len(g.stages), len(g.switches), dplan.Format(g.StagePlan()))
	}
	sw := g.switches[0]
	first := offerAll(g)
	if got := fmt.Sprint(stageOf(first)); got != fmt.Sprint([]int32{int32(sw.build)}) {
		t.Fatalf("first offer placed stages %s, want only the build stage %d", got, sw.build)
	}
	finishWith(t, g, first, func(int32, int32) int64 { return 10 })
	if g.stages[sw.probe-1].state != StageSkipped {
		t.Fatalf("probe stage is %s", g.stages[sw.probe-1].state)
	}
	c := g.stages[sw.consumer-1]
	if !slices.Equal(c.Inputs, []int{sw.build}) {
		t.Errorf("join stage reads %v, want only %d", c.Inputs, sw.build)
	}
	var join *physical.HashJoin
	for _, op := range physical.PreOrder(c.Body) {
		if j, ok := op.(*physical.HashJoin); ok {
			join = j
		}
	}
	if join == nil || join.Mode() != physical.JoinCollectLeft {
		t.Fatalf("join stage body:\n%s", physical.Format(c.Body))
	}
	next := offerAll(g)
	if got := fmt.Sprint(stageOf(next)); got != fmt.Sprint([]int32{int32(sw.consumer)}) {
		t.Fatalf("second offer placed stages %s", got)
	}
	for _, a := range next {
		rs := readers(a.Task.Plan)
		if len(rs) != 1 || rs[0].StageId != int32(sw.build) || len(rs[0].Partitions) != 4 {
			t.Fatalf("join task reads %v", rs)
		}
	}
	report := g.StageReport(sw.consumer)
	if !strings.Contains(report, "adaptive=[partitioned -> broadcast join") {
		t.Errorf("report: %s", report)
	}
	finishAll(t, g, next)
	if st, err := g.State(); st != GraphSuccessful {
		t.Fatalf("graph %v: %v", st, err)
	}
	if p := g.Progress(); p.StagesDone != 3 {
		t.Errorf("progress %v", p)
	}
}

// A build side over the threshold keeps the join partitioned; the probe
// stage is released as soon as the build's finished part exceeds it.
func TestAdaptiveKeepsLargeBuildPartitioned(t *testing.T) {
	g := adaptiveGraphFor(t, joinSQL, 4, 0, 1000)
	sw := g.switches[0]
	first := g.Offer([]*Offer{{ExecutorID: "a", Free: 1}})
	finishWith(t, g, first, func(int32, int32) int64 { return 600 })
	next := offerAll(g)
	if !slices.Contains(stageOf(next), int32(sw.probe)) {
		t.Fatalf("probe stage still waits after 2400 bytes of build: placed %v", stageOf(next))
	}
	finishWith(t, g, next, func(int32, int32) int64 { return 600 })
	last := offerAll(g)
	if got := fmt.Sprint(stageOf(last)); got != fmt.Sprint([]int32{int32(sw.consumer)}) {
		t.Fatalf("placed %s", got)
	}
	for _, a := range last {
		if rs := readers(a.Task.Plan); len(rs) != 2 {
			t.Errorf("partitioned join task reads %d stages", len(rs))
		}
	}
	if report := g.StageReport(sw.consumer); !strings.Contains(report, "kept partitioned join") {
		t.Errorf("report: %s", report)
	}
}

// A join that must emit unmatched build rows (FULL) is never broadcast,
// and its probe stage does not wait.
func TestAdaptiveNoBroadcastForFullJoin(t *testing.T) {
	g := adaptiveGraphFor(t, "select c_name, o_totalprice from customer full join orders on c_custkey = o_custkey", 4, 0, 1000)
	if len(g.switches) != 0 {
		t.Fatalf("%d switchable joins in a FULL join", len(g.switches))
	}
	if got := stageOf(offerAll(g)); len(got) != 2 {
		t.Fatalf("first offer placed stages %v, want both sides", got)
	}
}

// Adaptive off: partitions and joins as planned.
func TestAdaptiveOff(t *testing.T) {
	g, _ := blockingGraphFor(t, testEngine(t), groupBySQL, 8, 64, 3)
	finishWith(t, g, offerAll(g), func(int32, int32) int64 { return 0 })
	offerAll(g)
	if n := len(g.stages[1].parts); n != 8 {
		t.Errorf("stage 2 runs %d partitions, want 8", n)
	}
}

// A coalesced stage whose input is lost runs the same partitions once the
// input has been re-created, whatever sizes the re-run reports.
func TestAdaptiveCoalescingSurvivesLostInput(t *testing.T) {
	g := adaptiveGraphFor(t, groupBySQL, 8, 200, 0)
	first := g.Offer([]*Offer{{ExecutorID: "a", Free: 4}, {ExecutorID: "b", Free: 4}})
	finishWith(t, g, first, func(_, p int32) int64 { return map[bool]int64{true: 10, false: 30}[p < 4] })
	second := g.Offer([]*Offer{{ExecutorID: "b", Free: 2}})
	if len(g.stages[1].parts) != 6 || len(second) != 1 {
		t.Fatalf("stage 2: %d partitions, %d tasks", len(g.stages[1].parts), len(second))
	}
	g.ExecutorLost("a")
	if s := g.stages[1].state; s != StageUnresolved {
		t.Fatalf("stage 2 is %s after losing half its input", s)
	}
	// The re-run writes other sizes: the ranges stay.
	rerun := offerAll(g)
	if fmt.Sprint(stageOf(rerun)) != "[1]" {
		t.Fatalf("placed stages %v", stageOf(rerun))
	}
	finishWith(t, g, rerun, func(int32, int32) int64 { return 1 })
	rest := offerAll(g)
	if len(g.stages[1].parts) != 6 {
		t.Fatalf("stage 2 now runs %d partitions, want 6", len(g.stages[1].parts))
	}
	finishAll(t, g, rest)
	for _, a := range second {
		g.UpdateTask(success(a.Task, a.ExecutorID))
	}
	if st, err := g.State(); st != GraphSuccessful {
		t.Fatalf("graph %v: %v\n%s", st, err, g.Describe())
	}
}

// Parallelism first: partitions holding more than 1 MiB each are not
// merged below an even share of the input, whatever the target.
func TestAdaptiveKeepsParallelism(t *testing.T) {
	for _, tc := range []struct {
		fileBytes int64
		want      int
	}{
		{300 << 10, 8}, // 2.4 MiB per partition: each its own
		{30 << 10, 2},  // 240 KiB per partition: 1 MiB ranges
	} {
		g := adaptiveGraphFor(t, groupBySQL, 8, 8<<20, 0)
		finishWith(t, g, offerAll(g), func(int32, int32) int64 { return tc.fileBytes })
		offerAll(g)
		if n := len(g.stages[1].parts); n != tc.want {
			t.Errorf("%d bytes per file: stage 2 runs %d partitions, want %d (%s)", tc.fileBytes, n, tc.want, g.StageReport(2))
		}
	}
}

// Coalescing never leaves a stage fewer partitions than the cluster has
// vcores, however small its input: 8 partitions of 1 KiB files (one
// range at any target) become the cluster's vcores, or stay 8 when the
// cluster has more.
func TestAdaptiveKeepsClusterParallelism(t *testing.T) {
	for _, tc := range []struct {
		vcores, want int
	}{
		{0, 1}, // not known: no floor
		{1, 1},
		{3, 4}, // ranges of ceil(8 KiB / 3): two partitions each
		{4, 4},
		{8, 8},
		{16, 8},
	} {
		g := adaptiveGraphFor(t, groupBySQL, 8, 8<<20, 0)
		g.cfg.Parallelism = tc.vcores
		finishWith(t, g, offerAll(g), func(int32, int32) int64 { return 1 << 10 })
		offerAll(g)
		if n := len(g.stages[1].parts); n != tc.want {
			t.Errorf("%d vcores: stage 2 runs %d partitions, want %d (%s)", tc.vcores, n, tc.want, g.StageReport(2))
		}
	}
}
