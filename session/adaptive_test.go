package session_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"sluice/catalog"
	"sluice/cluster"
	"sluice/session"
)

// writeAdaptiveTables writes aqe_fact (200,000 rows over keys 0..49,999,
// every 1000th key NULL) and aqe_dim (50,000 keys, some repeated, a tag of
// 7 values, every 5000th key NULL) as Parquet and registers them in each
// session.
func writeAdaptiveTables(t *testing.T, sessions ...*session.Session) {
	t.Helper()
	dir := t.TempDir()
	write := func(name string, fields []arrow.Field, n int, row func(b *array.RecordBuilder, i int)) {
		b := array.NewRecordBuilder(memory.DefaultAllocator, arrow.NewSchema(fields, nil))
		defer b.Release()
		for i := range n {
			row(b, i)
		}
		rec := b.NewRecordBatch()
		defer rec.Release()
		path := filepath.Join(dir, name+".parquet")
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		w, err := pqarrow.NewFileWriter(rec.Schema(), f, parquet.NewWriterProperties(parquet.WithStats(true)), pqarrow.DefaultWriterProps())
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		for _, s := range sessions {
			mustExec(t, s, fmt.Sprintf("CREATE EXTERNAL TABLE %s STORED AS PARQUET LOCATION '%s'", name, path))
		}
	}
	i64 := arrow.PrimitiveTypes.Int64
	write("aqe_fact", []arrow.Field{{Name: "k", Type: i64, Nullable: true}, {Name: "v", Type: i64, Nullable: true}}, 200_000,
		func(b *array.RecordBuilder, i int) {
			k := int64(i % 50_000)
			b.Field(0).(*array.Int64Builder).AppendValues([]int64{k}, []bool{i%1000 != 7})
			b.Field(1).(*array.Int64Builder).Append(int64(i))
		})
	write("aqe_dim", []arrow.Field{{Name: "dk", Type: i64, Nullable: true}, {Name: "tag", Type: arrow.BinaryTypes.String, Nullable: true}}, 50_000,
		func(b *array.RecordBuilder, i int) {
			dk := int64(i)
			if i%11 == 0 {
				dk = int64(i / 2) // repeated keys
			}
			b.Field(0).(*array.Int64Builder).AppendValues([]int64{dk}, []bool{i%5000 != 3})
			b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("t%d", i%7))
		})
}

// adaptiveFilter keeps about 50 of aqe_dim's 50,000 rows, where the
// planner, which guesses an equality keeps a tenth, expects 5,000: the
// build side it plans to repartition turns out small.
const adaptiveFilter = "d.dk % 997 = 0"

// adaptiveQueries join the selective dimension to the facts with every
// join type, each aggregated so that a final aggregate reads small shuffle
// partitions.
var adaptiveQueries = []string{
	"SELECT d.tag, count(*) AS n, sum(f.v) AS s FROM aqe_dim d JOIN aqe_fact f ON d.dk = f.k WHERE " + adaptiveFilter + " GROUP BY d.tag ORDER BY d.tag",
	"SELECT d.tag, count(f.v) AS n, count(*) AS c FROM aqe_dim d LEFT JOIN aqe_fact f ON d.dk = f.k WHERE " + adaptiveFilter + " GROUP BY d.tag ORDER BY d.tag",
	"SELECT d.tag, count(f.v) AS n, count(*) AS c FROM aqe_fact f RIGHT JOIN (SELECT * FROM aqe_dim d WHERE " + adaptiveFilter + ") d ON d.dk = f.k GROUP BY d.tag ORDER BY d.tag",
	"SELECT count(*) AS n, count(d.dk) AS m FROM (SELECT * FROM aqe_dim d WHERE " + adaptiveFilter + ") d FULL JOIN aqe_fact f ON d.dk = f.k",
	"SELECT f.k % 10 AS b, count(*) AS n FROM aqe_fact f WHERE f.k IN (SELECT d.dk FROM aqe_dim d WHERE " + adaptiveFilter + ") GROUP BY f.k % 10 ORDER BY b",
	"SELECT count(*) AS n FROM aqe_fact f WHERE NOT EXISTS (SELECT 1 FROM aqe_dim d WHERE d.dk = f.k AND " + adaptiveFilter + ")",
	"SELECT count(*) AS n FROM aqe_fact f WHERE f.k NOT IN (SELECT d.dk FROM aqe_dim d WHERE " + adaptiveFilter + ")",
	"SELECT count(*) AS n FROM (SELECT * FROM aqe_dim d WHERE " + adaptiveFilter + ") d WHERE EXISTS (SELECT 1 FROM aqe_fact f WHERE f.k = d.dk)",
}

// TestAdaptiveBlockingCluster runs joins whose build side the planner
// overestimates on a 2-executor blocking cluster: EXPLAIN ANALYZE shows
// the inner join switched to a broadcast join and the final aggregate's
// partitions coalesced down to the cluster's vcores, with the estimates and exact sizes per stage, and
// every join type answers as in process, adaptive or not, whatever the
// thresholds (drawn at random).
func TestAdaptiveBlockingCluster(t *testing.T) {
	ref := session.New(catalog.New())
	// One vcore each: coalescing keeps at least the cluster's two.
	_, s := startClusterWith(t, cluster.EmbeddedConfig{Executors: 2, Policy: cluster.PolicyPush, VcoresPerExecutor: 1})
	writeAdaptiveTables(t, ref, s)
	ctx := context.Background()
	set := func(k, v string) {
		t.Helper()
		if err := s.Settings.Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	set("execution.mode", "blocking")
	set("execution.target_partitions", "4")
	set("optimizer.broadcast_join_threshold_bytes", "40000")

	out := explainAnalyze(t, s, adaptiveQueries[0])
	text := out["analyzed_plan"]
	for _, want := range []string{"adaptive=[partitioned -> broadcast join", "skipped", "adaptive=[4 -> ", "estimated=[rows=", "actual=[rows="} {
		if want == "skipped" {
			want = "adaptive=[merged into stage"
		}
		if !strings.Contains(text, want) {
			t.Errorf("EXPLAIN ANALYZE lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "4 -> 1 partitions") {
		t.Errorf("a stage was coalesced below the cluster's 2 vcores:\n%s", text)
	}
	if !strings.HasPrefix(out["summary"], "rows=7, ") {
		t.Errorf("summary %q, want 7 rows", out["summary"])
	}

	for i, q := range adaptiveQueries {
		want, err := sltRun(ctx, ref, q)
		if err != nil {
			t.Fatalf("query %d in process: %v", i, err)
		}
		if len(want) == 0 {
			t.Fatalf("query %d: no rows in process", i)
		}
		for _, adaptive := range []string{"off", "on"} {
			set("execution.adaptive", adaptive)
			// Log-uniform thresholds from 1 byte to 64 MiB: the answers
			// must not depend on them.
			target, broadcast := randomBytes(), randomBytes()
			set("execution.aqe_target_partition_bytes", fmt.Sprint(target))
			set("optimizer.broadcast_join_threshold_bytes", fmt.Sprint(broadcast))
			got, err := sltRun(ctx, s, q)
			if err != nil {
				t.Errorf("query %d adaptive=%s target=%d broadcast=%d: %v", i, adaptive, target, broadcast, err)
				continue
			}
			if !slices.Equal(got, want) {
				t.Errorf("query %d adaptive=%s target=%d broadcast=%d:\n got %v\nwant %v", i, adaptive, target, broadcast, got, want)
			}
		}
	}
}

// randomizeAdaptive draws adaptive execution's target partition bytes,
// the broadcast threshold (which the physical planner uses too) and the
// largest build side a blocking join's stage reads itself at random,
// log-uniform from 1 byte to 64 MiB, and the most rows, against the other
// side's, a blocking join is turned around to build on (0 to 64), and logs
// them.
func randomizeAdaptive(t testing.TB, s *session.Session) {
	t.Helper()
	for _, k := range []string{"execution.aqe_target_partition_bytes", "optimizer.broadcast_join_threshold_bytes", "execution.blocking_inline_build_bytes"} {
		v := fmt.Sprint(randomBytes())
		if err := s.Settings.Set(k, v); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s = %s", k, v)
	}
	v := fmt.Sprint(randomSwapRatio())
	if err := s.Settings.Set("execution.blocking_swap_max_ratio", v); err != nil {
		t.Fatal(err)
	}
	t.Logf("execution.blocking_swap_max_ratio = %s", v)
}

// randomBytes draws a tuned byte threshold at random, log-uniform from 1
// byte to 64 MiB.
func randomBytes() int64 { return int64(math.Exp(rand.Float64() * math.Log(64<<20))) }

// randomSwapRatio draws execution.blocking_swap_max_ratio at random, from 0
// (never) to 64.
func randomSwapRatio() int { return rand.IntN(65) }
