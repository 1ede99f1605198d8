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

// inputSet is a set of the inputs greedyJoin orders, one bit each (there
// are at most maxReorderInputs).
type inputSet uint64

// The bits of an inputSet must hold every input of one ordering.
const _ = uint(64 - maxReorderInputs)

func (s inputSet) with(i int) inputSet { return s | 1<<uint(i) }

// subsetOf reports whether every input of s is in o.
func (s inputSet) subsetOf(o inputSet) bool { return s&^o == 0 }

// conjunct is one condition conjunct of the joins being ordered, analysed
// once for the tests and estimates at every step of every start.
type conjunct struct {
	expr Expr
	// inputs are the inputs whose columns it reads; outside: it also reads
	// a column none of them has (it can only go in a Filter on top).
	inputs  inputSet
	outside bool
	// sel is its Selectivity.
	sel float64
	// An equality whose operands read columns of the inputs only: the
	// inputs of each operand (both non-empty).
	eq       bool
	eqL, eqR inputSet
	// An equality of two plain columns: each column's distinct count (<=
	// 0: unknown), with the operands' order.
	ndvL, ndvR float64
}

// between reports whether c is an equality with one operand over a's
// columns and the other over b's.
func (c *conjunct) between(a, b inputSet) bool {
	return c.eq && (c.eqL.subsetOf(a) && c.eqR.subsetOf(b) || c.eqL.subsetOf(b) && c.eqR.subsetOf(a))
}

// term is c's joinTerm in a join of a tree holding the inputs cur (the
// left side) with input i.
func (c *conjunct) term(cur inputSet, i int) joinTerm {
	leaf := inputSet(0).with(i)
	if !c.between(cur, leaf) {
		return joinTerm{sel: c.sel}
	}
	if c.eqL.subsetOf(cur) {
		return joinTerm{equi: true, ndvL: c.ndvL, ndvR: c.ndvR}
	}
	return joinTerm{equi: true, ndvL: c.ndvR, ndvR: c.ndvL}
}

func greedyJoin(leaves []Node, conds []Expr) Node {
	inputOf := map[ColumnID]int{}
	for i, l := range leaves {
		for _, c := range l.Schema() {
			inputOf[c.ID] = i
		}
	}
	// inputsOf returns the inputs whose columns cols holds, and whether it
	// holds a column of none.
	inputsOf := func(cols ColumnSet) (s inputSet, outside bool) {
		for id := range cols {
			i, ok := inputOf[id]
			if !ok {
				outside = true
				continue
			}
			s = s.with(i)
		}
		return s, outside
	}
	conjs := make([]conjunct, len(conds))
	for k, c := range conds {
		cj := &conjs[k]
		cj.expr = c
		cj.inputs, cj.outside = inputsOf(ColumnsOf(c))
		cj.sel = Selectivity(c)
		b, ok := c.(*Binary)
		if !ok || b.Op != OpEq {
			continue
		}
		l, lOut := inputsOf(ColumnsOf(b.L))
		r, rOut := inputsOf(ColumnsOf(b.R))
		if l == 0 || r == 0 || lOut || rOut {
			continue
		}
		cj.eq, cj.eqL, cj.eqR = true, l, r
		lc, lok := b.L.(*ColRef)
		rc, rok := b.R.(*ColRef)
		if lok && rok && l != r {
			cj.ndvL = ColumnNDV(leaves[inputOf[lc.ID]], lc.ID)
			cj.ndvR = ColumnNDV(leaves[inputOf[rc.ID]], rc.ID)
		}
	}
	est := NewEstimates()
	rows := make([]float64, len(leaves))
	base := make([]float64, len(leaves))
	for i, leaf := range leaves {
		// Unclamped estimates, as estimateJoin passes them on.
		rows[i] = est.estimate(leaf)
		base[i] = est.maxBaseRows(leaf)
	}
	// Only inputs that some equality connects to another may start, so a
	// disconnected input is cross-joined last, not first.
	connected := make([]bool, len(leaves))
	anyConnected := false
	for k := range conjs {
		cj := &conjs[k]
		if !cj.eq || cj.eqL == cj.eqR || !single(cj.eqL) || !single(cj.eqR) {
			continue
		}
		for i := range leaves {
			if cj.eqL == inputSet(0).with(i) || cj.eqR == inputSet(0).with(i) {
				connected[i], anyConnected = true, true
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
		tree, used, cost := greedyFrom(st, leaves, rows, base, conjs)
		if bestStart < 0 || cost < bestCost ||
			cost == bestCost && est.Rows(leaves[st]) < est.Rows(leaves[bestStart]) {
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

// single reports whether s holds exactly one input.
func single(s inputSet) bool { return s != 0 && s&(s-1) == 0 }

// greedyFrom builds the left-deep tree that starts at leaves[start] and
// repeatedly joins the input giving the smallest estimated result among
// those an equality connects. rows and base are the inputs' estimated and
// largest base rows (maxBaseRows). It returns the tree, which conjuncts it
// attached, and the sum of its joins' estimated rows.
func greedyFrom(start int, leaves []Node, rows, base []float64, conjs []conjunct) (Node, []bool, float64) {
	used := make([]bool, len(conjs))
	done := make([]bool, len(leaves))
	cur := leaves[start]
	done[start] = true
	curSet := inputSet(0).with(start)
	curRows := rows[start]
	// The tree's largest base table, kept as it grows (a join's is the
	// larger of its sides').
	curBase := base[start]
	cost := 0.0
	var terms []joinTerm
	var idx, bestIdx []int
	for step := 1; step < len(leaves); step++ {
		best, bestConnected, bestRows, bestRaw := -1, false, 0.0, 0.0
		for i := range leaves {
			if done[i] {
				continue
			}
			both := curSet.with(i)
			leaf := inputSet(0).with(i)
			terms, idx = terms[:0], idx[:0]
			connected := false
			for k := range conjs {
				cj := &conjs[k]
				if used[k] || cj.outside || !cj.inputs.subsetOf(both) {
					continue
				}
				idx = append(idx, k)
				terms = append(terms, cj.term(curSet, i))
				if cj.between(curSet, leaf) {
					connected = true
				}
			}
			raw := joinRows(terms, curRows, rows[i], curBase, base[i])
			est := math.Max(1, raw)
			better := best < 0 ||
				(connected && !bestConnected) ||
				(connected == bestConnected && est < bestRows)
			if better {
				best, bestConnected, bestRows, bestRaw = i, connected, est, raw
				bestIdx = append(bestIdx[:0], idx...)
			}
		}
		done[best] = true
		apply := make([]Expr, len(bestIdx))
		for n, k := range bestIdx {
			used[k] = true
			apply[n] = conjs[k].expr
		}
		cur = &Join{Kind: JoinInner, Left: cur, Right: leaves[best], Cond: Conjunction(apply)}
		curSet = curSet.with(best)
		curRows = bestRaw
		curBase = math.Max(curBase, base[best])
		cost += bestRows
	}
	return cur, used, cost
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
	est := NewEstimates()
	return TransformUp(n, func(n Node) Node {
		j, ok := n.(*Join)
		if !ok || j.Kind != JoinInner {
			return n
		}
		if est.Rows(j.Right) >= est.Rows(j.Left) {
			return n
		}
		swapped := &Join{Kind: JoinInner, Left: j.Right, Right: j.Left, Cond: j.Cond}
		return restoreSchema(swapped, j.Schema())
	}), nil
}
