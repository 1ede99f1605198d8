package session_test

import (
	"context"
	"fmt"
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

// eagerFact and eagerDim are the rows of TestEagerAggregationResults:
// facts over keys 1..50 (some NULL) with NULL values among them, and a
// dimension that repeats keys 5 and 7 under other names, lacks keys above
// 40, and has a NULL key.
type eagerFact struct {
	k, v, c int64
	kNull   bool
	vNull   bool
	cNull   bool
}

type eagerDim struct {
	k     int64
	kNull bool
	name  string
}

func eagerData() ([]eagerFact, []eagerDim) {
	var facts []eagerFact
	for i := range 3000 {
		facts = append(facts, eagerFact{k: int64(i%50 + 1), v: int64(i*37%101 - 50), c: int64(i % 4),
			kNull: i%97 == 0, vNull: i%13 == 0, cNull: i%11 == 0})
	}
	var dims []eagerDim
	for k := 1; k <= 40; k++ {
		dims = append(dims, eagerDim{k: int64(k), name: fmt.Sprintf("n%d", k%6)})
	}
	dims = append(dims, eagerDim{k: 5, name: "again5"}, eagerDim{k: 7, name: "n1"}, eagerDim{kNull: true, name: "nokey"})
	return facts, dims
}

// writeEagerTables writes the two tables as Parquet files (with the
// statistics the rule estimates from) and registers them in s.
func writeEagerTables(t *testing.T, s *session.Session) {
	t.Helper()
	facts, dims := eagerData()
	dir := t.TempDir()
	write := func(name string, rec arrow.RecordBatch) {
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
		mustExec(t, s, fmt.Sprintf("CREATE EXTERNAL TABLE %s STORED AS PARQUET LOCATION '%s'", name, path))
	}
	fb := array.NewRecordBuilder(memory.DefaultAllocator, arrow.NewSchema([]arrow.Field{
		{Name: "fk", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "v", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "c", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}, nil))
	for _, f := range facts {
		fb.Field(0).(*array.Int64Builder).AppendValues([]int64{f.k}, []bool{!f.kNull})
		fb.Field(1).(*array.Int64Builder).AppendValues([]int64{f.v}, []bool{!f.vNull})
		fb.Field(2).(*array.Int64Builder).AppendValues([]int64{f.c}, []bool{!f.cNull})
	}
	write("fact", fb.NewRecordBatch())
	fb.Release()
	db := array.NewRecordBuilder(memory.DefaultAllocator, arrow.NewSchema([]arrow.Field{
		{Name: "dk", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "name", Type: arrow.BinaryTypes.String},
	}, nil))
	for _, d := range dims {
		db.Field(0).(*array.Int64Builder).AppendValues([]int64{d.k}, []bool{!d.kNull})
		db.Field(1).(*array.StringBuilder).Append(d.name)
	}
	write("dim", db.NewRecordBatch())
	db.Release()
}

func mustExec(t *testing.T, s *session.Session, sql string) {
	t.Helper()
	res, err := s.Execute(context.Background(), sql)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	res.Close()
}

// eagerReference computes, by a nested loop join, per dimension name (and
// c when byC): sum(v), count(v), count(*), min(v), max(v), in the
// shape sltRun prints, sorted.
func eagerReference(byC bool) []string {
	facts, dims := eagerData()
	type acc struct {
		sum, cnt, all, lo, hi int64
		seen                  bool
	}
	groups := map[string]*acc{}
	for _, f := range facts {
		for _, d := range dims {
			if f.kNull || d.kNull || f.k != d.k {
				continue
			}
			key := d.name
			if byC {
				if f.cNull {
					key += " NULL"
				} else {
					key += fmt.Sprintf(" %d", f.c)
				}
			}
			a := groups[key]
			if a == nil {
				a = &acc{}
				groups[key] = a
			}
			a.all++
			if f.vNull {
				continue
			}
			a.sum += f.v
			a.cnt++
			if !a.seen || f.v < a.lo {
				a.lo = f.v
			}
			if !a.seen || f.v > a.hi {
				a.hi = f.v
			}
			a.seen = true
		}
	}
	var rows []string
	for key, a := range groups {
		if !a.seen {
			rows = append(rows, fmt.Sprintf("%s NULL 0 %d NULL NULL", key, a.all))
			continue
		}
		rows = append(rows, fmt.Sprintf("%s %d %d %d %d %d", key, a.sum, a.cnt, a.all, a.lo, a.hi))
	}
	slices.Sort(rows)
	return rows
}

// TestEagerAggregationResults runs aggregates that the optimizer groups
// before the join (checked in the plan) against a dimension with
// repeated, missing and NULL keys and facts with NULL keys and values,
// and compares them with a nested-loop reference, in process and on the
// cluster in both modes.
func TestEagerAggregationResults(t *testing.T) {
	queries := map[string]bool{
		"SELECT name, sum(v), count(v), count(*), min(v), max(v) FROM fact, dim WHERE fk = dk GROUP BY name":        false,
		"SELECT name, c, sum(v), count(v), count(*), min(v), max(v) FROM fact JOIN dim ON fk = dk GROUP BY name, c": true,
	}
	sessions := map[string]*session.Session{"in process": session.New(catalog.New())}
	for _, mode := range []string{"blocking", "pipelined"} {
		s := startCluster(t, 2, cluster.PolicyPush)
		if err := s.Settings.Set("execution.mode", mode); err != nil {
			t.Fatal(err)
		}
		sessions[mode] = s
	}
	for where, s := range sessions {
		writeEagerTables(t, s)
		for q, byC := range queries {
			plan, err := sltRun(context.Background(), s, "EXPLAIN "+q)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(strings.Join(plan, "\n"), "sum(sum(v))") {
				t.Fatalf("%s: the aggregate is not grouped before the join:\n%s", q, strings.Join(plan, "\n"))
			}
			got, err := sltRun(context.Background(), s, q)
			if err != nil {
				t.Fatalf("%s: %s: %v", where, q, err)
			}
			slices.Sort(got)
			if want := eagerReference(byC); !slices.Equal(got, want) {
				t.Errorf("%s: %s\n--- got\n%s\n--- want\n%s", where, q, strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		}
	}
}
