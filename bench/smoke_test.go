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
	emb, err := cluster.StartEmbedded(ctx, cluster.EmbeddedConfig{Executors: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer emb.Close()
	sess, err := session.Connect(emb.SchedulerAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	res, err := sess.Execute(ctx, fmt.Sprintf("CREATE EXTERNAL TABLE t (k INT, v INT) STORED AS CSV WITH HEADER ROW LOCATION '%s'", csv))
	if err != nil {
		t.Fatal(err)
	}
	res.Close()

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
