package session_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"sluice/render"
	"sluice/repl"
)

// TestTPCHPlans compares EXPLAIN output (logical and physical plans) of the
// 22 TPC-H queries at SF 1 with golden files in testdata/plans. Plans depend
// on table statistics, so they are made against the generated SF 1 data with
// two target partitions. REWRITE=1 regenerates the files; review the diff.
func TestTPCHPlans(t *testing.T) {
	if testing.Short() {
		t.Skip("needs TPC-H SF 1")
	}
	s := tpchSession(t)
	if err := s.Settings.Set("execution.target_partitions", "2"); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for n := 1; n <= 22; n++ {
		t.Run(fmt.Sprintf("q%d", n), func(t *testing.T) {
			text, err := os.ReadFile(fmt.Sprintf("../testdata/tpch/q%d.sql", n))
			if err != nil {
				t.Fatal(err)
			}
			var out strings.Builder
			sp := repl.NewSplitter()
			pieces, err := sp.Feed(string(text))
			if err != nil {
				t.Fatal(err)
			}
			if p, ok := sp.Pending(); ok {
				pieces = append(pieces, p)
			}
			for _, p := range pieces {
				sqlText := p.SQL
				isQuery := strings.HasPrefix(strings.ToLower(strings.TrimSpace(sqlText)), "select")
				if isQuery {
					sqlText = "EXPLAIN " + sqlText
				}
				res, err := s.Execute(ctx, sqlText)
				if err != nil {
					t.Fatal(err)
				}
				if isQuery {
					if err := explainText(ctx, &out, res); err != nil {
						t.Fatal(err)
					}
				}
				res.Close()
			}
			golden := filepath.Join("..", "testdata", "plans", fmt.Sprintf("q%d.txt", n))
			if os.Getenv("REWRITE") != "" {
				os.MkdirAll(filepath.Dir(golden), 0o755)
				if err := os.WriteFile(golden, []byte(out.String()), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (REWRITE=1 creates it)", err)
			}
			if out.String() != string(want) {
				t.Errorf("plan of q%d changed:\n%s\n--- want\n%s", n, out.String(), want)
			}
		})
	}
}

func explainText(ctx context.Context, out *strings.Builder, res interface {
	Next(context.Context) (arrow.RecordBatch, error)
}) error {
	for {
		b, err := res.Next(ctx)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		for r := 0; r < int(b.NumRows()); r++ {
			kind, _ := render.FormatValue(b.Column(0), r)
			plan, _ := render.FormatValue(b.Column(1), r)
			fmt.Fprintf(out, "%s:\n%s\n\n", kind, plan)
		}
		b.Release()
	}
}
