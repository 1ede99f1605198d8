package plan

import "fmt"

// SplitDistinctAggregates turns an aggregate that mixes DISTINCT functions
// with ordinary ones into two ordinary aggregates, as DataFusion's
// SingleDistinctToGroupBy and Spark's RewriteDistinctAggregates do. A
// DISTINCT function needs every value of its group in one place, so such
// an aggregate runs as one single-stage hash aggregate after a repartition
// on its keys (or, without GROUP BY, on one core), and it cannot spill:
// its sets and its partial states do not fit one spill format. The two
// aggregates it becomes run partial/final in parallel and spill like any
// other.
//
// With one DISTINCT argument x (any number of functions over it),
//
//	Aggregate(groupBy g, f(DISTINCT x), h(y))
//
// becomes
//
//	Aggregate(groupBy g', f(x'), combine(p))  over  Aggregate(groupBy g, x; p = partial h(y))
//
// The inner aggregate makes x distinct within each group of g and computes
// the partial results of the ordinary functions per (g, x); the outer one
// applies f to x' (each value now once) and combines the partials: sums and
// counts add, minima and maxima take the minimum and maximum, an average
// divides summed sums by summed counts. DISTINCT functions ignore NULL, and
// so do their plain forms over x', so the NULL group of x counts nowhere.
//
// With several DISTINCT arguments x1..xm, an Expand first replicates each
// row once for the ordinary functions (grouping id 0, every x NULL) and
// once per argument (grouping id j, xj kept, the other x NULL); the inner
// aggregate groups by g, x1..xm and the grouping id, and the outer one
// applies each DISTINCT function to its own x (NULL outside its copies)
// and combines only the partials of copy 0 (CASE WHEN gid = 0).
//
// Without GROUP BY (or with a grand-total grouping set) the outer
// aggregate outputs a row over no input, where a summed count is NULL: a
// Project above gives such counts back as coalesce(sum, 0).
//
// The rule applies when at least one function is DISTINCT and one is not,
// or, without GROUP BY, when every function is DISTINCT over one argument
// (count(DISTINCT x) alone runs on one core otherwise). The DISTINCT ones
// are count, sum, avg, min, max, the variances and standard deviations,
// bool_and and bool_or of one argument, the others sum, count, count(*),
// min, max and avg, none with ORDER BY. Anything else (string_agg,
// two-argument functions, ordered calls) keeps the single-stage plan. It runs after the rules that reshape aggregates
// (eager aggregation, reduction by a join), which expect the original
// aggregate, and before pruning.
func SplitDistinctAggregates(n Node, ctx *OptContext) (Node, error) {
	return TransformUp(n, func(n Node) Node { return splitDistinct(n, ctx) }), nil
}

// distinctSplittable lists the functions whose DISTINCT form equals the
// plain form over the distinct non-NULL values.
var distinctSplittable = map[AggFunc]bool{
	AggCount: true, AggSum: true, AggAvg: true, AggMin: true, AggMax: true,
	AggStddevSamp: true, AggStddevPop: true, AggVarSamp: true, AggVarPop: true,
	AggBoolAnd: true, AggBoolOr: true,
}

// distinctArgKey identifies a DISTINCT argument by its text, type and the
// columns it reads (two columns may share a name).
func distinctArgKey(e Expr) string {
	return fmt.Sprintf("%s:%s%v", e, e.Type(), sortedIDs(ColumnsOf(e)))
}

func splitDistinct(n Node, ctx *OptContext) Node {
	a, ok := n.(*Aggregate)
	if !ok {
		return n
	}
	var args []Expr        // the distinct arguments, in order of appearance
	argOf := map[int]int{} // call index -> index into args
	keyIdx := map[string]int{}
	hasPlain := false
	for i, f := range a.Aggs {
		if len(f.OrderBy) > 0 || f.Arg2 != nil {
			return n
		}
		if !f.Distinct {
			switch f.Func {
			case AggSum, AggCount, AggCountStar, AggMin, AggMax, AggAvg:
			default:
				return n
			}
			hasPlain = true
			continue
		}
		if !distinctSplittable[f.Func] || f.Arg == nil {
			return n
		}
		key := distinctArgKey(f.Arg)
		j, seen := keyIdx[key]
		if !seen {
			j = len(args)
			keyIdx[key] = j
			args = append(args, f.Arg)
		}
		argOf[i] = j
	}
	k := len(a.GroupBy)
	// DISTINCT functions alone already spill (their sets as raw rows), and
	// with group keys run in every partition; only the global ones of one
	// argument, which run on one core, gain from the rewrite.
	if len(args) == 0 || (!hasPlain && (len(args) > 1 || k > 0 || len(a.GrandTotals) > 0)) {
		return n
	}
	in := a.Input
	inSchema := in.Schema()
	// fresh names a new column after the expression it holds.
	fresh := func(e Expr, name, table string) Column {
		if c, ok := e.(*ColRef); ok && name == "" {
			if i := inSchema.IndexOf(c.ID); i >= 0 {
				name, table = inSchema[i].Name, inSchema[i].Table
			}
		}
		if name == "" {
			name = e.String()
		}
		return Column{ID: ctx.IDs.Next(), Name: name, Table: table, Type: e.Type(), Nullable: true}
	}

	inner := &Aggregate{}
	var keyRefs, argRefs []Expr // the inner aggregate's key and x columns
	var gid Expr                // the copy's grouping id (several arguments only)
	if len(args) == 1 {
		inner.Input = in
		for i, g := range a.GroupBy {
			c := fresh(g, a.Cols[i].Name, a.Cols[i].Table)
			inner.GroupBy = append(inner.GroupBy, g)
			inner.Cols = append(inner.Cols, c)
			keyRefs = append(keyRefs, c.Ref())
		}
		c := fresh(args[0], "", "")
		inner.GroupBy = append(inner.GroupBy, args[0])
		inner.Cols = append(inner.Cols, c)
		argRefs = append(argRefs, c.Ref())
	} else {
		e := &Expand{Input: in, Keys: append(append([]Expr(nil), a.GroupBy...), args...)}
		all := make([]int, k)
		for i := range all {
			all[i] = i
		}
		e.Sets = append(e.Sets, all)
		for j := range args {
			e.Sets = append(e.Sets, append(append([]int(nil), all...), k+j))
		}
		for i, g := range a.GroupBy {
			e.Cols = append(e.Cols, fresh(g, a.Cols[i].Name, a.Cols[i].Table))
		}
		for _, x := range args {
			e.Cols = append(e.Cols, fresh(x, "", ""))
		}
		e.Cols = append(e.Cols, Column{ID: ctx.IDs.Next(), Name: "distinct_gid", Type: Int64})
		inner.Input = e
		for i, c := range e.Cols {
			inner.GroupBy = append(inner.GroupBy, c.Ref())
			inner.Cols = append(inner.Cols, c)
			switch {
			case i < k:
				keyRefs = append(keyRefs, c.Ref())
			case i < k+len(args):
				argRefs = append(argRefs, c.Ref())
			default:
				gid = c.Ref()
			}
		}
	}

	outer := &Aggregate{Input: inner, GroupBy: keyRefs, Cols: append(Schema(nil), a.Cols[:k]...), GrandTotals: a.GrandTotals}
	// A count is NULL only in a row the outer aggregate makes up over no
	// input: without GROUP BY, or a grand-total set's row.
	fixCounts := k == 0 || len(a.GrandTotals) > 0
	top := &Project{Input: outer, Cols: a.Cols}
	for _, c := range a.Cols[:k] {
		top.Exprs = append(top.Exprs, c.Ref())
	}
	needTop := false
	partials := map[string]Column{}
	for i, f := range a.Aggs {
		col := a.Cols[k+i]
		if f.Distinct {
			outer.Aggs = append(outer.Aggs, &AggCall{Func: f.Func, Arg: argRefs[argOf[i]], Typ: f.Typ})
			outer.Cols = append(outer.Cols, col)
			top.Exprs = append(top.Exprs, col.Ref())
			continue
		}
		parts, outs, combine, ok := splitAgg(f, ctx)
		if !ok {
			return n
		}
		// A partial the inner aggregate computes already (avg's count
		// beside count(y), TPC-DS q28) is read again, not computed twice.
		same := map[ColumnID]Expr{}
		for j, p := range parts {
			key := partialKey(p)
			if c, ok := partials[key]; ok {
				same[outs[j].ID] = c.Ref()
				continue
			}
			partials[key] = outs[j]
			inner.Aggs = append(inner.Aggs, p)
			inner.Cols = append(inner.Cols, outs[j])
		}
		combine.Arg = substitute(combine.Arg, same)
		if combine.Arg2 != nil {
			combine.Arg2 = substitute(combine.Arg2, same)
		}
		if gid != nil {
			combine.Arg = onlyCopyZero(combine.Arg, gid)
			if combine.Arg2 != nil {
				combine.Arg2 = onlyCopyZero(combine.Arg2, gid)
			}
		}
		outer.Aggs = append(outer.Aggs, combine)
		if fixCounts && (f.Func == AggCount || f.Func == AggCountStar) {
			sum := Column{ID: ctx.IDs.Next(), Name: col.Name, Table: col.Table, Type: combine.Typ, Nullable: true}
			outer.Cols = append(outer.Cols, sum)
			top.Exprs = append(top.Exprs, &Func{Name: "coalesce", Args: []Expr{sum.Ref(), zeroOf(sum.Ref())}, Typ: col.Type})
			needTop = true
			continue
		}
		outer.Cols = append(outer.Cols, col)
		top.Exprs = append(top.Exprs, col.Ref())
	}
	if !needTop {
		return outer
	}
	return top
}

// partialKey identifies a partial aggregate call by its function, type
// and argument.
func partialKey(c *AggCall) string {
	if c.Arg == nil {
		return fmt.Sprintf("%s:%s", c.Func, c.Typ)
	}
	return fmt.Sprintf("%s:%s:%s", c.Func, c.Typ, distinctArgKey(c.Arg))
}

// onlyCopyZero keeps e in the rows of the ordinary functions' copy
// (grouping id 0) and is NULL in the DISTINCT arguments' copies.
func onlyCopyZero(e, gid Expr) Expr {
	return &Case{
		Whens: []When{{Cond: &Binary{Op: OpEq, L: gid, R: &Literal{Typ: Int64, Val: int64(0)}, Typ: Bool}, Then: e}},
		Typ:   e.Type(),
	}
}
