package physical

import (
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/plan"
)

var intSchema = arrow.NewSchema([]arrow.Field{{Name: "v", Type: plan.Int64, Nullable: true}}, nil)

// intBatches returns batches of consecutive ints [start, start+n) of size
// per batch.
func intBatches(t testing.TB, mem memory.Allocator, start, n, per int) []arrow.RecordBatch {
	var out []arrow.RecordBatch
	for i := start; i < start+n; i += per {
		var vals []any
		for j := i; j < min(i+per, start+n); j++ {
			vals = append(vals, j)
		}
		out = append(out, makeBatch(t, mem, intSchema, vals))
	}
	return out
}

func TestLimit(t *testing.T) {
	tests := []struct {
		offset, count int64
		want          []int
		maxPulls      int64
	}{
		{0, -1, seq(0, 10), 4},
		{0, 3, seq(0, 3), 1},
		{2, 3, seq(2, 5), 2},
		{3, 3, seq(3, 6), 2},
		{4, 100, seq(4, 10), 4},
		{12, 3, nil, 4},
		{0, 0, nil, 0},
		{5, -1, seq(5, 10), 4},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("skip%d_fetch%d", tt.offset, tt.count), func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			src := newMemSource(intSchema, [][]arrow.RecordBatch{intBatches(t, mem, 0, 10, 3)})
			l := NewLimit(src, tt.offset, tt.count)
			rows := collectAll(t, l, newTestTC(mem, 8))
			if got, want := fmt.Sprint(flatten(rows)), fmt.Sprint(tt.want); got != want && !(len(rows) == 0 && len(tt.want) == 0) {
				t.Errorf("got %s, want %s", got, want)
			}
			if p := src.pulls.Load(); p > tt.maxPulls {
				t.Errorf("pulled %d batches, want <= %d", p, tt.maxPulls)
			}
			if src.open.Load() != 0 {
				t.Errorf("child not closed")
			}
			src.release()
			mem.AssertSize(t, 0)
		})
	}
	if got, want := NewLimit(nil, 2, 10).String(), "Limit: skip=2 fetch=10"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

func seq(a, b int) []int {
	var out []int
	for i := a; i < b; i++ {
		out = append(out, i)
	}
	return out
}

func flatten(rows [][]any) []int {
	var out []int
	for _, r := range rows {
		if r[0] == nil {
			out = append(out, -1)
		} else {
			out = append(out, r[0].(int))
		}
	}
	return out
}
