package render

import (
	"bytes"
	"fmt"
	"math/rand/v2"
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
			out := renderBatch(t, c.format, b, Options{NullValue: "∅"})
			b.Release()
			mem.AssertSize(t, 0)
			if !strings.Contains(out.String(), c.want) || strings.Contains(out.String(), "(null)") {
				t.Errorf("%s output:\n%s\nwant it to hold %q and no (null)", c.format, out.String(), c.want)
			}
		})
	}
}

// TestTableFitsTheTerminal draws a wide table on an 80-column terminal:
// every line fits, the first and last columns show around a '…' column,
// and the footer says how many columns are shown. On a terminal too narrow
// for even two columns, rows print one line per column.
func TestTableFitsTheTerminal(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	var fields []arrow.Field
	var cols []arrow.Array
	for i := range 16 {
		fields = append(fields, arrow.Field{Name: fmt.Sprintf("column_%02d", i), Type: arrow.BinaryTypes.String})
		b := array.NewStringBuilder(mem)
		b.AppendValues([]string{fmt.Sprintf("value %d", i), "x"}, nil)
		cols = append(cols, b.NewArray())
		b.Release()
	}
	schema := arrow.NewSchema(fields, nil)
	batch := array.NewRecordBatch(schema, cols, 2)
	for _, c := range cols {
		c.Release()
	}
	defer batch.Release()
	draw := func(termWidth int) string {
		var out bytes.Buffer
		w, err := New("table", &out, Options{TermWidth: termWidth})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Begin(schema); err != nil {
			t.Fatal(err)
		}
		if err := w.Write(batch); err != nil {
			t.Fatal(err)
		}
		if _, err := w.End(); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	out := draw(80)
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if w := displayWidth(line); w > 80 {
			t.Errorf("line of %d cells on an 80-column terminal: %q", w, line)
		}
	}
	for _, want := range []string{"column_00", "column_15", "│ … │", "2 rows, 16 columns (", " shown)"} {
		if !strings.Contains(out, want) {
			t.Errorf("80 columns: output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "column_08") {
		t.Errorf("a middle column is drawn on 80 columns:\n%s", out)
	}
	if all := draw(0); !strings.Contains(all, "column_08") || strings.Contains(all, "│ … │") {
		t.Errorf("with no terminal width every column shows:\n%s", all)
	}
	if narrow := draw(20); !strings.Contains(narrow, "column_00 = value 0\n") || !strings.Contains(narrow, "column_15 = x\n") || strings.Contains(narrow, "│") {
		t.Errorf("20 columns: want one line per column:\n%s", narrow)
	}
}

// TestFitColumnsRandom checks fitColumns on random widths: what it picks
// fits, keeps the first and last columns, and is contiguous from each end
// around one '…'.
func TestFitColumnsRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		widths := make([]int, 1+rng.IntN(20))
		total := 1
		for i := range widths {
			widths[i] = 1 + rng.IntN(40)
			total += widths[i] + 3
		}
		term := rng.IntN(200)
		cols := fitColumns(widths, term)
		if term == 0 || total <= term {
			if len(cols) != len(widths) {
				t.Fatalf("widths %v on %d: %v, want all", widths, term, cols)
			}
			continue
		}
		if cols == nil {
			continue
		}
		used, gap := 1, -1
		for j, i := range cols {
			if i < 0 {
				used += 4
				gap = j
				continue
			}
			used += widths[i] + 3
		}
		if used > term || gap <= 0 || gap == len(cols)-1 || cols[0] != 0 || cols[len(cols)-1] != len(widths)-1 {
			t.Fatalf("widths %v on %d: %v (%d cells)", widths, term, cols, used)
		}
		for j := 1; j < len(cols); j++ {
			if j != gap && j != gap+1 && cols[j] != cols[j-1]+1 {
				t.Fatalf("widths %v on %d: %v is not contiguous", widths, term, cols)
			}
		}
	}
}

// TestTableAbortClosesBorder: a table whose query fails after some rows
// gets its bottom border and no row-count footer.
func TestTableAbortClosesBorder(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	schema, batches := testBatches(t, mem)
	var out bytes.Buffer
	w, err := New("table", &out, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Begin(schema); err != nil {
		t.Fatal(err)
	}
	if err := w.Write(batches[0]); err != nil {
		t.Fatal(err)
	}
	for _, b := range batches {
		b.Release()
	}
	if err := w.(Aborter).Abort(); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	if !strings.Contains(got, "└") || strings.Contains(got, "rows") {
		t.Errorf("an aborted table should end with its border and no footer:\n%s", got)
	}
}

// TestArrayValues renders a VARCHAR[] column: PostgreSQL's text form in
// tables and CSV, a JSON array in JSON; a NULL array is NULL everywhere.
func TestArrayValues(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{{Name: "m", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true}}, nil)
	for _, c := range []struct{ format, want string }{
		{"csv", "m\n\"{a,\"\"b c\"\",NULL}\"\n\n"},
		{"json", `{"m":["a","b c",null]},` + "\n" + `  {"m":null}`},
		{"ndjson", `{"m":["a","b c",null]}` + "\n" + `{"m":null}`},
		{"table", `│ {a,"b c",NULL} │`},
	} {
		t.Run(c.format, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			lb := array.NewListBuilder(mem, arrow.BinaryTypes.String)
			vb := lb.ValueBuilder().(*array.StringBuilder)
			lb.Append(true)
			vb.Append("a")
			vb.Append("b c")
			vb.AppendNull()
			lb.AppendNull()
			col := lb.NewArray()
			lb.Release()
			b := array.NewRecordBatch(schema, []arrow.Array{col}, 2)
			col.Release()
			out := renderBatch(t, c.format, b, Options{NullValue: "∅"})
			b.Release()
			if !strings.Contains(out.String(), c.want) {
				t.Errorf("want %q in:\n%s", c.want, out.String())
			}
		})
	}
}

// renderBatch writes b in format with opts.
func renderBatch(t *testing.T, format string, b arrow.RecordBatch, opts Options) *bytes.Buffer {
	t.Helper()
	var out bytes.Buffer
	w, err := New(format, &out, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Begin(b.Schema()); err != nil {
		t.Fatal(err)
	}
	if err := w.Write(b); err != nil {
		t.Fatal(err)
	}
	if _, err := w.End(); err != nil {
		t.Fatal(err)
	}
	return &out
}
