package dplan

import (
	"fmt"
	"slices"

	"sluice/physical"
	"sluice/physical/datasource/write"
)

// InputPartitions lists, per stage that body reads through a placeholder
// (physical.UnresolvedExchange), the partitions of that stage a task
// running body's output partitions parts reads, in ascending order. A
// pipelined consumer task is given the capabilities of exactly these
// queues, so the mapping must cover every partition the operators execute:
// where an operator reads some of its input's partitions only in some
// cases (a LIMIT 0 merge reads none) it counts all of them.
//
// Operators map their output partition p to their input partitions as
// their Execute does: most read partition p of their input; a partitioned
// hash join reads partition p of both sides, a collect-left or nested loop
// join every partition of its build side; a coalesce, a merge and a
// repartition read every input partition; a union reads its inputs'
// partitions in turn (folded: p, p+k, ...). It knows the operators
// WithNewChildren knows, and fails on any other with children.
func InputPartitions(body physical.Operator, parts []int) (map[int][]int, error) {
	reads := map[int]map[int]bool{}
	if err := inputPartitions(body, parts, reads); err != nil {
		return nil, err
	}
	out := make(map[int][]int, len(reads))
	for stage, set := range reads {
		ps := make([]int, 0, len(set))
		for p := range set {
			ps = append(ps, p)
		}
		slices.Sort(ps)
		out[stage] = ps
	}
	return out, nil
}

func inputPartitions(op physical.Operator, parts []int, reads map[int]map[int]bool) error {
	if u, ok := op.(*physical.UnresolvedExchange); ok {
		set := reads[u.StageID]
		if set == nil {
			set = map[int]bool{}
			reads[u.StageID] = set
		}
		for _, p := range parts {
			set[p] = true
		}
		return nil
	}
	children := op.Children()
	if len(children) == 0 {
		return nil
	}
	per := make([]map[int]bool, len(children))
	for i := range per {
		per[i] = map[int]bool{}
	}
	for _, p := range parts {
		ins, err := childPartitions(op, p)
		if err != nil {
			return err
		}
		for i, ps := range ins {
			for _, q := range ps {
				per[i][q] = true
			}
		}
	}
	for i, c := range children {
		ps := make([]int, 0, len(per[i]))
		for q := range per[i] {
			ps = append(ps, q)
		}
		slices.Sort(ps)
		if err := inputPartitions(c, ps, reads); err != nil {
			return err
		}
	}
	return nil
}

// childPartitions returns, per child of op (in Children() order), the
// partitions output partition p of op executes.
func childPartitions(op physical.Operator, p int) ([][]int, error) {
	children := op.Children()
	all := func(i int) []int {
		n := children[i].OutputPartitioning().Count
		out := make([]int, n)
		for j := range out {
			out[j] = j
		}
		return out
	}
	switch o := op.(type) {
	case *physical.Filter, *physical.Projection, *physical.HashAggregate, *physical.Expand,
		*physical.Sort, *physical.Limit, *physical.Window, *physical.WindowGroupLimit, *physical.SharedOutput, *physical.Unnest,
		*write.FileSink, *write.WriteCommit, *physical.DynamicFilterBuild:
		// (A write commit has one partition over one.)
		return [][]int{{p}}, nil
	case *physical.SetOp:
		return [][]int{{p}, {p}}, nil
	case *physical.HashJoin:
		if o.Mode() == physical.JoinPartitioned {
			return [][]int{{p}, {p}}, nil
		}
		return [][]int{all(0), {p}}, nil
	case *physical.NestedLoopJoin:
		return [][]int{all(0), {p}}, nil
	case *physical.CoalescePartitions, *physical.SortPreservingMerge, *physical.Repartition:
		return [][]int{all(0)}, nil
	case *physical.RecursiveCTE:
		// One partition over its terms' one each (never cut, so no
		// placeholder is below it).
		return [][]int{all(0), all(1)}, nil
	case *physical.Union:
		// Output partition p reads the union's input partitions p (or,
		// folded into k, p, p+k, ...), counted across its inputs in turn.
		js := []int{p}
		if k := o.Folded(); k > 0 {
			js = js[:0]
			total := 0
			for _, c := range children {
				total += c.OutputPartitioning().Count
			}
			for j := p; j < total; j += k {
				js = append(js, j)
			}
		}
		out := make([][]int, len(children))
		for _, j := range js {
			for i, c := range children {
				n := c.OutputPartitioning().Count
				if j < n {
					out[i] = append(out[i], j)
					break
				}
				j -= n
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("internal: cannot tell which input partitions %T (%s) reads", op, op)
}
