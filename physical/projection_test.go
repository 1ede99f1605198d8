package physical

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/physical/expr"
	"sluice/plan"
)

func TestProjection(t *testing.T) {
	tests := []struct {
		name    string
		exprs   []expr.Expr
		names   []string
		want    string
		explain string
	}{
		{
			name:    "reorder and rename",
			exprs:   []expr.Expr{col(1, "s", plan.Utf8), col(0, "a", plan.Int64)},
			names:   []string{"s", "x"},
			want:    "x 1\n<nil> 2\n",
			explain: "Projection: s@1, a@0 AS x",
		},
		{
			name:    "literals",
			exprs:   []expr.Expr{&expr.Literal{Value: plan.Literal{Typ: plan.Int32, Val: int32(7)}}, &expr.Literal{Value: plan.Literal{Typ: plan.Null}}},
			names:   []string{"seven", "n"},
			want:    "7 <nil>\n7 <nil>\n",
			explain: "Projection: 7 AS seven, NULL AS n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			b := makeBatch(t, mem, filterSchema, []any{1, 2}, []any{"x", nil}, []any{1, 2}, []any{true, false})
			src := newMemSource(filterSchema, [][]arrow.RecordBatch{{b}})
			p := NewProjection(src, tt.exprs, tt.names)
			for i, f := range p.Schema().Fields() {
				if f.Name != tt.names[i] || !f.Nullable || !arrow.TypeEqual(f.Type, tt.exprs[i].DataType()) {
					t.Errorf("field %d = %v", i, f)
				}
			}
			if got := rowsString(collectAll(t, p, newTestTC(mem, 8))); got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
			if got := p.String(); got != tt.explain {
				t.Errorf("String() = %q, want %q", got, tt.explain)
			}
			src.release()
			mem.AssertSize(t, 0)
		})
	}
}

func TestProjectionPartitioning(t *testing.T) {
	src := NewRepartition(newMemSource(filterSchema, nil), Partitioning{Kind: PartHash, Count: 3, Keys: []expr.Expr{col(0, "a", plan.Int64)}})
	kept := NewProjection(src, []expr.Expr{col(1, "s", plan.Utf8), col(0, "a", plan.Int64)}, []string{"s", "a"})
	if p := kept.OutputPartitioning(); p.Kind != PartHash || p.Keys[0].String() != "a@1" {
		t.Errorf("kept key: %v", p)
	}
	dropped := NewProjection(src, []expr.Expr{col(1, "s", plan.Utf8)}, []string{"s"})
	if p := dropped.OutputPartitioning(); p.Kind != PartUnknown || p.Count != 3 {
		t.Errorf("dropped key: %v", p)
	}
}
