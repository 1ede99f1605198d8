package physical

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/plan"
)

var filterSchema = arrow.NewSchema([]arrow.Field{
	{Name: "a", Type: plan.Int64, Nullable: true},
	{Name: "s", Type: plan.Utf8, Nullable: true},
	{Name: "d", Type: plan.Decimal(12, 2), Nullable: true},
	{Name: "keep", Type: plan.Bool, Nullable: true},
}, nil)

func TestFilter(t *testing.T) {
	tests := []struct {
		name string
		keep [][]any // mask per batch
		want string
	}{
		{"all pass", [][]any{{true, true, true}}, "1 x 10 true\n2 <nil> 20 true\n<nil> z <nil> true\n"},
		{"none pass", [][]any{{false, nil, false}}, ""},
		{"some pass with nulls", [][]any{{nil, true, false}}, "2 <nil> 20 true\n"},
		{"second batch only", [][]any{{false, false, false}, {true, false, true}}, "1 x 10 true\n<nil> z <nil> true\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			var batches []arrow.RecordBatch
			for _, k := range tt.keep {
				batches = append(batches, makeBatch(t, mem, filterSchema,
					[]any{1, 2, nil}, []any{"x", nil, "z"}, []any{10, 20, nil}, k))
			}
			src := newMemSource(filterSchema, [][]arrow.RecordBatch{batches})
			f := NewFilter(src, col(3, "keep", plan.Bool))
			got := rowsString(collectAll(t, f, newTestTC(mem, 4)))
			if got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
			if src.open.Load() != 0 {
				t.Errorf("input streams left open: %d", src.open.Load())
			}
			src.release()
			mem.AssertSize(t, 0)
		})
	}
}

func TestFilterPassThrough(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	b := makeBatch(t, mem, filterSchema, []any{1, 2}, []any{"a", "b"}, []any{1, 2}, []any{true, true})
	src := newMemSource(filterSchema, [][]arrow.RecordBatch{{b}})
	s, err := NewFilter(src, col(3, "keep", plan.Bool)).Execute(context.Background(), 0, newTestTC(mem, 8))
	if err != nil {
		t.Fatal(err)
	}
	out, err := s.Next(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if out.Column(0) != b.Column(0) {
		t.Errorf("all-pass batch was copied")
	}
	out.Release()
	s.Close()
	s.Close() // idempotent
	src.release()
	mem.AssertSize(t, 0)
}

func TestFilterRejectsNonBoolean(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	src := newMemSource(filterSchema, [][]arrow.RecordBatch{nil})
	if _, err := NewFilter(src, col(0, "a", plan.Int64)).Execute(context.Background(), 0, newTestTC(mem, 8)); err == nil {
		t.Fatal("expected an error for an int64 predicate")
	}
	if got, want := NewFilter(src, col(3, "keep", plan.Bool)).String(), "Filter: keep@3"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	mem.AssertSize(t, 0)
}

// benchSource returns a source of n rows in 8192-row batches of filterSchema
// with a half-true mask.
func benchSource(b *testing.B, n int) *memSource {
	var batches []arrow.RecordBatch
	for start := 0; start < n; start += DefaultBatchSize {
		m := min(DefaultBatchSize, n-start)
		a, s, d, k := make([]any, m), make([]any, m), make([]any, m), make([]any, m)
		for i := range m {
			v := start + i
			a[i], s[i], d[i], k[i] = (v*7919)%1000003, "some string value", v, v%2 == 0
		}
		batches = append(batches, makeBatch(b, memory.DefaultAllocator, filterSchema, a, s, d, k))
	}
	return newMemSource(filterSchema, [][]arrow.RecordBatch{batches})
}

func BenchmarkFilter(b *testing.B) {
	src := benchSource(b, 1<<20)
	defer src.release()
	f := NewFilter(src, col(3, "keep", plan.Bool))
	tc := NewTaskContext()
	b.ResetTimer()
	for range b.N {
		s, _ := f.Execute(context.Background(), 0, tc)
		for {
			r, err := s.Next(context.Background())
			if err != nil {
				break
			}
			r.Release()
		}
		s.Close()
	}
}
