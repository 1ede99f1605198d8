package scheduler

import (
	"sluice/engine"
	"sluice/rpc"
	"sluice/scheduler/dplan"
)

// submitPipelined registers a pipelined job. The graph is built under the
// lock because it checks the job against the executors registered now: a
// job that can never fit fails here, at submission.
func (s *Scheduler) submitPipelined(key jobKey, dg *dplan.Graph, schema *rpc.Schema, settings *engine.Settings, analyze bool, write *engine.Write) (*job, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, err := NewPipelinedGraph(PipelinedConfig{
		JobID: key.id, Plan: dg, Exchanges: s.cfg.Exchanges, Encode: s.cfg.Encode, Settings: settings.Map(),
		MaxPartitionsPerTask: int(settings.Int("scheduler.max_partitions_per_task")),
		QueueBatches:         int(settings.Int("exchange.queue_batches")),
		Cluster:              s.clusterLocked,
	})
	if err != nil {
		return nil, err
	}
	j := newJob(key, g, schema, settings.Map())
	j.write = write
	if analyze {
		j.analysis = newAnalysis(dg)
	}
	s.addJobLocked(j)
	return j, nil
}

// clusterLocked is the cluster's size: registered executors and their
// vcores. Callers hold s.mu.
func (s *Scheduler) clusterLocked() ClusterCapacity {
	c := ClusterCapacity{Executors: len(s.executors)}
	for _, e := range s.executors {
		c.Vcores += int(e.meta.Vcores)
	}
	return c
}
