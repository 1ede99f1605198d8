package cluster

import (
	"github.com/apache/arrow-go/v18/arrow"

	"sluice/exchange"
	"sluice/physical"
	"sluice/physical/datasource/write"
	"sluice/rpc"
	"sluice/scheduler"
)

// Exchanges builds package exchange's operators for the scheduler, which
// does not import exchange itself.
type Exchanges struct{}

var _ scheduler.Exchanges = Exchanges{}

// ShuffleWriter implements scheduler.Exchanges.
func (Exchanges) ShuffleWriter(input physical.Operator, jobID string, stageID int, p physical.Partitioning) (physical.Operator, error) {
	return exchange.NewShuffleWriter(input, jobID, stageID, p), nil
}

// ShuffleReader implements scheduler.Exchanges.
func (Exchanges) ShuffleReader(stageID int, schema *arrow.Schema, partitions [][]*rpc.PartitionLocation) (physical.Operator, error) {
	return exchange.NewShuffleReader(stageID, schema, partitions), nil
}

// PipelinedWriter implements scheduler.Exchanges.
func (Exchanges) PipelinedWriter(input physical.Operator, jobID string, stageID int, p physical.Partitioning, broadcast bool, queueBatches int) (physical.Operator, error) {
	return exchange.NewPipelinedWriter(input, jobID, stageID, p, broadcast, queueBatches), nil
}

// PipelinedReader implements scheduler.Exchanges.
func (Exchanges) PipelinedReader(jobID string, stageID int, schema *arrow.Schema, partitions [][]*rpc.PipelinedProducer) (physical.Operator, error) {
	return exchange.NewPipelinedReader(jobID, stageID, schema, partitions), nil
}

// PlanCodec converts the operators of a stage plan that package physical
// does not: the exchanges and the file writes.
var PlanCodec = physical.Codecs{exchange.Codec{}, write.Codec{}}

// EncodePlan encodes a stage plan with PlanCodec: the encoder the
// scheduler gives its execution graphs.
func EncodePlan(op physical.Operator) (*rpc.PhysicalPlan, error) {
	return physical.EncodePlan(op, PlanCodec)
}
