package physical

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/physical/expr"
	"sluice/physical/kernels"
	"sluice/physical/mempool"
	"sluice/physical/spill"
	"sluice/plan"
)

// AggMode is the stage a HashAggregate performs.
type AggMode int

// Aggregation modes.
const (
	// AggPartial reads raw rows and outputs per-group partial states.
	AggPartial AggMode = iota
	// AggFinal reads AggPartial's output and merges the states.
	AggFinal
	// AggSingle reads raw rows and outputs final values in one stage.
	AggSingle
)

var aggModeNames = [...]string{"Partial", "Final", "Single"}

func (m AggMode) String() string { return aggModeNames[m] }

// AggregateExpr is one aggregate computed by HashAggregate.
type AggregateExpr struct {
	Func plan.AggFunc
	// Arg is the argument (nil for count(*)), evaluated on the raw input.
	Arg expr.Expr
	// Arg2 is the second argument of the two-argument aggregates (corr,
	// covar_*: X; string_agg: the delimiter), nil for the others.
	Arg2     expr.Expr
	Distinct bool
	// OrderBy orders the values string_agg concatenates (single-stage
	// aggregation only); empty for the other aggregates.
	OrderBy []SortKey
	// Name is the output column name.
	Name string
	// Type is the result type as the binder computed it: count → int64,
	// sum → plan.SumType(arg), avg → plan.AvgType(arg), min/max → arg type.
	Type arrow.DataType
}

func (a AggregateExpr) String() string {
	arg := "*"
	if a.Arg != nil {
		arg = a.Arg.String()
	}
	fn := a.Func.String()
	if (a.Func == plan.AggPercentileCont || a.Func == plan.AggPercentileDisc) && a.Arg2 != nil && len(a.OrderBy) == 1 {
		return fmt.Sprintf("%s(%s) WITHIN GROUP (ORDER BY %s)", fn, a.Arg2, a.OrderBy[0])
	}
	if a.Func == plan.AggMode && len(a.OrderBy) == 1 {
		return fmt.Sprintf("mode() WITHIN GROUP (ORDER BY %s)", a.OrderBy[0])
	}
	if a.Func == plan.AggCountStar {
		fn, arg = "count", "*"
	}
	if a.Distinct {
		arg = "DISTINCT " + arg
	}
	if a.Arg2 != nil {
		arg += ", " + a.Arg2.String()
	}
	if len(a.OrderBy) > 0 {
		keys := make([]string, len(a.OrderBy))
		for i, k := range a.OrderBy {
			keys[i] = k.String()
		}
		arg += " ORDER BY " + strings.Join(keys, ", ")
	}
	return fmt.Sprintf("%s(%s)", fn, arg)
}

// HashAggregate groups rows by key and computes aggregates, per partition.
//
// Output layout:
//   - AggSingle and AggFinal: the group columns (in groupBy order, named by
//     groupNames) then one column per aggregate (named AggregateExpr.Name,
//     typed AggregateExpr.Type).
//   - AggPartial: the group columns then each aggregate's state columns in
//     aggregate order: count and count(*) → int64 count; sum → the sum in
//     plan.SumType(arg) (NULL when no non-null input); avg → sum in
//     plan.SumType(arg) then int64 count of non-null values; min/max → the
//     value in the argument's type (NULL when none). State columns are named
//     "<Name>[count]", "<Name>[sum]", "<Name>[min]", "<Name>[max]".
//     bool_and/bool_or → the bool so far ("[value]"); the variances and
//     standard deviations → int64 count, float64 mean and M2 ("[count]",
//     "[mean]", "[m2]"); covar_pop, covar_samp and corr → int64 count, then
//     float64 mean of Y, mean of X, co-moment, M2 of Y, M2 of X; string_agg
//     → the utf8 concatenation and its first value's delimiter
//     ("[string]", "[delimiter]").
//
// AggFinal's input must be exactly that partial layout (usually after a hash
// repartition on the group columns); its groupBy and aggs must be those of
// the partial and are used only for types and names.
//
// Without group keys every partition outputs exactly one row, even for empty
// input. Distinct aggregates and string_agg with ORDER BY are only
// supported in AggSingle mode: the planner routes all rows of a group to
// one partition.
type HashAggregate struct {
	input      Operator
	mode       AggMode
	groupBy    []expr.Expr
	groupNames []string
	aggs       []AggregateExpr
	schema     *arrow.Schema
	// grandTotals: see WithGrandTotals.
	grandTotals []int64
	// splitLevel is how many times the groups this aggregate merges were
	// split into spill buckets already (a spilled aggregate's bucket is
	// merged by an aggregate one level down, which splits it by other bits
	// of the hash should it spill again). It is never serialized: only a
	// running aggregate makes one.
	splitLevel int
}

// WithGrandTotals returns a copy of h (an AggFinal or AggSingle aggregate
// over an Expand, whose last group key is the int64 grouping id) that
// outputs the group (NULL, ..., NULL, id) for each id in ids even when no
// input row has it: an empty grouping set yields one row over empty input.
// The group belongs to the partition the rows of that group hash to
// (HashRows of the key columns scaled by PartitionOf to the input's
// partition count), so it appears exactly once, whether or not rows
// exist: where rows exist, it is their group.
func (h *HashAggregate) WithGrandTotals(ids []int64) (*HashAggregate, error) {
	if len(ids) == 0 {
		return h, nil
	}
	k := len(h.groupBy)
	if h.mode == AggPartial || k == 0 || h.groupBy[k-1].DataType().ID() != arrow.INT64 {
		return nil, fmt.Errorf("hash aggregate: grand totals need a final aggregate whose last key is the int64 grouping id")
	}
	o := *h
	o.grandTotals = append([]int64(nil), ids...)
	return &o, nil
}

// HasGrandTotals reports whether the aggregate outputs grand-total groups
// over empty input (WithGrandTotals): which partition does depends on its
// partition number among its input's, so its input partitions must not be
// regrouped.
func (h *HashAggregate) HasGrandTotals() bool { return len(h.grandTotals) > 0 }

// ownsGrandTotal reports whether partition p of n holds the group of
// grouping id id with every other key NULL.
func (h *HashAggregate) ownsGrandTotal(id int64, p, n int, mem memory.Allocator) (bool, error) {
	if n <= 1 {
		return true, nil
	}
	keys, err := h.grandTotalKeys(id, mem)
	if err != nil {
		return false, err
	}
	defer kernels.ReleaseAll(keys)
	hashes := make([]uint64, 1)
	if err := HashRows(keys, hashes); err != nil {
		return false, err
	}
	return PartitionOf(hashes[0], n) == p, nil
}

// grandTotalKeys is the one-row key columns (NULL, ..., NULL, id).
func (h *HashAggregate) grandTotalKeys(id int64, mem memory.Allocator) ([]arrow.Array, error) {
	k := len(h.groupBy)
	keys := make([]arrow.Array, k)
	for i, g := range h.groupBy[:k-1] {
		keys[i] = array.MakeArrayOfNull(mem, g.DataType(), 1)
	}
	b := array.NewInt64Builder(mem)
	defer b.Release()
	b.Append(id)
	keys[k-1] = b.NewArray()
	return keys, nil
}

// NewHashAggregate validates the aggregates and computes the output schema.
func NewHashAggregate(input Operator, mode AggMode, groupBy []expr.Expr, groupNames []string, aggs []AggregateExpr) (*HashAggregate, error) {
	if mode < AggPartial || mode > AggSingle {
		return nil, fmt.Errorf("hash aggregate: unknown mode %d", mode)
	}
	if len(groupNames) != len(groupBy) {
		return nil, fmt.Errorf("hash aggregate: %d group names for %d group keys", len(groupNames), len(groupBy))
	}
	fields := make([]arrow.Field, 0, len(groupBy)+len(aggs))
	for i, g := range groupBy {
		if _, err := newGroupKeyStore(g.DataType()); err != nil {
			return nil, fmt.Errorf("hash aggregate: %w", err)
		}
		fields = append(fields, arrow.Field{Name: groupNames[i], Type: g.DataType(), Nullable: true})
	}
	inSchema := input.Schema()
	stateCol := len(groupBy)
	for _, a := range aggs {
		if (a.Arg == nil) != (a.Func == plan.AggCountStar) {
			return nil, fmt.Errorf("hash aggregate: %s: argument mismatch", a)
		}
		if a.Distinct && mode != AggSingle {
			return nil, fmt.Errorf("hash aggregate: %s: distinct aggregates need single-stage aggregation", a)
		}
		if a.Distinct && a.Arg2 != nil && a.Func != plan.AggArrayAgg {
			return nil, fmt.Errorf("hash aggregate: %s: DISTINCT is not supported for two-argument aggregates", a)
		}
		if len(a.OrderBy) > 0 && (mode != AggSingle || !plan.OrderedAgg(a.Func)) {
			return nil, fmt.Errorf("hash aggregate: %s: ORDER BY is only supported for string_agg, array_agg, percentile_cont and percentile_disc in single-stage aggregation", a)
		}
		if a.Func == plan.AggArrayAgg && a.Distinct && len(a.OrderBy) == 0 {
			return nil, fmt.Errorf("hash aggregate: %s: DISTINCT array_agg needs its argument as ORDER BY key", a)
		}
		if plan.OrderedAgg(a.Func) && a.Func != plan.AggStringAgg && a.Func != plan.AggArrayAgg && (len(a.OrderBy) != 1 || (a.Arg2 == nil) != (a.Func == plan.AggMode) || a.Distinct) {
			return nil, fmt.Errorf("hash aggregate: %s: needs one ORDER BY key and a fraction", a)
		}
		acc, err := newAggAccumulator(a, aggArgType(a))
		if err != nil {
			return nil, fmt.Errorf("hash aggregate: %w", err)
		}
		if want := aggResultType(a); a.Type == nil || !arrow.TypeEqual(a.Type, want) {
			return nil, fmt.Errorf("hash aggregate: %s: result type %v, want %s", a, a.Type, want)
		}
		if mode == AggPartial {
			for i, t := range acc.stateTypes() {
				fields = append(fields, arrow.Field{Name: a.Name + aggStateSuffix(a.Func, i), Type: t, Nullable: true})
			}
			continue
		}
		if mode == AggFinal {
			for _, t := range acc.stateTypes() {
				if stateCol >= inSchema.NumFields() || !arrow.TypeEqual(inSchema.Field(stateCol).Type, t) {
					return nil, fmt.Errorf("hash aggregate: input column %d does not hold the %s state (%s)", stateCol, a, t)
				}
				stateCol++
			}
		}
		fields = append(fields, arrow.Field{Name: a.Name, Type: a.Type, Nullable: true})
	}
	if mode == AggFinal && stateCol != inSchema.NumFields() {
		return nil, fmt.Errorf("hash aggregate: final input has %d columns, partial layout has %d", inSchema.NumFields(), stateCol)
	}
	return &HashAggregate{input: input, mode: mode, groupBy: groupBy, groupNames: groupNames, aggs: aggs, schema: arrow.NewSchema(fields, nil)}, nil
}

func aggArgType(a AggregateExpr) arrow.DataType {
	if a.Arg == nil {
		return nil
	}
	return a.Arg.DataType()
}

// aggResultType is the result type the accumulators produce (the binder's
// rule, restated so a mismatch fails at plan time, not as a bad batch).
func aggResultType(a AggregateExpr) arrow.DataType {
	switch a.Func {
	case plan.AggCountStar, plan.AggCount:
		return plan.Int64
	case plan.AggSum:
		return plan.SumType(a.Arg.DataType())
	case plan.AggAvg, plan.AggAvgMerge:
		return plan.AvgType(a.Arg.DataType())
	case plan.AggStddevSamp, plan.AggStddevPop, plan.AggVarSamp, plan.AggVarPop,
		plan.AggCorr, plan.AggCovarPop, plan.AggCovarSamp, plan.AggPercentileCont:
		return plan.Float64
	case plan.AggArrayAgg:
		return plan.ArrayOf(a.Arg.DataType())
	}
	return a.Arg.DataType()
}

func aggStateSuffix(f plan.AggFunc, i int) string {
	switch f {
	case plan.AggCountStar, plan.AggCount:
		return "[count]"
	case plan.AggSum:
		return "[sum]"
	case plan.AggAvg, plan.AggAvgMerge:
		if i == 0 {
			return "[sum]"
		}
		return "[count]"
	case plan.AggMin:
		return "[min]"
	case plan.AggMax:
		return "[max]"
	case plan.AggBoolAnd, plan.AggBoolOr:
		return "[value]"
	case plan.AggStringAgg:
		return [...]string{"[string]", "[delimiter]"}[i]
	case plan.AggCorr, plan.AggCovarPop, plan.AggCovarSamp:
		return [...]string{"[count]", "[mean_y]", "[mean_x]", "[comoment]", "[m2_y]", "[m2_x]"}[i]
	case plan.AggSingleValue:
		if i == 0 {
			return "[value]"
		}
		return "[count]"
	case plan.AggArgMax, plan.AggArgMin:
		return [...]string{"[value]", "[arg]"}[i]
	case plan.AggArrayAgg:
		return "[values]"
	}
	return [...]string{"[count]", "[mean]", "[m2]"}[i]
}

// Schema implements Operator.
func (h *HashAggregate) Schema() *arrow.Schema { return h.schema }

// Children implements Operator.
func (h *HashAggregate) Children() []Operator { return []Operator{h.input} }

// OutputPartitioning implements Operator: one output partition per input
// partition. When the input is hash partitioned on columns the aggregate
// groups by, so is its output, on those group columns: a group's rows all
// come from one input partition, and its key values are output unchanged.
// (Not with grand totals: their rows are made, not hashed.)
func (h *HashAggregate) OutputPartitioning() Partitioning {
	in := h.input.OutputPartitioning()
	if in.Kind != PartHash || len(h.grandTotals) > 0 {
		return Partitioning{Kind: PartUnknown, Count: in.Count}
	}
	if h.mode == AggFinal {
		// The input is a partial aggregate's output: its first columns
		// are the group keys, in order, and so are the output's.
		keys := make([]expr.Expr, len(h.groupBy))
		for i, g := range h.groupBy {
			keys[i] = &expr.Column{Index: i, Name: h.groupNames[i], Type: g.DataType()}
		}
		return hashThrough(in, keys, h.groupNames)
	}
	return hashThroughEqual(in, h.groupBy, h.groupNames, equalColumns(h.input))
}

func (h *HashAggregate) String() string {
	gs := make([]string, len(h.groupBy))
	for i, g := range h.groupBy {
		gs[i] = g.String()
	}
	as := make([]string, len(h.aggs))
	for i, a := range h.aggs {
		as[i] = a.String()
	}
	s := fmt.Sprintf("HashAggregate(%s): groupBy=[%s], aggs=[%s]", h.mode, strings.Join(gs, ", "), strings.Join(as, ", "))
	if len(h.grandTotals) > 0 {
		s += fmt.Sprintf(", grandTotals=%v", h.grandTotals)
	}
	return s
}

// newGroups returns an empty group table and accumulators for h's keys
// and aggregates; hist is shared by the count accumulators.
func (h *HashAggregate) newGroups(tc *TaskContext) (*groupTable, []aggAccumulator, *countHist, error) {
	keyTypes := make([]arrow.DataType, len(h.groupBy))
	for i, g := range h.groupBy {
		keyTypes[i] = g.DataType()
	}
	table, err := newGroupTable(keyTypes)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("hash aggregate: %w", err)
	}
	accs := make([]aggAccumulator, len(h.aggs))
	for i, a := range h.aggs {
		acc, err := newAggAccumulator(a, aggArgType(a))
		if err != nil {
			return nil, nil, nil, fmt.Errorf("hash aggregate: %w", err)
		}
		// array_agg(DISTINCT x) drops duplicates itself, after sorting by x.
		if a.Distinct && a.Func != plan.AggArrayAgg {
			if acc, err = newAggDistinct(acc, a.Arg.DataType(), tc.Alloc); err != nil {
				return nil, nil, nil, fmt.Errorf("hash aggregate: %w", err)
			}
		}
		if len(a.OrderBy) > 0 && a.Func == plan.AggStringAgg {
			if acc, err = newAggOrderedStringAgg(a.OrderBy); err != nil {
				return nil, nil, nil, fmt.Errorf("hash aggregate: %w", err)
			}
		}
		accs[i] = acc
	}
	if h.splitLevel > 0 {
		table.stayHashed()
	}
	hist := &countHist{}
	if h.mode != AggFinal {
		shareAvgSums(h.aggs, accs)
		for _, acc := range accs {
			switch acc := acc.(type) {
			case *aggCount:
				acc.hist = hist
			case *aggAvg:
				acc.cnt.hist = hist
			}
		}
	}
	return table, accs, hist, nil
}

// Execute implements Operator.
func (h *HashAggregate) Execute(ctx context.Context, partition int, tc *TaskContext) (Stream, error) {
	if c, ok := h.groupingSetsCascadePlan(); ok {
		return h.executeGroupingSets(ctx, c, partition, tc)
	}
	table, accs, hist, err := h.newGroups(tc)
	if err != nil {
		return nil, err
	}
	in, err := ExecuteOp(ctx, h.input, partition, tc)
	if err != nil {
		return nil, fmt.Errorf("hash aggregate: %w", err)
	}
	s := &hashAggStream{
		op: h, tc: tc, input: in, table: table, accs: accs, hist: hist, partition: partition,
		res: tc.NewReservation(ctx, fmt.Sprintf("HashAggregate[%d]", partition)),
	}
	// An aggregate that may spill (or, partial, pass its groups on) takes
	// its fair share of the task's limit while it reads its input
	// (mempool.Reservation.SetSpillable), from its first input batch on:
	// while it waits for it, it has nothing to spill, and a share it took
	// would only be missing from the operators below that are working (a
	// join building its table under an aggregate over an aggregate took
	// five times as long in process under a 128 KiB limit).
	s.fairShare = tc.SpillDir != "" && h.maySpill()
	return s, nil
}

// maySpill reports whether the aggregate answers a refused reservation
// by spilling its groups, or (partial) by passing them on.
func (h *HashAggregate) maySpill() bool {
	if len(h.groupBy) == 0 || h.splitLevel >= maxSplitLevel {
		return false
	}
	if h.mode == AggPartial {
		return true
	}
	distinct := 0
	for _, a := range h.aggs {
		if len(a.OrderBy) > 0 {
			return false
		}
		if a.Distinct {
			if a.Arg == nil || a.Arg2 != nil || h.mode != AggSingle {
				return false
			}
			distinct++
		}
	}
	return distinct == 0 || (distinct == len(h.aggs) && len(h.grandTotals) == 0)
}

// shareAvgSums gives each avg(x) whose x is also summed, sum(x), that
// sum's accumulator instead of a second one updated with the same values
// (q1 sums l_quantity and l_extendedprice and averages them too). Only
// while aggregates update from raw rows: merging partial states, each avg
// and each sum merges its own state column.
func shareAvgSums(aggs []AggregateExpr, accs []aggAccumulator) {
	for i, a := range aggs {
		avg, ok := accs[i].(*aggAvg)
		if !ok || a.Func != plan.AggAvg || a.Distinct {
			continue
		}
		for j, b := range aggs {
			if b.Func == plan.AggSum && !b.Distinct && memoKey(b.Arg) == memoKey(a.Arg) {
				avg.sum, avg.sharedSum = accs[j], true
				break
			}
		}
	}
}

type hashAggStream struct {
	op    *HashAggregate
	tc    *TaskContext
	input Stream
	table *groupTable
	accs  []aggAccumulator
	hist  *countHist // shared by the count accumulators
	res   *mempool.Reservation
	gids  []int32
	// partition is the one this stream aggregates (grand totals).
	partition int

	consumed  bool // input fully read (or, streaming, read up to the switch)
	fairShare bool // the reservation is spillable once input arrives
	emitted   int  // groups already output
	closed    bool
	// rows is the input rows consumed. streaming: a partial aggregate
	// whose groups were nearly as many as its rows stopped building one
	// table for its whole input (see PartialSkip); it aggregates each
	// further input batch on its own and outputs it at once. inputDone:
	// the input is exhausted and closed.
	rows      int64
	streaming bool
	// passing: streaming because the groups were nearly as many as the
	// rows, each further row is output as a group of its own (passBatch);
	// otherwise (streaming for want of memory) each further batch is
	// aggregated on its own (aggregateNextBatch).
	passing bool
	// carry is the rest of an input batch a streaming partial aggregate
	// was refused the memory to aggregate at once.
	carry     arrow.RecordBatch
	inputDone bool

	// Spilling (a single or final aggregate the pool refused memory, in a
	// task that may spill): the partial states of the groups held, split
	// by key hash into spillBuckets files; once the input is read, each
	// bucket is aggregated on its own (bucket, bucketOut).
	buckets     []*spill.File
	bucketState *arrow.Schema // the layout of the rows in buckets
	// rawSpill: the buckets hold input rows (keys and arguments) rather
	// than partial states (aggregate_distinct_spill.go).
	rawSpill bool
	// passStates: a final aggregate that spilled its groups was refused
	// even the memory of an empty table (the operators beside it in its
	// task, such as the partial aggregate below passing on the groups it
	// held, have the rest of the limit). Its table is nil, and the states
	// it reads go straight to the buckets, which merge them the same way,
	// until a table fits again.
	passStates bool
	bucket     int
	bucketOut  Stream
}

// spillBuckets is how many files a spilling aggregate splits its groups
// into: each is then aggregated alone, so it needs about that fraction of
// the memory the whole would.
const spillBuckets = 16

// PartialSkip decides when a partial aggregate stops aggregating its
// whole input into one table: once it has read a point's Rows rows and
// holds more than its Ratio groups per row, grouping locally saves the
// final aggregate little, and the growing table costs a cache miss per row
// (TPC-DS q23's 650,000 item-day groups of 722,000 rows). It then outputs
// the groups it holds and passes each further row on as a group of its own
// (passBatch). The earlier points decide it sooner for groups that hardly
// repeat at all (q11's customers joined to their yearly totals, q51's
// item-days, q78's item-customer-years: 95-100 % distinct from the first
// ten thousand rows); the first decides after one input batch, but only
// for groups all but distinct (more than 99 %: drawn at random from a key
// of N values, the first 4,096 rows are that distinct only when N is over
// about 200,000, where the 95 % after 10,000 rows needs 100,000). Every
// partition of a stage that scans a small table shared between its
// partitions builds such a table before deciding, so the rows grouped in
// vain cost a cluster's stage more than one process, whose scan feeds one
// partition. The final aggregate's result is the same either way; tests
// draw the points at random.
var PartialSkip = []PartialSkipPoint{
	{Rows: 4_096, Ratio: 0.99},
	{Rows: 10_000, Ratio: 0.95},
	{Rows: 100_000, Ratio: 0.8},
}

// PartialSkipPoint is one point of PartialSkip.
type PartialSkipPoint struct {
	Rows  int64
	Ratio float64
}

// skipPartial reports whether a partial aggregate holds nearly as many
// groups as it has read rows (PartialSkip).
func (s *hashAggStream) skipPartial() bool {
	groups := float64(s.table.numGroups())
	for _, p := range PartialSkip {
		if s.rows >= p.Rows && groups > p.Ratio*float64(s.rows) {
			return true
		}
	}
	return false
}

// Next implements Stream.
func (s *hashAggStream) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if s.closed {
		return nil, errors.New("hash aggregate: stream closed")
	}
	if !s.consumed {
		err := s.consume(ctx)
		// Done growing (a streaming partial aggregate holds one batch's
		// groups at a time): the share goes to the others.
		s.res.SetSpillable(false)
		if err != nil {
			return nil, err
		}
		s.consumed = true
		// The input is no longer needed: free it (and what it holds) now,
		// and the table's slots (emitting needs only keys and states).
		if !s.streaming {
			s.input.Close()
			s.inputDone = true
		}
		s.table.releaseSlots()
	}
	if s.buckets != nil {
		return s.nextFromBuckets(ctx)
	}
	for s.emitted >= s.table.numGroups() {
		if s.inputDone {
			// Every group is out (its keys copied into the batches):
			// the key stores go back to the pool.
			s.table.free()
			return nil, io.EOF
		}
		if s.passing {
			return s.passBatch(ctx)
		}
		passed, err := s.aggregateNextBatch(ctx)
		if err != nil || passed != nil {
			return passed, err
		}
	}
	n := s.table.numGroups()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	batchSize := s.tc.BatchSize
	if batchSize <= 0 {
		batchSize = DefaultBatchSize
	}
	start, end := s.emitted, min(n, s.emitted+batchSize)
	cols := s.table.buildKeys(start, end, s.tc.Alloc)
	release := func() {
		for _, c := range cols {
			c.Release()
		}
	}
	for _, acc := range s.accs {
		if s.op.mode == AggPartial {
			st, err := acc.emitStates(start, end, s.tc.Alloc)
			if err != nil {
				release()
				return nil, fmt.Errorf("hash aggregate: %w", err)
			}
			cols = append(cols, st...)
			continue
		}
		v, err := acc.emitFinal(start, end, s.tc.Alloc)
		if err != nil {
			release()
			return nil, fmt.Errorf("hash aggregate: %w", err)
		}
		cols = append(cols, v)
	}
	s.emitted = end
	rb := array.NewRecordBatch(s.op.schema, cols, int64(end-start))
	release()
	return rb, nil
}

// consume reads the whole input into the group table.
func (s *hashAggStream) consume(ctx context.Context) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		b, err := s.input.Next(ctx)
		if err == io.EOF {
			// What the operators below hold is theirs until they are
			// closed: close them now, not after the groups are output.
			s.input.Close()
			break
		}
		if err != nil {
			return fmt.Errorf("hash aggregate: %w", err)
		}
		s.res.SetSpillable(s.fairShare)
		s.rows += b.NumRows()
		if s.rawSpill {
			err = s.splitRaw(b)
			b.Release()
			if err != nil {
				return err
			}
			continue
		}
		if s.passStates {
			if err = s.resumeGroups(); err != nil && canSpill(s.tc, err) {
				err = s.writeBuckets(b)
				b.Release()
				if err != nil {
					return err
				}
				continue
			}
			if err != nil {
				b.Release()
				return err
			}
		}
		err = s.consumeBatch(b)
		b.Release()
		if err != nil && canSpill(s.tc, err) && s.op.mode == AggPartial && len(s.op.groupBy) > 0 {
			// A partial aggregate need not hold every group: it passes
			// on what it holds and goes on batch by batch.
			s.streaming = true
			return nil
		}
		if err != nil && canSpill(s.tc, err) && s.spillable() {
			err = s.spillGroups()
		} else if err != nil && canSpill(s.tc, err) && s.distinctSpillable() {
			err = s.spillDistinct()
		} else if err != nil && canSpill(s.tc, err) && s.op.splitLevel >= maxSplitLevel {
			err = fmt.Errorf("hash aggregate: the groups of one key hash need more memory than the limit allows after %d splits into buckets (one group with that many distinct values): %w", maxSplitLevel, err)
		}
		if err != nil {
			return err
		}
		if s.op.mode == AggPartial && len(s.op.groupBy) > 0 && s.skipPartial() {
			s.streaming, s.passing = true, true
			return nil
		}
	}
	if s.rawSpill {
		return nil // every row since the spill is on disk
	}
	if s.passStates {
		// The input is done, and with it what the operators below held.
		if err := s.resumeGroups(); err != nil {
			return err
		}
	}
	// An aggregate that ends its input with its groups in memory holds
	// them until its output is read, and the operators above it (the
	// partial aggregate of grouping sets over its output, say) may find
	// no memory left. As a sort does, in a task that may spill, when less
	// of the task's limit is free than it holds, it spills its groups and
	// outputs them a bucket at a time.
	if s.buckets == nil && s.tc.SpillDir != "" && s.spillable() {
		if limit := s.tc.Memory.Limit(); limit > 0 && limit-s.tc.Memory.Used() < s.res.Size() {
			if err := s.spillGroups(); err != nil {
				return err
			}
		}
	}
	if s.buckets != nil {
		// The groups still held join the others on disk, and then the
		// grand-total groups (of grouping sets) this partition owes,
		// empty: a bucket's merge combines one with the rows of its
		// group, if any, and outputs it either way.
		if err := s.spillGroups(); err != nil {
			return err
		}
		if err := s.addGrandTotals(); err != nil {
			return err
		}
		return s.spillGroups()
	}
	if len(s.op.groupBy) == 0 && s.table.numGroups() == 0 {
		// Aggregates without GROUP BY produce one row even for no input.
		s.table.n = 1
		for _, acc := range s.accs {
			acc.resize(1)
		}
	}
	return s.addGrandTotals()
}

// spillable reports whether the aggregate can spill its groups: a single
// or final aggregate with group keys (a grouping sets aggregate's include
// the grouping id, so its sets' groups stay apart), whose every function
// merges partial states (no DISTINCT, no ordered string_agg).
func (s *hashAggStream) spillable() bool {
	if s.op.mode == AggPartial || len(s.op.groupBy) == 0 || s.op.splitLevel >= maxSplitLevel {
		return false
	}
	for _, a := range s.op.aggs {
		if a.Distinct || len(a.OrderBy) > 0 {
			return false
		}
	}
	return true
}

// stateSchema is the layout of the aggregate's partial states: its keys,
// then each function's state columns (a partial aggregate's output).
func (s *hashAggStream) stateSchema() (*arrow.Schema, error) {
	if s.op.mode == AggFinal {
		return s.op.input.Schema(), nil
	}
	p, err := NewHashAggregate(s.op.input, AggPartial, s.op.groupBy, s.op.groupNames, s.op.aggs)
	if err != nil {
		return nil, err
	}
	return p.schema, nil
}

// spillGroups writes the partial states of every group held to the
// bucket files (by key hash) and starts again with an empty table.
func (s *hashAggStream) spillGroups() error {
	if s.buckets == nil {
		schema, err := s.stateSchema()
		if err != nil {
			return fmt.Errorf("hash aggregate: %w", err)
		}
		s.bucketState = schema
		s.buckets = make([]*spill.File, spillBuckets)
		for i := range s.buckets {
			if s.buckets[i], err = spill.NewFile(s.tc.SpillDir, s.bucketState, s.tc.Alloc); err != nil {
				return fmt.Errorf("hash aggregate: %w", err)
			}
		}
	}
	n, step := s.table.numGroups(), max(s.tc.BatchSize, 1)
	for start := 0; start < n; start += step {
		end := min(n, start+step)
		cols := s.table.buildKeys(start, end, s.tc.Alloc)
		for _, acc := range s.accs {
			st, err := acc.emitStates(start, end, s.tc.Alloc)
			if err != nil {
				kernels.ReleaseAll(cols)
				return fmt.Errorf("hash aggregate: %w", err)
			}
			cols = append(cols, st...)
		}
		b := array.NewRecordBatch(s.bucketState, cols, int64(end-start))
		kernels.ReleaseAll(cols)
		err := s.writeBuckets(b)
		b.Release()
		if err != nil {
			return err
		}
	}
	table, accs, hist, err := s.op.newGroups(s.tc)
	if err != nil {
		return err
	}
	table.stayHashed()
	releaseAccs(s.accs)
	s.table.free()
	s.table, s.accs, s.hist = table, accs, hist
	err = s.account()
	if err != nil && s.op.mode == AggFinal && canSpill(s.tc, err) {
		s.table.free()
		s.table, s.accs, s.hist = nil, nil, nil
		s.passStates = true
		return nil
	}
	return err
}

// resumeGroups gives a final aggregate passing its input states to the
// buckets an empty table again, or the refusal that keeps it passing.
func (s *hashAggStream) resumeGroups() error {
	table, accs, hist, err := s.op.newGroups(s.tc)
	if err != nil {
		return err
	}
	table.stayHashed()
	releaseAccs(s.accs)
	s.table.free()
	s.table, s.accs, s.hist = table, accs, hist
	if err := s.account(); err != nil {
		s.table.free()
		s.table, s.accs, s.hist = nil, nil, nil
		return err
	}
	s.passStates = false
	return nil
}

// writeBuckets splits a batch of states by the hash of its keys.
func (s *hashAggStream) writeBuckets(b arrow.RecordBatch) error {
	if err := splitRows(s.tc, b, b.Columns()[:len(s.op.groupBy)], s.buckets, s.op.splitLevel, false); err != nil {
		return fmt.Errorf("hash aggregate: %w", err)
	}
	return nil
}

// nextFromBuckets outputs the spilled aggregate: each bucket's states
// merged by a final aggregate of their own, one bucket after the other.
func (s *hashAggStream) nextFromBuckets(ctx context.Context) (arrow.RecordBatch, error) {
	for {
		if s.bucketOut == nil {
			for s.bucket < len(s.buckets) && s.buckets[s.bucket].Rows() == 0 {
				s.bucket++
			}
			if s.bucket >= len(s.buckets) {
				return nil, io.EOF
			}
			f := s.buckets[s.bucket]
			if err := f.Finish(); err != nil {
				return nil, fmt.Errorf("hash aggregate: %w", err)
			}
			var merge *HashAggregate
			var err error
			if s.rawSpill {
				merge, err = s.rawBucketAggregate(f)
			} else {
				merge, err = NewHashAggregate(&spillRuns{schema: s.bucketState, runs: []*spill.File{f}}, AggFinal, s.op.groupBy, s.op.groupNames, s.op.aggs)
			}
			if err != nil {
				return nil, fmt.Errorf("hash aggregate: %w", err)
			}
			// A bucket still too big for memory spills again, split by
			// the next bits of its keys' hash.
			merge.splitLevel = s.op.splitLevel + 1
			if s.bucketOut, err = merge.Execute(ctx, 0, s.tc); err != nil {
				return nil, err
			}
		}
		b, err := s.bucketOut.Next(ctx)
		if err == io.EOF {
			s.bucketOut.Close()
			s.bucketOut = nil
			s.buckets[s.bucket].Close()
			s.bucket++
			continue
		}
		return b, err
	}
}

// passBatch is the step of a partial aggregate that streams because its
// groups were nearly as many as its rows (passing): every row of the next
// input batch is a group of its own, output at once, its keys as evaluated
// and its states from fresh accumulators. It looks nothing up: grouping
// rows that hardly repeat would save the final aggregate little and cost
// a hash, a probe and a copy of every key here. At the end of the input
// it closes it and returns io.EOF.
func (s *hashAggStream) passBatch(ctx context.Context) (arrow.RecordBatch, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	b, err := s.input.Next(ctx)
	if err == io.EOF {
		s.input.Close()
		s.inputDone = true
		return nil, io.EOF
	}
	if err != nil {
		return nil, fmt.Errorf("hash aggregate: %w", err)
	}
	defer b.Release()
	return s.passRows(b)
}

// passRows outputs every row of b as a group of its own: its keys as
// evaluated, its states from fresh accumulators (which, with an empty
// table, replace the ones whose groups were output before; their memory
// goes back to the task). It reserves nothing: one batch's states are in
// flight as the batch itself is, so a partial aggregate refused any
// memory still makes progress.
func (s *hashAggStream) passRows(b arrow.RecordBatch) (arrow.RecordBatch, error) {
	table, accs, hist, err := s.op.newGroups(s.tc)
	if err != nil {
		return nil, err
	}
	releaseAccs(s.accs)
	s.table.free()
	s.table, s.accs, s.hist, s.emitted = table, accs, hist, 0
	s.res.Free()
	n := int(b.NumRows())
	cols, err := s.groupKeys(b)
	if err != nil {
		return nil, err
	}
	release := func() { kernels.ReleaseAll(cols) }
	s.gids = growSlice(s.gids[:0], n)
	for i := range s.gids {
		s.gids[i] = int32(i)
	}
	if err := s.fold(b, n); err != nil {
		release()
		return nil, err
	}
	for _, acc := range s.accs {
		st, err := acc.emitStates(0, n, s.tc.Alloc)
		if err != nil {
			release()
			return nil, fmt.Errorf("hash aggregate: %w", err)
		}
		cols = append(cols, st...)
	}
	rb := array.NewRecordBatch(s.op.schema, cols, int64(n))
	release()
	return rb, nil
}

// aggregateNextBatch is the streaming partial aggregate's step: the groups
// of the next input batch alone, in fresh accumulators, ready to emit; at
// the end of the input it closes it instead. A batch whose groups are
// refused is aggregated in halves; when not even an empty table or one
// row's group fits (the operators beside it in its task hold the whole
// limit, as another partition's aggregate does while it outputs the
// table it filled first), the rows are returned as groups of their own
// (passRows), which the final aggregate merges as it would any states.
func (s *hashAggStream) aggregateNextBatch(ctx context.Context) (arrow.RecordBatch, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	b := s.carry
	s.carry = nil
	if b == nil {
		var err error
		b, err = s.input.Next(ctx)
		if err == io.EOF {
			s.input.Close()
			s.inputDone = true
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("hash aggregate: %w", err)
		}
	}
	defer b.Release()
	cur := b
	cur.Retain()
	defer func() { cur.Release() }()
	for {
		table, accs, hist, err := s.op.newGroups(s.tc)
		if err != nil {
			return nil, err
		}
		releaseAccs(s.accs)
		s.table.free()
		s.table, s.accs, s.hist, s.emitted = table, accs, hist, 0
		err = s.consumeBatch(cur)
		if err == nil {
			break
		}
		if !canSpill(s.tc, err) {
			return nil, err
		}
		n := cur.NumRows()
		if n < 2 {
			return s.passRows(cur)
		}
		// Refused the groups of the whole batch (the operators beside it
		// in its task holding the rest of the limit): the first half
		// now, the rest of the batch next time, in fresh groups each.
		s.table.free()
		fresh, faccs, fhist, ferr := s.op.newGroups(s.tc)
		if ferr != nil {
			return nil, ferr
		}
		releaseAccs(s.accs)
		s.table, s.accs, s.hist = fresh, faccs, fhist
		if ferr := s.account(); ferr != nil {
			if canSpill(s.tc, ferr) {
				return s.passRows(cur)
			}
			return nil, ferr
		}
		if s.carry != nil {
			s.carry.Release()
		}
		s.carry = b.NewSlice(n/2, b.NumRows())
		half := b.NewSlice(0, n/2)
		cur.Release()
		cur = half
	}
	s.table.releaseSlots()
	return nil, nil
}

// addGrandTotals makes sure the groups of WithGrandTotals this partition
// owns exist; a lookup of an existing group changes nothing.
func (s *hashAggStream) addGrandTotals() error {
	n := s.op.input.OutputPartitioning().Count
	for _, id := range s.op.grandTotals {
		own, err := s.op.ownsGrandTotal(id, s.partition, n, s.tc.Alloc)
		if err != nil {
			return fmt.Errorf("hash aggregate: %w", err)
		}
		if !own {
			continue
		}
		keys, err := s.op.grandTotalKeys(id, s.tc.Alloc)
		if err != nil {
			return fmt.Errorf("hash aggregate: %w", err)
		}
		gids := make([]int32, 1)
		err = s.table.lookup(keys, 1, gids, nil)
		kernels.ReleaseAll(keys)
		if err != nil {
			return fmt.Errorf("hash aggregate: %w", err)
		}
		for _, acc := range s.accs {
			acc.resize(s.table.numGroups())
		}
	}
	return s.account()
}

func (s *hashAggStream) consumeBatch(b arrow.RecordBatch) error {
	n := int(b.NumRows())
	if n == 0 {
		return nil
	}
	keys, err := s.groupKeys(b)
	if err != nil {
		return err
	}
	defer kernels.ReleaseAll(keys)
	s.gids = growSlice(s.gids[:0], n)
	if err := s.table.lookup(keys, n, s.gids, nil); err != nil {
		return fmt.Errorf("hash aggregate: %w", err)
	}
	if err := s.fold(b, s.table.numGroups()); err != nil {
		return err
	}
	return s.account()
}

// groupKeys returns the group key columns of batch b: evaluated, or in a
// final aggregate the partial states' first columns (retained). The caller
// releases them.
func (s *hashAggStream) groupKeys(b arrow.RecordBatch) ([]arrow.Array, error) {
	keys := make([]arrow.Array, 0, len(s.op.groupBy))
	for i, g := range s.op.groupBy {
		if s.op.mode == AggFinal {
			k := b.Column(i)
			k.Retain()
			keys = append(keys, k)
			continue
		}
		k, err := g.Eval(b, s.tc.Alloc)
		if err != nil {
			kernels.ReleaseAll(keys)
			return nil, fmt.Errorf("hash aggregate: group key %s: %w", g, err)
		}
		keys = append(keys, k)
	}
	return keys, nil
}

// fold folds batch b's rows into the accumulators, row i into group
// s.gids[i], making room for ng groups: raw arguments in a single or
// partial aggregate, partial states in a final one. The caller accounts
// for the memory the groups take.
func (s *hashAggStream) fold(b arrow.RecordBatch, ng int) error {
	stateCol := len(s.op.groupBy)
	s.hist.batch++
	var args argMemo
	defer func() { args.release() }()
	for i, acc := range s.accs {
		acc.resize(ng)
		a := s.op.aggs[i]
		if s.op.mode == AggFinal {
			k := len(acc.stateTypes())
			if err := acc.merge(s.gids, b.Columns()[stateCol:stateCol+k]); err != nil {
				return fmt.Errorf("hash aggregate: %s: %w", a, err)
			}
			stateCol += k
			continue
		}
		var arg arrow.Array
		if a.Arg != nil {
			var err error
			if arg, err = args.eval(a.Arg, b, s.tc.Alloc); err != nil {
				return fmt.Errorf("hash aggregate: %s: %w", a, err)
			}
		}
		var err error
		if ord, ok := acc.(aggOrderedAccumulator); ok {
			err = s.updateOrdered(ord, a, arg, b, &args)
		} else if a.Arg2 != nil {
			err = s.update2(acc, a, arg, b, &args)
		} else {
			err = acc.update(s.gids, arg)
		}
		if arg != nil {
			arg.Release()
		}
		if err != nil {
			return fmt.Errorf("hash aggregate: %s: %w", a, err)
		}
	}
	return nil
}

// update2 evaluates a's second argument and updates a two-argument
// accumulator with both.
func (s *hashAggStream) update2(acc aggAccumulator, a AggregateExpr, arg arrow.Array, b arrow.RecordBatch, args *argMemo) error {
	acc2, ok := acc.(aggBinaryAccumulator)
	if !ok {
		return fmt.Errorf("%s does not take two arguments", a.Func)
	}
	arg2, err := args.eval(a.Arg2, b, s.tc.Alloc)
	if err != nil {
		return err
	}
	defer arg2.Release()
	return acc2.update2(s.gids, arg, arg2)
}

// updateOrdered evaluates a's second argument and order keys and updates
// an ordered accumulator with them.
func (s *hashAggStream) updateOrdered(acc aggOrderedAccumulator, a AggregateExpr, arg arrow.Array, b arrow.RecordBatch, args *argMemo) error {
	var arg2 arrow.Array
	if a.Arg2 != nil {
		var err error
		if arg2, err = args.eval(a.Arg2, b, s.tc.Alloc); err != nil {
			return err
		}
		defer arg2.Release()
	}
	keys, err := acc.evalKeys(b, s.tc.Alloc)
	if err != nil {
		return err
	}
	return acc.updateOrdered(s.gids, arg, arg2, keys)
}

// argMemo keeps the aggregate arguments evaluated on one batch, by
// expression text, so that an argument equal to an earlier one, or an
// operator whose operand is an earlier one, does not compute it again (q1:
// l_extendedprice * (1 - l_discount) is summed, and summed again times
// (1 + l_tax)).
type argMemo []struct {
	key     string
	arr     arrow.Array
	bound   uint64 // magnitude bound of a decimal arr, when bounded (expr.EvalBound)
	bounded bool
}

// eval evaluates e on b, reusing the memo; the caller releases the result.
func (m *argMemo) eval(e expr.Expr, b arrow.RecordBatch, mem memory.Allocator) (arrow.Array, error) {
	if _, ok := e.(*expr.Column); ok {
		return e.Eval(b, mem)
	}
	key := memoKey(e)
	if k := m.find(key); k >= 0 {
		a := (*m)[k].arr
		a.Retain()
		return a, nil
	}
	if bin, ok := e.(*expr.Binary); ok {
		l, r := m.find(memoKey(bin.L)), m.find(memoKey(bin.R))
		if l >= 0 || r >= 0 {
			reuse := *bin
			if l >= 0 {
				reuse.L = m.evaluated(l)
			}
			if r >= 0 {
				reuse.R = m.evaluated(r)
			}
			e = &reuse
		}
	}
	a, bound, bounded, err := expr.EvalBound(e, b, mem)
	if err != nil {
		return nil, err
	}
	a.Retain()
	*m = append(*m, struct {
		key     string
		arr     arrow.Array
		bound   uint64
		bounded bool
	}{key, a, bound, bounded})
	return a, nil
}

// evaluated returns memo entry k as an expression.
func (m argMemo) evaluated(k int) evaluated {
	return evaluated{a: m[k].arr, bound: m[k].bound, bounded: m[k].bounded}
}

// memoKey names an expression's value: its text and its type (every
// function is deterministic, so equal text and type give equal values).
func memoKey(e expr.Expr) string { return e.String() + " :: " + e.DataType().String() }

// find returns the index of key's entry, or -1.
func (m argMemo) find(key string) int {
	for k, e := range m {
		if e.key == key {
			return k
		}
	}
	return -1
}

func (m argMemo) release() {
	for _, e := range m {
		e.arr.Release()
	}
}

// evaluated is an expression whose value on the current batch is known,
// with the magnitude bound its evaluation reported.
type evaluated struct {
	a       arrow.Array
	bound   uint64
	bounded bool
}

// MagnitudeBound implements expr.Bounded.
func (e evaluated) MagnitudeBound() (uint64, bool) { return e.bound, e.bounded }

func (e evaluated) DataType() arrow.DataType { return e.a.DataType() }

func (e evaluated) Eval(arrow.RecordBatch, memory.Allocator) (arrow.Array, error) {
	e.a.Retain()
	return e.a, nil
}

func (e evaluated) String() string { return "<evaluated>" }

// account grows the reservation to the table's estimated size.
func (s *hashAggStream) account() error {
	size := s.table.memSize()
	for _, acc := range s.accs {
		size += acc.memSize()
	}
	if grow := size - s.res.Size(); grow > 0 {
		if err := s.res.Grow(grow); err != nil {
			return fmt.Errorf("hash aggregate: %w", err)
		}
	} else {
		// A streaming partial aggregate's table of one batch replaced a
		// larger one.
		s.res.Shrink(-grow)
	}
	return nil
}

// Close implements Stream.
func (s *hashAggStream) Close() {
	if s.closed {
		return
	}
	s.closed = true
	s.input.Close()
	if s.carry != nil {
		s.carry.Release()
		s.carry = nil
	}
	if s.bucketOut != nil {
		s.bucketOut.Close()
	}
	for _, f := range s.buckets {
		f.Close()
	}
	releaseAccs(s.accs)
	s.table = nil
	s.accs = nil
	s.res.SetSpillable(false)
	s.res.Free()
}

// releaseAccs frees what accumulators retain beyond their slices (the
// arrays and order keys of ordered aggregates and array_agg).
func releaseAccs(accs []aggAccumulator) {
	for _, acc := range accs {
		if r, ok := acc.(interface{ release() }); ok {
			r.release()
		}
	}
}
