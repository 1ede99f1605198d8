package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"sluice/render"
	"sluice/repl"
	"sluice/session"
	"sluice/tpch"
)

// Check is the verdict on one TPC-H query's answer in one mode: its
// warm-up run's rows compared with an answer file by the kit's rules
// (tpch.CompareAnswer).
type Check struct {
	Query  int    `json:"query"`
	Mode   string `json:"mode"`
	Pass   bool   `json:"pass"`
	Exact  bool   `json:"exact"`
	Detail string `json:"detail"`
}

// CheckAnswer runs a TPC-H script on sess, keeps the last query's rows and
// compares them with dir/qN.out. A query without an answer file is not
// checked (ok false).
func CheckAnswer(ctx context.Context, sess *session.Session, dir string, q Query, mode string) (c Check, ok bool, err error) {
	f, err := os.Open(filepath.Join(dir, fmt.Sprintf("q%d.out", q.N)))
	if errors.Is(err, os.ErrNotExist) {
		return Check{}, false, nil
	}
	if err != nil {
		return Check{}, false, err
	}
	defer f.Close()
	text, err := scriptCSV(ctx, sess, q.Text)
	if err != nil {
		return Check{}, false, err
	}
	header, rows, err := tpch.ReadCSVResult(strings.NewReader(text))
	if err != nil {
		return Check{}, false, err
	}
	res, err := tpch.CompareAnswer(q.N, f, header, rows)
	if err != nil {
		return Check{}, false, err
	}
	return Check{Query: q.N, Mode: mode, Pass: res.Pass, Exact: res.Exact, Detail: res.Detail}, true, nil
}

// scriptCSV runs every statement of text and returns the last result's
// rows as CSV with a header, as `sluice --format csv` prints them.
func scriptCSV(ctx context.Context, sess *session.Session, text string) (string, error) {
	sp := repl.NewSplitter()
	pieces, err := sp.Feed(text)
	if err != nil {
		return "", err
	}
	if p, ok := sp.Pending(); ok {
		pieces = append(pieces, p)
	}
	out := ""
	for _, p := range pieces {
		res, err := sess.Execute(ctx, p.SQL)
		if err != nil {
			return "", fmt.Errorf("line %d: %w", p.Line, err)
		}
		if res.Schema == nil {
			res.Close()
			continue
		}
		var b strings.Builder
		err = renderCSV(ctx, res, &b)
		res.Close()
		if err != nil {
			return "", fmt.Errorf("line %d: %w", p.Line, err)
		}
		out = b.String()
	}
	if out == "" {
		return "", errors.New("no statement returned rows")
	}
	return out, nil
}

func renderCSV(ctx context.Context, res *session.Result, w io.Writer) error {
	r, err := render.New("csv", w, render.Options{})
	if err != nil {
		return err
	}
	if err := r.Begin(res.Schema); err != nil {
		return err
	}
	for {
		b, err := res.Next(ctx)
		if errors.Is(err, io.EOF) {
			_, err := r.End()
			return err
		}
		if err != nil {
			return err
		}
		err = r.Write(b)
		b.Release()
		if err != nil {
			return err
		}
	}
}
