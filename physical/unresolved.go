package physical

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
)

// UnresolvedExchange is the placeholder a consumer stage holds for an input
// stage whose producers are not known yet. The execution graph replaces it
// with a reader (shuffle files in blocking mode, producer queues in
// pipelined mode) before the stage runs; executing it is a bug.
type UnresolvedExchange struct {
	StageID int
	schema  *arrow.Schema
	part    Partitioning
}

// NewUnresolvedExchange returns the placeholder for stage stageID, whose
// output has the given schema and partitioning (as the consumer sees it:
// Count partitions, hashed by Keys when Kind is PartHash).
func NewUnresolvedExchange(stageID int, schema *arrow.Schema, p Partitioning) *UnresolvedExchange {
	return &UnresolvedExchange{StageID: stageID, schema: schema, part: p}
}

// Schema implements Operator.
func (u *UnresolvedExchange) Schema() *arrow.Schema { return u.schema }

// Children implements Operator.
func (u *UnresolvedExchange) Children() []Operator { return nil }

// OutputPartitioning implements Operator.
func (u *UnresolvedExchange) OutputPartitioning() Partitioning { return u.part }

// Execute implements Operator; it always fails.
func (u *UnresolvedExchange) Execute(context.Context, int, *TaskContext) (Stream, error) {
	return nil, fmt.Errorf("internal: exchange from stage %d was never resolved", u.StageID)
}

func (u *UnresolvedExchange) String() string {
	return fmt.Sprintf("UnresolvedExchange: stage=%d", u.StageID)
}

var _ Operator = (*UnresolvedExchange)(nil)
