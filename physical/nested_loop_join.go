package physical

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

	"sluice/physical/expr"
)

// NestedLoopJoin joins without equality keys: every left row (all left
// partitions, buffered once per task and shared by the output partitions)
// is paired with every row of the probed right partition, and a pair
// matches when filter is true (nil filter: a cross join). The filter is
// evaluated on blocks of (left rows × one right batch), on left columns
// followed by right columns. Output and join-type rules are HashJoin's.
type NestedLoopJoin struct {
	left, right Operator
	joinType    JoinType
	filter      expr.Expr
	out         *joinOutput
	shared      *joinShared
}

// NewNestedLoopJoin validates the join and computes its schema. Join types
// that emit unmatched build rows need a single right partition.
func NewNestedLoopJoin(left, right Operator, joinType JoinType, filter expr.Expr) (*NestedLoopJoin, error) {
	if joinType < JoinInner || joinType > JoinRightAnti {
		return nil, fmt.Errorf("nested loop join: unknown join type %d", joinType)
	}
	if joinType.EmitsUnmatchedBuild() && right.OutputPartitioning().Count != 1 {
		return nil, fmt.Errorf("nested loop join: %s join needs a single probe partition, got %d", joinType, right.OutputPartitioning().Count)
	}
	if filter != nil && filter.DataType().ID() != arrow.BOOL {
		return nil, fmt.Errorf("nested loop join: filter %s is %s, not boolean", filter, filter.DataType())
	}
	schema, pair := joinSchemas(joinType, left.Schema(), right.Schema())
	return &NestedLoopJoin{
		left: left, right: right, joinType: joinType, filter: filter, shared: newJoinShared(),
		out: &joinOutput{
			joinType: joinType, schema: schema, pairSchema: pair, filter: filter,
			leftFields: left.Schema().Fields(), rightFields: right.Schema().Fields(),
		},
	}, nil
}

// Schema implements Operator.
func (j *NestedLoopJoin) Schema() *arrow.Schema { return j.out.schema }

// Children implements Operator.
func (j *NestedLoopJoin) Children() []Operator { return []Operator{j.left, j.right} }

// OutputPartitioning implements Operator: one output partition per right
// partition.
func (j *NestedLoopJoin) OutputPartitioning() Partitioning {
	return Partitioning{Kind: PartUnknown, Count: j.right.OutputPartitioning().Count}
}

func (j *NestedLoopJoin) String() string {
	if j.filter == nil {
		return fmt.Sprintf("NestedLoopJoin(%s)", j.joinType)
	}
	return fmt.Sprintf("NestedLoopJoin(%s): filter=%s", j.joinType, j.filter)
}

// Execute implements Operator.
func (j *NestedLoopJoin) Execute(ctx context.Context, partition int, tc *TaskContext) (Stream, error) {
	probe, err := ExecuteOp(ctx, j.right, partition, tc)
	if err != nil {
		return nil, fmt.Errorf("nested loop join probe: %w", err)
	}
	e := j.shared.acquire(tc)
	parts := allPartitions(j.left)
	firstOnly := j.filter == nil && (j.joinType == JoinRightSemi || j.joinType == JoinRightAnti)
	return &joinProbeStream{
		out: j.out, tc: tc, probe: probe,
		getTable: func(ctx context.Context) (*joinBuildTable, error) {
			return j.shared.get(ctx, e, func(ctx context.Context) (*joinBuildTable, error) {
				return buildJoinTable(ctx, j.left, parts, nil, tc, "NestedLoopJoin")
			})
		},
		newCandidates: func(t *joinBuildTable) joinCandidates {
			return &nestedLoopCandidates{numBuild: t.numRows, firstOnly: firstOnly}
		},
		onClose: func() { j.shared.release(tc, e) },
	}, nil
}

// nestedLoopCandidates enumerates the cross product of the build rows and
// the probe batch, a block of build rows at a time.
type nestedLoopCandidates struct {
	numBuild  int
	firstOnly bool
	n         int // probe batch rows
	buildPos  int
}

func (c *nestedLoopCandidates) reset(b arrow.RecordBatch) error {
	c.n, c.buildPos = int(b.NumRows()), 0
	return nil
}

func (c *nestedLoopCandidates) next(bi, pi []int32, limit int) ([]int32, []int32, bool) {
	if c.n == 0 || c.numBuild == 0 {
		return bi, pi, true
	}
	if c.firstOnly {
		// Without a filter any build row matches: pair each probe row with
		// the first one.
		for p := 0; p < c.n; p++ {
			bi = append(bi, 0)
			pi = append(pi, int32(p))
		}
		return bi, pi, true
	}
	block := max(1, limit/c.n)
	end := min(c.numBuild, c.buildPos+block)
	for b := c.buildPos; b < end; b++ {
		for p := 0; p < c.n; p++ {
			bi = append(bi, int32(b))
			pi = append(pi, int32(p))
		}
	}
	c.buildPos = end
	return bi, pi, end >= c.numBuild
}

func (c *nestedLoopCandidates) probeKeyNull(int) bool { return false }

func (c *nestedLoopCandidates) clear() {}
