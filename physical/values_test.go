package physical

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/physical/expr"
	"sluice/plan"
)

func lit(typ arrow.DataType, v any) expr.Expr {
	return &expr.Literal{Value: plan.Literal{Typ: typ, Val: v}}
}

func TestValues(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "i", Type: plan.Int32, Nullable: true},
		{Name: "s", Type: plan.Utf8, Nullable: true},
	}, nil)
	tests := []struct {
		name string
		rows [][]expr.Expr
		want string
	}{
		{"two rows", [][]expr.Expr{{lit(plan.Int32, int32(1)), lit(plan.Utf8, "a")}, {lit(plan.Int32, int32(2)), lit(plan.Utf8, "b")}}, "1 a\n2 b\n"},
		{"untyped null", [][]expr.Expr{{lit(plan.Null, nil), lit(plan.Utf8, nil)}}, "<nil> <nil>\n"},
		{"no rows", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			v := NewValues(schema, tt.rows)
			if got := rowsString(collectAll(t, v, newTestTC(mem, 8))); got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
			mem.AssertSize(t, 0)
		})
	}
	t.Run("zero columns", func(t *testing.T) {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		v := NewValues(arrow.NewSchema(nil, nil), [][]expr.Expr{{}})
		if rows := collectAll(t, v, newTestTC(mem, 8)); len(rows) != 1 {
			t.Errorf("rows = %d, want 1", len(rows))
		}
		mem.AssertSize(t, 0)
	})
}
