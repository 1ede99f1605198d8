package render

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// delimWriter prints tab-separated values with a header row. Tabs and
// newlines inside values are escaped as \t and \n so each row stays a line.
type delimWriter struct {
	w    *bufio.Writer
	rows int64
	ncol int
}

var tsvEscaper = strings.NewReplacer("\\", "\\\\", "\t", "\\t", "\n", "\\n", "\r", "\\r")

func (d *delimWriter) Begin(schema *arrow.Schema) error {
	d.ncol = schema.NumFields()
	for i, f := range schema.Fields() {
		if i > 0 {
			d.w.WriteByte('\t')
		}
		d.w.WriteString(tsvEscaper.Replace(f.Name))
	}
	d.w.WriteByte('\n')
	return d.w.Flush()
}

func (d *delimWriter) Write(b arrow.RecordBatch) error {
	n := int(b.NumRows())
	for r := 0; r < n; r++ {
		for i := 0; i < d.ncol; i++ {
			if i > 0 {
				d.w.WriteByte('\t')
			}
			if s, ok := FormatValue(b.Column(i), r); ok {
				d.w.WriteString(tsvEscaper.Replace(s))
			}
		}
		d.w.WriteByte('\n')
	}
	d.rows += int64(n)
	return d.w.Flush()
}

func (d *delimWriter) End() (int64, error) { return d.rows, d.w.Flush() }

// jsonWriter prints a JSON array of objects (array=true) or one object per
// line (ndjson). Numbers stay numbers (decimals keep their digits), NULL is
// null.
type jsonWriter struct {
	w     *bufio.Writer
	array bool
	names []string
	nums  []bool
	rows  int64
}

func (j *jsonWriter) Begin(schema *arrow.Schema) error {
	j.names = make([]string, schema.NumFields())
	j.nums = make([]bool, schema.NumFields())
	for i, f := range schema.Fields() {
		q, _ := json.Marshal(f.Name)
		j.names[i] = string(q)
		j.nums[i] = IsNumeric(f.Type) || f.Type.ID() == arrow.BOOL
	}
	if j.array {
		j.w.WriteString("[")
	}
	return nil
}

func (j *jsonWriter) Write(b arrow.RecordBatch) error {
	n := int(b.NumRows())
	for r := 0; r < n; r++ {
		if j.array {
			if j.rows > 0 {
				j.w.WriteString(",")
			}
			j.w.WriteString("\n  ")
		}
		j.w.WriteByte('{')
		for i, name := range j.names {
			if i > 0 {
				j.w.WriteByte(',')
			}
			j.w.WriteString(name)
			j.w.WriteByte(':')
			if l, isList := b.Column(i).(*array.List); isList && l.IsValid(r) {
				j.writeList(l, r)
				continue
			}
			s, ok := FormatValue(b.Column(i), r)
			switch {
			case !ok:
				j.w.WriteString("null")
			case j.nums[i] && !strings.ContainsAny(s, "NI"): // NaN, Inf are not JSON numbers
				j.w.WriteString(s)
			default:
				q, _ := json.Marshal(s)
				j.w.Write(q)
			}
		}
		j.w.WriteByte('}')
		if !j.array {
			j.w.WriteByte('\n')
		}
		j.rows++
	}
	return j.w.Flush()
}

// writeList writes row r of an array column as a JSON array of its
// elements: numbers as numbers, as in a column, the others as their text
// (null for NULL elements).
func (j *jsonWriter) writeList(l *array.List, r int) {
	lo, hi := l.ValueOffsets(r)
	elems := l.ListValues()
	num := IsNumeric(elems.DataType())
	j.w.WriteByte('[')
	for k := int(lo); k < int(hi); k++ {
		if k > int(lo) {
			j.w.WriteByte(',')
		}
		s, ok := FormatValue(elems, k)
		switch {
		case !ok:
			j.w.WriteString("null")
		case num && !strings.ContainsAny(s, "NI"):
			j.w.WriteString(s)
		default:
			q, _ := json.Marshal(s)
			j.w.Write(q)
		}
	}
	j.w.WriteByte(']')
}

func (j *jsonWriter) End() (int64, error) {
	if j.array {
		if j.rows > 0 {
			j.w.WriteString("\n")
		}
		j.w.WriteString("]\n")
	}
	return j.rows, j.w.Flush()
}

// markdownWriter prints a GitHub-flavoured Markdown table.
type markdownWriter struct {
	w    *bufio.Writer
	opts Options
	ncol int
	rows int64
}

var mdEscaper = strings.NewReplacer("|", "\\|", "\n", "<br>")

func (m *markdownWriter) Begin(schema *arrow.Schema) error {
	m.ncol = schema.NumFields()
	m.w.WriteString("|")
	for _, f := range schema.Fields() {
		m.w.WriteString(" " + Escape(mdEscaper.Replace(f.Name), "") + " |")
	}
	m.w.WriteString("\n|")
	for _, f := range schema.Fields() {
		if IsNumeric(f.Type) {
			m.w.WriteString("---:|")
		} else {
			m.w.WriteString("---|")
		}
	}
	m.w.WriteString("\n")
	return m.w.Flush()
}

func (m *markdownWriter) Write(b arrow.RecordBatch) error {
	n := int(b.NumRows())
	for r := 0; r < n; r++ {
		m.w.WriteString("|")
		for i := 0; i < m.ncol; i++ {
			s, ok := FormatValue(b.Column(i), r)
			if !ok {
				s = m.opts.NullValue
			}
			m.w.WriteString(" " + Escape(mdEscaper.Replace(s), "\t") + " |")
		}
		m.w.WriteString("\n")
	}
	m.rows += int64(n)
	return m.w.Flush()
}

func (m *markdownWriter) End() (int64, error) { return m.rows, m.w.Flush() }

// lineWriter prints one `column = value` line per value, a blank line
// between rows (like sqlite's and duckdb's line mode).
type lineWriter struct {
	w     *bufio.Writer
	opts  Options
	names []string
	rows  int64
}

func (l *lineWriter) Begin(schema *arrow.Schema) error {
	width := 0
	for _, f := range schema.Fields() {
		width = max(width, displayWidth(Escape(f.Name, "")))
	}
	l.names = make([]string, schema.NumFields())
	for i, f := range schema.Fields() {
		name := Escape(f.Name, "")
		l.names[i] = strings.Repeat(" ", width-displayWidth(name)) + name
	}
	return nil
}

func (l *lineWriter) Write(b arrow.RecordBatch) error {
	n := int(b.NumRows())
	for r := 0; r < n; r++ {
		if l.rows > 0 {
			l.w.WriteString("\n")
		}
		for i, name := range l.names {
			s, ok := FormatValue(b.Column(i), r)
			if !ok {
				s = l.opts.NullValue
			}
			fmt.Fprintf(l.w, "%s = %s\n", name, Escape(s, "\n\t"))
		}
		l.rows++
	}
	return l.w.Flush()
}

func (l *lineWriter) End() (int64, error) { return l.rows, l.w.Flush() }

func newBuffered(w io.Writer) *bufio.Writer { return bufio.NewWriterSize(w, 64<<10) }
