package cluster

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"sluice/exchange"
	"sluice/physical"
	"sluice/physical/datasource/write"
	"sluice/rpc"
)

func TestExchangesBuildEncodableOperators(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64}}, nil)
	locs := [][]*rpc.PartitionLocation{{{JobId: "j", StageId: 1, Partition: 0, ExecutorId: "e", FlightAddress: "127.0.0.1:1", Path: "/w/j/1/data-0-0.arrow", NumRows: 3}}, nil}
	var x Exchanges
	reader, err := x.ShuffleReader(1, schema, locs)
	if err != nil {
		t.Fatal(err)
	}
	writer, err := x.ShuffleWriter(reader, "j", 2, physical.Partitioning{Kind: physical.PartUnknown, Count: 2})
	if err != nil {
		t.Fatal(err)
	}
	msg, err := EncodePlan(writer)
	if err != nil {
		t.Fatal(err)
	}
	back, err := physical.DecodePlan(msg, PlanCodec, physical.NewTableCache())
	if err != nil {
		t.Fatal(err)
	}
	w, ok := back.(*exchange.ShuffleWriter)
	if !ok || w.JobID != "j" || w.StageID != 2 {
		t.Fatalf("decoded %T %v, want the shuffle writer of stage 2 of job j", back, back)
	}
	r, ok := w.Input().(*exchange.ShuffleReader)
	if !ok || r.StageID != 1 || len(r.Partitions) != 2 || r.Partitions[0][0].NumRows != 3 {
		t.Fatalf("decoded input %v, want the shuffle reader of stage 1", w.Input())
	}
	for _, build := range []func() (physical.Operator, error){
		func() (physical.Operator, error) {
			return x.PipelinedWriter(reader, "j", 2, physical.Partitioning{Kind: physical.PartUnknown, Count: 2}, false, 4)
		},
		func() (physical.Operator, error) {
			return x.PipelinedReader("j", 1, schema, [][]*rpc.PipelinedProducer{nil})
		},
	} {
		op, err := build()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := EncodePlan(op); err != nil {
			t.Errorf("encoding %v: %v", op, err)
		}
	}
	// A write's stage: its sink and commit travel with the same codec.
	spec := write.Spec{Dir: t.TempDir(), Format: "csv", Names: []string{"k"}, WriteID: write.NewID()}
	sink, err := write.NewFileSink(reader, spec)
	if err != nil {
		t.Fatal(err)
	}
	commit, err := write.NewWriteCommit(physical.NewCoalescePartitions(sink), spec)
	if err != nil {
		t.Fatal(err)
	}
	if msg, err = EncodePlan(commit); err != nil {
		t.Fatal(err)
	}
	if back, err = physical.DecodePlan(msg, PlanCodec, physical.NewTableCache()); err != nil {
		t.Fatal(err)
	}
	if got, want := physical.Format(back), physical.Format(commit); got != want {
		t.Fatalf("decoded write plan:\n%s\nwant:\n%s", got, want)
	}
}
