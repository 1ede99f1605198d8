package bench

import (
	"context"
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sluice/catalog"
	"sluice/cluster"
	"sluice/session"
)

// TestSmoke runs one tiny query per path (blocking and pipelined on an
// embedded cluster of two executors), the latency benchmark, and writes
// the JSON, table and chart.
func TestSmoke(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir := t.TempDir()
	csv := filepath.Join(dir, "t.csv")
	var data strings.Builder
	data.WriteString("k,v\n")
	for i := range 100 {
		fmt.Fprintf(&data, "%d,%d\n", i%7, i)
	}
	if err := os.WriteFile(csv, []byte(data.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	sess := embeddedSession(ctx, t)
	registerCSV(ctx, t, sess, csv)

	suite := &Suite{
		Session: sess, Modes: []string{"blocking", "pipelined"}, Runs: 2,
		Queries: []Query{
			{N: 1, Text: "CREATE VIEW big AS SELECT k, v FROM t WHERE v >= 50;\n-- the view's rows\nSELECT k, sum(v) AS s FROM big GROUP BY k ORDER BY k;\nDROP VIEW big;\n"},
			{Set: SetStreaming, N: 1, Text: "SELECT k, v FROM t WHERE v < 30"},
		},
	}
	runs, mem, err := suite.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 8 {
		t.Fatalf("runs = %d, want 2 per query and mode: %+v", len(runs), runs)
	}
	for _, r := range runs {
		want := int64(7)
		if r.Set == SetStreaming {
			want = 30
		}
		if r.Rows != want || r.TotalMs <= 0 || r.TTFRMs <= 0 || r.TTFRMs > r.TotalMs {
			t.Errorf("run %+v: want %d rows and 0 < TTFR <= total", r, want)
		}
	}
	if len(mem) != 2 || mem[0].PeakRSSBytes <= 0 || mem[1].PeakRSSBytes < mem[0].PeakRSSBytes {
		t.Errorf("memory = %+v, want one growing high-water mark per mode", mem)
	}
	rep := &Report{Suite: "smoke", Machine: ThisMachine(), Runs: runs, Memory: mem, ModesOrder: suite.Modes}
	for _, mode := range suite.Modes {
		l, err := MeasureLatency(ctx, sess, "SELECT 1", mode, "SELECT 1", 5)
		if err != nil {
			t.Fatal(err)
		}
		if l.Count != 5 || l.P50Ms <= 0 || l.P99Ms < l.P50Ms {
			t.Errorf("latency %+v", l)
		}
		rep.Latency = append(rep.Latency, l)
	}

	jsonPath := filepath.Join(dir, "results.json")
	if err := WriteJSON(jsonPath, rep); err != nil {
		t.Fatal(err)
	}
	back, err := ReadJSON(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Runs) != 8 || back.Machine.CPUs <= 0 || back.Machine.GoVersion == "" || len(back.Latency) != 2 {
		t.Errorf("JSON round trip lost data: %+v", back)
	}
	// A peer's report merges in as a third series.
	peer := &Report{Runs: []Run{{Query: 1, Mode: "duckdb", Run: 1, TTFRMs: 1, TotalMs: 2, Rows: 7}}, Notes: []string{"peer"}}
	back.Merge(peer)
	back.Merge(peer) // again, as bench merge into a merged report: replaces
	if len(back.Runs) != 9 || len(back.Notes) != 1 {
		t.Errorf("merging a peer twice: %d runs, notes %q; want 9 and one note", len(back.Runs), back.Notes)
	}
	s := Summarize(back, SetTPCH)
	var table, chart strings.Builder
	if err := s.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	var streaming strings.Builder
	if err := Summarize(back, SetStreaming).WriteTable(&streaming); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(streaming.String(), "| s1 |") || strings.Contains(streaming.String(), "| q1 |") {
		t.Errorf("streaming table should hold s1 and only it:\n%s", streaming.String())
	}
	if strings.Contains(table.String(), "| s1 |") {
		t.Errorf("TPC-H table holds a streaming query:\n%s", table.String())
	}
	if err := WriteExtras(&table, back); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| q1 |", "pip/blk total", "pip/duck total", "| SELECT 1 | pipelined | 5 |", "peak RSS"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}
	if err := WriteSVG(&chart, s, "smoke"); err != nil {
		t.Fatal(err)
	}
	var doc struct{ XMLName xml.Name }
	if err := xml.Unmarshal([]byte(chart.String()), &doc); err != nil || doc.XMLName.Local != "svg" {
		t.Errorf("chart is not an SVG document (%v)", err)
	}
}

// TestSuiteWholeScriptsAndSkips runs the TPC-DS way: in process, scripts
// timed whole, a failing query skipped with its error and listed.
func TestSuiteWholeScriptsAndSkips(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir := t.TempDir()
	csv := filepath.Join(dir, "t.csv")
	if err := os.WriteFile(csv, []byte("k,v\n1,10\n2,20\n3,30\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sess := session.New(catalog.New())
	defer sess.Close()
	res, err := sess.Execute(ctx, fmt.Sprintf("CREATE EXTERNAL TABLE t (k INT, v INT) STORED AS CSV WITH HEADER ROW LOCATION '%s'", csv))
	if err != nil {
		t.Fatal(err)
	}
	res.Close()
	suite := &Suite{InProcess: sess, Modes: []string{ModeInProcess}, Runs: 2, Whole: true, SkipFailing: true,
		Queries: []Query{
			{Set: SetTPCDS, N: 1, Text: "SELECT k FROM t WHERE v > 10;\nSELECT * FROM t;\n"},
			{Set: SetTPCDS, N: 2, Text: "SELECT no_such_column FROM t;\n"},
		},
	}
	runs, _, skipped, err := suite.RunSkipping(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 2 {
		t.Fatalf("runs = %+v, want 2 of q1", runs)
	}
	for _, r := range runs {
		if r.Query != 1 || r.Rows != 5 || r.TTFRMs <= 0 || r.TTFRMs > r.TotalMs {
			t.Errorf("run %+v: want q1 with the rows of both statements (5) and 0 < TTFR <= total", r)
		}
	}
	if len(skipped) != 1 || skipped[0].Query != 2 || skipped[0].Mode != ModeInProcess || !strings.Contains(skipped[0].Error, "no_such_column") {
		t.Fatalf("skipped = %+v, want q2 with its error", skipped)
	}
	rep := &Report{Suite: "tpcds", Runs: runs, Skipped: skipped, ModesOrder: suite.Modes}
	rep.Merge(&Report{Runs: []Run{{Set: SetTPCDS, Query: 1, Mode: "duckdb", Run: 1, TTFRMs: 1, TotalMs: 2, Rows: 5}, {Set: SetTPCDS, Query: 2, Mode: "duckdb", Run: 1, TTFRMs: 1, TotalMs: 2, Rows: 1}}})
	var table strings.Builder
	if err := Summarize(rep, SetTPCDS).WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	if err := WriteExtras(&table, rep); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| q1 |", "| q2 |", "proc/duck total", "- q2 in-process: ", "no_such_column"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}
	// The sum's ratio counts q1 only, the one query both modes ran.
	q1 := Summarize(rep, SetTPCDS).Cells[1][ModeInProcess].TotalMs
	if want := fmtRatio(q1 / 2); !strings.Contains(table.String(), "| **sum** |") || !strings.Contains(table.String(), " "+want+" |\n| **geomean**") {
		t.Errorf("sum ratio should be %s (q1 alone):\n%s", want, table.String())
	}
}

// TestSuiteInterleaved times each query's modes in turn: every mode's
// run 1 before any mode's run 2, each round starting one mode further on,
// a query that fails everywhere skipped in each mode, and the memory
// figures gathered per mode.
func TestSuiteInterleaved(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir := t.TempDir()
	csv := filepath.Join(dir, "t.csv")
	if err := os.WriteFile(csv, []byte("k,v\n1,10\n2,20\n3,30\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sess := embeddedSession(ctx, t)
	local := session.New(catalog.New())
	defer local.Close()
	registerCSV(ctx, t, sess, csv)
	registerCSV(ctx, t, local, csv)
	modes := []string{"blocking", ModeInProcess, "pipelined"}
	suite := &Suite{Session: sess, InProcess: local, Modes: modes, Runs: 2, Whole: true, SkipFailing: true, Interleave: true,
		Queries: []Query{
			{Set: SetTPCDS, N: 1, Text: "SELECT k, sum(v) FROM t GROUP BY k ORDER BY k;\n"},
			{Set: SetTPCDS, N: 2, Text: "SELECT no_such_column FROM t;\n"},
			{Set: SetTPCDS, N: 3, Text: "SELECT count(*) FROM t;\n"},
		},
	}
	suite.ReservedPeaks, suite.ResetReservedPeaks = func() []int64 { return []int64{7, 9} }, func() {}
	runs, mem, skipped, err := suite.RunSkipping(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, r := range runs {
		order = append(order, fmt.Sprintf("q%d/%s/%d", r.Query, r.Mode, r.Run))
	}
	want := "[q1/blocking/1 q1/in-process/1 q1/pipelined/1 q1/in-process/2 q1/pipelined/2 q1/blocking/2 " +
		"q3/blocking/1 q3/in-process/1 q3/pipelined/1 q3/in-process/2 q3/pipelined/2 q3/blocking/2]"
	if got := fmt.Sprint(order); got != want {
		t.Errorf("runs in order %s, want %s", got, want)
	}
	for _, r := range runs {
		if wantRows := map[int]int64{1: 3, 3: 1}[r.Query]; r.Rows != wantRows {
			t.Errorf("run %+v: want %d rows", r, wantRows)
		}
	}
	if len(skipped) != 3 {
		t.Errorf("skipped = %+v, want q2 in each of the 3 modes", skipped)
	}
	if len(mem) != 3 {
		t.Fatalf("memory = %+v, want one per mode", mem)
	}
	for i, m := range mem {
		if m.Mode != modes[i] || m.PeakRSSBytes <= 0 {
			t.Errorf("memory[%d] = %+v, want mode %s with a peak RSS", i, m, modes[i])
		}
		if isCluster := m.Mode != ModeInProcess; isCluster != (fmt.Sprint(m.PeakReservedBytes) == "[7 9]") {
			t.Errorf("memory[%d] = %+v: reserved peaks only for the cluster modes", i, m)
		}
	}
}

// embeddedSession starts an embedded cluster of 2 executors for the test
// and returns a session on it.
func embeddedSession(ctx context.Context, t *testing.T) *session.Session {
	t.Helper()
	emb, err := cluster.StartEmbedded(ctx, cluster.EmbeddedConfig{Executors: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(emb.Close)
	sess, err := session.ConnectWith(emb.SchedulerAddr(), emb.Security())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sess.Close)
	return sess
}

// registerCSV registers the CSV file at path as table t (k INT, v INT).
func registerCSV(ctx context.Context, t *testing.T, s *session.Session, path string) {
	t.Helper()
	res, err := s.Execute(ctx, fmt.Sprintf("CREATE EXTERNAL TABLE t (k INT, v INT) STORED AS CSV WITH HEADER ROW LOCATION '%s'", path))
	if err != nil {
		t.Fatal(err)
	}
	res.Close()
}
