package session_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"sluice/catalog"
	"sluice/cluster"
	"sluice/session"
)

// analyzeQuery joins the facts with the dimension rows of two names (a
// filtered scan, the join's build side) and aggregates per name.
const analyzeQuery = "SELECT d.name, count(*) AS n, sum(f.v) AS total FROM fact f JOIN dim d ON f.fk = d.dk " +
	"WHERE d.name IN ('n1', 'n2') GROUP BY d.name ORDER BY d.name"

// analyzeSessions are the modes EXPLAIN ANALYZE is checked in.
func analyzeSessions(t *testing.T) map[string]*session.Session {
	t.Helper()
	out := map[string]*session.Session{}
	for _, parts := range []string{"1", "3"} {
		s := session.New(catalog.New())
		if err := s.Settings.Set("execution.target_partitions", parts); err != nil {
			t.Fatal(err)
		}
		out["in-process/"+parts] = s
	}
	for _, c := range []struct{ mode, policy string }{
		{"blocking", cluster.PolicyPush}, {"blocking", cluster.PolicyPull}, {"pipelined", cluster.PolicyPush},
	} {
		s := startCluster(t, 2, c.policy)
		// Three tasks per stage, so that metrics are summed over tasks
		// (adaptive execution would merge the tiny partitions into one:
		// TestAdaptiveBlockingCluster checks its EXPLAIN ANALYZE).
		for k, v := range map[string]string{"execution.mode": c.mode, "execution.target_partitions": "3", "scheduler.max_partitions_per_task": "1", "execution.adaptive": "off"} {
			if err := s.Settings.Set(k, v); err != nil {
				t.Fatal(err)
			}
		}
		out[c.mode+"/"+c.policy] = s
	}
	return out
}

// explainAnalyze runs an EXPLAIN ANALYZE and returns its rows by
// plan_type.
func explainAnalyze(t *testing.T, s *session.Session, q string) map[string]string {
	t.Helper()
	ctx := context.Background()
	res, err := s.Execute(ctx, "EXPLAIN ANALYZE "+q)
	if err != nil {
		t.Fatalf("EXPLAIN ANALYZE %s: %v", q, err)
	}
	defer res.Close()
	if res.Schema == nil || res.Schema.NumFields() != 2 || res.Schema.Field(0).Name != "plan_type" || res.Schema.Field(1).Name != "plan" {
		t.Fatalf("EXPLAIN ANALYZE schema %v, want (plan_type, plan)", res.Schema)
	}
	out := map[string]string{}
	for {
		b, err := res.Next(ctx)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		kinds, plans := b.Column(0).(*array.String), b.Column(1).(*array.String)
		for i := 0; i < kinds.Len(); i++ {
			out[kinds.Value(i)] = plans.Value(i)
		}
		b.Release()
	}
}

// scalarInt runs a query returning one integer.
func scalarInt(t *testing.T, s *session.Session, q string) int64 {
	t.Helper()
	rows, err := sltRun(context.Background(), s, q)
	if err != nil || len(rows) != 1 {
		t.Fatalf("%s: %v %v", q, rows, err)
	}
	n, err := strconv.ParseInt(rows[0], 10, 64)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

var stageTasksRe = regexp.MustCompile(` metrics=\[tasks=(\d+),`)

var metricsRows = regexp.MustCompile(` metrics=\[rows=(\d+), batches=\d+, time=[0-9.]+(ns|µs|ms|s)(, mem=[0-9.]+ (B|KiB|MiB|GiB))?(, local_reads=\d+, remote_reads=\d+)?\]$`)

// rowsOf returns the rows an operator line reports.
func rowsOf(t *testing.T, line string) int64 {
	t.Helper()
	m := metricsRows.FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("operator line without metrics: %q", line)
	}
	n, _ := strconv.ParseInt(m[1], 10, 64)
	return n
}

// TestExplainAnalyze runs EXPLAIN ANALYZE of a join and an aggregate in
// process and on clusters in both modes: every operator line carries its
// metrics, and the rows reported for the filtered scan, the join and the
// final operator are the real counts, summed over partitions and tasks.
func TestExplainAnalyze(t *testing.T) {
	for name, s := range analyzeSessions(t) {
		t.Run(name, func(t *testing.T) {
			writeEagerTables(t, s)
			final, err := sltRun(context.Background(), s, analyzeQuery)
			if err != nil {
				t.Fatal(err)
			}
			dimRows := scalarInt(t, s, "SELECT count(*) FROM dim WHERE name IN ('n1', 'n2')")
			joinRows := scalarInt(t, s, "SELECT count(*) FROM fact JOIN dim ON fk = dk WHERE name IN ('n1', 'n2')")
			if len(final) != 2 || dimRows == 0 || joinRows == 0 {
				t.Fatalf("test data: %d final rows, %d dimension rows, %d joined", len(final), dimRows, joinRows)
			}

			out := explainAnalyze(t, s, analyzeQuery)
			text := out["analyzed_plan"]
			if text == "" || len(out) != 2 {
				t.Fatalf("EXPLAIN ANALYZE rows %v, want analyzed_plan and summary", out)
			}
			if !strings.HasPrefix(out["summary"], "rows=2, time=") {
				t.Errorf("summary %q, want rows=2 and the time", out["summary"])
			}
			lines := strings.Split(text, "\n")
			var root, dim, join []string
			// dimReads is how many times the dimension is read: once, or,
			// when blocking mode reads it in the join's stage instead of
			// a broadcast stage, once per task of that stage.
			dimReads, stageTasks, broadcast := int64(1), int64(1), false
			cluster := strings.HasPrefix(lines[0], "Stage ")
			checkTimeline(t, lines, strings.HasPrefix(name, "blocking"))
			for i, l := range lines {
				if strings.HasPrefix(l, "Stage ") {
					if !strings.Contains(l, " metrics=[tasks=") || strings.Contains(l, "reported metrics") {
						t.Errorf("stage line without its tasks' metrics: %q", l)
					}
					if strings.Contains(l, "partitions=3 ") && !strings.Contains(l, "tasks=3,") {
						t.Errorf("stage of 3 partitions not run as 3 tasks: %q", l)
					}
					if strings.Contains(l, " final ") {
						root = append(root, lines[i+1])
					}
					if m := stageTasksRe.FindStringSubmatch(l); m != nil {
						stageTasks, _ = strconv.ParseInt(m[1], 10, 64)
					}
					broadcast = strings.Contains(l, " broadcast ")
					continue
				}
				rowsOf(t, l)
				switch {
				case strings.Contains(l, "Scan: dim") || strings.Contains(l, "Filter: ") && strings.Contains(l, "n1"):
					if len(dim) == 0 && cluster && !broadcast {
						dimReads = stageTasks
					}
					dim = append(dim, l)
				case strings.Contains(l, "HashJoin("):
					join = append(join, l)
				}
			}
			if !cluster {
				root = lines[:1]
			}
			if len(root) != 1 || rowsOf(t, root[0]) != 2 {
				t.Errorf("final operator %q, want 2 rows", root)
			}
			// The dimension's filter is applied by the scan, or by a
			// Filter above it: the topmost of the two outputs the
			// filtered rows.
			if len(dim) == 0 || rowsOf(t, dim[0]) != dimRows*dimReads {
				t.Errorf("filtered dimension scan %q, want %d rows (%d read %d times)", dim, dimRows*dimReads, dimRows, dimReads)
			}
			if len(join) != 1 || rowsOf(t, join[0]) != joinRows {
				t.Errorf("join %q, want %d rows", join, joinRows)
			}
			// The build table is reserved while the join's first Next
			// runs: it counts toward the join.
			if len(join) == 1 && !strings.Contains(join[0], ", mem=") {
				t.Errorf("join %q without the memory of its build table", join[0])
			}
			if t.Failed() {
				t.Logf("EXPLAIN ANALYZE:\n%s\n%s", text, out["summary"])
			}
		})
	}
}

var (
	stageTimeline = regexp.MustCompile(`^Stage (\d+): .* inputs=\[([0-9, ]*)\].* timeline=\[start=\+([^,]+), end=\+([^,\]]+), wait=([^,\]]+)`)
	stageLine     = regexp.MustCompile(`^Stage \d+: `)
)

// checkTimeline checks each stage line's timeline: every stage has one,
// ending after it started, and in blocking mode no stage starts before its
// inputs ended (up to the rounding of the printed figures).
func checkTimeline(t *testing.T, lines []string, blocking bool) {
	t.Helper()
	type span struct{ start, end time.Duration }
	spans := map[string]span{}
	inputs := map[string][]string{}
	for _, l := range lines {
		if !stageLine.MatchString(l) {
			continue
		}
		m := stageTimeline.FindStringSubmatch(l)
		if m == nil {
			t.Errorf("stage line without its timeline: %q", l)
			continue
		}
		start, err1 := time.ParseDuration(m[3])
		end, err2 := time.ParseDuration(m[4])
		if _, err3 := time.ParseDuration(m[5]); err1 != nil || err2 != nil || err3 != nil || end < start {
			t.Errorf("timeline of %q: start %v, end %v", l, start, end)
		}
		spans[m[1]] = span{start, end}
		if m[2] != "" {
			inputs[m[1]] = strings.Split(m[2], ", ")
		}
	}
	if !blocking {
		return
	}
	for id, ins := range inputs {
		for _, in := range ins {
			if s, p := spans[id], spans[in]; s.start < p.end-p.end/100-10*time.Microsecond {
				t.Errorf("stage %s started at +%v, before its input stage %s ended (+%v)", id, s.start, in, p.end)
			}
		}
	}
}

// TestExplainAnalyzeEdges: a LIMIT that stops the query early (on a
// pipelined cluster, producers still running are cancelled and report what
// they did), an empty result, and a query failing on its data, which fails
// the EXPLAIN ANALYZE with the query's error.
func TestExplainAnalyzeEdges(t *testing.T) {
	for name, s := range analyzeSessions(t) {
		t.Run(name, func(t *testing.T) {
			writeEagerTables(t, s)
			for q, want := range map[string]string{
				"SELECT fk FROM fact LIMIT 5":                          "rows=5, ",
				"SELECT fk FROM fact WHERE v > 1000":                   "rows=0, ",
				"SELECT name, count(*) FROM dim GROUP BY name LIMIT 1": "rows=1, ",
			} {
				out := explainAnalyze(t, s, q)
				if !strings.HasPrefix(out["summary"], want) {
					t.Errorf("%s: summary %q, want %q", q, out["summary"], want)
				}
				for _, l := range strings.Split(out["analyzed_plan"], "\n") {
					if !strings.HasPrefix(l, "Stage ") {
						rowsOf(t, l)
					}
				}
			}
			_, err := s.Execute(context.Background(), "EXPLAIN ANALYZE SELECT fk / (v - v) FROM fact")
			if err == nil || !strings.Contains(err.Error(), "division by zero") {
				t.Errorf("EXPLAIN ANALYZE of a failing query: %v, want division by zero", err)
			}
			// The session still works.
			if n := scalarInt(t, s, "SELECT count(*) FROM dim"); n != 43 {
				t.Errorf("after the failure: %d dimension rows, want 43", n)
			}
		})
	}
}

// TestExplainAnalyzePageIndex: a selective filter on a column a file is
// sorted by, in a file with small pages and a page index (as Spark writes
// them), reads only the pages the index leaves, in every mode, and EXPLAIN
// ANALYZE says how many rows the scan skipped so.
func TestExplainAnalyzePageIndex(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sorted.parquet")
	writeSortedPages(t, path, 400000)
	for name, s := range analyzeSessions(t) {
		t.Run(name, func(t *testing.T) {
			if _, err := sltRun(context.Background(), s, fmt.Sprintf("CREATE EXTERNAL TABLE sorted STORED AS PARQUET LOCATION '%s'", path)); err != nil {
				t.Fatal(err)
			}
			const q = "SELECT y FROM sorted WHERE x = 399999"
			rows, err := sltRun(context.Background(), s, q)
			if err != nil {
				t.Fatal(err)
			}
			if len(rows) != 1 || rows[0] != "799998" {
				t.Fatalf("%s: %q, want 799998", q, rows)
			}
			text := explainAnalyze(t, s, q)["analyzed_plan"]
			m := regexp.MustCompile(`ParquetScan: sorted .*page_index_skipped=(\d+)`).FindStringSubmatch(text)
			if m == nil {
				t.Fatalf("no page_index_skipped on the scan:\n%s", text)
			}
			if n, _ := strconv.Atoi(m[1]); n < 200000 || n >= 400000 {
				t.Errorf("page index skipped %d of 400000 rows, want most of them", n)
			}
		})
	}
}

// writeSortedPages writes rows x = 0..n-1, y = 2x in one row group of
// small pages, with a page index.
func writeSortedPages(t *testing.T, path string, n int) {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}, {Name: "y", Type: arrow.PrimitiveTypes.Int64}}, nil)
	xs, ys := array.NewInt64Builder(memory.DefaultAllocator), array.NewInt64Builder(memory.DefaultAllocator)
	for i := range n {
		xs.Append(int64(i))
		ys.Append(int64(2 * i))
	}
	x, y := xs.NewArray(), ys.NewArray()
	rec := array.NewRecordBatch(schema, []arrow.Array{x, y}, int64(n))
	x.Release()
	y.Release()
	defer rec.Release()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	props := parquet.NewWriterProperties(parquet.WithStats(true), parquet.WithPageIndexEnabled(true),
		parquet.WithDictionaryDefault(false), parquet.WithDataPageSize(32<<10), parquet.WithMaxRowGroupLength(int64(n)))
	w, err := pqarrow.NewFileWriter(schema, f, props, pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}
