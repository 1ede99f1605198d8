package scheduler

import (
	"fmt"
	"slices"

	"sluice/physical"
	"sluice/rpc"
	"sluice/scheduler/dplan"
)

// wire builds every stage's task plan once all tasks are placed (placed[i]
// are stage i+1's tasks): each placeholder becomes a pipelined reader of
// the producer tasks, and the stage's root a pipelined writer. All tasks
// of a stage share its plan; each runs its own partitions of it.
func (g *pipelinedGraph) wire(placed [][]*pTask) ([]*rpc.PhysicalPlan, error) {
	plans := make([]*rpc.PhysicalPlan, len(g.stages))
	for i, s := range g.stages {
		body, err := g.resolve(s.Body, placed)
		if err != nil {
			return nil, fmt.Errorf("stage %d: %w", s.ID, err)
		}
		w, err := g.cfg.Exchanges.PipelinedWriter(body, g.cfg.JobID, s.ID, s.Output, s.Retained(), g.cfg.QueueBatches)
		if err != nil {
			return nil, fmt.Errorf("stage %d: %w", s.ID, err)
		}
		if plans[i], err = g.cfg.Encode(w); err != nil {
			return nil, fmt.Errorf("stage %d: encoding the stage plan: %w", s.ID, err)
		}
	}
	return plans, nil
}

// resolve replaces the placeholders in op by readers of the placed
// producer tasks.
func (g *pipelinedGraph) resolve(op physical.Operator, placed [][]*pTask) (physical.Operator, error) {
	if u, ok := op.(*physical.UnresolvedExchange); ok {
		if u.StageID < 1 || u.StageID > len(g.stages) {
			return nil, fmt.Errorf("internal: placeholder for unknown stage %d", u.StageID)
		}
		p := g.stages[u.StageID-1]
		parts := producers(p.Stage, placed[u.StageID-1])
		if n := u.OutputPartitioning().Count; n != len(parts) {
			return nil, fmt.Errorf("internal: the placeholder for stage %d has %d partitions, the stage writes %d", u.StageID, n, len(parts))
		}
		return g.cfg.Exchanges.PipelinedReader(g.cfg.JobID, u.StageID, u.Schema(), parts)
	}
	children := op.Children()
	if len(children) == 0 {
		return op, nil
	}
	outs := make([]physical.Operator, len(children))
	for i, c := range children {
		o, err := g.resolve(c, placed)
		if err != nil {
			return nil, err
		}
		outs[i] = o
	}
	return dplan.WithNewChildren(op, outs)
}

// producersOf lists, per output partition of a placed stage, the tasks
// holding part of it.
func producersOf(s *pStage) [][]*rpc.PipelinedProducer { return producers(s.Stage, s.tasks) }

// producers lists, per output partition of stage s run as tasks, the tasks
// to read it from. A hash output is split by every task, so each partition
// has a part in every task; a pass-through output partition i is written
// only by the task that ran input partition i. A broadcast output follows
// the same rule; its writer retains it so that every consumer task can
// read all of it.
func producers(s *dplan.Stage, tasks []*pTask) [][]*rpc.PipelinedProducer {
	out := make([][]*rpc.PipelinedProducer, s.Output.Count)
	for _, t := range tasks {
		if s.Output.Kind == physical.PartHash {
			for i := range out {
				out[i] = append(out[i], t.producer())
			}
			continue
		}
		for _, p := range t.partitions {
			out[p] = append(out[p], t.producer())
		}
	}
	return out
}

// readCapabilities lists the capabilities of the queues task t of stage s
// reads (placed[i] are stage i+1's tasks): of every stage its body reads,
// the partitions dplan.InputPartitions says t's partitions read, in every
// producer task holding a part of them. A pass-through stage's partition
// is held by one task and read by one consumer task (or, retained, by
// several); a hash stage's partition has a part in every producer task.
func (g *pipelinedGraph) readCapabilities(s *pStage, t *pTask, placed [][]*pTask) ([]*rpc.PartitionCapability, error) {
	reads, err := dplan.InputPartitions(s.Body, t.partitions)
	if err != nil {
		return nil, fmt.Errorf("stage %d: %w", s.ID, err)
	}
	stages := make([]int, 0, len(reads))
	for id := range reads {
		stages = append(stages, id)
	}
	slices.Sort(stages)
	var out []*rpc.PartitionCapability
	for _, id := range stages {
		if id < 1 || id > len(g.stages) {
			return nil, fmt.Errorf("internal: stage %d reads unknown stage %d", s.ID, id)
		}
		parts := producers(g.stages[id-1].Stage, placed[id-1])
		for _, p := range reads[id] {
			if p < 0 || p >= len(parts) {
				return nil, fmt.Errorf("internal: stage %d reads partition %d of stage %d, which writes %d", s.ID, p, id, len(parts))
			}
			for _, pr := range parts[p] {
				out = append(out, g.capability(int32(id), pr.TaskId, int32(p)))
			}
		}
	}
	return out, nil
}

// taskKey is the key of the queues of task task of stage stage.
func (g *pipelinedGraph) taskKey(stage, task int32) []byte {
	return rpc.PipelinedTaskKey(g.wiringKey, g.cfg.JobID, stage, task)
}

// capability is the capability of one queue: partition partition of task
// task of stage stage.
func (g *pipelinedGraph) capability(stage, task, partition int32) *rpc.PartitionCapability {
	return &rpc.PartitionCapability{StageId: stage, TaskId: task, Partition: partition,
		Capability: rpc.PipelinedCapability(g.taskKey(stage, task), partition)}
}
