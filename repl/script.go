package repl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"sluice/render"
	"sluice/session"
	"sluice/sql"
)

// Runner executes statements and renders their results.
type Runner struct {
	Session *session.Session
	Out     io.Writer // query results
	Err     io.Writer // errors and status
	Format  string
}

// RunScript runs every statement of text in order and stops at the first
// error, which it has already printed to Err. source names the script in
// messages ("-c", a file name, "stdin").
func (r *Runner) RunScript(ctx context.Context, source, text string) error {
	sp := NewSplitter()
	pieces := sp.Feed(text)
	if p, ok := sp.Pending(); ok {
		pieces = append(pieces, p) // a last statement may omit its `;`
	}
	for _, p := range pieces {
		if err := r.RunStatement(ctx, p); err != nil {
			r.PrintError(source, p, err)
			return err
		}
	}
	return nil
}

// RunStatement executes one statement and renders its result.
func (r *Runner) RunStatement(ctx context.Context, p Piece) error {
	res, err := r.Session.Execute(ctx, p.SQL)
	if err != nil {
		return err
	}
	defer res.Close()
	if res.Schema == nil {
		return nil
	}
	w, err := render.New(r.Format, r.Out, render.Options{})
	if err != nil {
		return err
	}
	if err := w.Begin(res.Schema); err != nil {
		return err
	}
	for {
		b, err := res.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		err = w.Write(b)
		b.Release()
		if err != nil {
			return err
		}
	}
	_, err = w.End()
	return err
}

// PrintError writes err for statement p of source to r.Err, with the
// position translated to the script's lines and the offending line marked.
func (r *Runner) PrintError(source string, p Piece, err error) {
	var se *sql.Error
	if errors.As(err, &se) && se.Line > 0 {
		line := p.Line + se.Line - 1
		fmt.Fprintf(r.Err, "Error: %s\n  at %s line %d, column %d\n", se.Msg, source, line, se.Column)
		lines := strings.Split(p.SQL, "\n")
		if se.Line-1 < len(lines) {
			src := lines[se.Line-1]
			fmt.Fprintf(r.Err, "  %s\n  %s^\n", src, strings.Repeat(" ", max(0, se.Column-1)))
		}
		if se.Hint != "" {
			fmt.Fprintf(r.Err, "Hint: %s\n", se.Hint)
		}
		return
	}
	fmt.Fprintf(r.Err, "Error: %v\n", err)
}
