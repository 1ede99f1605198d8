package flightsql

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	afsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"

	"sluice/render"
	"sluice/repl"
	"sluice/tpch"
)

// TestTPCHFlightSQL is the acceptance test with arrow-go's Flight
// SQL client: a client of the endpoint lists the TPC-H tables and runs
// the 22 queries with the official answers, in both modes. (The ADBC Go
// driver could not be added: see docs/architecture.md.)
func TestTPCHFlightSQL(t *testing.T) {
	if testing.Short() {
		t.Skip("TPC-H SF 1 skipped in -short mode")
	}
	dir, err := filepath.Abs("../.cache/tpch-sf1")
	if err != nil {
		t.Fatal(err)
	}
	// Other packages' tests generate the same folder; when one of them
	// moves its copy into place first, this generation fails to, and the
	// second look finds the data.
	if _, err := tpch.EnsureCached(context.Background(), 1, dir, nil, nil); err != nil {
		if _, err := tpch.EnsureCached(context.Background(), 1, dir, nil, nil); err != nil {
			t.Fatalf("generating TPC-H SF 1: %v", err)
		}
	}
	srv := startServer(t)
	c := newClient(t, srv, testToken)
	ctx := context.Background()
	mustQuery(t, c, "SELECT 1", "1")
	for _, name := range tpch.TableNames {
		if _, err := c.ExecuteUpdate(ctx, fmt.Sprintf("CREATE EXTERNAL TABLE %s STORED AS PARQUET LOCATION '%s'", name, filepath.Join(dir, name))); err != nil {
			t.Fatal(err)
		}
	}
	info, err := c.GetTables(ctx, &afsql.GetTablesOpts{})
	if err != nil {
		t.Fatal(err)
	}
	rows, _, err := fetch(ctx, c, info)
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, r := range rows {
		listed = append(listed, strings.Split(r, "|")[2])
	}
	want := slices.Clone(tpch.TableNames)
	slices.Sort(want)
	if !slices.Equal(listed, want) {
		t.Fatalf("GetTables lists %q, want %q", listed, want)
	}
	for _, mode := range []string{"pipelined", "blocking"} {
		t.Run(mode, func(t *testing.T) {
			if _, err := c.ExecuteUpdate(ctx, "SET execution.mode = '"+mode+"'"); err != nil {
				t.Fatal(err)
			}
			mustQuery(t, c, "SHOW execution.mode", "execution.mode|"+mode)
			start := time.Now()
			for n := 1; n <= 22; n++ {
				checkTPCH(t, ctx, c, n)
			}
			t.Logf("22 queries in %v", time.Since(start))
		})
	}
}

// checkTPCH runs query n's script over Flight SQL and compares its result
// with the official answer.
func checkTPCH(t *testing.T, ctx context.Context, c *afsql.Client, n int) {
	t.Helper()
	text, err := os.ReadFile(fmt.Sprintf("../testdata/tpch/q%d.sql", n))
	if err != nil {
		t.Fatal(err)
	}
	sp := repl.NewSplitter()
	pieces, err := sp.Feed(string(text))
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := sp.Pending(); ok {
		pieces = append(pieces, p)
	}
	var out strings.Builder
	for _, p := range pieces {
		info, err := c.Execute(ctx, p.SQL)
		if err != nil {
			t.Errorf("q%d line %d: %v", n, p.Line, err)
			return
		}
		rdr, err := c.DoGet(ctx, info.Endpoint[0].Ticket)
		if err != nil {
			t.Errorf("q%d: %v", n, err)
			return
		}
		if rdr.Schema().NumFields() > 0 {
			w, _ := render.New("csv", &out, render.Options{})
			if err := w.Begin(rdr.Schema()); err != nil {
				t.Fatal(err)
			}
			for rdr.Next() {
				if err := w.Write(rdr.RecordBatch()); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := w.End(); err != nil {
				t.Fatal(err)
			}
		}
		err = rdr.Err()
		rdr.Release()
		if err != nil {
			t.Errorf("q%d: %v", n, err)
			return
		}
	}
	header, rows, err := tpch.ReadCSVResult(strings.NewReader(out.String()))
	if err != nil {
		t.Errorf("q%d: %v", n, err)
		return
	}
	ans, err := os.Open(fmt.Sprintf("../testdata/tpch/answers-sf1/q%d.out", n))
	if err != nil {
		t.Fatal(err)
	}
	defer ans.Close()
	res, err := tpch.CompareAnswer(n, ans, header, rows)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Pass {
		t.Errorf("q%d does not match the official answer: %s", n, res.Detail)
	}
}
