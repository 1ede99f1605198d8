// Package planner is the physical planner: it turns an optimized logical
// plan into a tree of package physical's operators, choosing how each
// node is partitioned (repartitions, broadcast or partitioned joins,
// windows hashed by the aggregate below them), sharing aggregates and
// windows a plan computes twice, and guessing each operator's output
// size for the distributed planner. It is the one package that knows
// every operator and every logical node; the operators know nothing of
// it.
package planner

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"sluice/catalog"
	"sluice/physical"
	"sluice/physical/expr"
	"sluice/plan"
)

// Config holds the settings that shape a physical plan.
type Config struct {
	// TargetPartitions is how many partitions scans and repartitions produce.
	TargetPartitions int
	// BroadcastThreshold is the estimated size in bytes under which a hash
	// join collects its whole build side in every task (no repartition of
	// the probe side); larger build sides are hash-partitioned on both
	// sides. Zero means always broadcast.
	BroadcastThreshold int64
	// ShareSubplans plans an aggregate that occurs more than once in the
	// plan (the same subtree, as a view used twice gives) once, as a
	// SharedOutput read by each occurrence. For plans run in one process;
	// the cluster planner shares such a computation as a stage instead.
	ShareSubplans bool
}

// Plan turns an optimized logical plan into a physical operator tree. The
// operator for a logical node always produces that node's Schema() columns in
// the same order, so expressions compile against the logical input schema.
// The root may have several partitions; callers that want one stream use
// NewCoalescePartitions (or read the partitions concurrently).
func Plan(n plan.Node, cfg Config) (physical.Operator, error) {
	op, _, err := PlanEstimated(n, cfg)
	return op, err
}

// PlanEstimated is Plan, also returning the planner's size estimates of
// the plan's operators (see Estimates).
func PlanEstimated(n plan.Node, cfg Config) (physical.Operator, *Estimates, error) {
	if cfg.TargetPartitions <= 0 {
		cfg.TargetPartitions = physical.DefaultTargetPartitions()
	}
	n = splitWindows(n)
	p := &planner{cfg: cfg, est: &Estimates{nodes: map[physical.Operator]plan.Node{}, rows: plan.NewEstimates()}}
	if cfg.ShareSubplans {
		p.shared = map[string]*physical.SharedOutput{}
		p.keys = plan.NewSubtreeKeys()
		p.occurs = map[string]int{}
		p.keys.CountAggregates(n, p.occurs)
		countWindowsOverAggregates(p.keys, n, p.occurs)
	}
	p.hashBy = windowHints(n, cfg.TargetPartitions, p.keys)
	op, err := p.plan(n)
	if err != nil {
		return nil, nil, err
	}
	return op, p.est, nil
}

// Estimates are what the planner guessed of its operators' outputs: each
// operator planned for a logical node is mapped to that node, whose rows
// plan.EstimateRows guesses, and whose bytes are those rows times a width
// per column type (the guess the broadcast threshold is compared with).
// The distributed planner records them per stage, so that a blocking job
// can show the estimate beside the exact size its shuffle files had.
type Estimates struct {
	nodes map[physical.Operator]plan.Node
	// rows remembers the logical estimates: a node's estimate reads its
	// inputs', so asking each one afresh would be quadratic in the plan's
	// joins.
	rows *plan.Estimates
}

// Of returns the estimated rows and bytes of op's output; ok is false for
// an operator the planner added without a logical node of its own (a
// repartition, a partial aggregate) or one not of this plan.
func (e *Estimates) Of(op physical.Operator) (rows, bytes float64, ok bool) {
	if e == nil {
		return 0, 0, false
	}
	n, ok := e.nodes[op]
	if !ok {
		return 0, 0, false
	}
	return e.rows.Rows(n), e.bytes(n), true
}

type planner struct {
	cfg Config
	// With ShareSubplans: how often each aggregate subtree occurs in the
	// plan, and the SharedOutput of those occurring more than once, by
	// their plan.SubtreeKeys key.
	keys   *plan.SubtreeKeys
	occurs map[string]int
	shared map[string]*physical.SharedOutput
	// est maps each operator planned for a logical node to the node.
	est *Estimates
	// hashBy: for an aggregate whose output a window partitions by some
	// of its group keys, the positions of those keys; the aggregate
	// shuffles by them alone, so the window needs no exchange of its own
	// (windowHashHint).
	hashBy map[*plan.Aggregate][]int
	// groupLimit: for a window whose ranking a filter above bounds, the
	// bound (windowFilterLimit); window plans a WindowGroupLimit for it.
	groupLimit map[*plan.Window]windowLimit
}

// plan plans n and records which operator stands for n's output (the
// innermost, when n added nothing of its own).
func (p *planner) plan(n plan.Node) (physical.Operator, error) {
	op, err := p.planNode(n)
	if err == nil {
		p.note(op, n)
	}
	return op, err
}

// note records that op stands for n's output, unless it already stands
// for a node below n.
func (p *planner) note(op physical.Operator, n plan.Node) {
	if p.est == nil {
		return
	}
	if _, ok := p.est.nodes[op]; !ok {
		p.est.nodes[op] = n
	}
}

func (p *planner) planNode(n plan.Node) (physical.Operator, error) {
	switch n := n.(type) {
	case *plan.Scan:
		return p.scan(n)
	case *plan.Filter:
		if w, ok := n.Input.(*plan.Window); ok {
			if l, ok := windowFilterLimit(n.Pred, w); ok {
				if p.groupLimit == nil {
					p.groupLimit = map[*plan.Window]windowLimit{}
				}
				// For this filter's input only: the same window node
				// read elsewhere without the filter keeps every row.
				p.groupLimit[w] = l
				defer delete(p.groupLimit, w)
			}
		}
		in, err := p.plan(n.Input)
		if err != nil {
			return nil, err
		}
		pred, err := expr.Compile(n.Pred, n.Input.Schema())
		if err != nil {
			return nil, err
		}
		return physical.NewFilter(in, pred), nil
	case *plan.Project:
		in, err := p.plan(n.Input)
		if err != nil {
			return nil, err
		}
		exprs, err := compileAll(n.Exprs, n.Input.Schema())
		if err != nil {
			return nil, err
		}
		return physical.NewProjection(in, exprs, names(n.Cols)), nil
	case *plan.Aggregate:
		return p.share(n, func() (physical.Operator, error) { return p.aggregate(n) })
	case *plan.Expand:
		in, err := p.plan(n.Input)
		if err != nil {
			return nil, err
		}
		keys, err := compileAll(n.Keys, n.Input.Schema())
		if err != nil {
			return nil, err
		}
		k := len(n.Keys)
		return physical.NewExpand(in, keys, names(n.Cols[:k]), n.Sets, n.Cols[k].Name)
	case *plan.Join:
		return p.join(n)
	case *plan.Sort:
		return p.sort(n, -1)
	case *plan.Window:
		return p.share(n, func() (physical.Operator, error) { return p.window(n) })
	case *plan.Unnest:
		in, err := p.plan(n.Input)
		if err != nil {
			return nil, err
		}
		args, err := compileAll(n.Args, n.Input.Schema())
		if err != nil {
			return nil, err
		}
		var pass []int
		for i, c := range n.Input.Schema() {
			if !n.Drop.Has(c.ID) {
				pass = append(pass, i)
			}
		}
		return physical.NewUnnest(in, pass, args, names(n.Cols))
	case *plan.Limit:
		return p.limit(n)
	case *plan.Union:
		// The union's partitions are its inputs' partitions side by side;
		// the inputs share the target between them, so that a union of k
		// inputs has about as many partitions as one input would (a
		// pipelined job needs a vcore for every partition of its widest
		// stage at once: three scans of 2 partitions each did not fit a
		// 4-vcore cluster). Inputs that still have more partitions than
		// the target together (more inputs than the target, each with at
		// least one partition) are folded into the target.
		sub := &planner{cfg: p.cfg, keys: p.keys, occurs: p.occurs, shared: p.shared, est: p.est, hashBy: p.hashBy}
		sub.cfg.TargetPartitions = max(1, p.cfg.TargetPartitions/len(n.Inputs))
		ins := make([]physical.Operator, len(n.Inputs))
		for i, c := range n.Inputs {
			op, err := sub.plan(c)
			if err != nil {
				return nil, err
			}
			// Inputs are matched by position; rename to the union's names.
			ins[i] = renameTo(op, c.Schema(), n.Cols)
			p.note(ins[i], c)
		}
		return physical.NewFoldedUnion(ins, p.cfg.TargetPartitions), nil
	case *plan.SetOp:
		return p.setOp(n)
	case *plan.Values:
		rows := make([][]expr.Expr, len(n.Rows))
		for i, r := range n.Rows {
			row, err := compileAll(r, nil)
			if err != nil {
				return nil, err
			}
			rows[i] = row
		}
		return physical.NewValues(ArrowSchema(n.Cols), rows), nil
	case *plan.RecursiveCTE:
		// Both terms run inside the recursive CTE's task, the recursive
		// one again every iteration: one partition each, and nothing
		// shared with the rest of the plan (an output shared across
		// iterations would be the first iteration's).
		sub := &planner{cfg: p.cfg, est: p.est, hashBy: p.hashBy}
		sub.cfg.TargetPartitions = 1
		base, err := sub.plan(n.Base)
		if err != nil {
			return nil, err
		}
		rec, err := sub.plan(n.Recursive)
		if err != nil {
			return nil, err
		}
		base, rec = renameTo(base, n.Base.Schema(), n.Cols), renameTo(rec, n.Recursive.Schema(), n.Cols)
		return physical.NewRecursiveCTE(n.Name, base, rec, n.Distinct, n.WorkID, ArrowSchema(n.Cols)), nil
	case *plan.WorkTable:
		return physical.NewWorkTableScan(n.Name, n.WorkID, ArrowSchema(n.Cols)), nil
	case *plan.GenerateSeries:
		args, err := compileAll([]plan.Expr{n.Start, n.Stop, n.Step}, nil)
		if err != nil {
			return nil, err
		}
		return physical.NewGenerateSeries(ArrowSchema(n.Schema()), args[0], args[1], args[2])
	}
	return nil, fmt.Errorf("internal: no physical plan for %T", n)
}

// ArrowSchema converts a logical schema to an Arrow schema.
func ArrowSchema(s plan.Schema) *arrow.Schema {
	fields := make([]arrow.Field, len(s))
	for i, c := range s {
		fields[i] = arrow.Field{Name: c.Name, Type: c.Type, Nullable: true}
	}
	return arrow.NewSchema(fields, nil)
}

func names(s plan.Schema) []string {
	out := make([]string, len(s))
	for i, c := range s {
		out[i] = c.Name
	}
	return out
}

func compileAll(es []plan.Expr, in plan.Schema) ([]expr.Expr, error) {
	out := make([]expr.Expr, len(es))
	for i, e := range es {
		c, err := expr.Compile(e, in)
		if err != nil {
			return nil, err
		}
		out[i] = c
	}
	return out, nil
}

// renameTo projects op's columns (schema from) under the names of to, when
// they differ.
func renameTo(op physical.Operator, from, to plan.Schema) physical.Operator {
	same := true
	for i := range from {
		if from[i].Name != to[i].Name {
			same = false
		}
	}
	if same {
		return op
	}
	exprs := make([]expr.Expr, len(from))
	for i, c := range from {
		exprs[i] = &expr.Column{Index: i, Name: c.Name, Type: c.Type}
	}
	return physical.NewProjection(op, exprs, names(to))
}

func (p *planner) scan(n *plan.Scan) (physical.Operator, error) {
	var op physical.Operator
	switch t := n.Table.(type) {
	case *catalog.ParquetTable:
		if err := physical.CheckParquetProjection(n.TableName, t, n.Projection); err != nil {
			return nil, err
		}
		if len(t.Files) == 0 {
			// A table with no files yet (an empty managed table) has only
			// its declared schema, which a scan shipped to an executor
			// could not rebuild from files: it is no rows of that schema.
			op = physical.NewValues(physical.ProjectSchema(t.Schema(), n.Projection), nil)
			break
		}
		op = physical.NewParquetScan(n.TableName, t, n.Projection, pruningPredicates(n), p.cfg.TargetPartitions)
	case *catalog.CSVTable:
		op = physical.NewCSVScan(n.TableName, t, n.Projection, p.cfg.TargetPartitions)
	case *catalog.MemTable:
		op = physical.NewMemScan(n.TableName, t, n.Projection, p.cfg.TargetPartitions)
	default:
		return nil, fmt.Errorf("internal: cannot scan table %s of type %T", n.TableName, n.Table)
	}
	if len(n.Filters) == 0 {
		return op, nil
	}
	pred, err := expr.Compile(plan.Conjunction(n.Filters), n.Cols)
	if err != nil {
		return nil, err
	}
	return physical.NewFilter(op, pred), nil
}

// pruningPredicates extracts `column op literal` conjuncts from a scan's
// filters, for row-group pruning. The filters themselves are still applied.
func pruningPredicates(n *plan.Scan) []physical.ColumnPredicate {
	var out []physical.ColumnPredicate
	for _, f := range n.Filters {
		b, ok := f.(*plan.Binary)
		if !ok || !b.Op.IsComparison() || b.Op == plan.OpNotEq {
			continue
		}
		col, lok := b.L.(*plan.ColRef)
		lit, rok := b.R.(*plan.Literal)
		op := b.Op
		if !lok || !rok {
			col, lok = b.R.(*plan.ColRef)
			lit, rok = b.L.(*plan.Literal)
			op = op.Flip()
		}
		if !lok || !rok || lit.Val == nil {
			continue
		}
		i := n.Cols.IndexOf(col.ID)
		if i < 0 || !arrow.TypeEqual(n.Cols[i].Type, lit.Typ) {
			continue
		}
		out = append(out, physical.ColumnPredicate{Column: n.Projection[i], Op: op, Value: *lit})
	}
	return out
}

func (p *planner) aggregate(n *plan.Aggregate) (physical.Operator, error) {
	in, err := p.plan(n.Input)
	if err != nil {
		return nil, err
	}
	inSchema := n.Input.Schema()
	groups, err := compileAll(n.GroupBy, inSchema)
	if err != nil {
		return nil, err
	}
	k := len(n.GroupBy)
	groupNames := names(n.Cols[:k])
	aggs := make([]physical.AggregateExpr, len(n.Aggs))
	distinct := false
	for i, a := range n.Aggs {
		aggs[i] = physical.AggregateExpr{Func: a.Func, Distinct: a.Distinct, Name: n.Cols[k+i].Name, Type: a.Typ}
		if a.Arg != nil {
			if aggs[i].Arg, err = expr.Compile(a.Arg, inSchema); err != nil {
				return nil, err
			}
		}
		if a.Arg2 != nil {
			if aggs[i].Arg2, err = expr.Compile(a.Arg2, inSchema); err != nil {
				return nil, err
			}
		}
		if len(a.OrderBy) > 0 {
			if aggs[i].OrderBy, err = p.sortKeys(a.OrderBy, inSchema); err != nil {
				return nil, err
			}
		}
		// DISTINCT and ORDER BY inside the call both need all of a
		// group's raw rows in one place.
		distinct = distinct || a.Distinct || len(a.OrderBy) > 0
	}
	// final builds the aggregate that outputs the groups (with the grand
	// totals of a grouping-sets aggregate).
	final := func(in physical.Operator, mode physical.AggMode) (physical.Operator, error) {
		h, err := physical.NewHashAggregate(in, mode, groups, groupNames, aggs)
		if err != nil {
			return nil, err
		}
		return h.WithGrandTotals(n.GrandTotals)
	}
	parts := in.OutputPartitioning().Count
	if parts <= 1 {
		return final(in, physical.AggSingle)
	}
	if len(n.GrandTotals) == 0 && physical.HashedWithin(in.OutputPartitioning(), groups) {
		// Every group's rows are in one input partition already (the
		// input is a join or an aggregate on some of these keys): one
		// aggregate per partition, with no partial step and no shuffle.
		return final(in, physical.AggSingle)
	}
	// by lists the group keys the rows are shuffled by: all of them, or
	// those a window above partitions by.
	by := p.hashBy[n]
	if len(by) == 0 {
		by = make([]int, k)
		for i := range by {
			by[i] = i
		}
	}
	if distinct {
		// Every row of a group must reach one partition before aggregating.
		if k == 0 {
			in = physical.NewCoalescePartitions(in)
		} else {
			keys := make([]expr.Expr, len(by))
			for i, g := range by {
				keys[i] = groups[g]
			}
			in = physical.NewRepartition(in, physical.Partitioning{Kind: physical.PartHash, Count: p.cfg.TargetPartitions, Keys: keys})
		}
		return final(in, physical.AggSingle)
	}
	partial, err := physical.NewHashAggregate(in, physical.AggPartial, groups, groupNames, aggs)
	if err != nil {
		return nil, err
	}
	var mid physical.Operator
	if k == 0 {
		mid = physical.NewCoalescePartitions(partial)
	} else {
		keys := make([]expr.Expr, len(by))
		for i, g := range by {
			keys[i] = &expr.Column{Index: g, Name: groupNames[g], Type: groups[g].DataType()}
		}
		mid = physical.NewRepartition(partial, physical.Partitioning{Kind: physical.PartHash, Count: p.cfg.TargetPartitions, Keys: keys})
	}
	return final(mid, physical.AggFinal)
}

// WindowHintMinDistinct is how many distinct values per partition, at
// least, the keys a window partitions by must take for the aggregate below
// it to shuffle by those keys alone: fewer would leave the aggregate's
// partitions uneven (a window by i_category over an aggregate by it and
// seven more keys, TPC-DS q67). A key whose distinct count is unknown
// counts as windowHintUnknownDistinct. Results do not depend on it; the
// sqllogictest suites vary it.
var WindowHintMinDistinct = 32

const windowHintUnknownDistinct = 10

// share plans n with build, once for all of n's occurrences in the plan
// when ShareSubplans counted more than one (aggregates and windows): a
// SharedOutput every occurrence reads.
func (p *planner) share(n plan.Node, build func() (physical.Operator, error)) (physical.Operator, error) {
	if p.occurs == nil {
		return build()
	}
	key := p.keys.Key(n)
	if p.occurs[key] < 2 {
		return build()
	}
	// Occurrences planned for another partition count (union
	// branches) are planned apart.
	key += fmt.Sprintf("|partitions=%d", p.cfg.TargetPartitions)
	if s, ok := p.shared[key]; ok {
		s.Refs++
		return s, nil
	}
	op, err := build()
	if err != nil {
		return nil, err
	}
	s := physical.NewSharedOutput(op, 1)
	p.shared[key] = s
	return s, nil
}

// countWindowsOverAggregates adds to occurs how many times each window
// subtree of n over an aggregate (through filters, projections and other
// windows) occurs, by key. Sharing keeps a window's whole output for its
// readers; over an aggregate, as the distributed planner requires of the
// stages it shares, that output is no bigger than the aggregate's.
func countWindowsOverAggregates(keys *plan.SubtreeKeys, n plan.Node, occurs map[string]int) {
	if w, ok := n.(*plan.Window); ok && overAggregate(w.Input) {
		occurs[keys.Key(n)]++
	}
	for _, c := range n.Children() {
		countWindowsOverAggregates(keys, c, occurs)
	}
}

// overAggregate reports whether n is an aggregate, perhaps under filters,
// projections and windows.
func overAggregate(n plan.Node) bool {
	for {
		switch x := n.(type) {
		case *plan.Aggregate:
			return true
		case *plan.Filter, *plan.Project, *plan.Window:
			n = x.Children()[0]
		default:
			return false
		}
	}
}

// splitWindows stacks the calls of a window node that use several windows
// (partition and order keys) as one node per window, in windowGroups'
// order, under a projection that restores the node's column order
// when the stack changes it. A CTE referenced several times is often
// pruned differently in each reference: TPC-DS q47 and q57 rank the
// monthly sales of each brand and store in all three references and
// average them in one, so the references' window nodes differed and each
// sorted the same rows again. Split, the ranking node is the same subtree
// in all three, which ShareSubplans (and the distributed planner's shared
// stages) compute once; the average above reads it still sorted.
func splitWindows(root plan.Node) plan.Node {
	return plan.TransformUp(root, func(n plan.Node) plan.Node {
		w, ok := n.(*plan.Window)
		if !ok {
			return n
		}
		groups := windowGroups(w)
		if len(groups) < 2 {
			return n
		}
		var out plan.Node = w.Input
		var order []int // call indexes in the order their columns are appended
		for _, g := range groups {
			next := &plan.Window{Input: out}
			for _, ci := range g.calls {
				next.Calls = append(next.Calls, w.Calls[ci])
				next.Cols = append(next.Cols, w.Cols[ci])
			}
			out = next
			order = append(order, g.calls...)
		}
		if slices.IsSorted(order) {
			return out
		}
		cols := w.Schema()
		exprs := make([]plan.Expr, len(cols))
		for i, c := range cols {
			exprs[i] = &plan.ColRef{ID: c.ID, Name: c.Name, Typ: c.Type}
		}
		return &plan.Project{Input: out, Exprs: exprs, Cols: cols}
	})
}

// windowHints finds, for each window over an aggregate, the group keys the
// aggregate should shuffle its rows by (windowHashHint). Equal aggregates
// in several places are computed once (ShareSubplans, and the distributed
// planner's shared stages), which they can only be if they shuffle alike:
// they take a hint only when every occurrence has the same one.
func windowHints(root plan.Node, parts int, keys *plan.SubtreeKeys) map[*plan.Aggregate][]int {
	hints := map[*plan.Aggregate][]int{}
	var aggs []*plan.Aggregate
	var walk func(n plan.Node)
	walk = func(n plan.Node) {
		switch x := n.(type) {
		case *plan.Window:
			if a, by := windowHashHint(x, parts); a != nil {
				hints[a] = by
			}
		case *plan.Aggregate:
			aggs = append(aggs, x)
		}
		for _, c := range n.Children() {
			walk(c)
		}
	}
	walk(root)
	if len(hints) == 0 {
		return nil
	}
	if keys == nil {
		keys = plan.NewSubtreeKeys()
	}
	type vote struct {
		by    []int
		agree bool
	}
	votes := map[string]*vote{}
	for _, a := range aggs {
		k := keys.Key(a)
		if v := votes[k]; v == nil {
			votes[k] = &vote{by: hints[a], agree: true}
		} else if !slices.Equal(v.by, hints[a]) {
			v.agree = false
		}
	}
	for _, a := range aggs {
		if !votes[keys.Key(a)].agree {
			delete(hints, a)
		}
	}
	return hints
}

// windowHashHint finds the aggregate below a window (through filters and
// projections that pass the keys on) whose group keys include every key
// the window's first exchange partitions by (the window planned first,
// see window), and returns the positions of those keys among the
// aggregate's: shuffled by them alone, the aggregate's rows are together
// for the window as they are for the aggregate, and one exchange serves
// both (TPC-DS q47, q51 and q57 aggregate by item and date, or by store,
// brand and month, and then window over each item or store and brand).
// The keys must take enough distinct values to spread the aggregate's rows
// evenly over parts partitions.
func windowHashHint(w *plan.Window, parts int) (*plan.Aggregate, []int) {
	groups := windowGroups(w)
	if len(groups) == 0 {
		return nil, nil
	}
	keys := w.Calls[groups[0].calls[0]].PartitionBy
	if len(keys) == 0 {
		return nil, nil
	}
	ids := make([]plan.ColumnID, len(keys))
	for i, k := range keys {
		c, ok := k.(*plan.ColRef)
		if !ok {
			return nil, nil
		}
		ids[i] = c.ID
	}
	n := w.Input
	for {
		switch x := n.(type) {
		case *plan.Filter:
			n = x.Input
			continue
		case *plan.Project:
			for i, id := range ids {
				j := x.Cols.IndexOf(id)
				if j < 0 {
					return nil, nil
				}
				c, ok := x.Exprs[j].(*plan.ColRef)
				if !ok {
					return nil, nil
				}
				ids[i] = c.ID
			}
			n = x.Input
			continue
		case *plan.Aggregate:
			if len(x.GrandTotals) > 0 {
				return nil, nil
			}
			var by []int
			distinct := 1.0
			for _, id := range ids {
				j := x.Cols.IndexOf(id)
				if j < 0 || j >= len(x.GroupBy) {
					return nil, nil
				}
				if slices.Contains(by, j) {
					continue
				}
				by = append(by, j)
				d := float64(windowHintUnknownDistinct)
				if c, ok := x.GroupBy[j].(*plan.ColRef); ok {
					if nd := plan.ColumnNDV(x.Input, c.ID); nd > 0 {
						d = nd
					}
				}
				distinct *= d
			}
			if len(by) == len(x.GroupBy) || distinct < float64(WindowHintMinDistinct*parts) {
				return nil, nil
			}
			slices.Sort(by)
			return x, by
		}
		return nil, nil
	}
}

// equiKeys splits a join condition into equality pairs (left expr, right
// expr) and the remaining conjuncts. An a IS NOT DISTINCT FROM b between
// the sides becomes the two never-NULL key pairs of plan.NullSafeKeys, so
// the hash join, whose keys never match NULL, pairs NULLs with each other.
func equiKeys(cond plan.Expr, left, right plan.Schema) (lk, rk []plan.Expr, rest []plan.Expr) {
	lids, rids := left.IDs(), right.IDs()
	for _, c := range plan.SplitConjunction(cond) {
		if d, ok := c.(*plan.DistinctFrom); ok && d.Negated {
			lc, rc := plan.ColumnsOf(d.L), plan.ColumnsOf(d.R)
			l, r := d.L, d.R
			if len(lc) > 0 && len(rc) > 0 && lc.SubsetOf(rids) && rc.SubsetOf(lids) {
				l, r, lc, rc = r, l, rc, lc
			}
			if len(lc) > 0 && len(rc) > 0 && lc.SubsetOf(lids) && rc.SubsetOf(rids) {
				if l2, r2, ok := plan.NullSafeKeys(l, r); ok {
					lk, rk = append(lk, l2...), append(rk, r2...)
					continue
				}
			}
		}
		b, ok := c.(*plan.Binary)
		if ok && b.Op == plan.OpEq {
			lc, rc := plan.ColumnsOf(b.L), plan.ColumnsOf(b.R)
			if len(lc) > 0 && len(rc) > 0 {
				if lc.SubsetOf(lids) && rc.SubsetOf(rids) {
					lk, rk = append(lk, b.L), append(rk, b.R)
					continue
				}
				if lc.SubsetOf(rids) && rc.SubsetOf(lids) {
					lk, rk = append(lk, b.R), append(rk, b.L)
					continue
				}
			}
		}
		rest = append(rest, c)
	}
	return lk, rk, rest
}

func (p *planner) join(n *plan.Join) (physical.Operator, error) {
	left, err := p.plan(n.Left)
	if err != nil {
		return nil, err
	}
	right, err := p.plan(n.Right)
	if err != nil {
		return nil, err
	}
	ls, rs := n.Left.Schema(), n.Right.Schema()
	lk, rk, rest := equiKeys(n.Cond, ls, rs)

	// The physical join builds its left input. Pick the physical type and
	// whether the logical sides are swapped (build = logical right).
	var jt physical.JoinType
	swap := false
	switch n.Kind {
	case plan.JoinInner:
		jt = physical.JoinInner
	case plan.JoinLeft:
		jt, swap = physical.JoinRight, true
	case plan.JoinRight:
		jt = physical.JoinRight
	case plan.JoinFull:
		jt = physical.JoinFull
	case plan.JoinSemi:
		jt, swap = physical.JoinRightSemi, true
	case plan.JoinAnti:
		jt, swap = physical.JoinRightAnti, true
	}
	// A semi or anti join builds the subquery side, unless the preserved
	// side is estimated smaller: then it builds that side, probes the
	// subquery side and emits the build rows that (did not) match. That
	// needs both sides partitioned by key, which a join of two large
	// inputs wants anyway (TPC-H q21's EXISTS over lineitem).
	if (n.Kind == plan.JoinSemi || n.Kind == plan.JoinAnti) && !n.NullAware && len(lk) > 0 &&
		plan.EstimateRows(n.Left) < plan.EstimateRows(n.Right) {
		swap = false
		jt = physical.JoinLeftSemi
		if n.Kind == plan.JoinAnti {
			jt = physical.JoinLeftAnti
		}
	}
	bl, pr, bs, ps, bk, pk := left, right, ls, rs, lk, rk
	if swap {
		bl, pr, bs, ps, bk, pk = right, left, rs, ls, rk, lk
	}
	combined := append(append(plan.Schema{}, bs...), ps...)
	var filter expr.Expr
	if len(rest) > 0 {
		if filter, err = expr.Compile(plan.Conjunction(rest), combined); err != nil {
			return nil, err
		}
	}
	var op physical.Operator
	if len(bk) == 0 {
		if jt.EmitsUnmatchedBuild() {
			pr = physical.NewCoalescePartitions(pr)
		}
		op, err = physical.NewNestedLoopJoin(bl, pr, jt, filter)
	} else {
		var buildKeys, probeKeys []expr.Expr
		if buildKeys, err = compileAll(bk, bs); err != nil {
			return nil, err
		}
		if probeKeys, err = compileAll(pk, ps); err != nil {
			return nil, err
		}
		buildSide := n.Left
		if swap {
			buildSide = n.Right
		}
		// The join is assigned to op only without an error: a nil
		// *HashJoin in the Operator interface would not compare equal to
		// nil and would crash whatever reads it.
		var hj *physical.HashJoin
		if !n.NullAware && physical.CoPartitioned(bl, pr, buildKeys, probeKeys, p.cfg.TargetPartitions) {
			// Both sides already hold each key's rows in one partition:
			// each partition joins its own, with no shuffle and no
			// broadcast (TPC-DS q47 joins three readers of monthly
			// totals hashed by brand and store on brand, store and month).
			hj, err = physical.NewHashJoin(bl, pr, jt, buildKeys, probeKeys, filter, n.NullAware, physical.JoinPartitioned)
		} else if jt.EmitsUnmatchedBuild() || (p.cfg.BroadcastThreshold > 0 && !n.NullAware &&
			p.est.bytes(buildSide) > float64(p.cfg.BroadcastThreshold)) {
			// Each partition must see all rows of its keys on both sides.
			t := p.cfg.TargetPartitions
			bl = physical.HashPartitioned(bl, buildKeys, t)
			pr = physical.HashPartitioned(pr, probeKeys, t)
			hj, err = physical.NewHashJoin(bl, pr, jt, buildKeys, probeKeys, filter, n.NullAware, physical.JoinPartitioned)
		} else {
			hj, err = physical.NewHashJoin(bl, pr, jt, buildKeys, probeKeys, filter, n.NullAware, physical.JoinCollectLeft)
		}
		if err != nil {
			return nil, err
		}
		op = hj
	}
	if err != nil {
		return nil, err
	}
	if swap && jt != physical.JoinRightSemi && jt != physical.JoinRightAnti && jt != physical.JoinLeftSemi && jt != physical.JoinLeftAnti {
		// Restore the logical column order: left columns, then right.
		out := n.Schema()
		exprs := make([]expr.Expr, len(out))
		for i, c := range out {
			j := combined.IndexOf(c.ID)
			exprs[i] = &expr.Column{Index: j, Name: c.Name, Type: c.Type}
		}
		op = physical.NewProjection(op, exprs, names(out))
	}
	return op, nil
}

// setOp plans INTERSECT / EXCEPT: equal rows of both inputs must meet in
// one partition, so both are hash-partitioned by all their columns (the
// binder cast them to the same types, so equal rows hash alike), or
// gathered into one partition when the target is one.
func (p *planner) setOp(n *plan.SetOp) (physical.Operator, error) {
	sides := make([]physical.Operator, 2)
	for i, c := range []plan.Node{n.Left, n.Right} {
		op, err := p.plan(c)
		if err != nil {
			return nil, err
		}
		t := p.cfg.TargetPartitions
		if t <= 1 {
			if op.OutputPartitioning().Count > 1 {
				op = physical.NewCoalescePartitions(op)
			}
		} else {
			keys := make([]expr.Expr, len(c.Schema()))
			for j, col := range c.Schema() {
				keys[j] = &expr.Column{Index: j, Name: col.Name, Type: col.Type}
			}
			op = physical.HashPartitioned(op, keys, t)
		}
		sides[i] = op
	}
	return physical.NewSetOp(sides[0], sides[1], n.Kind, n.All, ArrowSchema(n.Cols))
}

func (p *planner) sortKeys(keys []plan.SortKey, in plan.Schema) ([]physical.SortKey, error) {
	out := make([]physical.SortKey, len(keys))
	for i, k := range keys {
		e, err := expr.Compile(k.Expr, in)
		if err != nil {
			return nil, err
		}
		out[i] = physical.SortKey{Expr: e, Desc: k.Desc, NullsFirst: k.NullsFirst}
	}
	return out, nil
}

// sort plans a Sort; fetch >= 0 keeps only the first fetch rows (top-K).
func (p *planner) sort(n *plan.Sort, fetch int64) (physical.Operator, error) {
	in, err := p.plan(n.Input)
	if err != nil {
		return nil, err
	}
	keys, err := p.sortKeys(n.Keys, n.Input.Schema())
	if err != nil {
		return nil, err
	}
	op := physical.Operator(physical.NewSort(in, keys, fetch))
	if in.OutputPartitioning().Count > 1 {
		op = physical.NewSortPreservingMerge(op, keys, fetch)
	}
	return op, nil
}

// window plans a Window whose calls share one window (partition and order
// keys; splitWindows stacks a node's windows one per node before
// planning) as a Window operator over a Sort by its keys. Its rows are
// first brought together: hash-repartitioned by the partition keys, or
// coalesced into one partition when there are none (OVER (ORDER BY ...)).
// The distributed planner cuts a stage at that exchange, as it does for
// an aggregate's final phase. Rows already distributed by some of the
// partition keys, or already sorted by the window's keys (a window over
// another: TPC-DS q47 ranks by four keys and averages by those and a
// fifth), need no exchange, or no sort, of their own.
func (p *planner) window(n *plan.Window) (physical.Operator, error) {
	op, err := p.plan(n.Input)
	if err != nil || len(n.Calls) == 0 {
		return op, err
	}
	if len(windowGroups(n)) > 1 {
		return nil, fmt.Errorf("internal: a window node of several windows reached the planner (splitWindows stacks them)")
	}
	in := n.Input.Schema()
	first := n.Calls[0]
	pkeys, err := compileAll(first.PartitionBy, in)
	if err != nil {
		return nil, err
	}
	okeys, err := p.sortKeys(first.OrderBy, in)
	if err != nil {
		return nil, err
	}
	if l, ok := p.groupLimit[n]; ok {
		// Placed before the exchange and the sort below, so they move
		// and sort only the rows that may pass the filter.
		if op, err = physical.NewWindowGroupLimit(op, pkeys, okeys, n.Calls[l.call].Func, l.n); err != nil {
			return nil, err
		}
	}
	sorted := sortedOutput(op) // the order the rows keep in each partition
	if op.OutputPartitioning().Count > 1 && (len(pkeys) == 0 || !physical.HashedWithin(op.OutputPartitioning(), pkeys)) {
		if len(pkeys) == 0 {
			op = physical.NewCoalescePartitions(op)
		} else {
			op = physical.NewRepartition(op, physical.Partitioning{Kind: physical.PartHash, Count: p.cfg.TargetPartitions, Keys: pkeys})
		}
		sorted = nil
	}
	if skeys := physical.WindowSortKeys(pkeys, okeys); len(skeys) > 0 && !sortPrefix(skeys, sorted) {
		op = physical.NewSort(op, skeys, -1)
	}
	funcs := make([]physical.WindowExpr, len(n.Calls))
	for i, c := range n.Calls {
		args, err := compileAll(c.Args, in)
		if err != nil {
			return nil, err
		}
		funcs[i] = physical.WindowExpr{Func: c.Func, Agg: c.Agg, Args: args, Frame: c.Frame, Name: n.Cols[i].Name, Type: c.Typ}
	}
	return physical.NewWindow(op, pkeys, okeys, funcs)
}

// windowLimit bounds a window's ranking: rows whose call Calls[call] is
// above n are dropped by a filter over the window.
type windowLimit struct {
	call int
	n    int64
}

// windowFilterLimit finds, in a filter's predicate over window w, a
// conjunct bounding a ranking function from above (rk <= 10, rk < 11,
// rk = 1, 10 >= rk), when every call of w is row_number, rank or
// dense_rank over one window: then rows beyond the bound may be dropped
// before the window, and the rest rank as over all rows (WindowGroupLimit).
// Other functions (aggregates over frames, lag, ntile, percent_rank) and
// other windows would see fewer rows. The smallest bound wins.
func windowFilterLimit(pred plan.Expr, w *plan.Window) (windowLimit, bool) {
	if len(w.Calls) == 0 || len(windowGroups(w)) != 1 {
		return windowLimit{}, false
	}
	for _, c := range w.Calls {
		switch c.Func {
		case plan.WinRowNumber, plan.WinRank, plan.WinDenseRank:
		default:
			return windowLimit{}, false
		}
	}
	best, found := windowLimit{}, false
	for _, conj := range plan.SplitConjunction(pred) {
		id, op, v, ok := plan.ColumnVersusInt(conj)
		if !ok {
			continue
		}
		call := slices.IndexFunc(w.Cols, func(c plan.Column) bool { return c.ID == id })
		switch op {
		case plan.OpLtEq, plan.OpEq:
		case plan.OpLt:
			if v == math.MinInt64 {
				continue
			}
			v--
		default:
			continue
		}
		if call >= 0 && (!found || v < best.n) {
			best, found = windowLimit{call: call, n: v}, true
		}
	}
	return best, found
}

// windowGroup is the calls of one window (the same partition and order
// keys); parts are its partition keys as exprKeyString.
type windowGroup struct {
	calls []int
	parts []string
}

// windowGroups groups n's calls by window, in the order splitWindows
// stacks them: fewest partition keys first, then by the keys, then most
// order keys first. Rows hash-distributed by some keys are already
// together for any window partitioned by a superset of them, and rows
// sorted for one window are sorted for another whose keys are a prefix of
// its keys, so the windows stacked above need no exchange, or no sort, of
// their own.
func windowGroups(n *plan.Window) []*windowGroup {
	var groups []*windowGroup
	byKey := map[string]*windowGroup{}
	for i, c := range n.Calls {
		k := windowKey(c)
		g, ok := byKey[k]
		if !ok {
			g = &windowGroup{}
			for _, e := range c.PartitionBy {
				g.parts = append(g.parts, exprKeyString(e))
			}
			byKey[k] = g
			groups = append(groups, g)
		}
		g.calls = append(g.calls, i)
	}
	slices.SortStableFunc(groups, func(a, b *windowGroup) int {
		if c := len(a.parts) - len(b.parts); c != 0 {
			return c
		}
		if c := slices.Compare(a.parts, b.parts); c != 0 {
			return c
		}
		return len(n.Calls[b.calls[0]].OrderBy) - len(n.Calls[a.calls[0]].OrderBy)
	})
	return groups
}

// sortedOutput returns the order op's rows keep within each of its
// partitions, as far as the planner can tell: a sort's keys, passed on by
// the operators that keep their input's rows in order (filters, windows,
// shared outputs, and projections that keep the key columns in place);
// nil when it is not known. A window over another window's output (see
// splitWindows) needs no sort of its own when this order serves it.
func sortedOutput(op physical.Operator) []physical.SortKey {
	switch x := op.(type) {
	case *physical.Sort:
		return x.Keys()
	case *physical.Filter, *physical.Window, *physical.SharedOutput:
		return sortedOutput(op.Children()[0])
	case *physical.Projection:
		keys := sortedOutput(x.Children()[0])
		for i, k := range keys {
			c, ok := k.Expr.(*expr.Column)
			if !ok || c.Index >= len(x.Exprs()) {
				return keys[:i]
			}
			if pc, ok := x.Exprs()[c.Index].(*expr.Column); !ok || pc.Index != c.Index || pc.Name != c.Name {
				return keys[:i]
			}
		}
		return keys
	}
	return nil
}

// sortPrefix reports whether rows sorted by have are also sorted by want.
func sortPrefix(want, have []physical.SortKey) bool {
	if len(want) > len(have) {
		return false
	}
	for i, k := range want {
		if k.String() != have[i].String() {
			return false
		}
	}
	return true
}

// exprKeyString identifies an expression by its text and the columns it
// reads (two columns may share a name).
func exprKeyString(e plan.Expr) string {
	return fmt.Sprintf("%s%v", e, plan.ColumnsOf(e))
}

// windowKey identifies a call's window (partition and order keys).
func windowKey(c *plan.WindowCall) string {
	var b strings.Builder
	for _, e := range c.PartitionBy {
		b.WriteString(exprKeyString(e) + ";")
	}
	b.WriteString("|")
	for _, k := range c.OrderBy {
		fmt.Fprintf(&b, "%s%v%v;", exprKeyString(k.Expr), k.Desc, k.NullsFirst)
	}
	return b.String()
}

func (p *planner) limit(n *plan.Limit) (physical.Operator, error) {
	fetch := int64(-1)
	if n.Count >= 0 {
		fetch = n.Offset + n.Count
	}
	var in physical.Operator
	var err error
	if s, ok := n.Input.(*plan.Sort); ok {
		in, err = p.sort(s, fetch)
	} else {
		in, err = p.plan(n.Input)
		if err == nil && in.OutputPartitioning().Count > 1 {
			if fetch >= 0 {
				in = physical.NewLimit(in, 0, fetch)
			}
			in = physical.NewCoalescePartitions(in)
		}
	}
	if err != nil {
		return nil, err
	}
	return physical.NewLimit(in, n.Offset, n.Count), nil
}

// bytes guesses the size of a logical node's output.
func (e *Estimates) bytes(n plan.Node) float64 {
	width := 0
	for _, c := range n.Schema() {
		switch c.Type.ID() {
		case arrow.STRING:
			width += 24
		case arrow.DECIMAL128:
			width += 16
		case arrow.BOOL:
			width++
		default:
			width += 8
		}
	}
	return e.rows.Rows(n) * float64(width)
}
