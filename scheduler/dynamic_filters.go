package scheduler

import (
	"context"
	"slices"

	"sluice/physical"
	"sluice/rpc"
	"sluice/scheduler/dplan"
)

// Cross-stage dynamic filters (dplan.AddDynamicFilters): every task of a
// filter's build stage reports the keys it wrote; once all of them have,
// the union of their keys is the filter. A probe row may meet the build
// rows of any partition (its own is only known after the repartition that
// the filter is meant to save), so no single task's keys may filter it:
// only the union of them all, and it is not used before every task's
// share is in. A blocking job runs a filter's probe stage after its build
// stage, so the probe stage's tasks start with the filter; a pipelined
// job's tasks all run at once, and the filter is pushed to the probe
// stage's executors when the last build task finishes.

// filterContributions are the keys one build task reported, by filter ID.
type filterContributions map[int32]*rpc.DynamicFilterKeys

func contributionsOf(st *rpc.TaskStatus) filterContributions {
	out := filterContributions{}
	for _, k := range st.DynamicFilters {
		out[k.Id] = k
	}
	return out
}

// mergeFilter is filter id's keys from every build task's contribution:
// their union, or unknown when a task has none (or the union is too large
// to send).
func mergeFilter(id int, tasks []filterContributions) *rpc.DynamicFilterKeys {
	unknown := &rpc.DynamicFilterKeys{Id: int32(id), Unknown: true}
	sets := make([]*physical.KeySet, 0, len(tasks))
	for _, t := range tasks {
		m := t[int32(id)]
		if m == nil {
			return unknown
		}
		k, err := physical.DecodeKeySet(m)
		if err != nil || k == nil {
			return unknown
		}
		sets = append(sets, k)
	}
	merged := physical.MergeKeySets(sets)
	if merged == nil {
		return unknown
	}
	m, err := physical.EncodeKeySet(id, merged)
	if err != nil {
		return unknown
	}
	return m
}

// filterUses are the filters a probe stage's tasks apply, with the keys
// known so far (unset: to be pushed).
func filterUses(filters []*dplan.DynamicFilter, stage int, keys map[int]*rpc.DynamicFilterKeys) []*rpc.DynamicFilterUse {
	var out []*rpc.DynamicFilterUse
	for _, f := range filters {
		if f.Probe == stage {
			out = append(out, &rpc.DynamicFilterUse{Id: int32(f.ID), Scan: int32(f.Scan), Column: int32(f.Column), Keys: keys[f.ID]})
		}
	}
	return out
}

// filterPush is a pipelined job's merged dynamic filter, to be pushed to
// the executors running its probe stage's tasks.
type filterPush struct {
	executors []string
	keys      *rpc.DynamicFilterKeys
}

// filterPusher is a graph with dynamic filters to push to executors.
type filterPusher interface {
	takeFilterPushes() []filterPush
}

// mergeFilters merges the filters stage s builds once its last task has
// succeeded, and queues them for the executors of their probe stages.
func (g *pipelinedGraph) mergeFilters(s *pStage) {
	if !s.done() {
		return
	}
	for _, f := range g.cfg.Plan.Filters {
		if f.Build != s.ID {
			continue
		}
		tasks := make([]filterContributions, len(s.tasks))
		for i, t := range s.tasks {
			tasks[i] = t.filters
		}
		var execs []string
		for _, t := range g.stages[f.Probe-1].tasks {
			if t.state == rpc.TaskState_TASK_RUNNING && !slices.Contains(execs, t.executor) {
				execs = append(execs, t.executor)
			}
		}
		if len(execs) > 0 {
			g.pushes = append(g.pushes, filterPush{executors: execs, keys: mergeFilter(f.ID, tasks)})
		}
	}
}

func (g *pipelinedGraph) takeFilterPushes() []filterPush {
	out := g.pushes
	g.pushes = nil
	return out
}

// pushFiltersLocked sends a pipelined job's merged dynamic filters to the
// executors waiting for them, in the background. A push that fails only
// leaves the probe side unfiltered. Callers hold s.mu.
func (s *Scheduler) pushFiltersLocked(j *job) {
	p, ok := j.graph.(filterPusher)
	if !ok {
		return
	}
	for _, push := range p.takeFilterPushes() {
		req := &rpc.PushDynamicFiltersRequest{JobId: j.id, JobSecret: j.secret, Filters: []*rpc.DynamicFilterKeys{push.keys}}
		s.goLocked(func() {
			_ = s.callExecutors(push.executors, func(ctx context.Context, c rpc.ExecutorServiceClient) error {
				_, err := c.PushDynamicFilters(ctx, req)
				return err
			})
		})
	}
}
