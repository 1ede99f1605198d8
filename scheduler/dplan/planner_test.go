package dplan_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"sluice/engine"
	"sluice/physical"
	"sluice/scheduler/dplan"
	"sluice/scheduler/internal/testdb"
)

// TestPlanGolden plans the SQL of testdata/dplan/*.txt over testdb's
// tables and compares the stage DAG with the expected text.
//
// Command: "plan [partitions=N]" (default 3), the SQL, "----", then
// dplan.Format of the graph (or "error: ...").
func TestPlanGolden(t *testing.T) {
	eng := engine.New(testdb.Catalog(t))
	runGolden(t, "../../testdata/dplan/*.txt", func(t *testing.T, c *goldenCase) string {
		fields := strings.Fields(c.command)
		if fields[0] != "plan" {
			t.Fatalf("%s: unknown command %q", c.pos, fields[0])
		}
		settings := engine.NewSettings()
		partitions := "3"
		for _, arg := range fields[1:] {
			k, v, _ := strings.Cut(arg, "=")
			if k != "partitions" {
				t.Fatalf("%s: unknown argument %q", c.pos, arg)
			}
			partitions = v
		}
		if err := settings.Set("execution.target_partitions", partitions); err != nil {
			t.Fatal(err)
		}
		out, err := eng.Prepare(c.input, settings)
		if err != nil {
			return "error: " + err.Error()
		}
		if out.Query == nil {
			t.Fatalf("%s: not a query", c.pos)
		}
		g, err := dplan.Plan(out.Query.Physical)
		if err != nil {
			return "error: " + err.Error()
		}
		if err := checkGraph(g, out.Query.Physical); err != nil {
			t.Errorf("%s: %v\n%s", c.pos, err, dplan.Format(g))
		}
		return dplan.Format(g)
	})
}

// checkGraph verifies what every stage graph must satisfy, whatever the
// golden text says: IDs in producer-first order, inputs matching the
// placeholders in each body, placeholders agreeing with their producer,
// every stage but the final read once, or more than once when shared,
// no exchange operator left inside a stage, and the final stage producing
// the original plan's schema and partition count.
func checkGraph(g *dplan.Graph, root physical.Operator) error {
	readers := map[int]int{}
	for i, s := range g.Stages {
		if s.ID != i+1 {
			return fmt.Errorf("stage %d at position %d", s.ID, i)
		}
		var found []int
		var err error
		walk(s.Body, func(op physical.Operator) {
			switch o := op.(type) {
			case *physical.UnresolvedExchange:
				found = append(found, o.StageID)
				readers[o.StageID]++
				if o.StageID >= s.ID {
					err = fmt.Errorf("stage %d reads later stage %d", s.ID, o.StageID)
					return
				}
				p := g.Stages[o.StageID-1]
				if got, want := o.OutputPartitioning().Count, p.Output.Count; got != want {
					err = fmt.Errorf("stage %d reads %d partitions of stage %d, which writes %d", s.ID, got, o.StageID, want)
				}
				if !o.Schema().Equal(p.Body.Schema()) {
					err = fmt.Errorf("stage %d: exchange schema %s differs from stage %d's %s", s.ID, o.Schema(), o.StageID, p.Body.Schema())
				}
			case *physical.Repartition:
				err = fmt.Errorf("stage %d keeps a Repartition", s.ID)
			case *physical.CoalescePartitions, *physical.SortPreservingMerge:
				in := op.Children()[0]
				if _, ok := in.(*physical.UnresolvedExchange); !ok && in.OutputPartitioning().Count > 1 {
					err = fmt.Errorf("stage %d merges %d partitions inside the stage", s.ID, in.OutputPartitioning().Count)
				}
			}
		})
		if err != nil {
			return err
		}
		if fmt.Sprint(normalized(found)) != fmt.Sprint(s.Inputs) {
			return fmt.Errorf("stage %d: inputs %v, placeholders %v", s.ID, s.Inputs, found)
		}
		if s.Output.Kind != physical.PartHash && s.Output.Count != s.Partitions() {
			return fmt.Errorf("stage %d: pass-through output of %d partitions from %d", s.ID, s.Output.Count, s.Partitions())
		}
	}
	for _, s := range g.Stages[:len(g.Stages)-1] {
		if n := readers[s.ID]; n == 0 || (n > 1) != s.Shared {
			return fmt.Errorf("stage %d (shared %v) is read %d times", s.ID, s.Shared, n)
		}
	}
	final := g.Final()
	if !final.Body.Schema().Equal(root.Schema()) || final.Partitions() != root.OutputPartitioning().Count {
		return fmt.Errorf("final stage %s with %d partitions, plan %s with %d", final.Body.Schema(), final.Partitions(), root.Schema(), root.OutputPartitioning().Count)
	}
	return nil
}

func walk(op physical.Operator, f func(physical.Operator)) {
	f(op)
	for _, c := range op.Children() {
		walk(c, f)
	}
}

func normalized(ids []int) []int {
	seen := map[int]bool{}
	var out []int
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	if out == nil {
		return []int{}
	}
	return out
}

// TestWithNewChildren rebuilds every operator of real plans over its own
// children and expects the same plan text back.
func TestWithNewChildren(t *testing.T) {
	eng := engine.New(testdb.Catalog(t))
	queries := []string{
		"select c_mktsegment, count(*), avg(c_nationkey) from customer where c_custkey > 3 group by c_mktsegment having count(*) > 1 order by 2 desc limit 3 offset 1",
		"select c_name, o_totalprice from customer full join orders on c_custkey = o_custkey and o_totalprice > 10",
		"select c_name from customer where c_custkey not in (select o_custkey from orders)",
		"select n_name, r_name from nation, region where n_regionkey < r_regionkey",
		"select n_name from nation union all select r_name from region",
		"select * from (values (1, 'a'), (2, 'b')) v(x, y) limit 1",
		"select c_mktsegment, c_nationkey, count(*), grouping(c_nationkey) from customer group by rollup (c_mktsegment, c_nationkey)",
	}
	for i, q := range queries {
		t.Run(strconv.Itoa(i), func(t *testing.T) {
			s := engine.NewSettings()
			if err := s.Set("execution.target_partitions", "2"); err != nil {
				t.Fatal(err)
			}
			out, err := eng.Prepare(q, s)
			if err != nil {
				t.Fatal(err)
			}
			var rebuild func(op physical.Operator) physical.Operator
			rebuild = func(op physical.Operator) physical.Operator {
				var cs []physical.Operator
				for _, c := range op.Children() {
					cs = append(cs, rebuild(c))
				}
				n, err := dplan.WithNewChildren(op, cs)
				if err != nil {
					t.Fatal(err)
				}
				if len(cs) > 0 && n == op {
					t.Fatalf("%s was not rebuilt", op)
				}
				return n
			}
			got := physical.Format(rebuild(out.Query.Physical))
			if want := physical.Format(out.Query.Physical); got != want {
				t.Errorf("rebuilt plan differs\n--- got:\n%s--- want:\n%s", got, want)
			}
		})
	}
}

type foreign struct{ physical.Operator }

func TestWithNewChildrenErrors(t *testing.T) {
	leaf := physical.NewUnresolvedExchange(1, nil, physical.SinglePartition)
	if _, err := dplan.WithNewChildren(physical.NewCoalescePartitions(leaf), nil); err == nil || !strings.Contains(err.Error(), "has 1 children, got 0") {
		t.Errorf("wrong child count: got %v", err)
	}
	op := foreign{physical.NewCoalescePartitions(leaf)}
	if _, err := dplan.WithNewChildren(op, []physical.Operator{leaf}); err == nil || !strings.Contains(err.Error(), "cannot rebuild") {
		t.Errorf("unknown operator: got %v", err)
	}
}

// TestPlanEstimated: a stage cut from an operator the physical planner
// made for a logical node carries that node's estimate; one cut from a
// partial aggregate (no logical node of its own) has none.
func TestPlanEstimated(t *testing.T) {
	eng := engine.New(testdb.Catalog(t))
	settings := engine.NewSettings()
	for k, v := range map[string]string{"execution.target_partitions": "3", "optimizer.broadcast_join_threshold_bytes": "1"} {
		if err := settings.Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	out, err := eng.Prepare("select c_mktsegment, count(*) from customer join orders on c_custkey = o_custkey group by c_mktsegment", settings)
	if err != nil {
		t.Fatal(err)
	}
	g, err := dplan.PlanEstimated(out.Query.Physical, out.Query.Estimates)
	if err != nil {
		t.Fatal(err)
	}
	var estimated, unknown int
	for _, s := range g.Stages {
		agg, isAgg := s.Body.(*physical.HashAggregate)
		partial := isAgg && agg.Mode() == physical.AggPartial
		switch {
		case partial && s.Estimated:
			t.Errorf("stage %d, a partial aggregate, has an estimate (%.0f rows)", s.ID, s.EstRows)
		case !partial && (!s.Estimated || s.EstRows < 1 || s.EstBytes <= 0):
			t.Errorf("stage %d has no estimate:\n%s", s.ID, dplan.Format(g))
		case s.Estimated:
			estimated++
		default:
			unknown++
		}
	}
	if estimated < 2 || unknown != 1 {
		t.Errorf("%d stages estimated, %d not, want the join's two sides and the final estimated, the partial aggregate not:\n%s", estimated, unknown, dplan.Format(g))
	}
	if plain, _ := dplan.Plan(out.Query.Physical); plain.Stages[0].Estimated {
		t.Error("Plan without estimates recorded one")
	}
}
