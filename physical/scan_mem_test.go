package physical

import (
	"context"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/catalog"
	"sluice/physical/kernels"
)

func TestMemScan(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "a", Type: arrow.PrimitiveTypes.Int64},
		{Name: "b", Type: arrow.BinaryTypes.String},
	}, nil)
	// Batches of 0, 7, 25, 3 and 10 rows; ids run 0..44.
	var batches []arrow.RecordBatch
	id := 0
	for _, n := range []int{0, 7, 25, 3, 10} {
		bld := array.NewRecordBuilder(mem, schema)
		for range n {
			bld.Field(0).(*array.Int64Builder).Append(int64(id))
			bld.Field(1).(*array.StringBuilder).Append(string(rune('a' + id%26)))
			id++
		}
		batches = append(batches, bld.NewRecordBatch())
		bld.Release()
	}
	tbl := catalog.NewMemTable(schema, batches)
	kernels.ReleaseAll(batches)
	defer tbl.Release()

	tests := []struct {
		partitions int
		projection []int
		batchSize  int
	}{
		{1, []int{0, 1}, 8192},
		{2, []int{0}, 8},
		{3, []int{1, 0}, 4},
		{4, nil, 5},
		{7, []int{0}, 1},
	}
	for _, tt := range tests {
		scan := NewMemScan("m", tbl, tt.projection, tt.partitions)
		if scan.OutputPartitioning().Count != tt.partitions {
			t.Fatalf("partitioning %s", scan.OutputPartitioning())
		}
		tc := testTaskContext(mem, tt.batchSize)
		results := make([][]arrow.RecordBatch, tt.partitions)
		var wg sync.WaitGroup
		for p := range tt.partitions {
			wg.Go(func() { results[p] = drainPartition(t, scan, p, tc) })
		}
		wg.Wait()
		seen := make([]int, 45)
		total := 0
		for _, bs := range results {
			for _, b := range bs {
				if b.NumRows() > int64(tt.batchSize) {
					t.Fatalf("batch of %d rows, batch size %d", b.NumRows(), tt.batchSize)
				}
				total += int(b.NumRows())
				for c, src := range tt.projection {
					if src == 0 {
						for _, v := range b.Column(c).(*array.Int64).Int64Values() {
							seen[v]++
						}
					}
				}
			}
			kernels.ReleaseAll(bs)
		}
		if total != 45 {
			t.Fatalf("%+v: %d rows, want 45", tt, total)
		}
		if len(tt.projection) > 0 {
			for v, n := range seen {
				if n != 1 {
					t.Fatalf("%+v: row %d read %d times", tt, v, n)
				}
			}
		}
	}

	// Close mid-way and a cancelled context.
	s, err := NewMemScan("m", tbl, []int{0}, 1).Execute(context.Background(), 0, testTaskContext(mem, 2))
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Next(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	b.Release()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Next(ctx); err == nil {
		t.Fatalf("cancelled context: no error")
	}
	s.Close()
	s.Close()
}
