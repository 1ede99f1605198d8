package render

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

var rewrite = os.Getenv("REWRITE") != ""

// testBatches returns two batches of (id BIGINT, name VARCHAR, price
// DECIMAL(10,2), day DATE) with NULLs, the second holding a value longer than
// anything in the first.
func testBatches(t *testing.T, mem memory.Allocator) (*arrow.Schema, []arrow.RecordBatch) {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "price", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}, Nullable: true},
		{Name: "day", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
	}, nil)
	build := func(ids []int64, names []string, prices []int64, valid []bool) arrow.RecordBatch {
		b := array.NewRecordBuilder(mem, schema)
		defer b.Release()
		for i := range ids {
			b.Field(0).(*array.Int64Builder).Append(ids[i])
			if valid[i] {
				b.Field(1).(*array.StringBuilder).Append(names[i])
				b.Field(2).(*array.Decimal128Builder).Append(decimal128.FromI64(prices[i]))
				b.Field(3).(*array.Date32Builder).Append(arrow.Date32(19000 + ids[i]))
			} else {
				b.Field(1).AppendNull()
				b.Field(2).AppendNull()
				b.Field(3).AppendNull()
			}
		}
		return b.NewRecordBatch()
	}
	return schema, []arrow.RecordBatch{
		build([]int64{1, 2}, []string{"apple", "pear, \"green\""}, []int64{150, 99}, []bool{true, true}),
		build([]int64{3, 4}, []string{"a much longer fruit name", ""}, []int64{123456, 0}, []bool{true, false}),
	}
}

func TestFormatsGolden(t *testing.T) {
	for _, format := range Formats {
		t.Run(format, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			schema, batches := testBatches(t, mem)
			var out bytes.Buffer
			w, err := New(format, &out, Options{MaxRows: 3})
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Begin(schema); err != nil {
				t.Fatal(err)
			}
			for _, b := range batches {
				if err := w.Write(b); err != nil {
					t.Fatal(err)
				}
				b.Release()
			}
			n, err := w.End()
			if err != nil {
				t.Fatal(err)
			}
			if n != 4 {
				t.Errorf("End returned %d rows, want 4", n)
			}
			mem.AssertSize(t, 0)
			golden := filepath.Join("testdata", format+".golden")
			if rewrite {
				if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with REWRITE=1 to create it)", err)
			}
			if out.String() != string(want) {
				t.Errorf("output differs from %s:\n%s\n--- want\n%s", golden, out.String(), want)
			}
		})
	}
}

func TestTableCutsLongValuesVisibly(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	schema, batches := testBatches(t, mem)
	var out bytes.Buffer
	w, _ := New("table", &out, Options{})
	w.Begin(schema)
	for _, b := range batches {
		w.Write(b)
		b.Release()
	}
	w.End()
	if !strings.Contains(out.String(), "a much longe…") {
		t.Errorf("a value longer than the pinned width must be cut with '…':\n%s", out.String())
	}
	if strings.Contains(out.String(), "a much longer fruit name") {
		t.Errorf("the long value should not fit the width pinned from the first batch:\n%s", out.String())
	}
}

func TestUnknownFormat(t *testing.T) {
	if _, err := New("xml", &bytes.Buffer{}, Options{}); err == nil || !strings.Contains(err.Error(), "csv") {
		t.Errorf("want an error listing the formats, got %v", err)
	}
}

// TestNullLiteralIsNull renders a NULL-typed column (a bare NULL literal,
// which has no validity bitmap) as NULL in every format: the null value in
// tables, an empty field in CSV, null in JSON.
func TestNullLiteralIsNull(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "a", Type: arrow.Null, Nullable: true},
		{Name: "b", Type: arrow.PrimitiveTypes.Int64},
	}, nil)
	for _, c := range []struct{ format, want string }{
		{"csv", "a,b\n,7\n"},
		{"json", `{"a":null,"b":7}`},
		{"ndjson", `{"a":null,"b":7}`},
		{"table", "│ ∅ │ 7 │"},
	} {
		t.Run(c.format, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			nulls := array.NewNull(1)
			ib := array.NewInt64Builder(mem)
			ib.Append(7)
			ints := ib.NewInt64Array()
			ib.Release()
			b := array.NewRecordBatch(schema, []arrow.Array{nulls, ints}, 1)
			nulls.Release()
			ints.Release()
			var out bytes.Buffer
			w, err := New(c.format, &out, Options{NullValue: "∅"})
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Begin(schema); err != nil {
				t.Fatal(err)
			}
			if err := w.Write(b); err != nil {
				t.Fatal(err)
			}
			b.Release()
			if _, err := w.End(); err != nil {
				t.Fatal(err)
			}
			mem.AssertSize(t, 0)
			if !strings.Contains(out.String(), c.want) || strings.Contains(out.String(), "(null)") {
				t.Errorf("%s output:\n%s\nwant it to hold %q and no (null)", c.format, out.String(), c.want)
			}
		})
	}
}
