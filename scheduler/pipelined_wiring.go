package scheduler

import (
	"fmt"

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
