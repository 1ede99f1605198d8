package write

import (
	"sluice/physical"
	"sluice/rpc"
)

// Codec converts FileSink and WriteCommit to and from rpc.PhysicalPlan
// messages; pass it to physical.EncodePlan and physical.DecodePlan (with
// the exchange codec, in a physical.Codecs). It is stateless.
type Codec struct{}

var _ physical.ExtensionCodec = Codec{}

// Encode implements physical.ExtensionCodec.
func (Codec) Encode(op physical.Operator, encode func(physical.Operator) (*rpc.PhysicalPlan, error)) (*rpc.PhysicalPlan, error) {
	switch op := op.(type) {
	case *FileSink:
		in, err := encode(op.input)
		if err != nil {
			return nil, err
		}
		return &rpc.PhysicalPlan{Node: &rpc.PhysicalPlan_FileSink{FileSink: &rpc.FileSinkNode{Input: in, Spec: specToProto(op.spec)}}}, nil
	case *WriteCommit:
		in, err := encode(op.input)
		if err != nil {
			return nil, err
		}
		return &rpc.PhysicalPlan{Node: &rpc.PhysicalPlan_WriteCommit{WriteCommit: &rpc.WriteCommitNode{Input: in, Spec: specToProto(op.spec)}}}, nil
	}
	return nil, nil
}

// Decode implements physical.ExtensionCodec.
func (Codec) Decode(n *rpc.PhysicalPlan, decode func(*rpc.PhysicalPlan) (physical.Operator, error)) (physical.Operator, error) {
	switch m := n.GetNode().(type) {
	case *rpc.PhysicalPlan_FileSink:
		in, err := decode(m.FileSink.GetInput())
		if err != nil {
			return nil, err
		}
		return NewFileSink(in, specFromProto(m.FileSink.GetSpec()))
	case *rpc.PhysicalPlan_WriteCommit:
		in, err := decode(m.WriteCommit.GetInput())
		if err != nil {
			return nil, err
		}
		return NewWriteCommit(in, specFromProto(m.WriteCommit.GetSpec()))
	}
	return nil, nil
}

func specToProto(s Spec) *rpc.WriteSpec {
	parts := make([]int32, len(s.PartitionBy))
	for i, c := range s.PartitionBy {
		parts[i] = int32(c)
	}
	return &rpc.WriteSpec{
		Dir: s.Dir, Format: s.Format, Header: s.Header, Delimiter: int32(s.Delimiter),
		Names: s.Names, PartitionBy: parts, WriteId: s.WriteID, Overwrite: s.Overwrite, Mark: s.Mark,
	}
}

func specFromProto(m *rpc.WriteSpec) Spec {
	var parts []int
	for _, c := range m.GetPartitionBy() {
		parts = append(parts, int(c))
	}
	return Spec{
		Dir: m.GetDir(), Format: m.GetFormat(), Header: m.GetHeader(), Delimiter: rune(m.GetDelimiter()),
		Names: m.GetNames(), PartitionBy: parts, WriteID: m.GetWriteId(), Overwrite: m.GetOverwrite(), Mark: m.GetMark(),
	}
}
