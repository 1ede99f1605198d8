package render

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

func TestEscape(t *testing.T) {
	for _, tc := range []struct{ in, keep, want string }{
		{"plain text, café, 日本", "", "plain text, café, 日本"},
		{"\x1b[31mred\x1b[0m", "", `\x1b[31mred\x1b[0m`},
		{"bell\a", "", `bell\x07`},
		{"back\bspace\x7f", "", `back\x08space\x7f`},
		{"\u009b2J", "", `\u009b2J`},
		{"bad \xff byte", "", `bad \xff byte`},
		{"a\nb\tc\rd", "\n\t", "a\nb\tc\\x0dd"},
		{"a\nb", "", `a\x0ab`},
		{`C:\path`, "", `C:\path`},
	} {
		if got := Escape(tc.in, tc.keep); got != tc.want {
			t.Errorf("Escape(%q, %q) = %q, want %q", tc.in, tc.keep, got, tc.want)
		}
	}
}

// TestFormatsEscapeControls: no format meant for a terminal lets a
// control character through raw, in a value or a column name; csv, tsv
// and json keep (or encode) the data exactly, for programs.
func TestFormatsEscapeControls(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "v", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "n\x1b]0;title\a", Type: arrow.PrimitiveTypes.Int64},
	}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for i, v := range []string{"\x1b[2J\x1b[Hcleared", "bell\a and \u009b31m", "two\nlines\tand tab", "plain"} {
		b.Field(0).(*array.StringBuilder).Append(v)
		b.Field(1).(*array.Int64Builder).Append(int64(i))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	var all bytes.Buffer
	for _, format := range []string{"table", "line", "markdown"} {
		out := renderBatch(t, format, rec, Options{NullValue: "NULL"})
		for _, c := range []string{"\x1b", "\a", "\u009b"} {
			if strings.Contains(out.String(), c) {
				t.Errorf("%s output holds %q raw:\n%s", format, c, out.String())
			}
		}
		if !strings.Contains(out.String(), `\x1b[2J\x1b[Hcleared`) {
			t.Errorf("%s output does not show the escape sequence escaped:\n%s", format, out.String())
		}
		all.WriteString("# " + format + "\n" + out.String())
	}
	golden := filepath.Join("testdata", "controls.golden")
	if rewrite {
		if err := os.WriteFile(golden, all.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with REWRITE=1 to create it)", err)
	}
	if all.String() != string(want) {
		t.Errorf("output differs from %s:\n%s\n--- want\n%s", golden, all.String(), want)
	}
}
