package render

import (
	"encoding/csv"
	"fmt"
	"io"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
)

// Writer renders one result: Begin with the schema, Write each batch as it
// arrives, End when the result is complete.
type Writer interface {
	Begin(schema *arrow.Schema) error
	Write(batch arrow.RecordBatch) error
	// End finishes the output and returns the number of rows written.
	End() (int64, error)
}

// Aborter is a Writer that can end its output cleanly when the rows stop
// coming because the query failed or was cancelled.
type Aborter interface {
	Abort() error
}

// Options tune a Writer.
type Options struct {
	// NullValue is printed for NULL in human formats (default "NULL").
	NullValue string
	// MaxRows limits the rows a table draws (0: all); the rest are counted.
	MaxRows int
	// MaxWidth is the widest a table column is pinned (0: DefaultMaxWidth;
	// negative: no limit).
	MaxWidth int
	// TermWidth is the width of the terminal the table is drawn on, in
	// cells (0: not a terminal, no limit). A table wider than that shows
	// its first and last columns around a column of '…' and says how many
	// it shows; when not even two columns fit, rows print one line per
	// column, as the line format does.
	TermWidth int
	// NoFooter drops the table's "N rows" footer.
	NoFooter bool
}

// Formats lists the accepted format names.
var Formats = []string{"table", "csv", "tsv", "json", "ndjson", "markdown", "line"}

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
	case "tsv":
		return &delimWriter{w: newBuffered(w)}, nil
	case "json":
		return &jsonWriter{w: newBuffered(w), array: true}, nil
	case "ndjson":
		return &jsonWriter{w: newBuffered(w)}, nil
	case "markdown":
		return &markdownWriter{w: newBuffered(w), opts: opts}, nil
	case "line":
		return &lineWriter{w: newBuffered(w), opts: opts}, nil
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
