package physical

import "sluice/physical/expr"

// Getters for operator fields that code outside this package needs to
// rebuild an operator over new children (the distributed planner replaces
// subtrees with exchange placeholders). Operators stay immutable: these
// return the values the constructor was given.

// Names are the projection's output column names.
func (p *Projection) Names() []string { return p.names }

// Mode is the aggregation mode.
func (h *HashAggregate) Mode() AggMode { return h.mode }

// GroupBy are the group key expressions, evaluated on the input.
func (h *HashAggregate) GroupBy() []expr.Expr { return h.groupBy }

// GroupNames are the group columns' output names.
func (h *HashAggregate) GroupNames() []string { return h.groupNames }

// Aggs are the aggregates computed.
func (h *HashAggregate) Aggs() []AggregateExpr { return h.aggs }

// GrandTotals returns the grouping ids of the empty grouping sets whose
// group the aggregate outputs even for empty input (WithGrandTotals).
func (h *HashAggregate) GrandTotals() []int64 { return h.grandTotals }

// JoinType is the kind of join.
func (h *HashJoin) JoinType() JoinType { return h.joinType }

// LeftKeys are the build-side key expressions.
func (h *HashJoin) LeftKeys() []expr.Expr { return h.leftKeys }

// RightKeys are the probe-side key expressions.
func (h *HashJoin) RightKeys() []expr.Expr { return h.rightKeys }

// Filter is the non-equi join condition, or nil.
func (h *HashJoin) Filter() expr.Expr { return h.filter }

// NullAware reports whether the join implements NOT IN semantics.
func (h *HashJoin) NullAware() bool { return h.nullAware }

// Mode says how the build side relates to the output partitions.
func (h *HashJoin) Mode() JoinMode { return h.mode }

// JoinType is the kind of join.
func (j *NestedLoopJoin) JoinType() JoinType { return j.joinType }

// Filter is the join condition, or nil for a cross join.
func (j *NestedLoopJoin) Filter() expr.Expr { return j.filter }

// Fetch is the row limit (< 0: none).
func (m *SortPreservingMerge) Fetch() int64 { return m.fetch }

// Offset is the number of rows skipped per partition.
func (l *Limit) Offset() int64 { return l.offset }

// Count is the most rows passed per partition (< 0: all).
func (l *Limit) Count() int64 { return l.count }
