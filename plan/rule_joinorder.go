package plan

import "math"

// ReorderJoins rebuilds each tree of three or more inner joins as a
// left-deep tree chosen greedily: from a starting input, repeatedly join the
// input that (a) is connected to what has been joined so far by an equality
// and (b) gives the smallest estimated result. Every input an equality
// connects is tried as the start, and the tree whose intermediate results
// add up to the fewest estimated rows wins. A cross product is only chosen when no connected input
// remains. Join conditions are re-attached at the lowest join where all
// their columns are available. The tree's output column order is restored
// with a Project when it changed.
//
// Run it after PushDownPredicates: it only sees conditions already in the
// joins (WHERE equalities over comma joins are moved there by pushdown).
func ReorderJoins(n Node, _ *OptContext) (Node, error) {
	return reorder(n), nil
}

func reorder(n Node) Node {
	j, ok := n.(*Join)
	if !ok || j.Kind != JoinInner {
		return mapChildren(n, reorder)
	}
	var leaves []Node
	var conds []Expr
	flattenInner(j, &leaves, &conds)
	for i, l := range leaves {
		leaves[i] = reorder(l)
	}
	if len(leaves) < 3 {
		return &Join{Kind: JoinInner, Left: leaves[0], Right: leaves[1], Cond: Conjunction(conds)}
	}
	if len(leaves) > maxReorderInputs {
		return j.WithChildren([]Node{reorder(j.Left), reorder(j.Right)})
	}
	return restoreSchema(greedyJoin(leaves, conds), j.Schema())
}

// maxReorderInputs bounds the inner joins ReorderJoins orders at once
// (PostgreSQL's join_collapse_limit plays this part): the greedy search
// takes time cubic in its inputs, and 1024 inputs (a view joining a view
// with itself, ten levels deep) kept a scheduler planning for minutes.
// A larger tree keeps its written order, its own inputs still ordered.
const maxReorderInputs = 64

// flattenInner collects the inputs and condition conjuncts of a tree of
// inner joins.
func flattenInner(n Node, leaves *[]Node, conds *[]Expr) {
	// Look through pass-through Projects between joins (decorrelation and
	// earlier reorderings leave them); the reordered tree's column order is
	// restored at its top anyway.
	if p, ok := n.(*Project); ok && isPassThrough(p) {
		if j, ok := p.Input.(*Join); ok && j.Kind == JoinInner {
			n = j
		}
	}
	if j, ok := n.(*Join); ok && j.Kind == JoinInner {
		flattenInner(j.Left, leaves, conds)
		flattenInner(j.Right, leaves, conds)
		*conds = append(*conds, SplitConjunction(j.Cond)...)
		return
	}
	*leaves = append(*leaves, n)
}

func greedyJoin(leaves []Node, conds []Expr) Node {
	condCols := make([]ColumnSet, len(conds))
	equis := make([]equiSides, len(conds))
	for i, c := range conds {
		condCols[i] = ColumnsOf(c)
		if b, ok := c.(*Binary); ok && b.Op == OpEq {
			if l, r := ColumnsOf(b.L), ColumnsOf(b.R); len(l) > 0 && len(r) > 0 {
				equis[i] = equiSides{l, r}
			}
		}
	}
	leafCols := make([]ColumnSet, len(leaves))
	for i, l := range leaves {
		leafCols[i] = l.Schema().IDs()
	}
	// Only inputs that some equality connects to another may start, so a
	// disconnected input is cross-joined last, not first.
	connected := make([]bool, len(leaves))
	anyConnected := false
	for _, c := range conds {
		for i := range leaves {
			for k := range leaves {
				if i != k && isEquiBetween(c, leafCols[i], leafCols[k]) {
					connected[i], anyConnected = true, true
				}
			}
		}
	}
	// Grow a tree greedily from every eligible start and keep the one whose
	// intermediate results add up to the fewest estimated rows: starting
	// from the smallest input alone joined TPC-H q9's lineitem to supplier
	// (6 million rows carrying nation names) before the part filter that
	// keeps a twentieth of them. Ties keep the smaller start.
	var best Node
	var bestUsed []bool
	bestCost, bestStart := 0.0, -1
	for st := range leaves {
		if anyConnected && !connected[st] {
			continue
		}
		tree, used, cost := greedyFrom(st, leaves, leafCols, conds, condCols, equis)
		if bestStart < 0 || cost < bestCost ||
			cost == bestCost && EstimateRows(leaves[st]) < EstimateRows(leaves[bestStart]) {
			best, bestUsed, bestCost, bestStart = tree, used, cost, st
		}
	}
	// Conjuncts over columns from outside the tree cannot be attached to a
	// join; keep them in a Filter on top.
	var rest []Expr
	for k, c := range conds {
		if !bestUsed[k] {
			rest = append(rest, c)
		}
	}
	return filterOver(best, rest)
}

// equiSides are the columns of an equality's two operands (nil for a
// condition that is not an equality of columns on both sides), computed
// once for isEquiBetween's test at every step of every start.
type equiSides struct{ l, r ColumnSet }

// greedyFrom builds the left-deep tree that starts at leaves[start] and
// repeatedly joins the input giving the smallest estimated result among
// those an equality connects. It returns the tree, which conditions it
// attached, and the sum of its joins' estimated rows.
func greedyFrom(start int, leaves []Node, leafCols []ColumnSet, conds []Expr, condCols []ColumnSet, equis []equiSides) (Node, []bool, float64) {
	used := make([]bool, len(conds))
	done := make([]bool, len(leaves))
	cur := leaves[start]
	done[start] = true
	curCols := cur.Schema().IDs()
	// Unclamped estimates, as estimateJoin passes them on.
	curRows := estimate(cur)
	leafRows := make([]float64, len(leaves))
	leafBase := make([]float64, len(leaves))
	for i, leaf := range leaves {
		leafRows[i] = estimate(leaf)
		leafBase[i] = maxBaseRows(leaf)
	}
	// The tree's largest base table, kept as it grows (a join's is the
	// larger of its sides').
	curBase := leafBase[start]
	cost := 0.0
	for step := 1; step < len(leaves); step++ {
		best, bestConnected, bestRows, bestRaw := -1, false, 0.0, 0.0
		var bestJoin Node
		var bestUsed []int
		for i, leaf := range leaves {
			if done[i] {
				continue
			}
			var apply []Expr
			var idx []int
			connected := false
			for k, c := range conds {
				if used[k] || !subsetOfEither(condCols[k], curCols, leafCols[i]) {
					continue
				}
				apply = append(apply, c)
				idx = append(idx, k)
				if eq := equis[k]; eq.l != nil && (eq.l.SubsetOf(curCols) && eq.r.SubsetOf(leafCols[i]) || eq.l.SubsetOf(leafCols[i]) && eq.r.SubsetOf(curCols)) {
					connected = true
				}
			}
			cand := &Join{Kind: JoinInner, Left: cur, Right: leaf, Cond: Conjunction(apply)}
			// EstimateRows(cand), from the estimates already known.
			raw := innerJoinRowsCols(cand, curRows, leafRows[i], curCols, leafCols[i], curBase, leafBase[i])
			rows := math.Max(1, raw)
			better := best < 0 ||
				(connected && !bestConnected) ||
				(connected == bestConnected && rows < bestRows)
			if better {
				best, bestConnected, bestRows, bestRaw, bestJoin, bestUsed = i, connected, rows, raw, cand, idx
			}
		}
		done[best] = true
		for _, k := range bestUsed {
			used[k] = true
		}
		cur = bestJoin
		for id := range leafCols[best] {
			curCols[id] = struct{}{} // curCols is the tree's own set (Schema().IDs() is a new one)
		}
		curRows = bestRaw
		curBase = math.Max(curBase, leafBase[best])
		cost += bestRows
	}
	return cur, used, cost
}

// subsetOfEither reports whether every column of s is in a or in b (s is a
// subset of their union, without building it).
func subsetOfEither(s, a, b ColumnSet) bool {
	for id := range s {
		if !a.Has(id) && !b.Has(id) {
			return false
		}
	}
	return true
}

func union(a, b ColumnSet) ColumnSet {
	out := make(ColumnSet, len(a)+len(b))
	for id := range a {
		out[id] = struct{}{}
	}
	for id := range b {
		out[id] = struct{}{}
	}
	return out
}

// ChooseBuildSide puts the input with fewer estimated rows on the left of
// every inner join, because the physical hash join builds its table from
// the left input. The original column order is restored with a Project
// (which PruneColumns removes where the parent does not care about order).
func ChooseBuildSide(n Node, _ *OptContext) (Node, error) {
	return TransformUp(n, func(n Node) Node {
		j, ok := n.(*Join)
		if !ok || j.Kind != JoinInner {
			return n
		}
		if EstimateRows(j.Right) >= EstimateRows(j.Left) {
			return n
		}
		swapped := &Join{Kind: JoinInner, Left: j.Right, Right: j.Left, Cond: j.Cond}
		return restoreSchema(swapped, j.Schema())
	}), nil
}
