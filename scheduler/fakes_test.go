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
	"sluice/scheduler/internal/testdb"
)

// fakeOp stands in for the exchange operators: plain data the fake
// encoder understands, never executed.
type fakeOp struct {
	kind     string // "writer" or "reader"
	input    physical.Operator
	schema   *arrow.Schema
	jobID    string
	stageID  int
	part     physical.Partitioning
	readFrom [][]*rpc.PartitionLocation
}

func (f *fakeOp) Schema() *arrow.Schema { return f.schema }
func (f *fakeOp) Children() []physical.Operator {
	if f.input == nil {
		return nil
	}
	return []physical.Operator{f.input}
}
func (f *fakeOp) OutputPartitioning() physical.Partitioning { return f.part }
func (f *fakeOp) Execute(context.Context, int, *physical.TaskContext) (physical.Stream, error) {
	return nil, errors.New("fake exchange operator executed")
}
func (f *fakeOp) String() string { return fmt.Sprintf("fake %s: stage=%d", f.kind, f.stageID) }

type fakeExchanges struct{}

func (fakeExchanges) ShuffleWriter(input physical.Operator, jobID string, stageID int, p physical.Partitioning) (physical.Operator, error) {
	return &fakeOp{kind: "writer", input: input, schema: input.Schema(), jobID: jobID, stageID: stageID, part: p}, nil
}

func (fakeExchanges) ShuffleReader(stageID int, schema *arrow.Schema, partitions [][]*rpc.PartitionLocation) (physical.Operator, error) {
	return &fakeOp{kind: "reader", schema: schema, stageID: stageID, readFrom: partitions,
		part: physical.Partitioning{Kind: physical.PartUnknown, Count: len(partitions)}}, nil
}

func (fakeExchanges) PipelinedWriter(physical.Operator, string, int, physical.Partitioning, bool, int) (physical.Operator, error) {
	return nil, errors.New("pipelined writer: not used by these tests")
}

func (fakeExchanges) PipelinedReader(string, int, *arrow.Schema, [][]*rpc.PipelinedProducer) (physical.Operator, error) {
	return nil, errors.New("pipelined reader: not used by these tests")
}

// fakeEncode keeps what the tests check: the writer (stage, output
// partitioning) and every reader with its locations. Other operators are
// skipped (one child) or become a Union node (several).
func fakeEncode(op physical.Operator) (*rpc.PhysicalPlan, error) {
	if f, ok := op.(*fakeOp); ok {
		switch f.kind {
		case "writer":
			in, err := fakeEncode(f.input)
			if err != nil {
				return nil, err
			}
			return &rpc.PhysicalPlan{Node: &rpc.PhysicalPlan_ShuffleWriter{ShuffleWriter: &rpc.ShuffleWriterNode{
				Input: in, JobId: f.jobID, StageId: int32(f.stageID),
				Partitioning: &rpc.Partitioning{Kind: int32(f.part.Kind), Count: int32(f.part.Count)},
			}}}, nil
		case "reader":
			n := &rpc.ShuffleReaderNode{StageId: int32(f.stageID)}
			for _, p := range f.readFrom {
				n.Partitions = append(n.Partitions, &rpc.PartitionLocations{Locations: p})
			}
			return &rpc.PhysicalPlan{Node: &rpc.PhysicalPlan_ShuffleReader{ShuffleReader: n}}, nil
		}
	}
	if _, ok := op.(*physical.UnresolvedExchange); ok {
		return nil, fmt.Errorf("unresolved exchange left in a stage plan: %s", op)
	}
	var ins []*rpc.PhysicalPlan
	for _, c := range op.Children() {
		p, err := fakeEncode(c)
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

// readers lists the shuffle readers in an encoded task plan.
func readers(p *rpc.PhysicalPlan) []*rpc.ShuffleReaderNode {
	switch n := p.GetNode().(type) {
	case *rpc.PhysicalPlan_ShuffleReader:
		return []*rpc.ShuffleReaderNode{n.ShuffleReader}
	case *rpc.PhysicalPlan_ShuffleWriter:
		return readers(n.ShuffleWriter.Input)
	case *rpc.PhysicalPlan_Union:
		var out []*rpc.ShuffleReaderNode
		for _, in := range n.Union.Inputs {
			out = append(out, readers(in)...)
		}
		return out
	}
	return nil
}

// outputsOf fabricates the files a task would write: for a hash output,
// one per (partition run, output partition); for a pass-through output,
// one per partition run.
func outputsOf(task *rpc.TaskDefinition, executorID string) []*rpc.PartitionLocation {
	w := task.Plan.GetShuffleWriter()
	var out []*rpc.PartitionLocation
	for _, mp := range task.Partitions {
		targets := []int32{mp}
		if physical.PartitioningKind(w.Partitioning.Kind) == physical.PartHash {
			targets = nil
			for i := range w.Partitioning.Count {
				targets = append(targets, i)
			}
		}
		for _, p := range targets {
			out = append(out, &rpc.PartitionLocation{
				JobId: task.Id.JobId, StageId: task.Id.StageId, MapPartition: mp, Partition: p,
				ExecutorId: executorID, FlightAddress: executorID + ":flight",
				Path: fmt.Sprintf("%s/%s/%d/%d/%d-a%d", executorID, task.Id.JobId, task.Id.StageId, p, mp, task.Id.Attempt),
				NumRows:  1,
			})
		}
	}
	return out
}

func success(task *rpc.TaskDefinition, executorID string) *rpc.TaskStatus {
	return &rpc.TaskStatus{Id: task.Id, ExecutorId: executorID, State: rpc.TaskState_TASK_SUCCESSFUL, Outputs: outputsOf(task, executorID), RowsOut: int64(len(task.Partitions))}
}

func failure(task *rpc.TaskDefinition, executorID, msg string) *rpc.TaskStatus {
	return &rpc.TaskStatus{Id: task.Id, ExecutorId: executorID, State: rpc.TaskState_TASK_FAILED, Error: msg}
}

// physicalPlan plans sql over testdb's tables with the given partitions.
func physicalPlan(t *testing.T, eng *engine.Engine, sql string, partitions int) *engine.Query {
	t.Helper()
	s := engine.NewSettings()
	if err := s.Set("execution.target_partitions", fmt.Sprint(partitions)); err != nil {
		t.Fatal(err)
	}
	out, err := eng.Prepare(sql, s)
	if err != nil {
		t.Fatal(err)
	}
	return out.Query
}

func testEngine(t *testing.T) *engine.Engine { return engine.New(testdb.Catalog(t)) }

func blockingGraphFor(t *testing.T, eng *engine.Engine, sql string, partitions, maxPerTask, retries int) (*blockingGraph, *dplan.Graph) {
	t.Helper()
	dg, err := dplan.Plan(physicalPlan(t, eng, sql, partitions).Physical)
	if err != nil {
		t.Fatal(err)
	}
	g, err := NewBlockingGraph(BlockingConfig{
		JobID: "job", Plan: dg, Exchanges: fakeExchanges{}, Encode: fakeEncode,
		MaxPartitionsPerTask: maxPerTask, TaskRetries: retries,
	})
	if err != nil {
		t.Fatal(err)
	}
	return g.(*blockingGraph), dg
}
