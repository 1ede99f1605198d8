package expr

import (
	"reflect"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/plan"
)

func TestSimilarFuncs(t *testing.T) {
	// s is abc, '', NULL, héllo; pat is a%, %, x, NULL.
	runCases(t, []exprCase{
		{name: "regexp_like", e: fn("regexp_like", plan.Bool, col("s"), str("l+")), want: "false false NULL true"},
		{name: "regexp_like flags", e: fn("regexp_like", plan.Bool, col("s"), str("B"), str("i")), want: "true false NULL false"},
		{name: "similar per row", e: fn("regexp_like", plan.Bool, col("s"), fn("similar_to_escape", plan.Utf8, col("pat"))), want: "true true NULL NULL"},
		{name: "similar_to_escape", e: fn("similar_to_escape", plan.Utf8, col("pat"), str("#")), want: "^(?:a.*)$ ^(?:.*)$ ^(?:x)$ NULL"},
		{name: "similar_to_escape null escape", e: fn("similar_to_escape", plan.Utf8, col("pat"), lit(plan.Utf8, nil)), want: "NULL NULL NULL NULL"},
		{name: "bad escape", e: fn("similar_to_escape", plan.Utf8, col("pat"), str("ab")), wantErr: "invalid escape string"},
		{name: "bad regex", e: fn("regexp_like", plan.Bool, col("s"), str("(")), wantErr: "invalid regular expression"},
		{name: "global flag", e: fn("regexp_like", plan.Bool, col("s"), str("a"), str("g")), wantErr: "global"},
	})
}

func TestSimilarFuncsProtoRoundTrip(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	batch := testBatch(t, mem)
	defer batch.Release()
	e := fn("regexp_like", plan.Bool, col("s"), fn("similar_to_escape", plan.Utf8, col("pat"), str("#")))
	orig, err := Compile(e, testSchema())
	if err != nil {
		t.Fatal(err)
	}
	got := roundTrip(t, orig)
	if !reflect.DeepEqual(got, orig) {
		t.Fatalf("decoded %#v\nwant %#v", got, orig)
	}
	if a, b := evalString(t, got, batch, mem), evalString(t, orig, batch, mem); a != b {
		t.Fatalf("decoded gives %s, original %s", a, b)
	}
}
