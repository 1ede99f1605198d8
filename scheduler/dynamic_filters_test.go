package scheduler

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/catalog"
	"sluice/physical"
	"sluice/rpc"
	"sluice/scheduler/dplan"
)

// dynFilterSQL has a partitioned join whose build side (stage 1, the
// orders) filters the lineitem scan (stage 2).
const dynFilterSQL = "select count(*) from orders join lineitem on o_orderkey = l_orderkey where o_orderdate < date '1993-01-01'"

// dynFilterPlan plans dynFilterSQL with joins partitioned and dynamic
// filters added.
func dynFilterPlan(t *testing.T) *dplan.Graph {
	t.Helper()
	dg := stagesFor(t, dynFilterSQL, ModePipelined, map[string]string{"execution.target_partitions": "4", "optimizer.broadcast_join_threshold_bytes": "1"})
	if len(dg.Filters) != 1 || dg.Filters[0].Build != 1 || dg.Filters[0].Probe != 2 {
		t.Fatalf("filters %+v, want one from stage 1 to stage 2:\n%s", dg.Filters, dplan.Format(dg))
	}
	return dg
}

// keysOf is a build task's report of filter 1: the keys collected by a
// DynamicFilterBuild over vals.
func keysOf(t *testing.T, vals ...int64) []*rpc.DynamicFilterKeys {
	t.Helper()
	b := array.NewInt64Builder(memory.DefaultAllocator)
	defer b.Release()
	b.AppendValues(vals, nil)
	col := b.NewArray()
	defer col.Release()
	schema := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64}}, nil)
	tbl := catalog.NewMemTable(schema, []arrow.RecordBatch{array.NewRecordBatch(schema, []arrow.Array{col}, int64(len(vals)))})
	d, err := physical.NewDynamicFilterBuild(physical.NewMemScan("k", tbl, []int{0}, 1), []int{1}, []int{0})
	if err != nil {
		t.Fatal(err)
	}
	tc := physical.NewTaskContext()
	s, err := d.Execute(context.Background(), 0, tc)
	if err != nil {
		t.Fatal(err)
	}
	for {
		rec, err := s.Next(context.Background())
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		rec.Release()
	}
	s.Close()
	m, err := physical.EncodeKeySet(1, tc.DynamicFilterKeys()[1])
	if err != nil {
		t.Fatal(err)
	}
	return []*rpc.DynamicFilterKeys{m}
}

// filterOf decodes the filter a probe task starts with (nil: none).
func filterOf(t *testing.T, def *rpc.TaskDefinition) *physical.KeySet {
	t.Helper()
	if len(def.DynamicFilters) != 1 || def.DynamicFilters[0].Keys == nil {
		return nil
	}
	k, err := physical.DecodeKeySet(def.DynamicFilters[0].Keys)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestBlockingDynamicFilter checks that a blocking job runs the probe
// stage only after the build stage, its tasks carrying the union of the
// build tasks' keys; and that a build task without keys leaves the probe
// side unfiltered.
func TestBlockingDynamicFilter(t *testing.T) {
	for _, missing := range []bool{false, true} {
		dg := dynFilterPlan(t)
		gg, err := NewBlockingGraph(BlockingConfig{JobID: "job", Plan: dg, Exchanges: fakeExchanges{}, Encode: fakeEncode, MaxPartitionsPerTask: 2})
		if err != nil {
			t.Fatal(err)
		}
		g := gg.(*blockingGraph)
		first := g.Offer(offers("a", 8, "b", 8))
		for _, a := range first {
			if a.Task.Id.StageId != 1 {
				t.Fatalf("stage %d launched before the build stage finished", a.Task.Id.StageId)
			}
		}
		if len(first) != 2 {
			t.Fatalf("%d build tasks, want 2", len(first))
		}
		for i, a := range first {
			st := success(a.Task, a.ExecutorID)
			if !(missing && i == 1) {
				st.DynamicFilters = keysOf(t, int64(10*i+1), int64(10*i+2))
			}
			g.UpdateTask(st)
		}
		second := g.Offer(offers("a", 8, "b", 8))
		probes := 0
		for _, a := range second {
			if a.Task.Id.StageId != 2 {
				continue
			}
			probes++
			k := filterOf(t, a.Task)
			switch {
			case missing && (len(a.Task.DynamicFilters) != 1 || !a.Task.DynamicFilters[0].Keys.GetUnknown()):
				t.Errorf("a build task without keys: the probe task got %v", a.Task.DynamicFilters)
			case !missing && (k == nil || k.Count() != 4 || !strings.HasPrefix(k.String(), "bitmap([1, 12]")):
				t.Errorf("probe task filter %v, want the bitmap of 1, 2, 11, 12", k)
			}
		}
		if probes == 0 {
			t.Fatal("no probe task launched once the build stage finished")
		}
	}
}

// TestPipelinedDynamicFilter checks that a pipelined job's probe tasks
// start without the filter's keys, and that the merged keys are queued
// for the probe tasks' executors once the last build task succeeded.
func TestPipelinedDynamicFilter(t *testing.T) {
	dg := dynFilterPlan(t)
	gg, err := NewPipelinedGraph(PipelinedConfig{
		JobID: "job", Plan: dg, Exchanges: pipelinedFakes{}, Encode: pipelinedEncode,
		MaxPartitionsPerTask: 2, QueueBatches: 5, Cluster: cluster(2, 8),
		Settings: map[string]string{"execution.mode": "pipelined"},
	})
	if err != nil {
		t.Fatal(err)
	}
	g := gg.(*pipelinedGraph)
	var builds []*Assignment
	probeExecs := map[string]bool{}
	for _, a := range g.Offer(offers("a", 8, "b", 8)) {
		switch a.Task.Id.StageId {
		case 1:
			builds = append(builds, a)
		case 2:
			probeExecs[a.ExecutorID] = true
			if len(a.Task.DynamicFilters) != 1 || a.Task.DynamicFilters[0].Keys != nil {
				t.Fatalf("probe task filters %v, want one without keys yet", a.Task.DynamicFilters)
			}
		}
	}
	for i, a := range builds {
		if p := g.takeFilterPushes(); len(p) != 0 {
			t.Fatalf("pushes %v before build task %d finished", p, i)
		}
		st := pipelinedSuccess(a.Task, a.ExecutorID)
		st.DynamicFilters = keysOf(t, int64(100+i))
		g.UpdateTask(st)
	}
	pushes := g.takeFilterPushes()
	if len(pushes) != 1 || len(pushes[0].executors) != len(probeExecs) {
		t.Fatalf("pushes %+v, want one to %v", pushes, probeExecs)
	}
	k, err := physical.DecodeKeySet(pushes[0].keys)
	if err != nil || k == nil || k.Count() != int64(len(builds)) {
		t.Fatalf("pushed keys %v (%v), want the union of %d tasks' keys", k, err, len(builds))
	}
	if p := g.takeFilterPushes(); len(p) != 0 {
		t.Fatalf("pushed twice: %v", p)
	}
}
