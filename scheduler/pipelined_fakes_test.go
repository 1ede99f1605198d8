package scheduler

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"sluice/engine"
	"sluice/physical"
	"sluice/rpc"
	"sluice/scheduler/dplan"
)

// pfakeOp stands in for the pipelined exchange operators: plain data the
// fake encoder turns into PipelinedWriter / PipelinedReader nodes.
type pfakeOp struct {
	writer    bool
	input     physical.Operator
	schema    *arrow.Schema
	jobID     string
	stageID   int
	part      physical.Partitioning
	broadcast bool
	queue     int
	producers [][]*rpc.PipelinedProducer
}

func (f *pfakeOp) Schema() *arrow.Schema { return f.schema }
func (f *pfakeOp) Children() []physical.Operator {
	if f.input == nil {
		return nil
	}
	return []physical.Operator{f.input}
}
func (f *pfakeOp) OutputPartitioning() physical.Partitioning { return f.part }
func (f *pfakeOp) Execute(context.Context, int, *physical.TaskContext) (physical.Stream, error) {
	return nil, errors.New("fake pipelined operator executed")
}
func (f *pfakeOp) String() string { return fmt.Sprintf("fake pipelined: stage=%d", f.stageID) }

// pipelinedFakes builds fake shuffle operators (for blocking jobs) and
// fake pipelined ones.
type pipelinedFakes struct{ fakeExchanges }

func (pipelinedFakes) PipelinedWriter(input physical.Operator, jobID string, stageID int, p physical.Partitioning, broadcast bool, queueBatches int) (physical.Operator, error) {
	return &pfakeOp{writer: true, input: input, schema: input.Schema(), jobID: jobID, stageID: stageID, part: p, broadcast: broadcast, queue: queueBatches}, nil
}

func (pipelinedFakes) PipelinedReader(jobID string, stageID int, schema *arrow.Schema, partitions [][]*rpc.PipelinedProducer) (physical.Operator, error) {
	return &pfakeOp{schema: schema, jobID: jobID, stageID: stageID, producers: partitions,
		part: physical.Partitioning{Kind: physical.PartUnknown, Count: len(partitions)}}, nil
}

// pipelinedEncode is fakeEncode extended to the pipelined fakes.
func pipelinedEncode(op physical.Operator) (*rpc.PhysicalPlan, error) {
	switch o := op.(type) {
	case *fakeOp:
		return fakeEncode(o)
	case *pfakeOp:
		if !o.writer {
			n := &rpc.PipelinedReaderNode{JobId: o.jobID, StageId: int32(o.stageID)}
			for _, p := range o.producers {
				n.Partitions = append(n.Partitions, &rpc.PipelinedProducers{Producers: p})
			}
			return &rpc.PhysicalPlan{Node: &rpc.PhysicalPlan_PipelinedReader{PipelinedReader: n}}, nil
		}
		in, err := pipelinedEncode(o.input)
		if err != nil {
			return nil, err
		}
		return &rpc.PhysicalPlan{Node: &rpc.PhysicalPlan_PipelinedWriter{PipelinedWriter: &rpc.PipelinedWriterNode{
			Input: in, JobId: o.jobID, StageId: int32(o.stageID), Broadcast: o.broadcast, QueueBatches: int32(o.queue),
			Partitioning: &rpc.Partitioning{Kind: int32(o.part.Kind), Count: int32(o.part.Count)},
		}}}, nil
	case *physical.UnresolvedExchange:
		return nil, fmt.Errorf("unresolved exchange left in a stage plan: %s", op)
	}
	var ins []*rpc.PhysicalPlan
	for _, c := range op.Children() {
		p, err := pipelinedEncode(c)
		if err != nil {
			return nil, err
		}
		ins = append(ins, p)
	}
	switch len(ins) {
	case 0:
		return &rpc.PhysicalPlan{Node: &rpc.PhysicalPlan_Values{Values: &rpc.ValuesNode{}}}, nil
	case 1:
		return ins[0], nil
	}
	return &rpc.PhysicalPlan{Node: &rpc.PhysicalPlan_Union{Union: &rpc.UnionNode{Inputs: ins}}}, nil
}

// pipelinedReaders lists the pipelined readers in an encoded task plan.
func pipelinedReaders(p *rpc.PhysicalPlan) []*rpc.PipelinedReaderNode {
	switch n := p.GetNode().(type) {
	case *rpc.PhysicalPlan_PipelinedReader:
		return []*rpc.PipelinedReaderNode{n.PipelinedReader}
	case *rpc.PhysicalPlan_PipelinedWriter:
		return pipelinedReaders(n.PipelinedWriter.Input)
	case *rpc.PhysicalPlan_Union:
		var out []*rpc.PipelinedReaderNode
		for _, in := range n.Union.Inputs {
			out = append(out, pipelinedReaders(in)...)
		}
		return out
	}
	return nil
}

// cluster is a fixed cluster size for graphs tested without a scheduler.
func cluster(executors, vcores int) func() ClusterCapacity {
	return func() ClusterCapacity { return ClusterCapacity{Executors: executors, Vcores: vcores} }
}

// pipelinedGraphFor plans sql with the given partitions into a pipelined
// graph on a cluster of the given size.
func pipelinedGraphFor(t *testing.T, eng *engine.Engine, sql string, partitions, maxPerTask int, size func() ClusterCapacity) (*pipelinedGraph, *dplan.Graph) {
	t.Helper()
	dg, err := dplan.Plan(physicalPlan(t, eng, sql, partitions).Physical)
	if err != nil {
		t.Fatal(err)
	}
	g, err := NewPipelinedGraph(PipelinedConfig{
		JobID: "job", Plan: dg, Exchanges: pipelinedFakes{}, Encode: pipelinedEncode,
		MaxPartitionsPerTask: maxPerTask, QueueBatches: 5, Cluster: size,
		Settings: map[string]string{"execution.mode": "pipelined"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return g.(*pipelinedGraph), dg
}

// pipelinedSuccess is a pipelined task's success report: no files.
func pipelinedSuccess(task *rpc.TaskDefinition, executorID string) *rpc.TaskStatus {
	return &rpc.TaskStatus{Id: task.Id, ExecutorId: executorID, State: rpc.TaskState_TASK_SUCCESSFUL, RowsOut: int64(len(task.Partitions))}
}

// hang is a fake executor's behaviour for tasks the test reports itself.
func hang(*rpc.TaskDefinition, string) *rpc.TaskStatus { return nil }

// newPipelinedHarness is the scheduler harness with exchanges that build
// pipelined fakes too. They are swapped in before any query is submitted,
// so nothing reads the configuration concurrently.
func newPipelinedHarness(t *testing.T, cfg Config) *harness {
	t.Helper()
	h := newHarness(t, cfg)
	h.sched.cfg.Exchanges = pipelinedFakes{}
	h.sched.cfg.Encode = pipelinedEncode
	return h
}

// pipelined are the settings of a pipelined query with 4 partitions.
func pipelined(extra ...string) map[string]string {
	m := map[string]string{"execution.mode": "pipelined", "execution.target_partitions": "4"}
	for i := 0; i+1 < len(extra); i += 2 {
		m[extra[i]] = extra[i+1]
	}
	return m
}

// report sends task statuses to the scheduler as executor id would.
func (h *harness) report(id string, sts ...*rpc.TaskStatus) {
	h.t.Helper()
	if _, err := h.client.UpdateTaskStatus(context.Background(), &rpc.UpdateTaskStatusRequest{ExecutorId: id, Statuses: sts}); err != nil {
		h.t.Fatal(err)
	}
}
