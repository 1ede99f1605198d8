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

// oneLine keeps a value on one table line; Escape then shows the other
// control characters escaped.
var oneLine = strings.NewReplacer("\n", "\\n", "\r", "\\r", "\t", " ")

// tableText is a value or a column name as a table cell shows it.
func tableText(s string) string { return Escape(oneLine.Replace(s), "") }

// tableWriter draws a box table as batches arrive. Column widths are pinned
// from the header and the first batch (at most MaxWidth); a later value that
// does not fit is cut with a visible '…', never silently. After MaxRows rows
// the rest are counted but not drawn, and the footer says so.
type tableWriter struct {
	out    io.Writer
	opts   Options
	schema *arrow.Schema
	names  []string
	types  []arrow.DataType

	table  *tablewriter.Table
	widths []int
	// cols are the columns drawn, in order; -1 is the '…' column that
	// stands for the hidden ones when the table is wider than the terminal.
	cols []int
	// expanded takes the rows instead of the table when not even two
	// columns fit the terminal.
	expanded Writer
	rows     int64
	shown    int64
}

func (t *tableWriter) Begin(schema *arrow.Schema) error {
	t.schema = schema
	t.names = make([]string, schema.NumFields())
	t.types = make([]arrow.DataType, schema.NumFields())
	for i, f := range schema.Fields() {
		t.names[i] = tableText(f.Name)
		t.types[i] = f.Type
	}
	return nil
}

func (t *tableWriter) cell(b arrow.RecordBatch, col, row int) string {
	s, ok := FormatValue(b.Column(col), row)
	if !ok {
		return t.opts.NullValue
	}
	return tableText(s)
}

// start pins the widths from the header and first (possibly nil) batch and
// draws the header.
func (t *tableWriter) start(first arrow.RecordBatch) error {
	maxw := t.opts.MaxWidth
	switch {
	case maxw == 0:
		maxw = DefaultMaxWidth
	case maxw < 0:
		maxw = int(^uint(0) >> 1)
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
	for i := range t.names {
		t.widths[i] = max(1, min(t.widths[i], maxw))
	}
	t.cols = fitColumns(t.widths, t.opts.TermWidth)
	if t.cols == nil {
		t.expanded = &lineWriter{w: newBuffered(t.out), opts: t.opts}
		return t.expanded.Begin(t.schema)
	}
	aligns := make([]tw.Align, len(t.cols))
	widths := tw.NewMapper[int, int]()
	for j, i := range t.cols {
		w, align := 1, tw.AlignLeft
		if i >= 0 {
			w = t.widths[i]
			if IsNumeric(t.types[i]) {
				align = tw.AlignRight
			}
		}
		widths.Set(j, w+2) // the cell plus one space of padding each side
		aligns[j] = align
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
	header := make([]string, len(t.cols))
	for j, i := range t.cols {
		header[j] = "…"
		if i >= 0 {
			header[j] = cut(t.names[i], t.widths[i])
		}
	}
	t.table.Header(header)
	return nil
}

// fitColumns picks the columns of the given widths that fit a terminal
// termWidth cells wide: all of them when they fit (or the width is not
// known), else as many as fit from both ends, the first ones first, with
// -1 where the hidden ones were. It returns nil when not even the first
// and last columns fit beside the '…' column.
func fitColumns(widths []int, termWidth int) []int {
	all := make([]int, len(widths))
	total := 1 // the left border
	for i, w := range widths {
		all[i] = i
		total += w + 3 // the cell, its padding and its right border
	}
	if termWidth <= 0 || total <= termWidth {
		return all
	}
	if len(widths) < 2 {
		return nil
	}
	room := termWidth - 1 - 4 // the left border and the '…' column
	var left, right []int
	l, r := 0, len(widths)-1
	for l <= r {
		// Alternate ends, starting with the left; stop at the first that
		// does not fit, so the columns shown stay contiguous at each end.
		i := l
		if len(right) < len(left) {
			i = r
		}
		if widths[i]+3 > room {
			break
		}
		room -= widths[i] + 3
		if i == l {
			left = append(left, i)
			l++
		} else {
			right = append([]int{i}, right...)
			r--
		}
	}
	if len(left) == 0 || len(right) == 0 {
		return nil
	}
	return append(append(left, -1), right...)
}

func (t *tableWriter) Write(b arrow.RecordBatch) error {
	if t.table == nil && t.expanded == nil {
		if err := t.start(b); err != nil {
			return err
		}
	}
	if t.expanded != nil {
		t.rows += b.NumRows()
		return t.expanded.Write(b)
	}
	n := int(b.NumRows())
	row := make([]string, len(t.cols))
	for r := 0; r < n; r++ {
		t.rows++
		if t.opts.MaxRows > 0 && t.shown >= int64(t.opts.MaxRows) {
			continue
		}
		for j, i := range t.cols {
			row[j] = "…"
			if i >= 0 {
				row[j] = cut(t.cell(b, i, r), t.widths[i])
			}
		}
		if err := t.table.Append(row); err != nil {
			return err
		}
		t.shown++
	}
	return nil
}

// Abort ends a table whose rows stopped coming (the query failed or was
// cancelled): the rows drawn so far get their bottom border, and no footer
// claims a count.
func (t *tableWriter) Abort() error {
	switch {
	case t.expanded != nil:
		_, err := t.expanded.End()
		return err
	case t.table != nil:
		return t.table.Close()
	}
	return nil
}

func (t *tableWriter) End() (int64, error) {
	if t.table == nil && t.expanded == nil {
		if err := t.start(nil); err != nil {
			return 0, err
		}
	}
	if t.expanded != nil {
		if _, err := t.expanded.End(); err != nil {
			return t.rows, err
		}
	} else {
		if t.shown < t.rows {
			// A row of '…' marks where the rows not drawn would be.
			marker := make([]string, len(t.cols))
			for j := range marker {
				marker[j] = "…"
			}
			if err := t.table.Append(marker); err != nil {
				return t.rows, err
			}
		}
		if err := t.table.Close(); err != nil {
			return t.rows, err
		}
	}
	if !t.opts.NoFooter {
		noun := "rows"
		if t.rows == 1 {
			noun = "row"
		}
		footer := fmt.Sprintf("%d %s", t.rows, noun)
		if t.shown < t.rows && t.expanded == nil {
			footer += fmt.Sprintf(" (%d shown)", t.shown)
		}
		if n := len(t.names); t.expanded == nil && len(t.cols) < n {
			footer += fmt.Sprintf(", %d columns (%d shown)", n, len(t.cols)-1)
		}
		fmt.Fprintln(t.out, footer)
	}
	return t.rows, nil
}
