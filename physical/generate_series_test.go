package physical

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/physical/expr"
	"sluice/plan"
)

func TestGenerateSeries(t *testing.T) {
	i32 := func(v int32) expr.Expr { return lit(plan.Int32, v) }
	i64 := func(v int64) expr.Expr { return lit(plan.Int64, v) }
	ts := func(days int64) expr.Expr { return lit(plan.Timestamp, days*plan.MicrosPerDay) }
	iv := func(m, d int32) expr.Expr {
		return lit(plan.Interval, arrow.MonthDayNanoInterval{Months: m, Days: d})
	}
	tests := []struct {
		name              string
		typ               arrow.DataType
		start, stop, step expr.Expr
		batch             int
		want              string
		wantErr           string
	}{
		{name: "ascending", typ: plan.Int32, start: i32(1), stop: i32(5), step: i32(1), batch: 2, want: "1\n2\n3\n4\n5\n"},
		{name: "step past stop", typ: plan.Int32, start: i32(1), stop: i32(6), step: i32(2), batch: 8, want: "1\n3\n5\n"},
		{name: "descending", typ: plan.Int64, start: i64(3), stop: i64(-3), step: i64(-3), batch: 8, want: "3\n0\n-3\n"},
		{name: "empty", typ: plan.Int64, start: i64(5), stop: i64(1), step: i64(1), batch: 8, want: ""},
		{name: "null bound", typ: plan.Int64, start: lit(plan.Int64, nil), stop: i64(1), step: i64(1), batch: 8, want: ""},
		{name: "stops before overflow", typ: plan.Int64, start: i64(1<<63 - 2), stop: i64(1<<63 - 1), step: i64(5), batch: 8,
			want: "9223372036854775806\n"},
		{name: "int32 near the top", typ: plan.Int32, start: i32(1<<31 - 2), stop: i32(1<<31 - 1), step: i32(1), batch: 1,
			want: "2147483646\n2147483647\n"},
		{name: "zero step", typ: plan.Int64, start: i64(1), stop: i64(2), step: i64(0), batch: 8, wantErr: "step size cannot equal zero"},
		{name: "months clamp", typ: plan.Timestamp, start: ts(18292), stop: ts(18383), step: iv(1, 0), batch: 2,
			// 2020-01-31, 2020-02-29, 2020-03-29, 2020-04-29: each step adds a
			// month to the previous value, as in PostgreSQL.
			want: "1580428800000000\n1582934400000000\n1585440000000000\n1588118400000000\n"},
		{name: "days down", typ: plan.Timestamp, start: ts(2), stop: ts(0), step: iv(0, -1), batch: 8,
			want: "172800000000\n86400000000\n0\n"},
		{name: "zero interval", typ: plan.Timestamp, start: ts(0), stop: ts(1), step: iv(0, 0), batch: 8, wantErr: "step size cannot equal zero"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			g, err := NewGenerateSeries(arrow.NewSchema([]arrow.Field{{Name: "x", Type: tt.typ}}, nil), tt.start, tt.stop, tt.step)
			if err != nil {
				t.Fatal(err)
			}
			if tt.wantErr != "" {
				_, err := g.Execute(context.Background(), 0, newTestTC(mem, tt.batch))
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			s, err := g.Execute(context.Background(), 0, newTestTC(mem, tt.batch))
			if err != nil {
				t.Fatal(err)
			}
			for {
				b, err := s.Next(context.Background())
				if err != nil {
					break
				}
				if int(b.NumRows()) > tt.batch || b.NumRows() == 0 {
					t.Errorf("batch of %d rows, batch size %d", b.NumRows(), tt.batch)
				}
				b.Release()
			}
			s.Close()
			if got := rowsString(collectAll(t, g, newTestTC(mem, tt.batch))); got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func TestGenerateSeriesTypeChecks(t *testing.T) {
	one := lit(plan.Int64, int64(1))
	if _, err := NewGenerateSeries(arrow.NewSchema([]arrow.Field{{Name: "x", Type: plan.Utf8}}, nil), one, one, one); err == nil {
		t.Error("VARCHAR series accepted")
	}
	if _, err := NewGenerateSeries(arrow.NewSchema([]arrow.Field{{Name: "x", Type: plan.Timestamp}}, nil),
		lit(plan.Timestamp, int64(0)), lit(plan.Timestamp, int64(0)), one); err == nil {
		t.Error("TIMESTAMP series with an integer step accepted")
	}
}
