package scheduler

import (
	"fmt"
	"slices"
	"strings"

	"sluice/physical"
	"sluice/physical/metrics"
	"sluice/rpc"
	"sluice/scheduler/dplan"
)

// Adaptive execution in blocking mode. A finished stage's shuffle files
// report their exact rows and bytes (rpc.PartitionLocation), and in
// blocking mode nothing reads a stage before all of its inputs finished,
// so a stage can still be re-planned from those figures before it runs:
//
//   - coalesce: a stage whose every input is either hash-partitioned the
//     way the stage is (its partition i reads every input's partition i)
//     or read whole (a broadcast build side) may read contiguous ranges of
//     its inputs' partitions instead, up to TargetPartitionBytes a range
//     or an even share of the input if larger than 1 MiB (Spark's
//     coalescing of shuffle partitions, parallelism first), never to
//     fewer partitions than the cluster has vcores. Merging whole hash
//     partitions keeps every key's rows of every input together, which is
//     all a partition-wise operator (a partitioned join, a final
//     aggregate, a window, INTERSECT) relies on; a shuffle reader's
//     output is never declared hash-partitioned, so nothing above trusts
//     the old count.
//   - broadcast: a partitioned hash join whose build stage turned out
//     smaller than BroadcastThreshold becomes a collect-left one, while
//     its probe stage has not started: the probe stage's body moves into
//     the join's stage (the probe side is never shuffled) and every task
//     of that stage reads the whole build side. Only for join types the
//     physical planner itself would broadcast (none that emits unmatched
//     build rows, none null-aware), so the answer is the one a smaller
//     estimate would have given. The probe stage waits for the build
//     stage to finish unless the build's estimate is far above the
//     threshold or its finished part already exceeds it.
//
// Pipelined mode places every task up front and is not adaptive.

// broadcastDeferFactor bounds the build sides a probe stage waits for:
// one estimated at more than this many times the broadcast threshold is
// assumed to stay large, and its probe stage runs at once, as planned.
const broadcastDeferFactor = 16

// minCoalesceBytes is the least a coalesced partition is allowed to
// hold when an even share of the input would be smaller (Spark's
// spark.sql.adaptive.coalescePartitions.minPartitionSize).
const minCoalesceBytes = 1 << 20

// partRange is the input partitions [lo, hi) one partition of a coalesced
// stage reads.
type partRange struct{ lo, hi int }

// joinSwitch is a partitioned hash join of stage consumer, over
// placeholders of stages build (left) and probe (right), that may become a
// broadcast join.
type joinSwitch struct {
	consumer, build, probe int
	join                   *physical.HashJoin
	decided                bool
}

// wholeInput returns the child of op that each of op's partitions reads
// in full: the build side of a collect-left hash join or of a nested-loop
// join.
func wholeInput(op physical.Operator) (physical.Operator, bool) {
	switch o := op.(type) {
	case *physical.HashJoin:
		if o.Mode() == physical.JoinCollectLeft {
			return o.Children()[0], true
		}
	case *physical.NestedLoopJoin:
		return o.Children()[0], true
	}
	return nil, false
}

// stageBytes sums the rows and bytes of the files a stage's finished
// partitions wrote, and says whether every partition has finished.
func (s *bStage) stageBytes() (rows, bytes int64, complete bool) {
	complete = true
	for i := range s.parts {
		if s.parts[i].state != partDone {
			complete = false
			continue
		}
		for _, l := range s.parts[i].outputs {
			rows += l.NumRows
			bytes += l.NumBytes
		}
	}
	return rows, bytes, complete
}

// placeholders counts the placeholders of each stage in op.
func placeholders(op physical.Operator, out map[int]int) {
	if u, ok := op.(*physical.UnresolvedExchange); ok {
		out[u.StageID]++
		return
	}
	for _, c := range op.Children() {
		placeholders(c, out)
	}
}

// findSwitches lists the partitioned hash joins that may become broadcast
// ones: of a join type the physical planner would broadcast, over a build
// placeholder and a probe placeholder whose stage is hash-partitioned and
// read by nothing else.
func (g *blockingGraph) findSwitches() {
	if g.cfg.BroadcastThreshold <= 0 {
		return
	}
	for _, c := range g.stages {
		reads := map[int]int{}
		placeholders(c.Body, reads)
		var walk func(op physical.Operator)
		walk = func(op physical.Operator) {
			if j, ok := op.(*physical.HashJoin); ok && j.Mode() == physical.JoinPartitioned &&
				!j.JoinType().EmitsUnmatchedBuild() && !j.NullAware() {
				l, lok := j.Children()[0].(*physical.UnresolvedExchange)
				r, rok := j.Children()[1].(*physical.UnresolvedExchange)
				if lok && rok && l.StageID != r.StageID && g.outputUnrelied(c, j) {
					p := g.stages[r.StageID-1]
					if !p.Shared && !p.Broadcast && p.Output.Kind == physical.PartHash &&
						slices.Equal(p.consumers, []int{c.ID}) && reads[p.ID] == 1 {
						g.switches = append(g.switches, &joinSwitch{consumer: c.ID, build: l.StageID, probe: r.StageID, join: j})
					}
				}
			}
			for _, ch := range op.Children() {
				walk(ch)
			}
		}
		walk(c.Body)
	}
}

// pairedByConsumer reports whether a consumer of s reads s's output
// partition by partition together with another stage's output: each of
// its partitions i reads partition i of both. (Read alone, or whole, a
// pass-through stage's partitions may be merged: every key still has all
// of its rows in one partition, and the consumer runs as many partitions
// as it then has.)
func (g *blockingGraph) pairedByConsumer(s *bStage) bool {
	for _, id := range s.consumers {
		read := map[int]bool{}
		var walk func(op physical.Operator, whole bool)
		walk = func(op physical.Operator, whole bool) {
			if u, ok := op.(*physical.UnresolvedExchange); ok {
				if !whole {
					read[u.StageID] = true
				}
				return
			}
			children := op.Children()
			if w, ok := wholeInput(op); ok {
				walk(w, true)
				children = children[1:]
			}
			for _, c := range children {
				walk(c, whole)
			}
		}
		walk(g.stages[id-1].Body, false)
		if read[s.ID] && len(read) > 1 {
			return true
		}
	}
	return false
}

// outputUnrelied reports whether nothing in or after stage c relies on
// how join j's output is partitioned. A partitioned join's output keeps
// its probe side's hash partitioning, and the planner may have used that (an
// aggregate or another join over it run where the rows are, a consumer
// stage pairing c's partition i with another input's); the broadcast
// join that replaces it outputs the probe stage's body's partitions,
// which are not. So every operator between j and c's root must work on
// any partitioning of its input, and c's output must be hashed anew by
// its writer, or read by no other stage, or not declared hashed.
func (g *blockingGraph) outputUnrelied(c *bStage, j *physical.HashJoin) bool {
	var above func(op physical.Operator) (found, ok bool)
	above = func(op physical.Operator) (bool, bool) {
		if op == physical.Operator(j) {
			return true, true
		}
		for _, ch := range op.Children() {
			found, ok := above(ch)
			if !found {
				continue
			}
			if !ok {
				return true, false
			}
			switch o := op.(type) {
			case *physical.Projection, *physical.Filter, *physical.Sort, *physical.Limit, *physical.CoalescePartitions:
				return true, true
			case *physical.HashAggregate:
				return true, o.Mode() == physical.AggPartial
			case *physical.HashJoin:
				return true, o.Mode() == physical.JoinCollectLeft
			}
			return true, false
		}
		return false, true
	}
	found, ok := above(c.Body)
	if !found || !ok {
		return false
	}
	return c.Output.Kind == physical.PartHash || c == g.final() || c.Body.OutputPartitioning().Kind != physical.PartHash
}

// deferred reports whether s is the probe stage of a join that may still
// become a broadcast join: it waits for the build stage.
func (g *blockingGraph) deferred(s *bStage) bool {
	for _, sw := range g.switches {
		if !sw.decided && sw.probe == s.ID {
			return true
		}
	}
	return false
}

// decideSwitches decides each pending join switch whose build stage has
// finished (or is already known to be too large), before its probe stage
// runs.
func (g *blockingGraph) decideSwitches() {
	for _, sw := range g.switches {
		if sw.decided {
			continue
		}
		b, p, c := g.stages[sw.build-1], g.stages[sw.probe-1], g.stages[sw.consumer-1]
		threshold := g.cfg.BroadcastThreshold
		rows, bytes, complete := b.stageBytes()
		switch {
		case p.state == StageRunning || p.count(partPending) != len(p.parts) || c.decided || len(c.running) > 0:
			// Started after all (a lost output re-ran it): as planned.
			sw.decided = true
		case b.Estimated && b.EstBytes > broadcastDeferFactor*float64(threshold):
			sw.decided = true
		case bytes > threshold:
			sw.decided = true
			c.notes = append(c.notes, fmt.Sprintf("kept partitioned join (build stage %d wrote %s, over the broadcast threshold %s)",
				b.ID, metrics.FormatBytes(bytes), metrics.FormatBytes(threshold)))
		case complete:
			sw.decided = true
			if err := g.broadcast(sw); err != nil {
				g.fail(c, fmt.Errorf("stage %d: adaptive broadcast join: %w", c.ID, err))
				return
			}
			c.notes = append(c.notes, fmt.Sprintf("partitioned -> broadcast join (build stage %d: %d rows, %s; stage %d merged in)",
				b.ID, rows, metrics.FormatBytes(bytes), p.ID))
			p.notes = append(p.notes, fmt.Sprintf("merged into stage %d (its join broadcasts stage %d)", c.ID, b.ID))
		}
	}
}

// broadcast turns sw's join into a collect-left join over the build
// stage's placeholder and the probe stage's body, which the consumer now
// computes itself; the probe stage is skipped.
func (g *blockingGraph) broadcast(sw *joinSwitch) error {
	b, p, c := g.stages[sw.build-1], g.stages[sw.probe-1], g.stages[sw.consumer-1]
	j := sw.join
	found := false
	var rewrite func(op physical.Operator) (physical.Operator, error)
	rewrite = func(op physical.Operator) (physical.Operator, error) {
		if op == physical.Operator(j) {
			found = true
			return physical.NewHashJoin(j.Children()[0], p.Body, j.JoinType(), j.LeftKeys(), j.RightKeys(), j.Filter(), false, physical.JoinCollectLeft)
		}
		children := op.Children()
		if len(children) == 0 {
			return op, nil
		}
		outs := make([]physical.Operator, len(children))
		changed := false
		for i, ch := range children {
			o, err := rewrite(ch)
			if err != nil {
				return nil, err
			}
			outs[i] = o
			changed = changed || o != ch
		}
		if !changed {
			return op, nil
		}
		return dplan.WithNewChildren(op, outs)
	}
	body, err := rewrite(c.Body)
	if err != nil {
		return err
	}
	if !found {
		return fmt.Errorf("internal: join of stage %d not found", c.ID)
	}
	c.Body = body
	inputs := slices.DeleteFunc(slices.Clone(c.Inputs), func(id int) bool { return id == p.ID })
	c.Inputs = normalizeIDs(append(inputs, p.Inputs...))
	for _, in := range p.Inputs {
		s := g.stages[in-1]
		s.consumers = normalizeIDs(append(slices.DeleteFunc(s.consumers, func(id int) bool { return id == p.ID }), c.ID))
	}
	if c.Output.Kind == physical.PartUnknown {
		c.Output.Count = c.Body.OutputPartitioning().Count
	}
	c.parts = make([]bPart, c.Body.OutputPartitioning().Count)
	b.Broadcast = true
	p.state, p.plan, p.consumers = StageSkipped, nil, nil
	return nil
}

func normalizeIDs(ids []int) []int {
	slices.Sort(ids)
	return slices.Compact(ids)
}

// coalesce decides, before s first runs, whether it reads its
// hash-partitioned inputs' partitions in contiguous ranges of about
// TargetPartitionBytes each (see the top of this file).
func (g *blockingGraph) coalesce(s *bStage) {
	target := g.cfg.TargetPartitionBytes
	n := s.Body.OutputPartitioning().Count
	// A stage keeps at least the cluster's parallelism: its partitions
	// are goroutines of a few tasks here, cheap to keep, while merging
	// them serializes work that the input's bytes do not measure (a
	// stage reading little may still join and aggregate at length).
	floor := 1
	if g.cfg.Parallelism > 0 {
		floor = min(n, g.cfg.Parallelism)
	}
	if target <= 0 || n <= 1 || floor >= n {
		return
	}
	if s.Output.Kind != physical.PartHash && s.Body.OutputPartitioning().Kind == physical.PartHash && g.pairedByConsumer(s) {
		// A reader was planned to take its partition i as hash
		// partition i of its keys, with another input's partition i
		// (a partitioned join): merged, its output would no longer be
		// split that way, nor as many.
		return
	}
	var hashInputs []int
	ok := true
	var walk func(op physical.Operator, whole bool)
	walk = func(op physical.Operator, whole bool) {
		if !ok {
			return
		}
		if u, isU := op.(*physical.UnresolvedExchange); isU {
			if whole {
				return
			}
			p := g.stages[u.StageID-1]
			if p.Output.Kind != physical.PartHash || p.Output.Count != n || u.OutputPartitioning().Count != n {
				ok = false
				return
			}
			hashInputs = append(hashInputs, u.StageID)
			return
		}
		if _, isUnion := op.(*physical.Union); isUnion {
			// Its partition p is one branch's partition (or, folded, a
			// fixed set of them): the partitions of the inputs below it
			// are not the stage's, so ranges of them cannot be read as one.
			ok = false
			return
		}
		if h, isAgg := op.(*physical.HashAggregate); isAgg && h.HasGrandTotals() {
			// It emits a grand total from the input partition the
			// total's key hashes to, by that partition's number: a
			// range of partitions read as one would emit it twice.
			ok = false
			return
		}
		children := op.Children()
		if len(children) == 0 {
			ok = false // a scan or another leaf whose partitions are its own
			return
		}
		if w, isWhole := wholeInput(op); isWhole {
			walk(w, true)
			for _, c := range children[1:] {
				walk(c, whole)
			}
			return
		}
		for _, c := range children {
			walk(c, whole)
		}
	}
	walk(s.Body, false)
	if !ok || len(hashInputs) == 0 {
		return
	}
	sizes := make([]int64, n)
	var total int64
	for _, id := range normalizeIDs(hashInputs) {
		for i := range g.stages[id-1].parts {
			for _, l := range g.stages[id-1].parts[i].outputs {
				sizes[l.Partition] += l.NumBytes
				total += l.NumBytes
			}
		}
	}
	// Parallelism first, as Spark's default: partitions are merged only
	// up to an even share of the input (never below minCoalesceBytes),
	// so a stage with enough data to keep its planned partitions busy
	// keeps them, and one of a few small files runs as few partitions.
	target = min(target, max((total+int64(n)-1)/int64(n), minCoalesceBytes))
	ranges := coalesceRanges(sizes, target)
	if len(ranges) < floor {
		target = max((total+int64(floor)-1)/int64(floor), 1)
		ranges = coalesceRanges(sizes, target)
	}
	if len(ranges) == n || len(ranges) < floor {
		return
	}
	s.ranges = ranges
	s.notes = append(s.notes, fmt.Sprintf("%d -> %d partitions (inputs %s, target %s per partition)",
		n, len(ranges), metrics.FormatBytes(total), metrics.FormatBytes(target)))
}

// coalesceRanges groups partitions, in order, into ranges of at most
// target bytes, a partition larger than target being a range of its own.
// There is always at least one range.
func coalesceRanges(sizes []int64, target int64) []partRange {
	var out []partRange
	lo := 0
	var acc int64
	for i, sz := range sizes {
		if i > lo && acc+sz > target {
			out = append(out, partRange{lo, i})
			lo, acc = i, 0
		}
		acc += sz
	}
	return append(out, partRange{lo, len(sizes)})
}

// coalesceLocations merges a reader's partitions by ranges.
func coalesceLocations(parts [][]*rpc.PartitionLocation, ranges []partRange) [][]*rpc.PartitionLocation {
	out := make([][]*rpc.PartitionLocation, len(ranges))
	for i, r := range ranges {
		for p := r.lo; p < r.hi && p < len(parts); p++ {
			out[i] = append(out[i], parts[p]...)
		}
	}
	return out
}

// StagePlan returns the job's stages as they run now: bodies and inputs
// after adaptive changes, output counts as resolved.
func (g *blockingGraph) StagePlan() *dplan.Graph {
	out := &dplan.Graph{}
	for _, s := range g.stages {
		out.Stages = append(out.Stages, s.Stage)
	}
	return out
}

// StageReport says, for EXPLAIN ANALYZE's stage line, what the planner
// estimated of a stage's output, what its files held and what adaptive
// execution decided about it ("" for an unknown stage).
func (g *blockingGraph) StageReport(id int) string {
	s := g.stage(int32(id))
	if s == nil {
		return ""
	}
	var b strings.Builder
	if s.state != StageSkipped {
		est := "unknown"
		if s.Estimated {
			est = fmt.Sprintf("rows=%.0f, bytes=%s", s.EstRows, metrics.FormatBytes(int64(s.EstBytes)))
		}
		rows, bytes, _ := s.stageBytes()
		fmt.Fprintf(&b, "estimated=[%s] actual=[rows=%d, bytes=%s]", est, rows, metrics.FormatBytes(bytes))
	}
	if len(s.notes) > 0 {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "adaptive=[%s]", strings.Join(s.notes, "; "))
	}
	return b.String()
}

// Skipped reports whether stage id was merged into its consumer.
func (g *blockingGraph) Skipped(id int) bool {
	s := g.stage(int32(id))
	return s != nil && s.state == StageSkipped
}
