package expr

import (
	"reflect"
	"regexp"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/plan"
)

// The expected ages are PostgreSQL 15's.
func TestTimestampAge(t *testing.T) {
	ts := func(s string) int64 {
		v, err := parseTimestamp(s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, c := range []struct{ a, b, want string }{
		{"2001-04-10 00:00:00", "1957-06-13 00:00:00", "43 years 9 mons 27 days"},
		{"1957-06-13 00:00:00", "2001-04-10 00:00:00", "-43 years -9 mons -27 days"},
		{"2020-03-01 00:00:00", "2020-01-31 00:00:00", "1 mon 1 day"},
		{"2020-01-01 10:00:00", "2020-01-01 12:30:00.25", "-02:30:00.25"},
		{"2021-03-31 00:00:01", "2021-02-28 23:59:59", "1 mon 2 days 00:00:02"},
		{"2000-03-15 00:00:00", "2000-01-31 08:00:00", "1 mon 14 days 16:00:00"},
		{"1969-12-31 23:59:59", "1969-01-01 00:00:00.5", "11 mons 30 days 23:59:58.5"},
		{"2020-01-01 00:00:00", "2020-01-01 00:00:00", "00:00:00"},
	} {
		got := string(plan.AppendIntervalText(nil, timestampAge(ts(c.a), ts(c.b))))
		if got != c.want {
			t.Errorf("age(%s, %s) = %s, want %s", c.a, c.b, got, c.want)
		}
	}
}

func TestAgeFunc(t *testing.T) {
	runCases(t, []exprCase{
		{name: "age", e: fn("age", plan.Interval, col("ts"), cast(col("dt"), plan.Timestamp)), want: "10:00:00 NULL NULL 30 years 1 mon 28 days 00:00:00.5"},
	})
}

func TestGenRandomUUID(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	batch := testBatch(t, mem)
	defer batch.Release()
	e, err := Compile(fn("gen_random_uuid", plan.Utf8), testSchema())
	if err != nil {
		t.Fatal(err)
	}
	e = roundTrip(t, e)
	out, err := e.Eval(batch, mem)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Release()
	v4 := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	seen := map[string]bool{}
	s := out.(*array.String)
	for i := 0; i < s.Len(); i++ {
		if s.IsNull(i) || !v4.MatchString(s.Value(i)) || seen[s.Value(i)] {
			t.Fatalf("row %d: %q is not a new version 4 UUID", i, s.Value(i))
		}
		seen[s.Value(i)] = true
	}
	if len(seen) != int(batch.NumRows()) {
		t.Fatalf("%d values for %d rows", len(seen), batch.NumRows())
	}
}

func TestAgeProtoRoundTrip(t *testing.T) {
	orig, err := Compile(fn("age", plan.Interval, col("ts"), col("ts")), testSchema())
	if err != nil {
		t.Fatal(err)
	}
	if got := roundTrip(t, orig); !reflect.DeepEqual(got, orig) {
		t.Fatalf("decoded %#v\nwant %#v", got, orig)
	}
}
