package expr

import (
	"errors"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/plan"
)

// TestDataErrorMessage: an error of the data names what went wrong and the
// innermost expression that failed, through any wrapping; other errors are
// not data errors.
func TestDataErrorMessage(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	batch := testBatch(t, mem)
	defer batch.Release()
	for _, c := range []struct {
		e    plan.Expr
		want string
	}{
		{bin(plan.OpAdd, i64(1), bin(plan.OpDiv, col("i64"), i64(0))), "division by zero in (i64 / 0)"},
		{cast(col("s"), plan.Int32), `invalid input syntax for type INT: "abc" in CAST(s AS INT)`},
	} {
		x, err := Compile(c.e, testSchema())
		if err != nil {
			t.Fatal(err)
		}
		out, err := x.Eval(batch, mem)
		if err == nil {
			out.Release()
			t.Fatalf("%s: no error", c.e)
		}
		wrapped := fmt.Errorf("stage 1 task 0: projection: %w", err)
		msg, ok := UserMessage(wrapped)
		if !ok || msg != c.want {
			t.Errorf("%s: UserMessage = %q, %v; want %q (error %v)", c.e, msg, ok, c.want, err)
		}
	}
	if !errors.Is(fmt.Errorf("x: %w", inExpr(i64(1), errDivByZero)), errDivByZero) {
		t.Error("an annotated data error no longer matches its sentinel")
	}
	if _, ok := UserMessage(errors.New("internal: something broke")); ok {
		t.Error("an internal error is not a data error")
	}
}
