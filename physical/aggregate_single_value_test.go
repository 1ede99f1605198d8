package physical

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/physical/expr"
	"sluice/plan"
)

// TestHashAggregateSingleValue: single_value yields each group's one
// value (NULL values kept) and fails with PostgreSQL's error when a group
// has two rows, also when they arrive in different partitions and only the
// final aggregate sees both.
func TestHashAggregateSingleValue(t *testing.T) {
	key := []expr.Expr{col(0, "a", plan.Int64)}
	aggs := []AggregateExpr{{Func: plan.AggSingleValue, Arg: col(1, "b", plan.Utf8), Name: "v", Type: plan.Utf8}}
	run := func(t *testing.T, mem memory.Allocator, second []any, secondB []any) ([][]any, error) {
		src := newMemSource(setOpSchema, [][]arrow.RecordBatch{
			{makeBatch(t, mem, setOpSchema, []any{1, 2}, []any{"x", nil})},
			{makeBatch(t, mem, setOpSchema, second, secondB)},
		})
		defer src.release()
		partial, err := NewHashAggregate(src, AggPartial, key, []string{"a"}, aggs)
		if err != nil {
			t.Fatal(err)
		}
		final, err := NewHashAggregate(&jaCoalesce{in: partial}, AggFinal, key, []string{"a"}, aggs)
		if err != nil {
			t.Fatal(err)
		}
		s, err := final.Execute(context.Background(), 0, newTestTC(mem, 8))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		var rows [][]any
		for {
			b, err := s.Next(context.Background())
			if err != nil {
				if err == io.EOF {
					return rows, nil
				}
				return nil, err
			}
			rows = append(rows, batchRows(b)...)
			b.Release()
		}
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	rows, err := run(t, mem, []any{3}, []any{"y"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := setOpRows(rows), "[1 x] [2 <nil>] [3 y]"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	if _, err := run(t, mem, []any{3, 1}, []any{"y", "z"}); !errors.Is(err, ErrSubqueryRows) {
		t.Errorf("two rows in group 1: err = %v, want %v", err, ErrSubqueryRows)
	}
	mem.AssertSize(t, 0)
}
