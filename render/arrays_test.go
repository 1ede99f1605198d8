package render

import (
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestArraysOfNumbers renders an INT[] and an INTERVAL column: PostgreSQL's
// text in tables and CSV, numbers as JSON numbers.
func TestArraysOfNumbers(t *testing.T) {
	for _, c := range []struct{ format, want string }{
		{"csv", `"{1,NULL,3}",1 year 2 mons -3 days`},
		{"json", `{"a":[1,null,3],"i":"1 year 2 mons -3 days"}`},
		{"table", "│ {1,NULL,3} │ 1 year 2 mons -3 days │"},
	} {
		t.Run(c.format, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			lb := array.NewListBuilder(mem, arrow.PrimitiveTypes.Int64)
			vb := lb.ValueBuilder().(*array.Int64Builder)
			lb.Append(true)
			vb.Append(1)
			vb.AppendNull()
			vb.Append(3)
			list := lb.NewArray()
			lb.Release()
			ib := array.NewMonthDayNanoIntervalBuilder(mem)
			ib.Append(arrow.MonthDayNanoInterval{Months: 14, Days: -3})
			iv := ib.NewArray()
			ib.Release()
			schema := arrow.NewSchema([]arrow.Field{{Name: "a", Type: list.DataType(), Nullable: true}, {Name: "i", Type: iv.DataType(), Nullable: true}}, nil)
			b := array.NewRecordBatch(schema, []arrow.Array{list, iv}, 1)
			list.Release()
			iv.Release()
			out := renderBatch(t, c.format, b, Options{})
			b.Release()
			mem.AssertSize(t, 0)
			if !strings.Contains(out.String(), c.want) {
				t.Errorf("%s output:\n%s\nwant it to hold %q", c.format, out.String(), c.want)
			}
		})
	}
}
