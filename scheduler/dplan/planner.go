package dplan

import (
	"crypto/sha256"
	"fmt"
	"reflect"
	"slices"

	"google.golang.org/protobuf/proto"

	"sluice/physical"
	"sluice/physical/expr"
	physplanner "sluice/physical/planner"
	"sluice/rpc"
)

// Plan cuts a physical plan into stages, as Ballista's
// DefaultDistributedPlanner does. The cut points are:
//
//   - a Repartition: the producer stage's body is the repartition's input
//     and its Output the repartition's partitioning; the consumer reads an
//     UnresolvedExchange in the repartition's place.
//   - a CoalescePartitions or SortPreservingMerge over several partitions:
//     the cut is below it, so the producer writes its partitions through
//     unchanged and the many-to-one step runs in the consumer, over an
//     exchange with the producer's partition count.
//   - the build (left) side of a HashJoin in CollectLeft mode and of a
//     NestedLoopJoin: every consumer task reads all of it, so the producer
//     stage is marked Broadcast.
//
// A Union is not a cut: its branches run in the stage that reads the
// union, each union partition being one branch partition, as in process.
// Cutting every branch into a stage of its own made each branch write all
// its rows to shuffle files that the union's stage only read back: TPC-DS
// q5's store_sales branch wrote 65 MiB to feed a join that kept 10K rows.
//
// What remains above the last cut is the final stage, whose output
// partitions the client reads. An input that is already an exchange is not
// cut again: a stage that only copies another stage's output would add a
// round trip and nothing else.
//
// A stage whose computation the plan already has (the same body over the
// same input stages, the same output split: a view or subquery used twice,
// as TPC-H q15's revenue view) is not added again: its readers read the
// first one, which is marked Shared (Spark calls this reusing an exchange).
// Only stages that end in an aggregate (perhaps under projections and
// filters), or are broadcast, are merged so:
// their output is small enough for a pipelined writer to keep it for every
// reader, which a shared stage needs.
//
// The comparison is made twice. Before a cut's subtree is planned, the
// whole subtree (the physical operators below the cut, not yet cut) is
// looked up among the subtrees already planned into a mergeable stage: if
// it is there, the consumer reads that stage and the subtree's own stages
// are never made. This is what merges a CTE used twice whose aggregate
// reads big scans (TPC-DS q2): the scans are not mergeable themselves, so
// comparing stage bodies alone would make them twice, and then the two
// aggregates, reading different scan stages, would differ too. After the
// subtree is planned, its stage body is compared as above.
func Plan(root physical.Operator) (*Graph, error) {
	return PlanEstimated(root, nil)
}

// PlanEstimated is Plan, recording in each stage the estimate est has of
// the operator the stage's body was cut from (nil: none).
func PlanEstimated(root physical.Operator, est *physplanner.Estimates) (*Graph, error) {
	return PlanWith(root, est, Options{})
}

// Options are the choices a caller makes about the cut.
type Options struct {
	// InlineBuildBytes: a collect-left join's build side that only reads
	// files (a scan under filters and projections) and is estimated at
	// no more than this many bytes is not cut: every task of the join's
	// stage reads it itself, as one process does, instead of waiting for
	// a broadcast stage to finish first (blocking mode). 0: always cut.
	InlineBuildBytes int64
	// SwapMaxRatio: an inner join whose probe side is such a scan and
	// whose build side is not is turned around so the scan is its build
	// side, when the scan's estimated rows are at most this many times
	// the other side's (see swapForInline). 0: never.
	SwapMaxRatio int64
}

// PlanWith is PlanEstimated with opts.
func PlanWith(root physical.Operator, est *physplanner.Estimates, opts Options) (*Graph, error) {
	if root == nil {
		return nil, fmt.Errorf("internal: distributed planning of a nil plan")
	}
	p := &planner{seen: map[string]*Stage{}, subtrees: map[string]*Stage{}, digests: map[physical.Operator]string{}, est: est, opts: opts}
	p.repeated = p.repeatedAggregates(root)
	body, inputs, err := p.visit(root)
	if err != nil {
		return nil, fmt.Errorf("distributed planning: %w", err)
	}
	// The final stage is always a stage of its own (never merged).
	final := &Stage{ID: len(p.stages) + 1, Body: body, Output: passThrough(body), Inputs: inputs}
	p.estimate(final, root)
	p.stages = append(p.stages, final)
	return &Graph{Stages: p.stages}, nil
}

// planner accumulates stages in creation order; since a producer is always
// finished before its consumer is created, IDs increase from producers to
// consumers.
type planner struct {
	stages []*Stage
	seen   map[string]*Stage // stages that may be shared, by reuseKey
	// subtrees holds the mergeable stages by the key of the uncut
	// subtree they were planned from (subtreeKey).
	subtrees map[string]*Stage
	// digests remembers digest's result by operator.
	digests map[physical.Operator]string
	// repeated counts, by digest, the aggregates over a repartition the
	// plan computes (see repeatedAggregates); more than one is shared.
	repeated map[string]int
	est      *physplanner.Estimates
	opts     Options
}

// estimate records in s the estimate of orig, the operator of the
// original plan whose output s writes.
func (p *planner) estimate(s *Stage, orig physical.Operator) {
	s.EstRows, s.EstBytes, s.Estimated = p.est.Of(orig)
}

// reuse returns the stage planned earlier from a subtree equal to the one
// under key, marked Shared, or nil.
func (p *planner) reuse(key string) *Stage {
	if key == "" {
		return nil
	}
	s := p.subtrees[key]
	if s != nil {
		s.Shared = true
	}
	return s
}

// remember records that s was planned from the subtree under key, when s
// may be shared (see Plan).
func (p *planner) remember(key string, s *Stage) {
	if key != "" && p.mergeable(s.Body, s.Broadcast) {
		p.subtrees[key] = s
	}
}

// subtreeKey identifies the computation of the uncut subtree in, split as
// out, or is "" when it cannot be encoded.
func (p *planner) subtreeKey(in physical.Operator, out physical.Partitioning, broadcast bool) string {
	d := p.digest(in)
	if d == "" {
		return ""
	}
	return fmt.Sprintf("%s|%v|%x", outputString(out), broadcast, d)
}

// digest is a SHA-256 of the uncut subtree at op, or "" when the subtree
// cannot be encoded. It is a hash tree: an operator's digest covers its own
// plan message (physical.EncodeNode, its children stubbed out) and its
// children's digests, so two subtrees have the same
// digest when their whole plan messages are equal, as comparing the
// messages themselves would say. Digests are remembered by operator
// (operators are immutable), so each operator is encoded once, where a cut
// above a chain of joins used to encode the whole chain below it again
// (TPC-DS q64, 35 stages from 73 cuts: PlanEstimated 8.3 to 6.0 ms of CPU).
func (p *planner) digest(op physical.Operator) string {
	memo := reflect.TypeOf(op).Comparable()
	if memo {
		if d, ok := p.digests[op]; ok {
			return d
		}
	}
	d := p.digestOf(op)
	if memo {
		p.digests[op] = d
	}
	return d
}

// digestOf computes digest(op).
func (p *planner) digestOf(op physical.Operator) string {
	h := sha256.New()
	for _, c := range op.Children() {
		d := p.digest(c)
		if d == "" {
			return ""
		}
		h.Write([]byte(d))
	}
	m, err := physical.EncodeNode(op, func(physical.Operator) *rpc.PhysicalPlan { return childStub })
	if err != nil {
		return ""
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		return ""
	}
	h.Write(b)
	return string(h.Sum(nil))
}

// childStub stands for every child in the message digestOf encodes; the
// children's digests stand for what they compute.
var childStub = &rpc.PhysicalPlan{Node: &rpc.PhysicalPlan_UnresolvedExchange{UnresolvedExchange: &rpc.UnresolvedExchangeNode{}}}

// mergeable says whether a stage with this body may be read by several
// consumers: see Plan. A body that only reads a mergeable stage (the
// repartition of a shared aggregate's output by other keys: TPC-DS q47
// and q57 hash the monthly totals by brand and store for the windows of
// each of their three readers) writes no more than that stage does.
func (p *planner) mergeable(body physical.Operator, broadcast bool) bool {
	for {
		switch b := body.(type) {
		case *physical.Projection, *physical.Filter, *physical.Sort, *physical.Window:
			// Their output is at most the rows below (a window adds
			// columns, not rows).
			body = body.Children()[0]
			continue
		case *physical.HashAggregate:
			return true
		case *physical.UnresolvedExchange:
			if in := p.stages[b.StageID-1]; p.mergeable(in.Body, in.Broadcast) {
				return true
			}
		}
		return broadcast
	}
}

// add adds a stage writing body (cut from orig, the original plan's
// operator) split by out.
func (p *planner) add(body, orig physical.Operator, out physical.Partitioning, inputs []int, broadcast bool) *Stage {
	key := p.reuseKey(body, out, broadcast)
	if s := p.seen[key]; key != "" && s != nil {
		s.Shared = true
		return s
	}
	s := &Stage{ID: len(p.stages) + 1, Body: body, Output: out, Inputs: inputs, Broadcast: broadcast}
	p.estimate(s, orig)
	p.stages = append(p.stages, s)
	if key != "" {
		p.seen[key] = s
	}
	return s
}

// reuseKey identifies a stage's computation (its body's plan message, which
// names its input stages, and its output split), or is "" for a stage that
// is not merged with an equal one (see Plan).
func (p *planner) reuseKey(body physical.Operator, out physical.Partitioning, broadcast bool) string {
	if !p.mergeable(body, broadcast) {
		return ""
	}
	return p.subtreeKey(body, out, broadcast)
}

// passThrough is the output of a stage that writes its body's partitions
// unchanged.
func passThrough(body physical.Operator) physical.Partitioning {
	return physical.Partitioning{Kind: physical.PartUnknown, Count: body.OutputPartitioning().Count}
}

// visit returns op with every cut below it replaced by an exchange
// placeholder, and the (sorted, distinct) IDs of the stages it reads.
func (p *planner) visit(op physical.Operator) (physical.Operator, []int, error) {
	switch o := op.(type) {
	case *physical.HashAggregate:
		if p.repeated[p.digest(op)] > 1 {
			return p.sharedAggregate(o)
		}
	case *physical.Window:
		if p.repeated[p.digest(op)] > 1 {
			// A window computed more than once (a CTE's ranking read by
			// several references: TPC-DS q47 and q57) is a stage of its
			// own, as a repeated aggregate is: one sort for all readers.
			return p.cutPlanned(o, false, p.visitChildren)
		}
	case *physical.Repartition:
		key := p.subtreeKey(o.Children()[0], o.OutputPartitioning(), false)
		if s := p.reuse(key); s != nil {
			return physical.NewUnresolvedExchange(s.ID, o.Schema(), o.OutputPartitioning()), []int{s.ID}, nil
		}
		in, ins, err := p.visit(o.Children()[0])
		if err != nil {
			return nil, nil, err
		}
		s := p.add(in, o.Children()[0], o.OutputPartitioning(), ins, false)
		p.remember(key, s)
		return physical.NewUnresolvedExchange(s.ID, o.Schema(), o.OutputPartitioning()), []int{s.ID}, nil
	case *physical.CoalescePartitions, *physical.SortPreservingMerge:
		in, ins, err := p.visit(op.Children()[0])
		if err != nil {
			return nil, nil, err
		}
		if in.OutputPartitioning().Count > 1 {
			in, ins = p.cut(in, op.Children()[0], ins, false)
		}
		out, err := WithNewChildren(op, []physical.Operator{in})
		return out, ins, err
	case *physical.HashJoin:
		if o.Mode() == physical.JoinCollectLeft {
			return p.collectLeft(op)
		}
	case *physical.NestedLoopJoin:
		// A nested-loop join always buffers every left partition in each task.
		return p.collectLeft(op)
	case *physical.RecursiveCTE:
		// Its terms run inside its task, the recursive one again every
		// iteration over the working table: never a stage boundary
		// inside (its one-partition exchanges stay in process).
		return op, nil, nil
	case *physical.Union:
		children := o.Children()
		outs := make([]physical.Operator, len(children))
		var all []int
		for i, c := range children {
			in, ins, err := p.visit(c)
			if err != nil {
				return nil, nil, err
			}
			outs[i] = in
			all = append(all, ins...)
		}
		out, err := WithNewChildren(op, outs)
		return out, normalize(all), err
	}
	return p.visitChildren(op)
}

// visitChildren plans op's children (see visit) and keeps op in the
// stage that reads them.
func (p *planner) visitChildren(op physical.Operator) (physical.Operator, []int, error) {
	children := op.Children()
	if len(children) == 0 {
		return op, nil, nil
	}
	outs := make([]physical.Operator, len(children))
	var all []int
	for i, c := range children {
		in, ins, err := p.visit(c)
		if err != nil {
			return nil, nil, err
		}
		outs[i] = in
		all = append(all, ins...)
	}
	out, err := WithNewChildren(op, outs)
	return out, normalize(all), err
}

// repeatedAggregates counts, by digest, the aggregates directly above a
// repartition (the final half of a two-phase aggregate, or one over rows
// hashed for it) in the plan under root. One that occurs more than once is
// a CTE or view read twice (TPC-DS q4, q11 and q74 read each year's
// totals per customer twice, once per year). Sharing only the stage below the
// repartition, as the stage comparison in Plan does, leaves every reader
// to merge the partial states again; such an aggregate is planned as a
// stage of its own instead (sharedAggregate), which every reader reads.
// In process the plan shares the same aggregate (physical.SharedOutput).
// An aggregate read through a repartition (by other keys: TPC-DS q47 and
// q57 hash the monthly totals by brand and store for their windows) is
// not counted: the repartition's stage, which ends in the aggregate, is
// what the stage comparison shares then. Windows are counted the same way
// (not below a repartition): a window read by several references of a
// CTE is planned as a stage of its own too.
func (p *planner) repeatedAggregates(root physical.Operator) map[string]int {
	counts := map[string]int{}
	var walk func(op physical.Operator, underRepartition bool)
	walk = func(op physical.Operator, underRepartition bool) {
		counted := false
		if h, ok := op.(*physical.HashAggregate); ok && !h.HasGrandTotals() && !underRepartition {
			_, counted = h.Children()[0].(*physical.Repartition)
		}
		if _, ok := op.(*physical.Window); ok && !underRepartition {
			counted = true
		}
		if counted {
			if d := p.digest(op); d != "" {
				counts[d]++
				if counts[d] > 1 {
					// Planned once, with all it holds: what it holds
					// occurs once more only for what else reads it.
					return
				}
			}
		}
		_, rep := op.(*physical.Repartition)
		for _, c := range op.Children() {
			walk(c, rep)
		}
	}
	walk(root, false)
	return counts
}

// sharedAggregate plans agg, which the plan computes more than once, as a
// pass-through stage of its own, or reads the stage planned from an equal
// aggregate before. Its readers read its partitions as they would have
// read the aggregate's (its hash partitioning holds: a pass-through stage
// writes partition i from partition i).
func (p *planner) sharedAggregate(agg *physical.HashAggregate) (physical.Operator, []int, error) {
	return p.cutPlanned(agg, false, p.visitChildren)
}

// collectLeft plans a join whose left side every task reads whole: the left
// side becomes a broadcast stage, the right side stays in this stage.
func (p *planner) collectLeft(op physical.Operator) (physical.Operator, []int, error) {
	if swapped := p.swapForInline(op); swapped != nil {
		return p.visit(swapped)
	}
	children := op.Children()
	var left physical.Operator
	var lins []int
	var err error
	if p.inlineBuild(children[0]) {
		left = children[0]
	} else if left, lins, err = p.visitCut(children[0], true); err != nil {
		return nil, nil, err
	}
	right, rins, err := p.visit(children[1])
	if err != nil {
		return nil, nil, err
	}
	out, err := WithNewChildren(op, []physical.Operator{left, right})
	return out, normalize(append(lins, rins...)), err
}

// inlineBuild reports whether a collect-left join's build side op stays
// in the join's stage (see Options.InlineBuildBytes). Each task of the
// stage then scans the build side's files whole; the join shares what it
// built among the task's partitions, as in one process.
func (p *planner) inlineBuild(op physical.Operator) bool {
	if p.opts.InlineBuildBytes <= 0 {
		return false
	}
	_, bytes, ok := p.est.Of(op)
	if !ok || bytes > float64(p.opts.InlineBuildBytes) {
		return false
	}
	var plain func(op physical.Operator) bool
	plain = func(op physical.Operator) bool {
		switch op.(type) {
		case *physical.ParquetScan, *physical.CSVScan:
			return true
		case *physical.Filter, *physical.Projection:
			return plain(op.Children()[0])
		}
		return false
	}
	return plain(op)
}

// swapForInline turns an inner collect-left join whose build side is not
// kept in the stage but whose probe side could be (a small scan: see
// inlineBuild) around: the scan becomes the build side, read in the
// stage, and the other side, often a join of the fact table with other
// dimensions, is probed without being written out as a broadcast stage
// first (TPC-DS q88 and q18 build their joins on the rows of the fact
// table joined so far). A projection restores the column order. Nil when
// the join is not such a join, or has a residual filter (which refers to
// the columns in their old order), or when the build side is read
// through an exchange anyway (cutAnyway).
func (p *planner) swapForInline(op physical.Operator) physical.Operator {
	h, ok := op.(*physical.HashJoin)
	if !ok || h.JoinType() != physical.JoinInner || h.Mode() != physical.JoinCollectLeft || h.Filter() != nil || h.NullAware() {
		return nil
	}
	l, r := h.Children()[0], h.Children()[1]
	if p.inlineBuild(l) || !p.inlineBuild(r) || p.cutAnyway(l) {
		return nil
	}
	// The scan must not be much larger than what it would be probed
	// with: building a table of a whole fact table's rows to probe a few
	// hundred (q37 builds its join of item, inventory and dates and
	// probes all of catalog_sales) costs more than the stage it saves.
	lrows, _, lok := p.est.Of(l)
	rrows, _, rok := p.est.Of(r)
	if p.opts.SwapMaxRatio <= 0 || !lok || !rok || rrows > float64(p.opts.SwapMaxRatio)*lrows {
		return nil
	}
	j, err := physical.NewHashJoin(r, l, physical.JoinInner, h.RightKeys(), h.LeftKeys(), nil, false, physical.JoinCollectLeft)
	if err != nil {
		return nil
	}
	nl, nr := l.Schema().NumFields(), r.Schema().NumFields()
	out := h.Schema()
	exprs := make([]expr.Expr, out.NumFields())
	names := make([]string, out.NumFields())
	for i, f := range out.Fields() {
		in := nr + i // a left column, now after the right ones
		if i >= nl {
			in = i - nl
		}
		exprs[i] = &expr.Column{Index: in, Name: j.Schema().Field(in).Name, Type: f.Type}
		names[i] = f.Name
	}
	return physical.NewProjection(j, exprs, names)
}

// cutAnyway reports whether op is read through an exchange wherever it
// stands: a repartition, an aggregate the plan computes more than once
// (see repeatedAggregates), or a subtree planned into a stage before.
// Swapping a join that builds on it saves no stage: it only moves the
// build to the scan, often the larger side (TPC-DS q74 built on 100,000
// customers, strings and all, to probe 75,000 yearly totals per
// customer that its shared aggregate wrote anyway).
func (p *planner) cutAnyway(op physical.Operator) bool {
	switch o := op.(type) {
	case *physical.Repartition:
		return true
	case *physical.HashAggregate:
		if p.repeated[p.digest(o)] > 1 {
			return true
		}
	}
	for _, broadcast := range []bool{false, true} {
		if key := p.subtreeKey(op, passThrough(op), broadcast); key != "" && p.subtrees[key] != nil {
			return true
		}
	}
	return false
}

// visitCut plans the subtree c as a stage of its own (see cut), or reads
// the stage planned earlier from an equal subtree.
func (p *planner) visitCut(c physical.Operator, broadcast bool) (physical.Operator, []int, error) {
	return p.cutPlanned(c, broadcast, p.visit)
}

// cutPlanned is visitCut with c planned by plan (visit, or visitChildren
// for an operator visit itself would cut).
func (p *planner) cutPlanned(c physical.Operator, broadcast bool, plan func(physical.Operator) (physical.Operator, []int, error)) (physical.Operator, []int, error) {
	key := p.subtreeKey(c, passThrough(c), broadcast)
	if s := p.reuse(key); s != nil {
		return physical.NewUnresolvedExchange(s.ID, c.Schema(), c.OutputPartitioning()), []int{s.ID}, nil
	}
	in, ins, err := plan(c)
	if err != nil {
		return nil, nil, err
	}
	out, ins := p.cut(in, c, ins, broadcast)
	if u, ok := out.(*physical.UnresolvedExchange); ok {
		p.remember(key, p.stages[u.StageID-1])
	}
	return out, ins, nil
}

// cut makes in (reading stages ins) a pass-through stage of its own and
// returns the placeholder the consumer reads instead. An input that already
// is a placeholder is returned as it is (marked broadcast if asked). orig
// is the original plan's operator in is planned from.
func (p *planner) cut(in, orig physical.Operator, ins []int, broadcast bool) (physical.Operator, []int) {
	if u, ok := in.(*physical.UnresolvedExchange); ok {
		if broadcast {
			p.stages[u.StageID-1].Broadcast = true
		}
		return in, ins
	}
	s := p.add(in, orig, passThrough(in), ins, broadcast)
	return physical.NewUnresolvedExchange(s.ID, in.Schema(), in.OutputPartitioning()), []int{s.ID}
}

func normalize(ids []int) []int {
	slices.Sort(ids)
	return slices.Compact(ids)
}
