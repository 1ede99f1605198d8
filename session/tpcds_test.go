package session_test

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"sluice/catalog"
	"sluice/cluster"
	"sluice/render"
	"sluice/repl"
	"sluice/session"
)

// tpcdsDir is the TPC-DS reference folder that sits beside the repository:
// the 24 tables written by DuckDB (data/), the 99 queries (queries/) and
// DuckDB's answers with PostgreSQL semantics (answers/). It is test data
// that is never copied into the repository; without it the TPC-DS tests
// skip.
const tpcdsDir = "../../shared/tpcds"

func tpcdsTables(t testing.TB) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(tpcdsDir, "data", "*.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Skipf("no TPC-DS data in %s", tpcdsDir)
	}
	return files
}

func registerTPCDS(t testing.TB, ctx context.Context, s *session.Session, files []string) {
	t.Helper()
	for _, f := range files {
		abs, err := filepath.Abs(f)
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimSuffix(filepath.Base(f), ".parquet")
		res, err := s.Execute(ctx, fmt.Sprintf("CREATE EXTERNAL TABLE %s STORED AS PARQUET LOCATION '%s'", name, abs))
		if err != nil {
			t.Fatal(err)
		}
		res.Close()
	}
}

// runScriptCSV runs every statement of a script and returns the CSV of all
// its results, one after the other, each with its header row, as the
// command line prints them with --format csv.
func runScriptCSV(ctx context.Context, s *session.Session, text string) (string, error) {
	var out strings.Builder
	sp := repl.NewSplitter()
	pieces, err := sp.Feed(text)
	if err != nil {
		return "", err
	}
	if p, ok := sp.Pending(); ok {
		pieces = append(pieces, p)
	}
	for _, p := range pieces {
		res, err := s.Execute(ctx, p.SQL)
		if err != nil {
			return "", fmt.Errorf("line %d: %w", p.Line, err)
		}
		if res.Schema == nil {
			res.Close()
			continue
		}
		w, _ := render.New("csv", &out, render.Options{})
		if err := w.Begin(res.Schema); err != nil {
			res.Close()
			return "", err
		}
		for {
			b, err := res.Next(ctx)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				res.Close()
				return "", err
			}
			err = w.Write(b)
			b.Release()
			if err != nil {
				res.Close()
				return "", err
			}
		}
		res.Close()
		if _, err := w.End(); err != nil {
			return "", err
		}
	}
	return out.String(), nil
}

// csvRows reads a CSV text and drops its first line (the first header);
// the header rows of later statements stay, as data rows, so results of
// several statements compare in order.
func csvRows(text string) ([][]string, error) {
	r := csv.NewReader(strings.NewReader(text))
	r.FieldsPerRecord = -1
	recs, err := r.ReadAll()
	if err != nil {
		return nil, err
	}
	if len(recs) == 0 {
		return nil, nil
	}
	rows := recs[1:]
	for _, row := range rows {
		for i := range row {
			row[i] = strings.TrimRight(row[i], " ")
		}
	}
	return rows, nil
}

// sameValue compares two printed values by the reference answers' rules:
// empty and NULL are equal, numbers agree to 2 decimals (or 1e-9 relative
// for large values), text is exact, booleans ignore case.
func sameValue(want, got string) bool {
	if (want == "" || want == "NULL") && (got == "" || got == "NULL") {
		return true
	}
	if want == got {
		return true
	}
	a, errA := strconv.ParseFloat(want, 64)
	b, errB := strconv.ParseFloat(got, 64)
	if errA != nil || errB != nil {
		w, g := strings.ToLower(want), strings.ToLower(got)
		return w == g && (w == "true" || w == "false")
	}
	return math.Abs(a-b) <= math.Max(0.011, 1e-9*math.Abs(a))
}

// compareRows returns "" when got matches want row by row, else why not.
func compareRows(want, got [][]string) string {
	if len(got) != len(want) {
		return fmt.Sprintf("got %d rows, want %d", len(got), len(want))
	}
	for i := range want {
		if len(got[i]) != len(want[i]) {
			return fmt.Sprintf("row %d: %d columns, want %d", i, len(got[i]), len(want[i]))
		}
		for j := range want[i] {
			if !sameValue(want[i][j], got[i][j]) {
				return fmt.Sprintf("row %d column %d: got %q, want %q", i, j, got[i][j], want[i][j])
			}
		}
	}
	return ""
}

// compareTPCDS compares a result with the reference answer: in order, and
// where the query's ORDER BY leaves ties, as a multiset.
func compareTPCDS(wantText, gotText string) string {
	want, err := csvRows(wantText)
	if err != nil {
		return "reading the answer: " + err.Error()
	}
	got, err := csvRows(gotText)
	if err != nil {
		return "reading the result: " + err.Error()
	}
	why := compareRows(want, got)
	if why == "" {
		return ""
	}
	sortRows := func(rows [][]string) {
		sort.SliceStable(rows, func(i, j int) bool {
			return strings.Join(rows[i], "\x00") < strings.Join(rows[j], "\x00")
		})
	}
	sortRows(want)
	sortRows(got)
	if compareRows(want, got) == "" {
		return ""
	}
	return why
}

// checkTPCDS runs query n and compares it with the reference answer.
func checkTPCDS(t *testing.T, ctx context.Context, s *session.Session, n int) {
	t.Helper()
	text, err := os.ReadFile(filepath.Join(tpcdsDir, "queries", fmt.Sprintf("q%d.sql", n)))
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join(tpcdsDir, "answers", fmt.Sprintf("q%d.csv", n)))
	if err != nil {
		t.Fatal(err)
	}
	qctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	start := time.Now()
	got, err := runScriptCSV(qctx, s, string(text))
	switch {
	case err != nil:
		t.Errorf("q%d: %v", n, err)
	default:
		if why := compareTPCDS(string(want), got); why != "" {
			t.Errorf("q%d does not match the reference answer: %s", n, why)
		}
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Logf("q%d took %v", n, d)
	}
}

// TestTPCDSCluster runs the 99 TPC-DS queries on embedded clusters in the
// default (pipelined) mode with 2 executors and in blocking mode with 3.
func TestTPCDSCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("TPC-DS skipped in -short mode")
	}
	files := tpcdsTables(t)
	ctx := context.Background()
	for _, c := range []struct {
		executors int
		mode      string
	}{{2, "pipelined"}, {3, "blocking"}} {
		t.Run(fmt.Sprintf("%s/%d-executors", c.mode, c.executors), func(t *testing.T) {
			s := startCluster(t, c.executors, cluster.PolicyPush)
			if err := s.Settings.Set("execution.mode", c.mode); err != nil {
				t.Fatal(err)
			}
			registerTPCDS(t, ctx, s, files)
			start := time.Now()
			for n := 1; n <= 99; n++ {
				checkTPCDS(t, ctx, s, n)
			}
			t.Logf("99 queries in %v", time.Since(start))
		})
	}
}

// TestTPCDSInProcess runs a sample of the TPC-DS queries (every seventh) on
// the in-process engine.
func TestTPCDSInProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("TPC-DS skipped in -short mode")
	}
	files := tpcdsTables(t)
	ctx := context.Background()
	s := session.New(catalog.New())
	registerTPCDS(t, ctx, s, files)
	for n := 1; n <= 99; n += 7 {
		t.Run(fmt.Sprintf("q%d", n), func(t *testing.T) {
			checkTPCDS(t, ctx, s, n)
		})
	}
}

// TestCompareTPCDS checks the comparison rules the TPC-DS tests rely on.
func TestCompareTPCDS(t *testing.T) {
	for _, c := range []struct {
		want, got string
		same      bool
	}{
		{"a,b\n1,x\n2,y\n", "a,b\n1,x\n2,y\n", true},
		{"a,b\n1,x\n2,y\n", "a,b\n2,y\n1,x\n", true},            // ties compare as a multiset
		{"a\n1.004\n", "a\n1.00\n", true},                       // two decimals
		{"a\n1.02\n", "a\n1.00\n", false},                       // beyond two decimals
		{"a,b\n,1\n", "a,b\nNULL,1\n", true},                    // empty is NULL
		{"a\n1\n1\n", "a\n1\n", false},                          // a missing row
		{"a\nx\n", "a\nX\n", false},                             // text is exact
		{"a\nx\na\ny\n", "a\nx\na\ny\n", true},                  // a second statement's header
		{"a,b\n1,x\n", "a,b\n1\n", false},                       // a missing column
		{"a\n12345678901234\n", "a\n12345678901235\n", true},    // 1e-9 relative
		{"a\n123456789012345678\n", "a\n123456789012\n", false}, // far off
	} {
		if got := compareTPCDS(c.want, c.got) == ""; got != c.same {
			t.Errorf("compare(%q, %q) = %v, want %v", c.want, c.got, got, c.same)
		}
	}
}
