package session_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sluice/catalog"
	"sluice/session"
)

// duckdbPeer is the DuckDB benchmark peer (make bench builds it into
// bin/), or $SLUICE_DUCKDB; "" when there is none.
func duckdbPeer() string {
	if p := os.Getenv("SLUICE_DUCKDB"); p != "" {
		return p
	}
	p, _ := filepath.Abs("../bin/sluice-bench-duckdb")
	if st, err := os.Stat(p); err == nil && !st.IsDir() {
		return p
	}
	return ""
}

// TestWrittenFilesReadByDuckDB writes Parquet (plain and partitioned) and
// CSV with sluice and has DuckDB check every value: each check query
// returns one row exactly when every condition holds. Skipped without the
// DuckDB peer.
func TestWrittenFilesReadByDuckDB(t *testing.T) {
	peer := duckdbPeer()
	if peer == "" {
		t.Skip("no DuckDB peer: build it with make bench, or set SLUICE_DUCKDB")
	}
	dir := t.TempDir()
	s := session.New(catalog.New())
	ctx := context.Background()
	const rows = `SELECT x::int AS i, x::bigint * 1000000000 AS b, x * 1.5::double precision AS f,
		CAST(x AS DECIMAL(12,2)) / 4 AS d, DATE '2024-01-01' + x::int AS dt,
		CAST(DATE '2024-01-01' + x::int AS TIMESTAMP) + INTERVAL '1 hour' AS ts,
		'v' || x AS s, x % 2 = 0 AS bo, CASE WHEN x % 10 = 0 THEN NULL ELSE x END AS n, x % 3 AS k,
		CAST(x AS DECIMAL(9,2)) AS d9, CAST(x AS DECIMAL(18,3)) AS d18
		FROM generate_series(1, 1000) AS g(x)`
	data := filepath.Join(dir, "data")
	for _, stmt := range []string{
		"COPY (" + rows + ") TO '" + filepath.Join(data, "t.parquet") + "' (FORMAT parquet)",
		"COPY (" + rows + ") TO '" + filepath.Join(dir, "hive") + "' (FORMAT parquet, PARTITION_BY (k))",
		"COPY (" + rows + ") TO '" + filepath.Join(dir, "csv") + "' (FORMAT csv)",
		"COPY (SELECT * FROM (VALUES ('a/b', 1), ('c d', 2), ('x=y', 3), ('100%', 4), (NULL, 5), ('NULL', 6), ('', 7)) AS v(s, n)) TO '" +
			filepath.Join(dir, "odd") + "' (FORMAT parquet, PARTITION_BY (s))",
	} {
		if _, err := sltRun(ctx, s, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	checks := `count(*) = 1000 AND sum(i) = 500500 AND sum(b) = 500500000000000 AND sum(f) = 750750
		AND sum(d) = 125125 AND min(dt) = DATE '2024-01-02' AND max(dt) = DATE '2026-09-27'
		AND min(ts) = TIMESTAMP '2024-01-02 01:00:00' AND max(ts) = TIMESTAMP '2026-09-27 01:00:00'
		AND max(s) = 'v999' AND count(n) = 900 AND sum(CASE WHEN bo THEN 1 ELSE 0 END) = 500
		AND sum(d9) = 500500 AND sum(d18) = 500500`
	queries := filepath.Join(dir, "q")
	if err := os.MkdirAll(queries, 0o755); err != nil {
		t.Fatal(err)
	}
	for i, q := range []string{
		"SELECT 1 FROM t HAVING " + checks,
		"SELECT 1 FROM read_parquet('" + filepath.Join(dir, "hive") + "/**/*.parquet', hive_partitioning = true) HAVING " + checks + " AND count(DISTINCT k) = 3",
		"SELECT 1 FROM read_csv('" + filepath.Join(dir, "csv") + "/*.csv', header = true) HAVING " + checks,
		// Partition values that must be escaped in directory names come
		// back as written from the names alone (hive_partitioning).
		"SELECT 1 FROM read_parquet('" + filepath.Join(dir, "odd") + "/**/*.parquet', hive_partitioning = true) HAVING count(*) = 7 AND " +
			"count(CASE WHEN (n = 1 AND s = 'a/b') OR (n = 2 AND s = 'c d') OR (n = 3 AND s = 'x=y') OR (n = 4 AND s = '100%') OR " +
			"(n = 5 AND s IS NULL) OR (n = 6 AND s = 'NULL') OR (n = 7 AND s = '') THEN 1 END) = 7",
	} {
		if err := os.WriteFile(filepath.Join(queries, "q"+string(rune('1'+i))+".sql"), []byte(q+";\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(dir, "duckdb.json")
	cmd := exec.Command(peer, "--suite", "tpcds", "--data", data, "--queries", queries, "--runs", "1", "--out", out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("DuckDB peer: %v\n%s", err, b)
	}
	var rep struct {
		Runs []struct {
			Query int   `json:"query"`
			Rows  int64 `json:"rows"`
		} `json:"runs"`
		Skipped []struct {
			Query int    `json:"query"`
			Error string `json:"error"`
		} `json:"skipped"`
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	for _, sk := range rep.Skipped {
		t.Errorf("DuckDB failed check %d: %s", sk.Query, strings.TrimSpace(sk.Error))
	}
	if len(rep.Runs) != 4 {
		t.Fatalf("DuckDB ran %d checks, want 4", len(rep.Runs))
	}
	for _, r := range rep.Runs {
		if r.Rows != 1 {
			t.Errorf("check %d: DuckDB reads other values than sluice wrote", r.Query)
		}
	}
}
