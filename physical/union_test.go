package physical

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/plan"
)

func TestUnion(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	other := arrow.NewSchema([]arrow.Field{{Name: "w", Type: plan.Int64}}, nil)
	a := newMemSource(intSchema, [][]arrow.RecordBatch{intBatches(t, mem, 0, 2, 2), intBatches(t, mem, 10, 2, 2)})
	b := newMemSource(other, [][]arrow.RecordBatch{{makeBatch(t, mem, other, []any{100, nil})}})
	u := NewUnion([]Operator{a, b})
	if n := u.OutputPartitioning().Count; n != 3 {
		t.Fatalf("partitions = %d, want 3", n)
	}
	tc := newTestTC(mem, 8)
	parts := collectPartitions(t, u, tc)
	want := [][]int{{0, 1}, {10, 11}, {100, -1}}
	for i := range want {
		if got := flatten(parts[i]); fmt.Sprint(got) != fmt.Sprint(want[i]) {
			t.Errorf("partition %d = %v, want %v", i, got, want[i])
		}
	}
	// Later inputs are relabelled with the first input's names.
	s, err := u.Execute(context.Background(), 2, tc)
	if err != nil {
		t.Fatal(err)
	}
	rb, err := s.Next(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if rb.Schema().Field(0).Name != "v" {
		t.Errorf("name = %s, want v", rb.Schema().Field(0).Name)
	}
	rb.Release()
	s.Close()
	if _, err := u.Execute(context.Background(), 3, tc); err == nil {
		t.Errorf("partition 3 should be out of range")
	}
	bad := NewUnion([]Operator{a, newMemSource(filterSchema, [][]arrow.RecordBatch{nil})})
	if _, err := bad.Execute(context.Background(), 2, tc); err == nil {
		t.Errorf("mismatched schemas should fail")
	}
	a.release()
	b.release()
	mem.AssertSize(t, 0)
}

// TestFoldedUnion: a union folded into fewer partitions than its inputs have
// returns every input row once, each input partition in exactly one output
// partition, and relabels later inputs' columns.
func TestFoldedUnion(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	other := arrow.NewSchema([]arrow.Field{{Name: "w", Type: plan.Int64}}, nil)
	a := newMemSource(intSchema, [][]arrow.RecordBatch{intBatches(t, mem, 0, 2, 2), intBatches(t, mem, 10, 2, 2)})
	b := newMemSource(other, [][]arrow.RecordBatch{{makeBatch(t, mem, other, []any{100, nil})}, {makeBatch(t, mem, other, []any{200})}})
	if u := NewFoldedUnion([]Operator{a, b}, 4); u.Folded() != 0 || u.OutputPartitioning().Count != 4 {
		t.Fatalf("a target no smaller than the inputs' partitions must not fold: folded %d, %d partitions", u.Folded(), u.OutputPartitioning().Count)
	}
	u := NewFoldedUnion([]Operator{a, b}, 3)
	if n := u.OutputPartitioning().Count; n != 3 {
		t.Fatalf("partitions = %d, want 3", n)
	}
	tc := newTestTC(mem, 8)
	parts := collectPartitions(t, u, tc)
	// Input partitions 0..3 are a0, a1, b0, b1; output i merges j%3 == i.
	want := [][]int{{0, 1, 200}, {10, 11}, {-1, 100}}
	for i := range want {
		got := flatten(parts[i])
		slices.Sort(got)
		if fmt.Sprint(got) != fmt.Sprint(want[i]) {
			t.Errorf("partition %d = %v, want %v", i, got, want[i])
		}
	}
	// Partition 0 merges a's first partition with b's second: every batch
	// carries the union's names.
	s, err := u.Execute(context.Background(), 0, tc)
	if err != nil {
		t.Fatal(err)
	}
	for {
		rb, err := s.Next(context.Background())
		if err != nil {
			break
		}
		if rb.Schema().Field(0).Name != "v" {
			t.Errorf("name = %s, want v", rb.Schema().Field(0).Name)
		}
		rb.Release()
	}
	s.Close()
	if _, err := u.Execute(context.Background(), 3, tc); err == nil {
		t.Errorf("partition 3 should be out of range")
	}
	a.release()
	b.release()
	mem.AssertSize(t, 0)
}
