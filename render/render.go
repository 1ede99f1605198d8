package render

import (
	"encoding/csv"
	"fmt"
	"io"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"
)

// Writer renders one result: Begin with the schema, Write each batch as it
// arrives, End when the result is complete.
type Writer interface {
	Begin(schema *arrow.Schema) error
	Write(batch arrow.RecordBatch) error
	// End finishes the output and returns the number of rows written.
	End() (int64, error)
}

// Options tune a Writer.
type Options struct {
	// NullValue is printed for NULL in human formats (default "NULL").
	NullValue string
}

// Formats lists the accepted format names.
var Formats = []string{"table", "csv"}

// New returns a writer for format.
func New(format string, w io.Writer, opts Options) (Writer, error) {
	if opts.NullValue == "" {
		opts.NullValue = "NULL"
	}
	switch strings.ToLower(format) {
	case "csv":
		return &csvWriter{w: csv.NewWriter(w)}, nil
	case "table":
		return &tableWriter{out: w, opts: opts}, nil
	}
	return nil, fmt.Errorf("unknown format %q (expected one of %s)", format, strings.Join(Formats, ", "))
}

// csvWriter prints a header row then one line per row; NULL is empty.
type csvWriter struct {
	w    *csv.Writer
	rows int64
	rec  []string
}

func (c *csvWriter) Begin(schema *arrow.Schema) error {
	c.rec = make([]string, schema.NumFields())
	for i, f := range schema.Fields() {
		c.rec[i] = f.Name
	}
	return c.w.Write(c.rec)
}

func (c *csvWriter) Write(b arrow.RecordBatch) error {
	n := int(b.NumRows())
	for r := 0; r < n; r++ {
		for i := range c.rec {
			c.rec[i], _ = FormatValue(b.Column(i), r)
		}
		if err := c.w.Write(c.rec); err != nil {
			return err
		}
	}
	c.rows += int64(n)
	c.w.Flush()
	return c.w.Error()
}

func (c *csvWriter) End() (int64, error) {
	c.w.Flush()
	return c.rows, c.w.Error()
}

// tableWriter draws a box table; numbers are right-aligned.
type tableWriter struct {
	out   io.Writer
	opts  Options
	table *tablewriter.Table
	cols  int
	rows  int64
}

func (t *tableWriter) Begin(schema *arrow.Schema) error {
	t.cols = schema.NumFields()
	aligns := make([]tw.Align, t.cols)
	header := make([]any, t.cols)
	for i, f := range schema.Fields() {
		header[i] = f.Name
		aligns[i] = tw.AlignLeft
		if IsNumeric(f.Type) {
			aligns[i] = tw.AlignRight
		}
	}
	t.table = tablewriter.NewTable(t.out,
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
		tablewriter.WithRowAlignmentConfig(tw.CellAlignment{PerColumn: aligns}),
	)
	t.table.Header(header...)
	return nil
}

func (t *tableWriter) Write(b arrow.RecordBatch) error {
	n := int(b.NumRows())
	for r := 0; r < n; r++ {
		row := make([]string, t.cols)
		for i := range row {
			s, ok := FormatValue(b.Column(i), r)
			if !ok {
				s = t.opts.NullValue
			}
			row[i] = s
		}
		if err := t.table.Append(row); err != nil {
			return err
		}
	}
	t.rows += int64(n)
	return nil
}

func (t *tableWriter) End() (int64, error) {
	return t.rows, t.table.Render()
}
