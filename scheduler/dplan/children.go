package dplan

import (
	"fmt"

	"sluice/physical"
	"sluice/physical/datasource/write"
)

// WithNewChildren returns op rebuilt over children (in Children() order)
// through the operator's public constructor. Operators are immutable, so
// this is how a plan rewrite replaces a subtree. Leaves are returned as
// they are. An operator this package does not know fails with an error
// rather than being silently kept over its old children.
func WithNewChildren(op physical.Operator, children []physical.Operator) (physical.Operator, error) {
	if want := len(op.Children()); want != len(children) {
		return nil, fmt.Errorf("internal: %s has %d children, got %d replacements", op, want, len(children))
	}
	if len(children) == 0 {
		return op, nil
	}
	switch o := op.(type) {
	case *physical.Filter:
		return physical.NewFilter(children[0], o.Predicate()), nil
	case *physical.Projection:
		return physical.NewProjection(children[0], o.Exprs(), o.Names()), nil
	case *physical.HashAggregate:
		h, err := physical.NewHashAggregate(children[0], o.Mode(), o.GroupBy(), o.GroupNames(), o.Aggs())
		if err != nil {
			return nil, err
		}
		return h.WithGrandTotals(o.GrandTotals())
	case *physical.Expand:
		return physical.NewExpand(children[0], o.Keys(), o.KeyNames(), o.Sets(), o.GidName())
	case *physical.HashJoin:
		return physical.NewHashJoin(children[0], children[1], o.JoinType(), o.LeftKeys(), o.RightKeys(), o.Filter(), o.NullAware(), o.Mode())
	case *physical.NestedLoopJoin:
		return physical.NewNestedLoopJoin(children[0], children[1], o.JoinType(), o.Filter())
	case *physical.Sort:
		return physical.NewSort(children[0], o.Keys(), o.Fetch()), nil
	case *physical.SortPreservingMerge:
		return physical.NewSortPreservingMerge(children[0], o.Keys(), o.Fetch()), nil
	case *physical.Limit:
		return physical.NewLimit(children[0], o.Offset(), o.Count()), nil
	case *physical.Window:
		return physical.NewWindow(children[0], o.PartitionBy(), o.OrderBy(), o.Funcs())
	case *physical.WindowGroupLimit:
		return physical.NewWindowGroupLimit(children[0], o.PartitionBy(), o.OrderBy(), o.Func(), o.Limit())
	case *physical.Unnest:
		return physical.NewUnnest(children[0], o.Pass(), o.Args(), o.Names())
	case *physical.Union:
		return physical.NewFoldedUnion(children, o.Folded()), nil
	case *physical.CoalescePartitions:
		return physical.NewCoalescePartitions(children[0]), nil
	case *physical.RecursiveCTE:
		return physical.NewRecursiveCTE(o.Name(), children[0], children[1], o.Distinct(), o.WorkID(), o.Schema()), nil
	case *physical.DynamicFilterBuild:
		ids, cols := o.Filters()
		return physical.NewDynamicFilterBuild(children[0], ids, cols)
	case *physical.Repartition:
		return physical.NewRepartition(children[0], o.OutputPartitioning()), nil
	case *write.FileSink:
		return write.NewFileSink(children[0], o.Spec())
	case *write.WriteCommit:
		return write.NewWriteCommit(children[0], o.Spec())
	case *physical.SetOp:
		return physical.NewSetOp(children[0], children[1], o.Kind(), o.All(), o.Schema())
	}
	return nil, fmt.Errorf("internal: cannot rebuild operator %T (%s) over new children", op, op)
}
