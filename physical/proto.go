package physical

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

	"sluice/catalog"
	"sluice/physical/expr"
	"sluice/plan"
	"sluice/rpc"
)

// Decoding rebuilds every operator through its constructor, so the decoded
// plan recomputes the same schemas, work-unit splits and join/aggregate
// state as the original. Before constructing, it checks what the
// constructors take on trust (column references against the child's
// schema, projection indices against the table), so a bad message fails
// here with an error rather than panicking on an executor.

// EncodePlan converts op and everything below it. Operators of other
// packages are handed to ext (which may be nil when there are none).
func EncodePlan(op Operator, ext ExtensionCodec) (*rpc.PhysicalPlan, error) {
	c := &planCodec{ext: ext}
	out, err := c.encode(op)
	if err != nil {
		return nil, fmt.Errorf("encode plan: %w", err)
	}
	return out, nil
}

// EncodeNode converts op alone: each of its children is replaced by the
// message stub returns for it, which is not decoded or checked. What
// identifies a subtree is then op's own message and what stub stands for
// its children, so a caller comparing subtrees (the distributed planner's
// shared stages) can encode each operator once instead of a whole
// subtree at every level. A plan built this way is not meant to be
// decoded.
func EncodeNode(op Operator, stub func(child Operator) *rpc.PhysicalPlan) (*rpc.PhysicalPlan, error) {
	c := &planCodec{stub: stub}
	out, err := c.encode(op)
	if err != nil {
		return nil, fmt.Errorf("encode plan: %w", err)
	}
	return out, nil
}

// DecodePlan converts a plan message back into operators. Scans open their
// tables through tables; messages this package does not know are handed
// to ext.
func DecodePlan(n *rpc.PhysicalPlan, ext ExtensionCodec, tables TableResolver) (Operator, error) {
	c := &planCodec{ext: ext, tables: tables}
	op, err := c.decode(n)
	if err != nil {
		return nil, fmt.Errorf("decode plan: %w", err)
	}
	return op, nil
}

// planCodec carries what the recursive conversions share.
type planCodec struct {
	ext    ExtensionCodec
	tables TableResolver
	// stub, when set, encodes every operator below the first one
	// encoded (EncodeNode); nested says the first one has begun.
	stub   func(Operator) *rpc.PhysicalPlan
	nested bool
}

// encode converts op and, recursively, its inputs. Each operator's
// conversion is a function of its own (encodeFilter, ...): with them all
// in this switch the recursive function's frame held every case's locals,
// so that a plan's depth grew the stack of the goroutine encoding it
// several times over, copying it each time; in blocking mode a stage's
// plan is encoded by the scheduler and decoded by each task, each in a
// fresh goroutine. decodeNode is split the same way.
func (c *planCodec) encode(op Operator) (*rpc.PhysicalPlan, error) {
	if c.stub != nil {
		if c.nested {
			return c.stub(op), nil
		}
		c.nested = true
	}
	switch op := op.(type) {
	case nil:
		return nil, fmt.Errorf("missing operator")
	case *ParquetScan:
		return c.encodeParquetScan(op)
	case *CSVScan:
		return c.encodeCSVScan(op)
	case *MemScan:
		return nil, fmt.Errorf("table %s is an in-memory table, which exists only in the process that created it and cannot be shipped to executors; "+
			"load it from Parquet or CSV (CREATE EXTERNAL TABLE) to query it on the cluster", op.name)
	case *Filter:
		return c.encodeFilter(op)
	case *Projection:
		return c.encodeProjection(op)
	case *Unnest:
		return c.encodeUnnest(op)
	case *HashAggregate:
		return c.encodeAggregate(op)
	case *Expand:
		return c.encodeExpand(op)
	case *Window:
		return c.encodeWindow(op)
	case *WindowGroupLimit:
		return c.encodeWindowGroupLimit(op)
	case *HashJoin:
		return c.encodeHashJoin(op)
	case *NestedLoopJoin:
		return c.encodeNestedLoopJoin(op)
	case *Sort:
		return c.encodeSort(op)
	case *SortPreservingMerge:
		return c.encodeSortPreservingMerge(op)
	case *Limit:
		return c.encodeLimit(op)
	case *Union:
		return c.encodeUnion(op)
	case *RecursiveCTE:
		return c.encodeRecursiveCTE(op)
	case *WorkTableScan:
		return c.encodeWorkTableScan(op)
	case *Values:
		return c.encodeValues(op)
	case *GenerateSeries:
		return c.encodeGenerateSeries(op)
	case *SetOp:
		return c.encodeSetOp(op)
	case *CoalescePartitions:
		return c.encodeCoalescePartitions(op)
	case *DynamicFilterBuild:
		return c.encodeDynamicFilterBuild(op)
	case *Repartition:
		return c.encodeRepartition(op)
	case *UnresolvedExchange:
		return c.encodeUnresolvedExchange(op)
	}
	if c.ext == nil {
		return nil, fmt.Errorf("operator %T (%s) cannot be serialized: it is not one of package physical's operators and no extension codec was given", op, op)
	}
	out, err := c.ext.Encode(op, c.encode)
	if err != nil {
		return nil, err
	}
	if out == nil {
		return nil, fmt.Errorf("operator %T (%s) cannot be serialized: neither package physical nor the extension codec knows it", op, op)
	}
	return out, nil
}

func (c *planCodec) encodeParquetScan(op *ParquetScan) (*rpc.PhysicalPlan, error) {
	pruning := make([]*rpc.ColumnPredicate, len(op.pruning))
	for i, p := range op.pruning {
		v, err := expr.LiteralToProto(p.Value)
		if err != nil {
			return nil, fmt.Errorf("parquet scan %s: pruning predicate %s: %w", op.name, p, err)
		}
		pruning[i] = &rpc.ColumnPredicate{Column: int32(p.Column), Op: int32(p.Op), Value: v}
	}
	return &rpc.PhysicalPlan{Node: &rpc.PhysicalPlan_ParquetScan{ParquetScan: &rpc.ParquetScanNode{
		Name: op.name, Location: op.table.Path(), Version: op.table.Version(), Projection: int32s(op.projection),
		Pruning: pruning, Partitions: int32(len(op.parts)), Files: tableFilesToProto(op.table.Path(), op.table.FileInfos()),
	}}}, nil
}

func (c *planCodec) encodeCSVScan(op *CSVScan) (*rpc.PhysicalPlan, error) {
	schema, err := expr.SchemaToProto(op.table.Schema())
	if err != nil {
		return nil, fmt.Errorf("csv scan %s: %w", op.name, err)
	}
	opts := op.table.Options()
	return &rpc.PhysicalPlan{Node: &rpc.PhysicalPlan_CsvScan{CsvScan: &rpc.CsvScanNode{
		Name: op.name, Location: op.table.Path(), Version: op.table.Version(), Projection: int32s(op.projection),
		Partitions: int32(len(op.parts)), Header: opts.Header, Delimiter: int32(opts.Delimiter), Schema: schema,
		Files: tableFilesToProto(op.table.Path(), op.table.FileInfos()),
	}}}, nil
}

func (c *planCodec) encodeFilter(op *Filter) (*rpc.PhysicalPlan, error) {
	in, err := c.encode(op.input)
	if err != nil {
		return nil, err
	}
	pred, err := expr.ToProto(op.pred)
	if err != nil {
		return nil, fmt.Errorf("filter: %w", err)
	}
	return &rpc.PhysicalPlan{Node: &rpc.PhysicalPlan_Filter{Filter: &rpc.FilterNode{Input: in, Predicate: pred}}}, nil
}

func (c *planCodec) encodeProjection(op *Projection) (*rpc.PhysicalPlan, error) {
	in, err := c.encode(op.input)
	if err != nil {
		return nil, err
	}
	exprs, err := exprsToProto(op.exprs)
	if err != nil {
		return nil, fmt.Errorf("projection: %w", err)
	}
	return &rpc.PhysicalPlan{Node: &rpc.PhysicalPlan_Projection{Projection: &rpc.ProjectionNode{
		Input: in, Exprs: exprs, Names: op.names,
	}}}, nil
}

func (c *planCodec) encodeUnnest(op *Unnest) (*rpc.PhysicalPlan, error) {
	in, err := c.encode(op.input)
	if err != nil {
		return nil, err
	}
	args, err := exprsToProto(op.args)
	if err != nil {
		return nil, fmt.Errorf("unnest: %w", err)
	}
	return &rpc.PhysicalPlan{Node: &rpc.PhysicalPlan_Unnest{Unnest: &rpc.UnnestNode{Input: in, Pass: int32s(op.pass), Args: args, Names: op.names}}}, nil
}

func (c *planCodec) encodeExpand(op *Expand) (*rpc.PhysicalPlan, error) {
	in, err := c.encode(op.input)
	if err != nil {
		return nil, err
	}
	keys, err := exprsToProto(op.keys)
	if err != nil {
		return nil, fmt.Errorf("expand: %w", err)
	}
	sets := make([]*rpc.GroupingSet, len(op.sets))
	for i, set := range op.sets {
		gs := &rpc.GroupingSet{Keys: make([]int32, len(set))}
		for j, k := range set {
			gs.Keys[j] = int32(k)
		}
		sets[i] = gs
	}
	return &rpc.PhysicalPlan{Node: &rpc.PhysicalPlan_Expand{Expand: &rpc.ExpandNode{
		Input: in, Keys: keys, KeyNames: op.keyNames, Sets: sets, GidName: op.GidName(),
	}}}, nil
}

func (c *planCodec) encodeHashJoin(op *HashJoin) (*rpc.PhysicalPlan, error) {
	left, right, err := c.encode2(op.left, op.right)
	if err != nil {
		return nil, err
	}
	lk, err := exprsToProto(op.leftKeys)
	if err != nil {
		return nil, fmt.Errorf("hash join: %w", err)
	}
	rk, err := exprsToProto(op.rightKeys)
	if err != nil {
		return nil, fmt.Errorf("hash join: %w", err)
	}
	filter, err := optionalExprToProto(op.filter)
	if err != nil {
		return nil, fmt.Errorf("hash join: %w", err)
	}
	return &rpc.PhysicalPlan{Node: &rpc.PhysicalPlan_HashJoin{HashJoin: &rpc.HashJoinNode{
		Left: left, Right: right, JoinType: int32(op.joinType), LeftKeys: lk, RightKeys: rk,
		Filter: filter, NullAware: op.nullAware, Mode: int32(op.mode),
	}}}, nil
}

func (c *planCodec) encodeNestedLoopJoin(op *NestedLoopJoin) (*rpc.PhysicalPlan, error) {
	left, right, err := c.encode2(op.left, op.right)
	if err != nil {
		return nil, err
	}
	filter, err := optionalExprToProto(op.filter)
	if err != nil {
		return nil, fmt.Errorf("nested loop join: %w", err)
	}
	return &rpc.PhysicalPlan{Node: &rpc.PhysicalPlan_NestedLoopJoin{NestedLoopJoin: &rpc.NestedLoopJoinNode{
		Left: left, Right: right, JoinType: int32(op.joinType), Filter: filter,
	}}}, nil
}

func (c *planCodec) encodeSort(op *Sort) (*rpc.PhysicalPlan, error) {
	in, err := c.encode(op.input)
	if err != nil {
		return nil, err
	}
	keys, err := sortKeysToProto(op.keys)
	if err != nil {
		return nil, fmt.Errorf("sort: %w", err)
	}
	return &rpc.PhysicalPlan{Node: &rpc.PhysicalPlan_Sort{Sort: &rpc.SortNode{Input: in, Keys: keys, Fetch: op.fetch}}}, nil
}

func (c *planCodec) encodeSortPreservingMerge(op *SortPreservingMerge) (*rpc.PhysicalPlan, error) {
	in, err := c.encode(op.input)
	if err != nil {
		return nil, err
	}
	keys, err := sortKeysToProto(op.keys)
	if err != nil {
		return nil, fmt.Errorf("sort-preserving merge: %w", err)
	}
	return &rpc.PhysicalPlan{Node: &rpc.PhysicalPlan_SortPreservingMerge{SortPreservingMerge: &rpc.SortPreservingMergeNode{
		Input: in, Keys: keys, Fetch: op.fetch,
	}}}, nil
}

func (c *planCodec) encodeLimit(op *Limit) (*rpc.PhysicalPlan, error) {
	in, err := c.encode(op.input)
	if err != nil {
		return nil, err
	}
	return &rpc.PhysicalPlan{Node: &rpc.PhysicalPlan_Limit{Limit: &rpc.LimitNode{Input: in, Offset: op.offset, Count: op.count}}}, nil
}

func (c *planCodec) encodeUnion(op *Union) (*rpc.PhysicalPlan, error) {
	ins := make([]*rpc.PhysicalPlan, len(op.inputs))
	for i, in := range op.inputs {
		p, err := c.encode(in)
		if err != nil {
			return nil, err
		}
		ins[i] = p
	}
	return &rpc.PhysicalPlan{Node: &rpc.PhysicalPlan_Union{Union: &rpc.UnionNode{Inputs: ins, Folded: int32(op.folded)}}}, nil
}

func (c *planCodec) encodeRecursiveCTE(op *RecursiveCTE) (*rpc.PhysicalPlan, error) {
	base, err := c.encode(op.base)
	if err != nil {
		return nil, err
	}
	rec, err := c.encode(op.recursive)
	if err != nil {
		return nil, err
	}
	schema, err := expr.SchemaToProto(op.schema)
	if err != nil {
		return nil, fmt.Errorf("recursive CTE: %w", err)
	}
	return &rpc.PhysicalPlan{Node: &rpc.PhysicalPlan_RecursiveCte{RecursiveCte: &rpc.RecursiveCTENode{
		Name: op.name, Base: base, Recursive: rec, Distinct: op.distinct, WorkId: op.workID, Schema: schema}}}, nil
}

func (c *planCodec) encodeWorkTableScan(op *WorkTableScan) (*rpc.PhysicalPlan, error) {
	schema, err := expr.SchemaToProto(op.schema)
	if err != nil {
		return nil, fmt.Errorf("working table: %w", err)
	}
	return &rpc.PhysicalPlan{Node: &rpc.PhysicalPlan_WorkTableScan{WorkTableScan: &rpc.WorkTableScanNode{
		Name: op.name, WorkId: op.workID, Schema: schema}}}, nil
}

func (c *planCodec) encodeValues(op *Values) (*rpc.PhysicalPlan, error) {
	schema, err := expr.SchemaToProto(op.schema)
	if err != nil {
		return nil, fmt.Errorf("values: %w", err)
	}
	rows := make([]*rpc.ValuesRow, len(op.rows))
	for i, r := range op.rows {
		vs, err := exprsToProto(r)
		if err != nil {
			return nil, fmt.Errorf("values: row %d: %w", i, err)
		}
		rows[i] = &rpc.ValuesRow{Values: vs}
	}
	return &rpc.PhysicalPlan{Node: &rpc.PhysicalPlan_Values{Values: &rpc.ValuesNode{Schema: schema, Rows: rows}}}, nil
}

func (c *planCodec) encodeGenerateSeries(op *GenerateSeries) (*rpc.PhysicalPlan, error) {
	schema, err := expr.SchemaToProto(op.schema)
	if err != nil {
		return nil, fmt.Errorf("generate_series: %w", err)
	}
	args, err := exprsToProto([]expr.Expr{op.start, op.stop, op.step})
	if err != nil {
		return nil, fmt.Errorf("generate_series: %w", err)
	}
	return &rpc.PhysicalPlan{Node: &rpc.PhysicalPlan_GenerateSeries{GenerateSeries: &rpc.GenerateSeriesNode{
		Schema: schema, Start: args[0], Stop: args[1], Step: args[2]}}}, nil
}

func (c *planCodec) encodeSetOp(op *SetOp) (*rpc.PhysicalPlan, error) {
	l, r, err := c.encode2(op.left, op.right)
	if err != nil {
		return nil, err
	}
	schema, err := expr.SchemaToProto(op.schema)
	if err != nil {
		return nil, fmt.Errorf("set operation: %w", err)
	}
	return &rpc.PhysicalPlan{Node: &rpc.PhysicalPlan_SetOp{SetOp: &rpc.SetOpNode{
		Left: l, Right: r, Kind: int32(op.kind), All: op.all, Schema: schema,
	}}}, nil
}

func (c *planCodec) encodeCoalescePartitions(op *CoalescePartitions) (*rpc.PhysicalPlan, error) {
	in, err := c.encode(op.input)
	if err != nil {
		return nil, err
	}
	return &rpc.PhysicalPlan{Node: &rpc.PhysicalPlan_CoalescePartitions{CoalescePartitions: &rpc.CoalescePartitionsNode{Input: in}}}, nil
}

func (c *planCodec) encodeDynamicFilterBuild(op *DynamicFilterBuild) (*rpc.PhysicalPlan, error) {
	in, err := c.encode(op.input)
	if err != nil {
		return nil, err
	}
	return &rpc.PhysicalPlan{Node: &rpc.PhysicalPlan_DynamicFilterBuild{DynamicFilterBuild: &rpc.DynamicFilterBuildNode{
		Input: in, Ids: int32s(op.ids), Columns: int32s(op.cols),
	}}}, nil
}

func (c *planCodec) encodeRepartition(op *Repartition) (*rpc.PhysicalPlan, error) {
	in, err := c.encode(op.input)
	if err != nil {
		return nil, err
	}
	part, err := PartitioningToProto(op.part)
	if err != nil {
		return nil, fmt.Errorf("repartition: %w", err)
	}
	return &rpc.PhysicalPlan{Node: &rpc.PhysicalPlan_Repartition{Repartition: &rpc.RepartitionNode{Input: in, Partitioning: part}}}, nil
}

func (c *planCodec) encodeUnresolvedExchange(op *UnresolvedExchange) (*rpc.PhysicalPlan, error) {
	schema, err := expr.SchemaToProto(op.schema)
	if err != nil {
		return nil, fmt.Errorf("unresolved exchange from stage %d: %w", op.StageID, err)
	}
	part, err := PartitioningToProto(op.part)
	if err != nil {
		return nil, fmt.Errorf("unresolved exchange from stage %d: %w", op.StageID, err)
	}
	return &rpc.PhysicalPlan{Node: &rpc.PhysicalPlan_UnresolvedExchange{UnresolvedExchange: &rpc.UnresolvedExchangeNode{
		StageId: int32(op.StageID), Schema: schema, Partitions: int32(op.part.Count), Partitioning: part,
	}}}, nil
}

func (c *planCodec) encode2(a, b Operator) (*rpc.PhysicalPlan, *rpc.PhysicalPlan, error) {
	pa, err := c.encode(a)
	if err != nil {
		return nil, nil, err
	}
	pb, err := c.encode(b)
	if err != nil {
		return nil, nil, err
	}
	return pa, pb, nil
}

func (c *planCodec) encodeAggregate(op *HashAggregate) (*rpc.PhysicalPlan, error) {
	in, err := c.encode(op.input)
	if err != nil {
		return nil, err
	}
	groups, err := exprsToProto(op.groupBy)
	if err != nil {
		return nil, fmt.Errorf("hash aggregate: %w", err)
	}
	aggs := make([]*rpc.AggregateExpr, len(op.aggs))
	for i, a := range op.aggs {
		arg, err := optionalExprToProto(a.Arg)
		if err != nil {
			return nil, fmt.Errorf("hash aggregate: %s: %w", a, err)
		}
		t, err := expr.TypeToProto(a.Type)
		if err != nil {
			return nil, fmt.Errorf("hash aggregate: %s: %w", a, err)
		}
		arg2, err := optionalExprToProto(a.Arg2)
		if err != nil {
			return nil, fmt.Errorf("hash aggregate: %s: %w", a, err)
		}
		order, err := sortKeysToProto(a.OrderBy)
		if err != nil {
			return nil, fmt.Errorf("hash aggregate: %s: %w", a, err)
		}
		aggs[i] = &rpc.AggregateExpr{Func: int32(a.Func), Arg: arg, Arg2: arg2, Distinct: a.Distinct, Name: a.Name, Type: t, OrderBy: order}
	}
	return &rpc.PhysicalPlan{Node: &rpc.PhysicalPlan_HashAggregate{HashAggregate: &rpc.HashAggregateNode{
		Input: in, Mode: int32(op.mode), GroupBy: groups, GroupNames: op.groupNames, Aggs: aggs,
		GrandTotals: op.grandTotals,
	}}}, nil
}

// nodeKind names the message's node (its oneof field), for errors.
func nodeKind(n *rpc.PhysicalPlan) string {
	m := n.ProtoReflect()
	if f := m.WhichOneof(m.Descriptor().Oneofs().ByName("node")); f != nil {
		return string(f.Name())
	}
	return "empty node"
}

func (c *planCodec) decode(n *rpc.PhysicalPlan) (Operator, error) {
	if n == nil {
		return nil, fmt.Errorf("missing plan node")
	}
	op, err := c.decodeNode(n)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", nodeKind(n), err)
	}
	return op, nil
}

// decodeNode converts one node, each kind in a function of its own (see
// encode for why).
func (c *planCodec) decodeNode(n *rpc.PhysicalPlan) (Operator, error) {
	switch m := n.Node.(type) {
	case *rpc.PhysicalPlan_ParquetScan:
		return c.decodeParquetScan(m.ParquetScan)
	case *rpc.PhysicalPlan_CsvScan:
		return c.decodeCSVScan(m.CsvScan)
	case *rpc.PhysicalPlan_Filter:
		return c.decodeFilterNode(m)
	case *rpc.PhysicalPlan_Projection:
		return c.decodeProjectionNode(m)
	case *rpc.PhysicalPlan_Unnest:
		return c.decodeUnnestNode(m)
	case *rpc.PhysicalPlan_HashAggregate:
		return c.decodeAggregate(m.HashAggregate)
	case *rpc.PhysicalPlan_Expand:
		return c.decodeExpandNode(m)
	case *rpc.PhysicalPlan_Window:
		return c.decodeWindow(m.Window)
	case *rpc.PhysicalPlan_WindowGroupLimit:
		return c.decodeWindowGroupLimit(m.WindowGroupLimit)
	case *rpc.PhysicalPlan_HashJoin:
		return c.decodeHashJoinNode(m)
	case *rpc.PhysicalPlan_NestedLoopJoin:
		return c.decodeNestedLoopJoinNode(m)
	case *rpc.PhysicalPlan_Sort:
		return c.decodeSortNode(m)
	case *rpc.PhysicalPlan_SortPreservingMerge:
		return c.decodeSortPreservingMergeNode(m)
	case *rpc.PhysicalPlan_Limit:
		return c.decodeLimitNode(m)
	case *rpc.PhysicalPlan_Union:
		return c.decodeUnionNode(m)
	case *rpc.PhysicalPlan_SetOp:
		return c.decodeSetOpNode(m)
	case *rpc.PhysicalPlan_Values:
		return c.decodeValuesNode(m)
	case *rpc.PhysicalPlan_RecursiveCte:
		return c.decodeRecursiveCteNode(m)
	case *rpc.PhysicalPlan_WorkTableScan:
		return c.decodeWorkTableScanNode(m)
	case *rpc.PhysicalPlan_GenerateSeries:
		return c.decodeGenerateSeriesNode(m)
	case *rpc.PhysicalPlan_CoalescePartitions:
		return c.decodeCoalescePartitionsNode(m)
	case *rpc.PhysicalPlan_DynamicFilterBuild:
		return c.decodeDynamicFilterBuildNode(m)
	case *rpc.PhysicalPlan_Repartition:
		return c.decodeRepartitionNode(m)
	case *rpc.PhysicalPlan_UnresolvedExchange:
		return c.decodeUnresolvedExchangeNode(m)
	}
	if c.ext == nil {
		return nil, fmt.Errorf("no decoder for this node: package physical does not know it and no extension codec was given")
	}
	op, err := c.ext.Decode(n, c.decode)
	if err != nil {
		return nil, err
	}
	if op == nil {
		return nil, fmt.Errorf("no decoder for this node: neither package physical nor the extension codec knows it")
	}
	return op, nil
}

func (c *planCodec) decodeFilterNode(m *rpc.PhysicalPlan_Filter) (Operator, error) {
	in, err := c.decode(m.Filter.GetInput())
	if err != nil {
		return nil, err
	}
	pred, err := exprFromProto(m.Filter.GetPredicate(), in.Schema())
	if err != nil {
		return nil, fmt.Errorf("predicate: %w", err)
	}
	return NewFilter(in, pred), nil
}

func (c *planCodec) decodeProjectionNode(m *rpc.PhysicalPlan_Projection) (Operator, error) {
	in, err := c.decode(m.Projection.GetInput())
	if err != nil {
		return nil, err
	}
	exprs, err := exprsFromProto(m.Projection.GetExprs(), in.Schema())
	if err != nil {
		return nil, err
	}
	names := m.Projection.GetNames()
	if len(names) != len(exprs) {
		return nil, fmt.Errorf("%d names for %d expressions", len(names), len(exprs))
	}
	return NewProjection(in, exprs, names), nil
}

func (c *planCodec) decodeUnnestNode(m *rpc.PhysicalPlan_Unnest) (Operator, error) {
	in, err := c.decode(m.Unnest.GetInput())
	if err != nil {
		return nil, err
	}
	args, err := exprsFromProto(m.Unnest.GetArgs(), in.Schema())
	if err != nil {
		return nil, fmt.Errorf("unnest: %w", err)
	}
	pass, err := projectionFromProto(m.Unnest.GetPass(), in.Schema())
	if err != nil {
		return nil, fmt.Errorf("unnest: %w", err)
	}
	return NewUnnest(in, pass, args, m.Unnest.GetNames())
}

func (c *planCodec) decodeExpandNode(m *rpc.PhysicalPlan_Expand) (Operator, error) {
	e := m.Expand
	in, err := c.decode(e.GetInput())
	if err != nil {
		return nil, err
	}
	keys, err := exprsFromProto(e.GetKeys(), in.Schema())
	if err != nil {
		return nil, fmt.Errorf("expand keys: %w", err)
	}
	sets := make([][]int, len(e.GetSets()))
	for i, gs := range e.GetSets() {
		sets[i] = make([]int, len(gs.GetKeys()))
		for j, k := range gs.GetKeys() {
			sets[i][j] = int(k)
		}
	}
	return NewExpand(in, keys, e.GetKeyNames(), sets, e.GetGidName())
}

func (c *planCodec) decodeHashJoinNode(m *rpc.PhysicalPlan_HashJoin) (Operator, error) {
	j := m.HashJoin
	left, right, err := c.decode2(j.GetLeft(), j.GetRight())
	if err != nil {
		return nil, err
	}
	lk, err := exprsFromProto(j.GetLeftKeys(), left.Schema())
	if err != nil {
		return nil, fmt.Errorf("left keys: %w", err)
	}
	rk, err := exprsFromProto(j.GetRightKeys(), right.Schema())
	if err != nil {
		return nil, fmt.Errorf("right keys: %w", err)
	}
	filter, err := optionalExprFromProto(j.GetFilter(), pairSchema(left, right))
	if err != nil {
		return nil, fmt.Errorf("filter: %w", err)
	}
	return NewHashJoin(left, right, JoinType(j.GetJoinType()), lk, rk, filter, j.GetNullAware(), JoinMode(j.GetMode()))
}

func (c *planCodec) decodeNestedLoopJoinNode(m *rpc.PhysicalPlan_NestedLoopJoin) (Operator, error) {
	j := m.NestedLoopJoin
	left, right, err := c.decode2(j.GetLeft(), j.GetRight())
	if err != nil {
		return nil, err
	}
	filter, err := optionalExprFromProto(j.GetFilter(), pairSchema(left, right))
	if err != nil {
		return nil, fmt.Errorf("filter: %w", err)
	}
	return NewNestedLoopJoin(left, right, JoinType(j.GetJoinType()), filter)
}

func (c *planCodec) decodeSortNode(m *rpc.PhysicalPlan_Sort) (Operator, error) {
	in, keys, err := c.decodeSorted(m.Sort.GetInput(), m.Sort.GetKeys())
	if err != nil {
		return nil, err
	}
	return NewSort(in, keys, m.Sort.GetFetch()), nil
}

func (c *planCodec) decodeSortPreservingMergeNode(m *rpc.PhysicalPlan_SortPreservingMerge) (Operator, error) {
	in, keys, err := c.decodeSorted(m.SortPreservingMerge.GetInput(), m.SortPreservingMerge.GetKeys())
	if err != nil {
		return nil, err
	}
	return NewSortPreservingMerge(in, keys, m.SortPreservingMerge.GetFetch()), nil
}

func (c *planCodec) decodeLimitNode(m *rpc.PhysicalPlan_Limit) (Operator, error) {
	in, err := c.decode(m.Limit.GetInput())
	if err != nil {
		return nil, err
	}
	return NewLimit(in, m.Limit.GetOffset(), m.Limit.GetCount()), nil
}

func (c *planCodec) decodeUnionNode(m *rpc.PhysicalPlan_Union) (Operator, error) {
	ps := m.Union.GetInputs()
	if len(ps) == 0 {
		return nil, fmt.Errorf("union without inputs")
	}
	ins := make([]Operator, len(ps))
	for i, p := range ps {
		in, err := c.decode(p)
		if err != nil {
			return nil, fmt.Errorf("input %d: %w", i, err)
		}
		ins[i] = in
	}
	return NewFoldedUnion(ins, int(m.Union.GetFolded())), nil
}

func (c *planCodec) decodeSetOpNode(m *rpc.PhysicalPlan_SetOp) (Operator, error) {
	left, right, err := c.decode2(m.SetOp.GetLeft(), m.SetOp.GetRight())
	if err != nil {
		return nil, err
	}
	kind := plan.SetOpKind(m.SetOp.GetKind())
	if kind != plan.SetIntersect && kind != plan.SetExcept {
		return nil, fmt.Errorf("unknown set operation kind %d", kind)
	}
	schema, err := expr.SchemaFromProto(m.SetOp.GetSchema())
	if err != nil {
		return nil, err
	}
	return NewSetOp(left, right, kind, m.SetOp.GetAll(), schema)
}

func (c *planCodec) decodeValuesNode(m *rpc.PhysicalPlan_Values) (Operator, error) {
	schema, err := expr.SchemaFromProto(m.Values.GetSchema())
	if err != nil {
		return nil, err
	}
	// Values evaluates its rows on a batch without columns.
	noColumns := arrow.NewSchema(nil, nil)
	rows := make([][]expr.Expr, len(m.Values.GetRows()))
	for i, r := range m.Values.GetRows() {
		row, err := exprsFromProto(r.GetValues(), noColumns)
		if err != nil {
			return nil, fmt.Errorf("row %d: %w", i, err)
		}
		if len(row) != schema.NumFields() {
			return nil, fmt.Errorf("row %d has %d values for %d columns", i, len(row), schema.NumFields())
		}
		rows[i] = row
	}
	return NewValues(schema, rows), nil
}

func (c *planCodec) decodeRecursiveCteNode(m *rpc.PhysicalPlan_RecursiveCte) (Operator, error) {
	r := m.RecursiveCte
	schema, err := expr.SchemaFromProto(r.GetSchema())
	if err != nil {
		return nil, err
	}
	base, err := c.decode(r.GetBase())
	if err != nil {
		return nil, fmt.Errorf("recursive CTE %s: base: %w", r.GetName(), err)
	}
	rec, err := c.decode(r.GetRecursive())
	if err != nil {
		return nil, fmt.Errorf("recursive CTE %s: recursive term: %w", r.GetName(), err)
	}
	for i, term := range []Operator{base, rec} {
		if !arrowTypesEqual(term.Schema(), schema) {
			return nil, fmt.Errorf("recursive CTE %s: term %d has columns %s, the CTE %s", r.GetName(), i+1, term.Schema(), schema)
		}
	}
	return NewRecursiveCTE(r.GetName(), base, rec, r.GetDistinct(), r.GetWorkId(), schema), nil
}

func (c *planCodec) decodeWorkTableScanNode(m *rpc.PhysicalPlan_WorkTableScan) (Operator, error) {
	w := m.WorkTableScan
	schema, err := expr.SchemaFromProto(w.GetSchema())
	if err != nil {
		return nil, err
	}
	return NewWorkTableScan(w.GetName(), w.GetWorkId(), schema), nil
}

func (c *planCodec) decodeGenerateSeriesNode(m *rpc.PhysicalPlan_GenerateSeries) (Operator, error) {
	schema, err := expr.SchemaFromProto(m.GenerateSeries.GetSchema())
	if err != nil {
		return nil, err
	}
	g := m.GenerateSeries
	args, err := exprsFromProto([]*rpc.PhysicalExpr{g.GetStart(), g.GetStop(), g.GetStep()}, arrow.NewSchema(nil, nil))
	if err != nil {
		return nil, err
	}
	return NewGenerateSeries(schema, args[0], args[1], args[2])
}

func (c *planCodec) decodeCoalescePartitionsNode(m *rpc.PhysicalPlan_CoalescePartitions) (Operator, error) {
	in, err := c.decode(m.CoalescePartitions.GetInput())
	if err != nil {
		return nil, err
	}
	return NewCoalescePartitions(in), nil
}

func (c *planCodec) decodeDynamicFilterBuildNode(m *rpc.PhysicalPlan_DynamicFilterBuild) (Operator, error) {
	in, err := c.decode(m.DynamicFilterBuild.GetInput())
	if err != nil {
		return nil, err
	}
	ids, cols := make([]int, len(m.DynamicFilterBuild.Ids)), make([]int, len(m.DynamicFilterBuild.Columns))
	for i, id := range m.DynamicFilterBuild.Ids {
		ids[i] = int(id)
	}
	for i, col := range m.DynamicFilterBuild.Columns {
		cols[i] = int(col)
	}
	return NewDynamicFilterBuild(in, ids, cols)
}

func (c *planCodec) decodeRepartitionNode(m *rpc.PhysicalPlan_Repartition) (Operator, error) {
	in, err := c.decode(m.Repartition.GetInput())
	if err != nil {
		return nil, err
	}
	part, err := PartitioningFromProto(m.Repartition.GetPartitioning(), in.Schema())
	if err != nil {
		return nil, err
	}
	if part.Kind != PartHash && part.Kind != PartRoundRobin {
		return nil, fmt.Errorf("repartition must hash or deal round-robin, not %s", part)
	}
	return NewRepartition(in, part), nil
}

func (c *planCodec) decodeUnresolvedExchangeNode(m *rpc.PhysicalPlan_UnresolvedExchange) (Operator, error) {
	u := m.UnresolvedExchange
	schema, err := expr.SchemaFromProto(u.GetSchema())
	if err != nil {
		return nil, err
	}
	part, err := PartitioningFromProto(u.GetPartitioning(), schema)
	if err != nil {
		return nil, err
	}
	if int(u.GetPartitions()) != part.Count {
		return nil, fmt.Errorf("stage %d: %d partitions, but partitioning %s", u.GetStageId(), u.GetPartitions(), part)
	}
	return NewUnresolvedExchange(int(u.GetStageId()), schema, part), nil
}

func (c *planCodec) decode2(a, b *rpc.PhysicalPlan) (Operator, Operator, error) {
	left, err := c.decode(a)
	if err != nil {
		return nil, nil, fmt.Errorf("left: %w", err)
	}
	right, err := c.decode(b)
	if err != nil {
		return nil, nil, fmt.Errorf("right: %w", err)
	}
	return left, right, nil
}

func (c *planCodec) decodeSorted(input *rpc.PhysicalPlan, keys []*rpc.SortKey) (Operator, []SortKey, error) {
	in, err := c.decode(input)
	if err != nil {
		return nil, nil, err
	}
	out := make([]SortKey, len(keys))
	for i, k := range keys {
		e, err := exprFromProto(k.GetExpr(), in.Schema())
		if err != nil {
			return nil, nil, fmt.Errorf("sort key %d: %w", i, err)
		}
		out[i] = SortKey{Expr: e, Desc: k.GetDesc(), NullsFirst: k.GetNullsFirst()}
	}
	return in, out, nil
}

func (c *planCodec) decodeAggregate(a *rpc.HashAggregateNode) (Operator, error) {
	in, err := c.decode(a.GetInput())
	if err != nil {
		return nil, err
	}
	mode := AggMode(a.GetMode())
	// A final aggregate's expressions describe the partial aggregate's raw
	// input (they give only types and names); its own input is the partial
	// layout, so there is nothing to check them against.
	scope := in.Schema()
	if mode == AggFinal {
		scope = nil
	}
	groups, err := exprsFromProto(a.GetGroupBy(), scope)
	if err != nil {
		return nil, fmt.Errorf("group by: %w", err)
	}
	aggs := make([]AggregateExpr, len(a.GetAggs()))
	for i, p := range a.GetAggs() {
		fn := plan.AggFunc(p.GetFunc())
		if fn < plan.AggCountStar || int(fn) >= plan.NumAggFuncs {
			return nil, fmt.Errorf("aggregate %s: unknown function %d", p.GetName(), p.GetFunc())
		}
		arg, err := optionalExprFromProto(p.GetArg(), scope)
		if err != nil {
			return nil, fmt.Errorf("aggregate %s: %w", p.GetName(), err)
		}
		t, err := expr.TypeFromProto(p.GetType())
		if err != nil {
			return nil, fmt.Errorf("aggregate %s: %w", p.GetName(), err)
		}
		arg2, err := optionalExprFromProto(p.GetArg2(), scope)
		if err != nil {
			return nil, fmt.Errorf("aggregate %s: %w", p.GetName(), err)
		}
		var order []SortKey
		for _, k := range p.GetOrderBy() {
			e, err := exprFromProto(k.GetExpr(), scope)
			if err != nil {
				return nil, fmt.Errorf("aggregate %s: order by: %w", p.GetName(), err)
			}
			order = append(order, SortKey{Expr: e, Desc: k.GetDesc(), NullsFirst: k.GetNullsFirst()})
		}
		aggs[i] = AggregateExpr{Func: fn, Arg: arg, Arg2: arg2, Distinct: p.GetDistinct(), Name: p.GetName(), Type: t, OrderBy: order}
	}
	h, err := NewHashAggregate(in, mode, groups, a.GetGroupNames(), aggs)
	if err != nil {
		return nil, err
	}
	return h.WithGrandTotals(a.GetGrandTotals())
}

func (c *planCodec) decodeParquetScan(s *rpc.ParquetScanNode) (Operator, error) {
	if c.tables == nil {
		return nil, fmt.Errorf("table %s: no table resolver to open %s", s.GetName(), s.GetLocation())
	}
	var t *catalog.ParquetTable
	var err error
	if files := tableFilesFromProto(s.GetFiles()); files != nil {
		t, err = c.listed().ParquetFiles(s.GetLocation(), s.GetVersion(), files)
	} else {
		t, err = c.tables.Parquet(s.GetLocation(), s.GetVersion())
	}
	if err != nil {
		return nil, fmt.Errorf("table %s: %w", s.GetName(), err)
	}
	proj, err := projectionFromProto(s.GetProjection(), t.Schema())
	if err != nil {
		return nil, fmt.Errorf("table %s at %s: %w", s.GetName(), s.GetLocation(), err)
	}
	pruning := make([]ColumnPredicate, len(s.GetPruning()))
	for i, p := range s.GetPruning() {
		v, err := expr.LiteralFromProto(p.GetValue())
		if err != nil {
			return nil, fmt.Errorf("table %s: pruning predicate %d: %w", s.GetName(), i, err)
		}
		op := plan.BinaryOp(p.GetOp())
		if !op.IsComparison() {
			return nil, fmt.Errorf("table %s: pruning predicate %d: operator %d is not a comparison", s.GetName(), i, p.GetOp())
		}
		if p.GetColumn() < 0 || int(p.GetColumn()) >= t.Schema().NumFields() {
			return nil, fmt.Errorf("table %s: pruning predicate %d: column %d out of range", s.GetName(), i, p.GetColumn())
		}
		pruning[i] = ColumnPredicate{Column: int(p.GetColumn()), Op: op, Value: v}
	}
	if s.GetPartitions() < 1 {
		return nil, fmt.Errorf("table %s: %d partitions", s.GetName(), s.GetPartitions())
	}
	return NewParquetScan(s.GetName(), t, proj, pruning, int(s.GetPartitions())), nil
}

func (c *planCodec) decodeCSVScan(s *rpc.CsvScanNode) (Operator, error) {
	if c.tables == nil {
		return nil, fmt.Errorf("table %s: no table resolver to open %s", s.GetName(), s.GetLocation())
	}
	schema, err := expr.SchemaFromProto(s.GetSchema())
	if err != nil {
		return nil, fmt.Errorf("table %s: %w", s.GetName(), err)
	}
	opts := catalog.CSVOptions{Header: s.GetHeader(), Delimiter: rune(s.GetDelimiter())}
	var t *catalog.CSVTable
	if files := tableFilesFromProto(s.GetFiles()); files != nil {
		t, err = c.listed().CSVFiles(s.GetLocation(), s.GetVersion(), files, opts, schema)
	} else {
		t, err = c.tables.CSV(s.GetLocation(), s.GetVersion(), opts, schema)
	}
	if err != nil {
		return nil, fmt.Errorf("table %s: %w", s.GetName(), err)
	}
	proj, err := projectionFromProto(s.GetProjection(), t.Schema())
	if err != nil {
		return nil, fmt.Errorf("table %s at %s: %w", s.GetName(), s.GetLocation(), err)
	}
	if s.GetPartitions() < 1 {
		return nil, fmt.Errorf("table %s: %d partitions", s.GetName(), s.GetPartitions())
	}
	return NewCSVScan(s.GetName(), t, proj, int(s.GetPartitions())), nil
}

// tableFilesToProto lists an object store table's files for the plan, so
// executors read what the planner listed; local tables send none (each
// host lists its own copy of the files).
func tableFilesToProto(location string, files []catalog.FileInfo) []*rpc.TableFile {
	if !catalog.IsS3(location) {
		return nil
	}
	out := make([]*rpc.TableFile, len(files))
	for i, f := range files {
		out[i] = &rpc.TableFile{Path: f.Path, Size: f.Size, ModTime: f.ModTime, Etag: f.ETag}
	}
	return out
}

func tableFilesFromProto(files []*rpc.TableFile) []catalog.FileInfo {
	if len(files) == 0 {
		return nil
	}
	out := make([]catalog.FileInfo, len(files))
	for i, f := range files {
		out[i] = catalog.FileInfo{Path: f.GetPath(), Size: f.GetSize(), ModTime: f.GetModTime(), ETag: f.GetEtag()}
	}
	return out
}

// listed returns the resolver as a ListedTableResolver; one that is not
// opens the files itself, uncached.
func (c *planCodec) listed() ListedTableResolver {
	if l, ok := c.tables.(ListedTableResolver); ok {
		return l
	}
	return uncachedListed{}
}

// uncachedListed opens listed tables without caching them.
type uncachedListed struct{}

func (uncachedListed) ParquetFiles(location, _ string, files []catalog.FileInfo) (*catalog.ParquetTable, error) {
	return catalog.OpenParquetFiles(location, files)
}

func (uncachedListed) CSVFiles(location, _ string, files []catalog.FileInfo, opts catalog.CSVOptions, schema *arrow.Schema) (*catalog.CSVTable, error) {
	return catalog.OpenCSVFiles(location, files, opts, schema)
}

// PartitioningToProto converts a partitioning (for exchange operators too).
func PartitioningToProto(p Partitioning) (*rpc.Partitioning, error) {
	keys, err := exprsToProto(p.Keys)
	if err != nil {
		return nil, fmt.Errorf("partitioning keys: %w", err)
	}
	return &rpc.Partitioning{Kind: int32(p.Kind), Count: int32(p.Count), Keys: keys}, nil
}

// PartitioningFromProto converts a partitioning back; hash keys must be
// columns of schema, the rows being partitioned.
func PartitioningFromProto(p *rpc.Partitioning, schema *arrow.Schema) (Partitioning, error) {
	if p == nil {
		return Partitioning{}, fmt.Errorf("missing partitioning")
	}
	kind := PartitioningKind(p.GetKind())
	if kind < PartUnknown || kind > PartSingle {
		return Partitioning{}, fmt.Errorf("unknown partitioning kind %d", p.GetKind())
	}
	keys, err := exprsFromProto(p.GetKeys(), schema)
	if err != nil {
		return Partitioning{}, fmt.Errorf("partitioning keys: %w", err)
	}
	out := Partitioning{Kind: kind, Count: int(p.GetCount()), Keys: keys}
	switch {
	case out.Count < 0:
		return Partitioning{}, fmt.Errorf("partitioning %s: negative count", out)
	case kind == PartHash && (len(keys) == 0 || out.Count < 1):
		return Partitioning{}, fmt.Errorf("hash partitioning needs keys and at least one partition, got %s", out)
	case kind != PartHash && len(keys) > 0:
		return Partitioning{}, fmt.Errorf("partitioning %s has keys", out)
	case kind == PartSingle && out.Count != 1:
		return Partitioning{}, fmt.Errorf("single partitioning with %d partitions", out.Count)
	}
	return out, nil
}

// pairSchema is the row layout join filters are evaluated on: left columns
// followed by right columns.
func pairSchema(left, right Operator) *arrow.Schema {
	fields := append(append([]arrow.Field{}, left.Schema().Fields()...), right.Schema().Fields()...)
	return arrow.NewSchema(fields, nil)
}

func projectionFromProto(p []int32, schema *arrow.Schema) ([]int, error) {
	out := make([]int, len(p))
	for i, c := range p {
		if c < 0 || int(c) >= schema.NumFields() {
			return nil, fmt.Errorf("projected column %d out of range: the table has %d columns", c, schema.NumFields())
		}
		out[i] = int(c)
	}
	return out, nil
}

func int32s(xs []int) []int32 {
	out := make([]int32, len(xs))
	for i, x := range xs {
		out[i] = int32(x)
	}
	return out
}

func exprsToProto(es []expr.Expr) ([]*rpc.PhysicalExpr, error) {
	out := make([]*rpc.PhysicalExpr, len(es))
	for i, e := range es {
		p, err := expr.ToProto(e)
		if err != nil {
			return nil, err
		}
		out[i] = p
	}
	return out, nil
}

func optionalExprToProto(e expr.Expr) (*rpc.PhysicalExpr, error) {
	if e == nil {
		return nil, nil
	}
	return expr.ToProto(e)
}

func sortKeysToProto(keys []SortKey) ([]*rpc.SortKey, error) {
	out := make([]*rpc.SortKey, len(keys))
	for i, k := range keys {
		e, err := expr.ToProto(k.Expr)
		if err != nil {
			return nil, err
		}
		out[i] = &rpc.SortKey{Expr: e, Desc: k.Desc, NullsFirst: k.NullsFirst}
	}
	return out, nil
}

// exprFromProto decodes an expression over rows shaped like scope (nil:
// not checked).
func exprFromProto(p *rpc.PhysicalExpr, scope *arrow.Schema) (expr.Expr, error) {
	e, err := expr.FromProto(p)
	if err != nil {
		return nil, err
	}
	if scope != nil {
		if err := expr.CheckColumns(e, scope); err != nil {
			return nil, fmt.Errorf("%s: %w", e, err)
		}
	}
	return e, nil
}

func exprsFromProto(ps []*rpc.PhysicalExpr, scope *arrow.Schema) ([]expr.Expr, error) {
	out := make([]expr.Expr, len(ps))
	for i, p := range ps {
		e, err := exprFromProto(p, scope)
		if err != nil {
			return nil, err
		}
		out[i] = e
	}
	return out, nil
}

func optionalExprFromProto(p *rpc.PhysicalExpr, scope *arrow.Schema) (expr.Expr, error) {
	if p == nil {
		return nil, nil
	}
	return exprFromProto(p, scope)
}

func (c *planCodec) encodeWindow(op *Window) (*rpc.PhysicalPlan, error) {
	in, err := c.encode(op.input)
	if err != nil {
		return nil, err
	}
	parts, err := exprsToProto(op.partitionBy)
	if err != nil {
		return nil, fmt.Errorf("window: %w", err)
	}
	order, err := sortKeysToProto(op.orderBy)
	if err != nil {
		return nil, fmt.Errorf("window: %w", err)
	}
	bound := func(b plan.FrameBound) (*rpc.WindowFrameBound, error) {
		out := &rpc.WindowFrameBound{Kind: int32(b.Kind)}
		if b.Offset != nil {
			l, err := expr.LiteralToProto(*b.Offset)
			if err != nil {
				return nil, err
			}
			out.Offset = l
		}
		return out, nil
	}
	funcs := make([]*rpc.WindowFuncExpr, len(op.funcs))
	for i, f := range op.funcs {
		args, err := exprsToProto(f.Args)
		if err != nil {
			return nil, fmt.Errorf("window: %s: %w", f, err)
		}
		t, err := expr.TypeToProto(f.Type)
		if err != nil {
			return nil, fmt.Errorf("window: %s: %w", f, err)
		}
		start, err := bound(f.Frame.Start)
		if err != nil {
			return nil, fmt.Errorf("window: %s: %w", f, err)
		}
		end, err := bound(f.Frame.End)
		if err != nil {
			return nil, fmt.Errorf("window: %s: %w", f, err)
		}
		funcs[i] = &rpc.WindowFuncExpr{Func: int32(f.Func), Agg: int32(f.Agg), Args: args, Name: f.Name, Type: t,
			Frame: &rpc.WindowFrame{Rows: f.Frame.Rows, Start: start, End: end}}
	}
	return &rpc.PhysicalPlan{Node: &rpc.PhysicalPlan_Window{Window: &rpc.WindowNode{
		Input: in, PartitionBy: parts, OrderBy: order, Funcs: funcs,
	}}}, nil
}

func (c *planCodec) encodeWindowGroupLimit(op *WindowGroupLimit) (*rpc.PhysicalPlan, error) {
	in, err := c.encode(op.input)
	if err != nil {
		return nil, err
	}
	parts, err := exprsToProto(op.partitionBy)
	if err != nil {
		return nil, fmt.Errorf("window group limit: %w", err)
	}
	order, err := sortKeysToProto(op.orderBy)
	if err != nil {
		return nil, fmt.Errorf("window group limit: %w", err)
	}
	return &rpc.PhysicalPlan{Node: &rpc.PhysicalPlan_WindowGroupLimit{WindowGroupLimit: &rpc.WindowGroupLimitNode{
		Input: in, PartitionBy: parts, OrderBy: order, Func: int32(op.fn), Limit: op.limit,
	}}}, nil
}

func (c *planCodec) decodeWindowGroupLimit(w *rpc.WindowGroupLimitNode) (Operator, error) {
	in, order, err := c.decodeSorted(w.GetInput(), w.GetOrderBy())
	if err != nil {
		return nil, fmt.Errorf("window group limit: %w", err)
	}
	parts, err := exprsFromProto(w.GetPartitionBy(), in.Schema())
	if err != nil {
		return nil, fmt.Errorf("window group limit: partition by: %w", err)
	}
	return NewWindowGroupLimit(in, parts, order, plan.WindowFunc(w.GetFunc()), w.GetLimit())
}

func (c *planCodec) decodeWindow(w *rpc.WindowNode) (Operator, error) {
	in, order, err := c.decodeSorted(w.GetInput(), w.GetOrderBy())
	if err != nil {
		return nil, fmt.Errorf("window: %w", err)
	}
	parts, err := exprsFromProto(w.GetPartitionBy(), in.Schema())
	if err != nil {
		return nil, fmt.Errorf("window: partition by: %w", err)
	}
	bound := func(b *rpc.WindowFrameBound) (plan.FrameBound, error) {
		k := plan.BoundKind(b.GetKind())
		if k < plan.BoundUnboundedPreceding || k > plan.BoundUnboundedFollowing {
			return plan.FrameBound{}, fmt.Errorf("unknown frame bound kind %d", k)
		}
		out := plan.FrameBound{Kind: k}
		if b.GetOffset() != nil {
			l, err := expr.LiteralFromProto(b.GetOffset())
			if err != nil {
				return out, err
			}
			out.Offset = &l
		}
		return out, nil
	}
	funcs := make([]WindowExpr, len(w.GetFuncs()))
	for i, f := range w.GetFuncs() {
		fn := plan.WindowFunc(f.GetFunc())
		if fn < plan.WinAggregate || fn > plan.WinNthValue {
			return nil, fmt.Errorf("window %s: unknown function %d", f.GetName(), f.GetFunc())
		}
		agg := plan.AggFunc(f.GetAgg())
		if agg < plan.AggCountStar || agg > plan.AggMax {
			return nil, fmt.Errorf("window %s: unknown aggregate %d", f.GetName(), f.GetAgg())
		}
		args, err := exprsFromProto(f.GetArgs(), in.Schema())
		if err != nil {
			return nil, fmt.Errorf("window %s: %w", f.GetName(), err)
		}
		t, err := expr.TypeFromProto(f.GetType())
		if err != nil {
			return nil, fmt.Errorf("window %s: %w", f.GetName(), err)
		}
		start, err := bound(f.GetFrame().GetStart())
		if err != nil {
			return nil, fmt.Errorf("window %s: %w", f.GetName(), err)
		}
		end, err := bound(f.GetFrame().GetEnd())
		if err != nil {
			return nil, fmt.Errorf("window %s: %w", f.GetName(), err)
		}
		funcs[i] = WindowExpr{Func: fn, Agg: agg, Args: args, Name: f.GetName(), Type: t,
			Frame: plan.WindowFrame{Rows: f.GetFrame().GetRows(), Start: start, End: end}}
	}
	return NewWindow(in, parts, order, funcs)
}

// arrowTypesEqual reports whether a and b have the same column types in
// the same order (names and nullability aside).
func arrowTypesEqual(a, b *arrow.Schema) bool {
	if a.NumFields() != b.NumFields() {
		return false
	}
	for i := range a.NumFields() {
		if !arrow.TypeEqual(a.Field(i).Type, b.Field(i).Type) {
			return false
		}
	}
	return true
}
