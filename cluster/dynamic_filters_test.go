package cluster

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"sluice/catalog"
	"sluice/physical"
	"sluice/physical/expr"
	"sluice/plan"
	"sluice/rpc"
)

// TestDynamicFilterPush checks the executor's side of a pipelined job's
// filter: a task whose filter has no keys yet waits for it, a push
// publishes it to the task (which then reads only the rows it keeps), a
// task started after the push gets it too, and a job's keys are forgotten
// with the job.
func TestDynamicFilterPush(t *testing.T) {
	dir := t.TempDir()
	writeTestTables(t, dir)
	tbl, err := catalog.OpenParquet(filepath.Join(dir, "lineitem"))
	if err != nil {
		t.Fatal(err)
	}
	// The keys of orders 3 and 7: lineitem has five rows of each.
	keys := buildKeySet(t, 3, 7)
	var d dynamicFilters
	def := &rpc.TaskDefinition{Id: &rpc.TaskId{JobId: "j"}, DynamicFilters: []*rpc.DynamicFilterUse{{Id: 1, Scan: 0, Column: 0}}}

	run := func(push bool) int {
		scan := physical.NewParquetScan("lineitem", tbl, []int{0}, nil, 1)
		tc := physical.NewTaskContext()
		done, err := d.start(def, scan, tc)
		if err != nil {
			t.Fatal(err)
		}
		defer done()
		if push {
			if err := d.push("j", []*rpc.DynamicFilterKeys{keys}); err != nil {
				t.Fatal(err)
			}
		}
		return countRows(t, scan, tc)
	}
	if n := run(true); n != 10 {
		t.Fatalf("pushed while the task waited: %d rows, want 10", n)
	}
	if n := run(false); n != 10 {
		t.Fatalf("started after the push: %d rows, want 10", n)
	}
	d.forget("j")
	if n := run(false); n != testLineitem {
		t.Fatalf("after the job was forgotten: %d rows, want %d", n, testLineitem)
	}
	bad := &rpc.TaskDefinition{Id: &rpc.TaskId{JobId: "j"}, DynamicFilters: []*rpc.DynamicFilterUse{{Id: 1, Scan: 3, Column: 0}}}
	if _, err := d.start(bad, physical.NewParquetScan("lineitem", tbl, []int{0}, nil, 1), physical.NewTaskContext()); err == nil {
		t.Fatal("a filter for a scan the stage does not have was accepted")
	}
}

func buildKeySet(t *testing.T, vals ...int64) *rpc.DynamicFilterKeys {
	t.Helper()
	var parts []*physical.KeySet
	for _, v := range vals {
		m, err := physical.EncodeKeySet(1, mustKeys(t, v))
		if err != nil {
			t.Fatal(err)
		}
		k, err := physical.DecodeKeySet(m)
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, k)
	}
	m, err := physical.EncodeKeySet(1, physical.MergeKeySets(parts))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// mustKeys collects the one key v through a DynamicFilterBuild.
func mustKeys(t *testing.T, v int64) *physical.KeySet {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64}}, nil)
	values := physical.NewValues(schema, [][]expr.Expr{{&expr.Literal{Value: plan.Literal{Typ: arrow.PrimitiveTypes.Int64, Val: v}}}})
	op, err := physical.NewDynamicFilterBuild(values, []int{1}, []int{0})
	if err != nil {
		t.Fatal(err)
	}
	tc := physical.NewTaskContext()
	countRows(t, op, tc)
	return tc.DynamicFilterKeys()[1]
}

func countRows(t *testing.T, op physical.Operator, tc *physical.TaskContext) int {
	t.Helper()
	n := 0
	for p := 0; p < op.OutputPartitioning().Count; p++ {
		s, err := op.Execute(context.Background(), p, tc)
		if err != nil {
			t.Fatal(err)
		}
		for {
			b, err := s.Next(context.Background())
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			n += int(b.NumRows())
			b.Release()
		}
		s.Close()
	}
	return n
}
