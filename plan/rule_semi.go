package plan

// PushDownSemiJoins moves a semi or anti join below the inner joins of its
// left input, onto the one input that holds every left column its condition
// uses: Semi(Inner(A, B), S, cond(A, S)) = Inner(Semi(A, S, cond), B). A
// semi or anti join only keeps or drops left rows by their own columns, so
// it can filter A before the join instead of the (usually much larger)
// join result. TPC-H q18 filters orders by an IN subquery this way before
// joining lineitem. The move is made only when the input is estimated no
// larger than the join's result: under a selective join (q21) the semi join
// is cheaper where it is.
func PushDownSemiJoins(n Node, _ *OptContext) (Node, error) {
	return TransformUp(n, func(n Node) Node {
		j, ok := n.(*Join)
		if !ok || (j.Kind != JoinSemi && j.Kind != JoinAnti) || j.Cond == nil {
			return n
		}
		return pushSemi(j)
	}), nil
}

func pushSemi(j *Join) Node {
	inner, ok := j.Left.(*Join)
	if !ok || inner.Kind != JoinInner {
		return j
	}
	used := ColumnsOf(j.Cond)
	rightIDs := j.Right.Schema().IDs()
	leftUsed := ColumnSet{}
	for id := range used {
		if !rightIDs.Has(id) {
			leftUsed[id] = struct{}{}
		}
	}
	if len(leftUsed) == 0 {
		return j
	}
	moved := *j
	joined := EstimateRows(inner)
	switch {
	case leftUsed.SubsetOf(inner.Left.Schema().IDs()) && EstimateRows(inner.Left) <= joined:
		moved.Left = inner.Left
		out := *inner
		out.Left = pushSemi(&moved)
		return &out
	case leftUsed.SubsetOf(inner.Right.Schema().IDs()) && EstimateRows(inner.Right) <= joined:
		moved.Left = inner.Right
		out := *inner
		out.Right = pushSemi(&moved)
		return &out
	}
	return j
}
