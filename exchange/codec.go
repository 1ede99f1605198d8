package exchange

import (
	"fmt"

	"sluice/physical"
	"sluice/rpc"
)

// Codec converts the exchange operators to and from rpc.PhysicalPlan
// messages; pass it to physical.EncodePlan and physical.DecodePlan. It is
// stateless and safe for concurrent use.
//
// A PipelinedWriter travels without a task id: each task of the stage
// shares the same plan and takes its id from TaskEnv when it runs.
type Codec struct{}

var _ physical.ExtensionCodec = Codec{}

// Encode implements physical.ExtensionCodec.
func (Codec) Encode(op physical.Operator, encode func(physical.Operator) (*rpc.PhysicalPlan, error)) (*rpc.PhysicalPlan, error) {
	switch op := op.(type) {
	case *ShuffleWriter:
		in, err := encode(op.input)
		if err != nil {
			return nil, err
		}
		part, err := partitioningToProto(op.Part)
		if err != nil {
			return nil, fmt.Errorf("shuffle writer of stage %d: %w", op.StageID, err)
		}
		return &rpc.PhysicalPlan{Node: &rpc.PhysicalPlan_ShuffleWriter{ShuffleWriter: &rpc.ShuffleWriterNode{
			Input: in, JobId: op.JobID, StageId: int32(op.StageID), Partitioning: part,
		}}}, nil
	case *ShuffleReader:
		n := &rpc.ShuffleReaderNode{StageId: int32(op.StageID), Schema: schemaToProto(op.schema)}
		for _, locs := range op.Partitions {
			n.Partitions = append(n.Partitions, &rpc.PartitionLocations{Locations: locs})
		}
		return &rpc.PhysicalPlan{Node: &rpc.PhysicalPlan_ShuffleReader{ShuffleReader: n}}, nil
	case *PipelinedWriter:
		in, err := encode(op.input)
		if err != nil {
			return nil, err
		}
		part, err := partitioningToProto(op.Part)
		if err != nil {
			return nil, fmt.Errorf("pipelined writer of stage %d: %w", op.StageID, err)
		}
		return &rpc.PhysicalPlan{Node: &rpc.PhysicalPlan_PipelinedWriter{PipelinedWriter: &rpc.PipelinedWriterNode{
			Input: in, JobId: op.JobID, StageId: int32(op.StageID), Partitioning: part,
			Broadcast: op.Broadcast, QueueBatches: int32(op.QueueBatches),
		}}}, nil
	case *PipelinedReader:
		n := &rpc.PipelinedReaderNode{JobId: op.JobID, StageId: int32(op.StageID), Schema: schemaToProto(op.schema)}
		for _, ps := range op.Partitions {
			n.Partitions = append(n.Partitions, &rpc.PipelinedProducers{Producers: ps})
		}
		return &rpc.PhysicalPlan{Node: &rpc.PhysicalPlan_PipelinedReader{PipelinedReader: n}}, nil
	}
	return nil, nil
}

// Decode implements physical.ExtensionCodec.
func (Codec) Decode(n *rpc.PhysicalPlan, decode func(*rpc.PhysicalPlan) (physical.Operator, error)) (physical.Operator, error) {
	switch n := n.GetNode().(type) {
	case *rpc.PhysicalPlan_ShuffleWriter:
		w := n.ShuffleWriter
		in, err := decode(w.GetInput())
		if err != nil {
			return nil, err
		}
		part, err := partitioningFromProto(w.GetPartitioning(), in)
		if err != nil {
			return nil, fmt.Errorf("shuffle writer of stage %d: %w", w.GetStageId(), err)
		}
		return NewShuffleWriter(in, w.GetJobId(), int(w.GetStageId()), part), nil
	case *rpc.PhysicalPlan_ShuffleReader:
		r := n.ShuffleReader
		schema, err := schemaFromProto(r.GetSchema())
		if err != nil {
			return nil, fmt.Errorf("shuffle reader of stage %d: %w", r.GetStageId(), err)
		}
		parts := make([][]*rpc.PartitionLocation, len(r.GetPartitions()))
		for i, p := range r.GetPartitions() {
			parts[i] = p.GetLocations()
		}
		return NewShuffleReader(int(r.GetStageId()), schema, parts), nil
	case *rpc.PhysicalPlan_PipelinedWriter:
		w := n.PipelinedWriter
		in, err := decode(w.GetInput())
		if err != nil {
			return nil, err
		}
		part, err := partitioningFromProto(w.GetPartitioning(), in)
		if err != nil {
			return nil, fmt.Errorf("pipelined writer of stage %d: %w", w.GetStageId(), err)
		}
		return NewPipelinedWriter(in, w.GetJobId(), int(w.GetStageId()), part, w.GetBroadcast(), int(w.GetQueueBatches())), nil
	case *rpc.PhysicalPlan_PipelinedReader:
		r := n.PipelinedReader
		schema, err := schemaFromProto(r.GetSchema())
		if err != nil {
			return nil, fmt.Errorf("pipelined reader of stage %d: %w", r.GetStageId(), err)
		}
		parts := make([][]*rpc.PipelinedProducer, len(r.GetPartitions()))
		for i, p := range r.GetPartitions() {
			parts[i] = p.GetProducers()
		}
		return NewPipelinedReader(r.GetJobId(), int(r.GetStageId()), schema, parts), nil
	}
	return nil, nil
}

// partitioningToProto encodes a writer's output partitioning; pass-through
// travels unset, as plan.proto documents.
func partitioningToProto(p physical.Partitioning) (*rpc.Partitioning, error) {
	if p.Kind == physical.PartUnknown {
		return nil, nil
	}
	out := &rpc.Partitioning{Kind: int32(p.Kind), Count: int32(p.Count)}
	for _, k := range p.Keys {
		e, err := exprToProto(k)
		if err != nil {
			return nil, fmt.Errorf("partition key: %w", err)
		}
		out.Keys = append(out.Keys, e)
	}
	return out, nil
}

// partitioningFromProto decodes a writer's output partitioning; unset
// means pass-through of input's partitions.
func partitioningFromProto(p *rpc.Partitioning, input physical.Operator) (physical.Partitioning, error) {
	if p == nil {
		return physical.Partitioning{Kind: physical.PartUnknown, Count: input.OutputPartitioning().Count}, nil
	}
	out := physical.Partitioning{Kind: physical.PartitioningKind(p.GetKind()), Count: int(p.GetCount())}
	for _, k := range p.GetKeys() {
		e, err := exprFromProto(k)
		if err != nil {
			return physical.Partitioning{}, fmt.Errorf("partition key: %w", err)
		}
		out.Keys = append(out.Keys, e)
	}
	return out, nil
}
