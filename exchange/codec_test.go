package exchange

import (
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"google.golang.org/protobuf/proto"

	"sluice/physical"
	"sluice/physical/expr"
	"sluice/rpc"
)

func TestCodecRoundTrip(t *testing.T) {
	src := rowsSource(4, 10, 5)
	// The stage body is another codec's business: it travels as a marker.
	marker := &rpc.PhysicalPlan{Node: &rpc.PhysicalPlan_CoalescePartitions{CoalescePartitions: &rpc.CoalescePartitionsNode{}}}
	encode := func(op physical.Operator) (*rpc.PhysicalPlan, error) {
		if op != src {
			t.Fatalf("encode called with %v", op)
		}
		return marker, nil
	}
	decode := func(n *rpc.PhysicalPlan) (physical.Operator, error) {
		if n.GetCoalescePartitions() == nil {
			t.Fatalf("decode called with %v", n)
		}
		return src, nil
	}
	wide := arrow.NewSchema([]arrow.Field{
		{Name: "b", Type: arrow.FixedWidthTypes.Boolean},
		{Name: "i", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "f", Type: arrow.PrimitiveTypes.Float64},
		{Name: "d", Type: arrow.FixedWidthTypes.Date32},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond}},
		{Name: "m", Type: &arrow.Decimal128Type{Precision: 15, Scale: 2}},
		{Name: "iv", Type: arrow.FixedWidthTypes.MonthDayNanoInterval},
		{Name: "s", Type: arrow.BinaryTypes.String},
	}, nil)
	locs := [][]*rpc.PartitionLocation{
		{{JobId: "j", StageId: 3, MapPartition: 1, Partition: 0, ExecutorId: "e", FlightAddress: "h:1", Path: "/w/j/3/data-0-1.arrow", NumRows: 5, NumBytes: 99, Batches: []int32{0, 2}}},
		nil,
	}
	producers := [][]*rpc.PipelinedProducer{{{TaskId: 2, ExecutorId: "e", FlightAddress: "h:1"}}, {}}
	tests := []struct {
		name string
		op   physical.Operator
	}{
		{"shuffle writer, hash", NewShuffleWriter(src, "j", 3, hashPart(7))},
		{"shuffle writer, pass-through", NewShuffleWriter(src, "j", 3, physical.Partitioning{Kind: physical.PartUnknown, Count: 4})},
		{"shuffle reader", NewShuffleReader(3, wide, locs)},
		{"pipelined writer", NewPipelinedWriter(src, "j", 4, hashPart(2), true, 16)},
		{"pipelined writer, pass-through", NewPipelinedWriter(src, "j", 4, physical.Partitioning{Kind: physical.PartUnknown, Count: 4}, false, 4)},
		{"pipelined reader", NewPipelinedReader("j", 5, testSchema, producers)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, err := Codec{}.Encode(tt.op, encode)
			if err != nil || n == nil {
				t.Fatalf("encode: %v, %v", n, err)
			}
			wire, err := proto.Marshal(n)
			if err != nil {
				t.Fatal(err)
			}
			var back rpc.PhysicalPlan
			if err := proto.Unmarshal(wire, &back); err != nil {
				t.Fatal(err)
			}
			op, err := Codec{}.Decode(&back, decode)
			if err != nil {
				t.Fatal(err)
			}
			if op.String() != tt.op.String() || !op.Schema().Equal(tt.op.Schema()) {
				t.Errorf("decoded %s %s, want %s %s", op, op.Schema(), tt.op, tt.op.Schema())
			}
			if got, want := op.OutputPartitioning().String(), tt.op.OutputPartitioning().String(); got != want {
				t.Errorf("partitioning %s, want %s", got, want)
			}
			switch want := tt.op.(type) {
			case *ShuffleReader:
				got := op.(*ShuffleReader)
				if len(got.Partitions) != len(want.Partitions) || len(got.Partitions[0]) != 1 || !proto.Equal(got.Partitions[0][0], want.Partitions[0][0]) {
					t.Errorf("locations %v, want %v", got.Partitions, want.Partitions)
				}
			case *PipelinedReader:
				got := op.(*PipelinedReader)
				if len(got.Partitions) != 2 || !proto.Equal(got.Partitions[0][0], want.Partitions[0][0]) || len(got.Partitions[1]) != 0 {
					t.Errorf("producers %v, want %v", got.Partitions, want.Partitions)
				}
			case *PipelinedWriter:
				got := op.(*PipelinedWriter)
				if got.Broadcast != want.Broadcast || got.QueueBatches != want.QueueBatches || got.Input() != src {
					t.Errorf("decoded %+v, want %+v", got, want)
				}
			}
		})
	}

	if n, err := (Codec{}).Encode(src, encode); n != nil || err != nil {
		t.Errorf("foreign operator: %v, %v", n, err)
	}
	if op, err := (Codec{}).Decode(marker, decode); op != nil || err != nil {
		t.Errorf("foreign message: %v, %v", op, err)
	}
}

// opaqueExpr is an expression no codec knows.
type opaqueExpr struct{ expr.Column }

func TestCodecRejectsUnserializableKeys(t *testing.T) {
	key := &opaqueExpr{expr.Column{Index: 0, Name: "k", Type: arrow.PrimitiveTypes.Int64}}
	w := NewShuffleWriter(rowsSource(1, 1, 1), "j", 1, physical.Partitioning{Kind: physical.PartHash, Count: 2, Keys: []expr.Expr{key}})
	_, err := Codec{}.Encode(w, func(physical.Operator) (*rpc.PhysicalPlan, error) { return &rpc.PhysicalPlan{}, nil })
	if err == nil || !strings.Contains(err.Error(), "partition key") {
		t.Fatalf("error %v", err)
	}
}
