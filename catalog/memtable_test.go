package catalog

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

func TestMemTable(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	schema := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}}, nil)
	var batches []arrow.RecordBatch
	for _, n := range []int{3, 5} {
		b := array.NewRecordBuilder(mem, schema)
		for i := range n {
			b.Field(0).(*array.Int64Builder).Append(int64(i))
		}
		batches = append(batches, b.NewRecordBatch())
		b.Release()
	}
	tbl := NewMemTable(schema, batches)
	for _, b := range batches {
		b.Release() // the table holds its own references
	}
	if st := tbl.Statistics(); st.NumRows != 8 || st.TotalBytes < 64 {
		t.Fatalf("statistics %+v", st)
	}
	if len(tbl.Batches()) != 2 || tbl.Batches()[1].NumRows() != 5 {
		t.Fatalf("batches not kept")
	}
	tbl.Release()
}
