package sql

import (
	"slices"
	"sort"

	pg "github.com/pganalyze/pg_query_go/v6"

	"sluice/plan"
)

// maxGroupingSets bounds the grouping sets one GROUP BY may expand to (the
// input is replicated once per set).
const maxGroupingSets = 4096

// groupingSets is a GROUP BY with GROUPING SETS, ROLLUP or CUBE, bound:
// the distinct key expressions, each set as indices into keys, and the
// grouping id column the Expand under the aggregate adds.
type groupingSets struct {
	sets [][]int
	gid  plan.Column
}

// groupBy binds the GROUP BY clause. It returns the distinct group
// expressions and, when the clause has more than one grouping set, the sets
// (indices into the expressions); a clause that amounts to a single set is
// a plain GROUP BY of that set's expressions (nil sets).
func (b *binder) groupBy(clause []*pg.Node, items []item, sc *scope) ([]plan.Expr, [][]int, error) {
	var keys []plan.Expr
	index := map[string]int{}
	key := func(g *pg.Node) (int, error) {
		e, err := b.groupExpr(g, items, sc)
		if err != nil {
			return 0, err
		}
		k := exprKey(e)
		if i, ok := index[k]; ok {
			return i, nil
		}
		index[k] = len(keys)
		keys = append(keys, e)
		return len(keys) - 1, nil
	}
	// list binds a plain expression or a parenthesized list of them.
	list := func(g *pg.Node) ([]int, error) {
		var elems []*pg.Node
		switch x := g.Node.(type) {
		case *pg.Node_RowExpr:
			elems = x.RowExpr.Args
		case *pg.Node_GroupingSet:
			if x.GroupingSet.Kind != pg.GroupingSetKind_GROUPING_SET_SIMPLE && x.GroupingSet.Kind != pg.GroupingSetKind_GROUPING_SET_EMPTY {
				return nil, b.errAt("bind", x.GroupingSet.Location, "ROLLUP, CUBE and GROUPING SETS cannot be nested here")
			}
			elems = x.GroupingSet.Content
		default:
			elems = []*pg.Node{g}
		}
		var out []int
		for _, el := range elems {
			i, err := key(el)
			if err != nil {
				return nil, err
			}
			out = append(out, i)
		}
		return out, nil
	}
	// element binds one GROUP BY element (or one member of GROUPING
	// SETS) to the grouping sets it stands for.
	var element func(g *pg.Node) ([][]int, error)
	element = func(g *pg.Node) ([][]int, error) {
		gs := g.GetGroupingSet()
		if gs == nil {
			l, err := list(g)
			return [][]int{l}, err
		}
		switch gs.Kind {
		case pg.GroupingSetKind_GROUPING_SET_EMPTY:
			return [][]int{nil}, nil
		case pg.GroupingSetKind_GROUPING_SET_SIMPLE:
			l, err := list(g)
			return [][]int{l}, err
		case pg.GroupingSetKind_GROUPING_SET_ROLLUP, pg.GroupingSetKind_GROUPING_SET_CUBE:
			parts := make([][]int, len(gs.Content))
			for i, c := range gs.Content {
				l, err := list(c)
				if err != nil {
					return nil, err
				}
				parts[i] = l
			}
			var out [][]int
			if gs.Kind == pg.GroupingSetKind_GROUPING_SET_ROLLUP {
				for n := len(parts); n >= 0; n-- {
					out = append(out, slices.Concat(parts[:n]...))
				}
				return out, nil
			}
			if len(parts) > 12 {
				return nil, b.errAt("bind", gs.Location, "CUBE is limited to 12 elements")
			}
			// Every subset, the full one first.
			for mask := (1 << len(parts)) - 1; mask >= 0; mask-- {
				var set []int
				for i, p := range parts {
					if mask&(1<<(len(parts)-1-i)) != 0 {
						set = append(set, p...)
					}
				}
				out = append(out, set)
			}
			return out, nil
		case pg.GroupingSetKind_GROUPING_SET_SETS:
			var out [][]int
			for _, c := range gs.Content {
				sub, err := element(c)
				if err != nil {
					return nil, err
				}
				out = append(out, sub...)
				if len(out) > maxGroupingSets {
					return nil, b.errAt("bind", gs.Location, "too many grouping sets (more than %d)", maxGroupingSets)
				}
			}
			return out, nil
		}
		return nil, b.errAt("bind", gs.Location, "unsupported grouping set")
	}
	sets := [][]int{nil}
	hasSets := false
	for _, g := range clause {
		if g.GetGroupingSet() != nil {
			hasSets = true
		}
		el, err := element(g)
		if err != nil {
			return nil, nil, err
		}
		// GROUP BY a, ROLLUP(b, c): the cross product of the elements'
		// sets, each pair concatenated.
		var next [][]int
		for _, s := range sets {
			for _, e := range el {
				next = append(next, slices.Concat(s, e))
			}
		}
		if len(next) > maxGroupingSets {
			return nil, nil, b.errAt("bind", nodeLoc(g), "too many grouping sets (more than %d)", maxGroupingSets)
		}
		sets = next
	}
	for i, s := range sets {
		sort.Ints(s)
		sets[i] = slices.Compact(s)
	}
	if !hasSets || len(sets) == 1 {
		// One set: a plain GROUP BY of its keys (in first-seen order).
		var plain []plan.Expr
		for _, k := range sets[0] {
			plain = append(plain, keys[k])
		}
		return plain, nil, nil
	}
	return keys, sets, nil
}

// groupingFunc binds grouping(a, b, ...): an integer whose bits, the
// leftmost argument the most significant, are set for the arguments not
// grouped in the row's grouping set. It is computed from the grouping id.
func (b *binder) groupingFunc(g *pg.GroupingFunc, c ectx) (plan.Expr, error) {
	if c.agg == nil {
		return nil, b.errAt("bind", g.Location, "grouping() is not allowed in %s", c.clause)
	}
	if len(g.Args) > 31 {
		return nil, b.errAt("bind", g.Location, "GROUPING must have fewer than 32 arguments")
	}
	args := make([]int, len(g.Args))
	for i, a := range g.Args {
		e, err := b.expr(a, ectx{sc: c.sc, clause: "GROUPING arguments"})
		if err != nil {
			return nil, err
		}
		args[i] = -1
		for k, key := range c.agg.groups {
			if exprKey(key) == exprKey(e) {
				args[i] = k
				break
			}
		}
		if args[i] < 0 {
			return nil, b.errAt("bind", nodeLoc(a), "arguments to GROUPING must be grouping expressions of the associated query level")
		}
	}
	lit := func(v int32) plan.Expr { return &plan.Literal{Typ: plan.Int32, Val: v} }
	gs := c.agg.sets
	if gs == nil {
		return lit(0), nil
	}
	byValue := map[int32][]plan.Expr{}
	var values []int32
	for id, set := range gs.sets {
		var v int32
		for _, k := range args {
			v <<= 1
			if !slices.Contains(set, k) {
				v |= 1
			}
		}
		if _, ok := byValue[v]; !ok {
			values = append(values, v)
		}
		byValue[v] = append(byValue[v], &plan.Literal{Typ: plan.Int64, Val: int64(id)})
	}
	if len(values) == 1 {
		return lit(values[0]), nil
	}
	gid := gs.gid.Ref()
	out := &plan.Case{Typ: plan.Int32, Else: lit(values[len(values)-1])}
	for _, v := range values[:len(values)-1] {
		var cond plan.Expr
		if ids := byValue[v]; len(ids) == 1 {
			cond = &plan.Binary{Op: plan.OpEq, L: gid, R: ids[0], Typ: plan.Bool}
		} else {
			cond = &plan.InList{X: gid, List: ids}
		}
		out.Whens = append(out.Whens, plan.When{Cond: cond, Then: lit(v)})
	}
	return out, nil
}
