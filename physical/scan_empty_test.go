package physical

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/catalog"
	"sluice/plan"
)

// TestPlanEmptyParquetTable checks the scan of a Parquet table with no
// files yet (an empty managed table): no rows of the projected columns,
// in a plan an executor can decode (it has no files to read a schema
// from).
func TestPlanEmptyParquetTable(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: plan.Int32, Nullable: true},
		{Name: "name", Type: plan.Utf8, Nullable: true},
	}, nil)
	tbl := catalog.EmptyParquet(t.TempDir(), schema)
	scan := &plan.Scan{TableName: "t", Table: tbl, Projection: []int{1},
		Cols: plan.Schema{{Name: "name", Type: plan.Utf8, Nullable: true, ID: 1}}}
	op, err := PlanForTests(scan, 3, false)
	if err != nil {
		t.Fatal(err)
	}
	if op.Schema().NumFields() != 1 || op.Schema().Field(0).Name != "name" || !arrow.TypeEqual(op.Schema().Field(0).Type, plan.Utf8) {
		t.Fatalf("schema %s, want the projected column name utf8", op.Schema())
	}
	got := shipPlan(t, op, nil)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	if rows := collectAll(t, got, newTestTC(mem, 8)); len(rows) != 0 {
		t.Errorf("rows = %v, want none", rows)
	}
}
