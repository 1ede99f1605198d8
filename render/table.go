package render

import (
	"fmt"
	"io"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/mattn/go-runewidth"
	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"
)

// DefaultMaxWidth is the widest a table column may be pinned.
const DefaultMaxWidth = 40

func displayWidth(s string) int { return runewidth.StringWidth(s) }

// cut shortens s to at most width display cells, marking the cut with '…'.
func cut(s string, width int) string {
	if displayWidth(s) <= width {
		return s
	}
	if width <= 1 {
		return "…"
	}
	return runewidth.Truncate(s, width, "…")
}

// oneLine keeps a value on one table line.
var oneLine = strings.NewReplacer("\n", "\\n", "\r", "\\r", "\t", " ")

// tableWriter draws a box table as batches arrive. Column widths are pinned
// from the header and the first batch (at most MaxWidth); a later value that
// does not fit is cut with a visible '…', never silently. After MaxRows rows
// the rest are counted but not drawn, and the footer says so.
type tableWriter struct {
	out   io.Writer
	opts  Options
	names []string
	types []arrow.DataType

	table  *tablewriter.Table
	widths []int
	rows   int64
	shown  int64
}

func (t *tableWriter) Begin(schema *arrow.Schema) error {
	t.names = make([]string, schema.NumFields())
	t.types = make([]arrow.DataType, schema.NumFields())
	for i, f := range schema.Fields() {
		t.names[i] = f.Name
		t.types[i] = f.Type
	}
	return nil
}

func (t *tableWriter) cell(b arrow.RecordBatch, col, row int) string {
	s, ok := FormatValue(b.Column(col), row)
	if !ok {
		return t.opts.NullValue
	}
	return oneLine.Replace(s)
}

// start pins the widths from the header and first (possibly nil) batch and
// draws the header.
func (t *tableWriter) start(first arrow.RecordBatch) error {
	maxw := t.opts.MaxWidth
	if maxw <= 0 {
		maxw = DefaultMaxWidth
	}
	t.widths = make([]int, len(t.names))
	for i, n := range t.names {
		t.widths[i] = displayWidth(n)
	}
	if first != nil {
		rows := int(first.NumRows())
		if t.opts.MaxRows > 0 {
			rows = min(rows, t.opts.MaxRows)
		}
		for r := 0; r < rows; r++ {
			for i := range t.names {
				t.widths[i] = max(t.widths[i], displayWidth(t.cell(first, i, r)))
			}
		}
	}
	aligns := make([]tw.Align, len(t.names))
	widths := tw.NewMapper[int, int]()
	for i := range t.names {
		t.widths[i] = max(1, min(t.widths[i], maxw))
		widths.Set(i, t.widths[i]+2) // the cell plus one space of padding each side
		aligns[i] = tw.AlignLeft
		if IsNumeric(t.types[i]) {
			aligns[i] = tw.AlignRight
		}
	}
	t.table = tablewriter.NewTable(t.out,
		tablewriter.WithStreaming(tw.StreamConfig{Enable: true}),
		tablewriter.WithColumnWidths(widths),
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithHeaderAlignment(tw.AlignLeft),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
		tablewriter.WithHeaderAutoWrap(tw.WrapNone),
		tablewriter.WithRowAlignmentConfig(tw.CellAlignment{PerColumn: aligns}),
	)
	if err := t.table.Start(); err != nil {
		return err
	}
	header := make([]string, len(t.names))
	for i, n := range t.names {
		header[i] = cut(n, t.widths[i])
	}
	t.table.Header(header)
	return nil
}

func (t *tableWriter) Write(b arrow.RecordBatch) error {
	if t.table == nil {
		if err := t.start(b); err != nil {
			return err
		}
	}
	n := int(b.NumRows())
	row := make([]string, len(t.names))
	for r := 0; r < n; r++ {
		t.rows++
		if t.opts.MaxRows > 0 && t.shown >= int64(t.opts.MaxRows) {
			continue
		}
		for i := range row {
			row[i] = cut(t.cell(b, i, r), t.widths[i])
		}
		if err := t.table.Append(row); err != nil {
			return err
		}
		t.shown++
	}
	return nil
}

func (t *tableWriter) End() (int64, error) {
	if t.table == nil {
		if err := t.start(nil); err != nil {
			return 0, err
		}
	}
	if err := t.table.Close(); err != nil {
		return t.rows, err
	}
	if !t.opts.NoFooter {
		noun := "rows"
		if t.rows == 1 {
			noun = "row"
		}
		if t.shown < t.rows {
			fmt.Fprintf(t.out, "%d %s (%d shown)\n", t.rows, noun, t.shown)
		} else {
			fmt.Fprintf(t.out, "%d %s\n", t.rows, noun)
		}
	}
	return t.rows, nil
}
