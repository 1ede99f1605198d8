package scheduler

import (
	"slices"

	"sluice/engine"
	"sluice/rpc"
	"sluice/scheduler/dplan"
)

// newPipelinedGraphLocked builds a pipelined job's graph, checking it
// against the executors registered now: a job that can never fit fails
// here, at submission. avoid names executors it must not be placed on.
// Callers hold s.mu, which guards what the graph's Cluster reads.
func (s *Scheduler) newPipelinedGraphLocked(id string, dg *dplan.Graph, settings *engine.Settings, avoid []string) (ExecutionGraph, error) {
	return NewPipelinedGraph(PipelinedConfig{
		JobID: id, Plan: dg, Exchanges: s.cfg.Exchanges, Encode: s.cfg.Encode, Settings: taskSettings(settings, ModePipelined),
		MaxPartitionsPerTask: int(settings.Int("scheduler.max_partitions_per_task")),
		QueueBatches:         int(settings.Int("exchange.queue_batches")),
		Cluster:              func() ClusterCapacity { return s.clusterWithoutLocked(avoid) },
		Avoid:                avoid,
	})
}

// clusterWithoutLocked is the cluster's size without the executors named
// in avoid. Callers hold s.mu.
func (s *Scheduler) clusterWithoutLocked(avoid []string) ClusterCapacity {
	var c ClusterCapacity
	for id, e := range s.executors {
		if !slices.Contains(avoid, id) {
			c.Executors++
			c.Vcores += int(e.meta.Vcores)
		}
	}
	return c
}

// freeVcoresLocked is the vcores free now on the executors not in avoid,
// less those held for a waiting pipelined job (admission.go), which a new
// job could not have. Callers hold s.mu.
func (s *Scheduler) freeVcoresLocked(avoid []string) int {
	n := 0
	for id := range s.executors {
		if !slices.Contains(avoid, id) {
			n += s.freeLocked(id)
		}
	}
	for _, j := range s.order {
		n -= j.held
	}
	return max(n, 0)
}

// taskSettings are the settings a job's tasks carry: the session's, with
// the mode the job runs in (auto mode's choice) in place of "auto", since
// executors treat a pipelined job's tasks differently.
func taskSettings(settings *engine.Settings, mode string) map[string]string {
	m := settings.Map()
	m["execution.mode"] = mode
	return m
}

// jobSpec is what a job is built from; a retry builds its next attempt
// from the same spec.
type jobSpec struct {
	// mode is the setting's value: blocking, pipelined or auto.
	mode     string
	schema   *rpc.Schema
	settings *engine.Settings
	analyze  bool
	// replan plans the query again (for a retry on a changed cluster).
	replan func() (*engine.Query, error)
}
