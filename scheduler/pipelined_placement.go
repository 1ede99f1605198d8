package scheduler

import (
	"fmt"
	"slices"

	"sluice/rpc"
)

// checkFits is the error of a job that could not be placed even on an idle
// cluster.
// Each stage is placed on its own against every executor's free vcores (a
// job reserves its busiest stage's vcores per executor, not the sum), so
// the job needs as many vcores as its widest stage has partitions. With no
// executor registered yet the job waits for one.
func (g *pipelinedGraph) checkFits() error {
	c := g.cfg.Cluster()
	if c.Executors == 0 || g.need <= c.Vcores {
		return nil
	}
	return fmt.Errorf("pipelined job needs %d vcores at once (stage %d runs %d partitions, and every task of a pipelined job runs at the same time) but the cluster has %d vcores on %d executors; lower execution.target_partitions or SET execution.mode = 'blocking'",
		g.need, g.widest, g.need, c.Vcores, c.Executors)
}

// Offer places the whole job or nothing. Each stage's partitions are dealt
// out as in blocking mode (dealTasks: spread over hosts, packed within
// one, a task taking up to an offer's free vcores and at most
// MaxPartitionsPerTask partitions),
// every stage against the same free vcores. If every stage fits, the
// consumers' placeholders are wired to their producers, each offer loses
// the vcores of the job's busiest stage there, and every task is returned
// to be launched together.
func (g *pipelinedGraph) Offer(offers []*Offer) []*Assignment {
	if g.state != GraphRunning || g.placed {
		return nil
	}
	if len(g.cfg.Avoid) > 0 {
		offers = slices.DeleteFunc(slices.Clone(offers), func(o *Offer) bool { return slices.Contains(g.cfg.Avoid, o.ExecutorID) })
	}
	placed := make([][]*pTask, len(g.stages))
	for i, s := range g.stages {
		tasks, ok := g.deal(s, offers)
		if !ok {
			return nil
		}
		placed[i] = tasks
	}
	plans, err := g.wire(placed)
	if err != nil {
		// Not expected: NewPipelinedGraph wired a trial placement.
		g.fail(err)
		return nil
	}
	// Each task is given the key of its own queues and the capabilities
	// of the queues it reads, and of no others.
	caps := make([][][]*rpc.PartitionCapability, len(g.stages))
	for i, s := range g.stages {
		for _, t := range placed[i] {
			c, err := g.readCapabilities(s, t, placed)
			if err != nil {
				g.fail(err)
				return nil
			}
			caps[i] = append(caps[i], c)
		}
	}
	g.placed = true
	var out []*Assignment
	for i, s := range g.stages {
		s.tasks = placed[i]
		use := map[string]int{}
		for j, t := range s.tasks {
			use[t.executor] += len(t.partitions)
			out = append(out, &Assignment{ExecutorID: t.executor, Task: &rpc.TaskDefinition{
				Id: t.id, Partitions: int32s(t.partitions), Plan: plans[i], Settings: g.cfg.Settings, Vcores: int32(len(t.partitions)),
				ClientOutput:     i == len(g.stages)-1,
				OutputKey:        g.taskKey(t.id.StageId, t.id.TaskId),
				ReadCapabilities: caps[i][j],
				DynamicFilters:   filterUses(g.cfg.Plan.Filters, s.ID, nil),
			}})
		}
		for e, n := range use {
			g.reserved[e] = max(g.reserved[e], n)
		}
	}
	for _, o := range offers {
		o.Free -= g.reserved[o.ExecutorID]
	}
	return out
}

// deal splits a stage's partitions into tasks over the offers' free
// vcores; ok is false when they do not all fit.
func (g *pipelinedGraph) deal(s *pStage, offers []*Offer) (tasks []*pTask, ok bool) {
	free := make([]int, len(offers))
	for i, o := range offers {
		free[i] = o.Free
	}
	n := s.Partitions()
	next := 0
	for _, d := range dealTasks(n, offers, free, g.cfg.MaxPartitionsPerTask) {
		o := offers[d.offer]
		parts := make([]int, d.n)
		for j := range parts {
			parts[j] = next + j
		}
		tasks = append(tasks, &pTask{
			id:         &rpc.TaskId{JobId: g.cfg.JobID, StageId: int32(s.ID), TaskId: int32(len(tasks))},
			partitions: parts, executor: o.ExecutorID, flight: o.FlightAddress, state: rpc.TaskState_TASK_RUNNING,
		})
		next += d.n
	}
	return tasks, next == n
}

func int32s(xs []int) []int32 {
	out := make([]int32, len(xs))
	for i, x := range xs {
		out[i] = int32(x)
	}
	return out
}

// trialPlacement runs each stage as one task on no executor in
// particular, to check that the stages can be wired.
func (g *pipelinedGraph) trialPlacement() [][]*pTask {
	out := make([][]*pTask, len(g.stages))
	for i, s := range g.stages {
		parts := make([]int, s.Partitions())
		for j := range parts {
			parts[j] = j
		}
		out[i] = []*pTask{{id: &rpc.TaskId{JobId: g.cfg.JobID, StageId: int32(s.ID)}, partitions: parts}}
	}
	return out
}
