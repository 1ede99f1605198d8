//go:build duckdb_arrow

package main

import (
	"context"
	gosql "database/sql"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"math/big"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/duckdb/duckdb-go/v2"

	"sluice/catalog"
	"sluice/cluster"
	"sluice/difftest"
	"sluice/render"
	"sluice/session"
	"sluice/tpch"
)

// The differential test runs generated queries (package sluice/difftest)
// on sluice in process, on an embedded cluster in blocking and in
// pipelined mode, and on DuckDB with PostgreSQL's integer division and
// NULL order, over a sample of the TPC-DS tables (subtest tpcds) and of
// the TPC-H tables sluice's own generator writes (subtest tpch), and
// compares the answers.
//
//	SLUICE_DIFF_QUERIES   how many TPC-DS queries (default 300; make test runs 1000),
//	                      and a quarter as many TPC-H ones
//	SLUICE_DIFF_DURATION  run until this much time has passed instead (e.g. 10m):
//	                      two thirds TPC-DS, one third TPC-H
//	SLUICE_DIFF_SEED      the first seed (default 1); query i uses seed+i, so
//	                      SLUICE_DIFF_SEED=s SLUICE_DIFF_QUERIES=1 with -run TestDifferential/tpcds
//	                      (or /tpch) replays one
//	SLUICE_TPCDS          the TPC-DS folder (default ../shared/tpcds from the repository root)
//	SLUICE_TPCH           the TPC-H SF 1 folder (default .cache/tpch-sf1 of the repository,
//	                      as the session tests use; generated there when missing)
//	SLUICE_DIFF_SQL       run this one query instead and show the answers
//	SLUICE_DIFF_ABS_TOL   absolute tolerance for numbers (default 0.011)
//	SLUICE_DIFF_SAMPLES   keep the sampled tables (Parquet) in this folder, to replay
//	                      a query by hand (default: a temporary folder)
//
// Every failure prints the query's seed and SQL.

// knownLimitations are sluice errors on queries DuckDB answers that are
// deliberate: the generator avoids what sluice rejects at bind time, so
// this lists only what it cannot see coming. Each entry says why.
var knownLimitations = []struct {
	re     *regexp.Regexp
	reason string
}{}

// suite is one schema the differential test runs over.
type suite struct {
	schema *difftest.Schema
	// src is the read_parquet argument of a table's files.
	src func(table string) string
	// sampleSQL cuts each table down (reading src.<table> and the samples
	// made before it) so that a query takes milliseconds; order lists the
	// tables so that a sample reads only samples made before it.
	sampleSQL map[string]string
	order     []string
}

// tpcdsSuite samples TPC-DS: facts to 120 items (and a share of their
// tickets), the customers and addresses they reference plus a spread of
// others, five years of dates. The dimensions the generator uses whole
// stay whole.
func tpcdsSuite(dataDir string) suite {
	return suite{
		schema: difftest.TPCDS,
		src:    func(table string) string { return filepath.Join(dataDir, table+".parquet") },
		sampleSQL: map[string]string{
			"store_sales":      "SELECT * FROM src.store_sales WHERE ss_item_sk <= 120 AND ss_ticket_number % 3 = 0",
			"store_returns":    "SELECT * FROM src.store_returns WHERE sr_item_sk <= 120",
			"web_sales":        "SELECT * FROM src.web_sales WHERE ws_item_sk <= 120 AND ws_order_number % 2 = 0",
			"item":             "SELECT * FROM src.item WHERE i_item_sk <= 120",
			"customer":         "SELECT * FROM src.customer WHERE c_customer_sk % 50 = 0 OR c_customer_sk IN (SELECT ss_customer_sk FROM sample.store_sales UNION SELECT sr_customer_sk FROM sample.store_returns UNION SELECT ws_bill_customer_sk FROM sample.web_sales)",
			"customer_address": "SELECT * FROM src.customer_address WHERE ca_address_sk % 100 = 0 OR ca_address_sk IN (SELECT c_current_addr_sk FROM sample.customer)",
			"date_dim":         "SELECT * FROM src.date_dim WHERE d_year BETWEEN 1998 AND 2002",
			"store":            "SELECT * FROM src.store",
			"promotion":        "SELECT * FROM src.promotion",
		},
		order: []string{"store_sales", "store_returns", "web_sales", "item", "customer", "customer_address", "date_dim", "store", "promotion"},
	}
}

// tpchSuite samples TPC-H SF 1: parts 1 to 400 with their partsupps and
// line items, the orders of those line items and a spread of others, the
// customers of the orders and a spread of others; suppliers, nations and
// regions whole.
func tpchSuite(dataDir string) suite {
	return suite{
		schema: difftest.TPCH,
		src:    func(table string) string { return filepath.Join(dataDir, table, "*.parquet") },
		sampleSQL: map[string]string{
			"part":     "SELECT * FROM src.part WHERE p_partkey <= 400",
			"partsupp": "SELECT * FROM src.partsupp WHERE ps_partkey <= 400",
			"lineitem": "SELECT * FROM src.lineitem WHERE l_partkey <= 400",
			"orders":   "SELECT * FROM src.orders WHERE o_orderkey % 1000 = 1 OR o_orderkey IN (SELECT l_orderkey FROM sample.lineitem)",
			"customer": "SELECT * FROM src.customer WHERE c_custkey % 100 = 0 OR c_custkey IN (SELECT o_custkey FROM sample.orders)",
			"supplier": "SELECT * FROM src.supplier",
			"nation":   "SELECT * FROM src.nation",
			"region":   "SELECT * FROM src.region",
		},
		order: []string{"part", "partsupp", "lineitem", "orders", "customer", "supplier", "nation", "region"},
	}
}

func TestDifferential(t *testing.T) {
	n, until, first := diffBudget(t)
	// In a timed run, two thirds of the time go to TPC-DS and the rest to
	// TPC-H, each counted from its own start: a query running past
	// TPC-DS's end does not eat TPC-H's share.
	budget := time.Until(until)
	deadline := func(frac float64) time.Time {
		if until.IsZero() {
			return until
		}
		return time.Now().Add(time.Duration(float64(budget) * frac))
	}
	t.Run("tpcds", func(t *testing.T) {
		dataDir := os.Getenv("SLUICE_TPCDS")
		if dataDir == "" {
			dataDir = "../../../shared/tpcds"
		}
		dataDir = filepath.Join(dataDir, "data")
		if _, err := os.Stat(filepath.Join(dataDir, "store_sales.parquet")); err != nil {
			t.Skipf("no TPC-DS tables in %s (set SLUICE_TPCDS): %v", dataDir, err)
		}
		runSuite(t, tpcdsSuite(dataDir), n, deadline(2.0/3), first)
	})
	t.Run("tpch", func(t *testing.T) {
		dataDir := os.Getenv("SLUICE_TPCH")
		if dataDir == "" {
			dataDir = "../../.cache/tpch-sf1"
		}
		start := time.Now()
		generated, err := tpch.EnsureCached(context.Background(), 1, dataDir, nil, nil)
		if err != nil {
			t.Fatalf("TPC-H SF 1 in %s: %v", dataDir, err)
		}
		if generated {
			t.Logf("generated TPC-H SF 1 in %s in %v", dataDir, time.Since(start).Round(time.Second))
		}
		runSuite(t, tpchSuite(dataDir), max(n/4, 1), deadline(1.0/3), first)
	})
}

// runSuite runs n generated queries (or until until) of su from seed first
// on sluice in process, blocking and pipelined, and on DuckDB.
func runSuite(t *testing.T, su suite, n int, until time.Time, first uint64) {
	sampleDir := os.Getenv("SLUICE_DIFF_SAMPLES")
	if sampleDir == "" {
		sampleDir = t.TempDir()
	} else {
		sampleDir = filepath.Join(sampleDir, su.schema.Name)
		if err := os.MkdirAll(sampleDir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	db := openDuck(t, su, sampleDir)
	defer db.Close()

	ctx := context.Background()
	local := session.New(catalog.New())
	defer local.Close()
	emb, err := cluster.StartEmbedded(ctx, cluster.EmbeddedConfig{Executors: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer emb.Close()
	remote, err := session.ConnectWith(emb.SchedulerAddr(), emb.Security())
	if err != nil {
		t.Fatal(err)
	}
	defer remote.Close()
	for _, s := range []*session.Session{local, remote} {
		for _, name := range su.order {
			abs, _ := filepath.Abs(filepath.Join(sampleDir, name+".parquet"))
			if _, err := runSluice(ctx, s, fmt.Sprintf("CREATE EXTERNAL TABLE %s STORED AS PARQUET LOCATION '%s'", name, abs)); err != nil {
				t.Fatal(err)
			}
		}
	}
	engines := []struct {
		name string
		s    *session.Session
		mode string
	}{{"in-process", local, ""}, {"blocking", remote, "blocking"}, {"pipelined", remote, "pipelined"}}

	start := time.Now()
	ran, failed := 0, 0
	shapes := map[string]int{}
	for i := 0; ; i++ {
		if until.IsZero() && i >= n || !until.IsZero() && time.Now().After(until) {
			break
		}
		seed := first + uint64(i)
		q := difftest.NewFor(su.schema, seed).Query()
		if text := os.Getenv("SLUICE_DIFF_SQL"); text != "" {
			// One query by hand: show every engine's answer.
			q = difftest.Query{SQL: text, Shape: "by hand"}
			if i == 1 {
				break
			}
			showAnswers(ctx, t, db, engines[0].s, text)
		}
		ran++
		shapes[q.Shape]++
		want, duckErr := runDuck(ctx, db, q.SQL)
		settings := settingsFor(seed)
		for _, e := range engines {
			if e.mode != "" {
				settings["execution.mode"] = e.mode
			} else {
				delete(settings, "execution.mode")
			}
			for _, k := range slices.Sorted(maps.Keys(settings)) {
				if err := e.s.Settings.Set(k, settings[k]); err != nil {
					t.Fatal(err)
				}
			}
			qctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
			got, err := runSluice(qctx, e.s, q.SQL)
			cancel()
			if msg := judge(q, want, duckErr, got, err); msg != "" {
				failed++
				t.Errorf("seed %d (%s, %s, %s): %s\n%s\nreplay: cd bench/duckdb && SLUICE_DIFF_SEED=%d SLUICE_DIFF_QUERIES=1 go test -tags duckdb_arrow -run TestDifferential/%s .",
					seed, q.Shape, e.name, settingsString(settings), msg, q.SQL, seed, su.schema.Name)
				break
			}
		}
	}
	t.Logf("%s: %d queries (seeds %d..%d) in %v, %d failed; by shape %v", su.schema.Name, ran, first, first+uint64(ran)-1, time.Since(start).Round(time.Millisecond), failed, shapes)
}

// settingsFor picks sluice's settings for the query of seed: small
// batches put batch boundaries inside windows, groups and string_agg;
// partition counts and a zero broadcast threshold change how rows are
// spread over tasks and which join strategy runs.
func settingsFor(seed uint64) map[string]string {
	r := rand.New(rand.NewPCG(seed, 0xba7c))
	return map[string]string{
		"execution.batch_size":                     []string{"8192", "8192", "1000", "97", "7"}[r.IntN(5)],
		"execution.target_partitions":              []string{"1", "2", "3", "4"}[r.IntN(4)],
		"optimizer.broadcast_join_threshold_bytes": []string{"33554432", "0"}[r.IntN(2)],
	}
}

func settingsString(m map[string]string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, k+"="+m[k])
	}
	return strings.Join(parts, " ")
}

// showAnswers logs DuckDB's and in-process sluice's answers to text.
func showAnswers(ctx context.Context, t *testing.T, db *gosql.DB, s *session.Session, text string) {
	show := func(name string, rows [][]value, err error) {
		if err != nil {
			t.Logf("%s: error: %v", name, err)
			return
		}
		var b strings.Builder
		for _, r := range sortedRows(rows) {
			fmt.Fprintf(&b, "\n  %s", rowString(r))
		}
		t.Logf("%s: %d rows%s", name, len(rows), b.String())
	}
	rows, err := runDuck(ctx, db, text)
	show("DuckDB", rows, err)
	rows, err = runSluice(ctx, s, text)
	show("sluice in process", rows, err)
}

// diffBudget reads how many queries to run (or until when) and the first
// seed from the environment.
func diffBudget(t *testing.T) (n int, until time.Time, first uint64) {
	n, first = 300, 1
	if v := os.Getenv("SLUICE_DIFF_QUERIES"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			t.Fatalf("SLUICE_DIFF_QUERIES=%q: %v", v, err)
		}
	}
	if v := os.Getenv("SLUICE_DIFF_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("SLUICE_DIFF_DURATION=%q: %v", v, err)
		}
		until = time.Now().Add(d)
	}
	if v := os.Getenv("SLUICE_DIFF_SEED"); v != "" {
		var err error
		if first, err = strconv.ParseUint(v, 10, 64); err != nil {
			t.Fatalf("SLUICE_DIFF_SEED=%q: %v", v, err)
		}
	}
	return n, until, first
}

// openDuck writes su's samples to sampleDir and returns a DuckDB with a
// view per sample and PostgreSQL's semantics switched on.
func openDuck(t *testing.T, su suite, sampleDir string) *gosql.DB {
	t.Helper()
	db, err := gosql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	// Settings are per connection: keep one.
	db.SetMaxOpenConns(1)
	exec := func(q string) {
		t.Helper()
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("duckdb: %v\n%s", err, q)
		}
	}
	exec("CREATE SCHEMA src")
	exec("CREATE SCHEMA sample")
	quote := func(p string) string { return "'" + strings.ReplaceAll(p, "'", "''") + "'" }
	for _, name := range su.order {
		exec(fmt.Sprintf("CREATE VIEW src.%s AS SELECT * FROM read_parquet(%s)", name, quote(su.src(name))))
	}
	for _, name := range su.order {
		dst := filepath.Join(sampleDir, name+".parquet")
		exec(fmt.Sprintf("COPY (%s) TO %s (FORMAT parquet)", su.sampleSQL[name], quote(dst)))
		exec(fmt.Sprintf("CREATE VIEW sample.%s AS SELECT * FROM read_parquet(%s)", name, quote(dst)))
		exec(fmt.Sprintf("CREATE VIEW main.%s AS SELECT * FROM sample.%s", name, name))
	}
	exec("SET integer_division = true")
	exec("SET default_null_order = 'nulls_last_on_asc_first_on_desc'")
	return db
}

// value is one result cell in a form both engines' values compare in.
type value struct {
	null bool
	num  bool
	f    float64
	s    string
}

func (v value) String() string {
	switch {
	case v.null:
		return "NULL"
	case v.num:
		return strconv.FormatFloat(v.f, 'g', 12, 64)
	}
	return strconv.Quote(v.s)
}

func numValue(f float64) value { return value{num: true, f: f} }

func duckValue(x any) (value, error) {
	switch x := x.(type) {
	case nil:
		return value{null: true}, nil
	case int8:
		return numValue(float64(x)), nil
	case int16:
		return numValue(float64(x)), nil
	case int32:
		return numValue(float64(x)), nil
	case int64:
		return numValue(float64(x)), nil
	case uint8:
		return numValue(float64(x)), nil
	case uint16:
		return numValue(float64(x)), nil
	case uint32:
		return numValue(float64(x)), nil
	case uint64:
		return numValue(float64(x)), nil
	case float32:
		return numValue(float64(x)), nil
	case float64:
		return numValue(x), nil
	case *big.Int:
		f, _ := new(big.Float).SetInt(x).Float64()
		return numValue(f), nil
	case duckdb.Decimal:
		return numValue(x.Float64()), nil
	case bool:
		return value{s: strconv.FormatBool(x)}, nil
	case string:
		return value{s: x}, nil
	case time.Time:
		if x.Hour() == 0 && x.Minute() == 0 && x.Second() == 0 && x.Nanosecond() == 0 {
			return value{s: x.Format(time.DateOnly)}, nil
		}
		return value{s: x.Format("2006-01-02 15:04:05.999999")}, nil
	}
	return value{}, fmt.Errorf("duckdb value %T (%v) has no comparison form", x, x)
}

func runDuck(ctx context.Context, db *gosql.DB, q string) ([][]value, error) {
	rows, err := db.QueryContext(ctx, q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	var out [][]value
	for rows.Next() {
		cells := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range cells {
			ptrs[i] = &cells[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		row := make([]value, len(cols))
		for i, c := range cells {
			if row[i], err = duckValue(c); err != nil {
				return nil, err
			}
		}
		out = append(out, row)
	}
	return out, rows.Err()
}

func runSluice(ctx context.Context, s *session.Session, q string) ([][]value, error) {
	res, err := s.Execute(ctx, q)
	if err != nil {
		return nil, err
	}
	defer res.Close()
	var out [][]value
	for {
		b, err := res.Next(ctx)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		for r := 0; r < int(b.NumRows()); r++ {
			row := make([]value, b.NumCols())
			for c := range row {
				col := b.Column(c)
				str, ok := render.FormatValue(col, r)
				switch {
				case !ok:
					row[c] = value{null: true}
				case arrow.IsInteger(col.DataType().ID()) || arrow.IsFloating(col.DataType().ID()) || arrow.IsDecimal(col.DataType().ID()):
					f, err := strconv.ParseFloat(str, 64)
					if err != nil {
						b.Release()
						return nil, fmt.Errorf("column %d: %q is not a number: %v", c, str, err)
					}
					row[c] = numValue(f)
				default:
					// FormatValue's string may alias the batch's
					// buffer, which Release below can free.
					row[c] = value{s: strings.Clone(str)}
				}
			}
			out = append(out, row)
		}
		b.Release()
	}
}

// judge returns "" when sluice's answer (got, err) agrees with DuckDB's
// (want, duckErr), or what is wrong.
func judge(q difftest.Query, want [][]value, duckErr error, got [][]value, err error) string {
	if err != nil {
		for _, k := range knownLimitations {
			if k.re.MatchString(err.Error()) {
				return ""
			}
		}
		if duckErr != nil {
			return fmt.Sprintf("both engines fail: sluice: %v; duckdb: %v", err, duckErr)
		}
		return fmt.Sprintf("sluice fails, DuckDB answers %d rows: %v", len(want), err)
	}
	if duckErr != nil {
		return fmt.Sprintf("DuckDB fails, sluice answers %d rows: %v", len(got), duckErr)
	}
	return compareRows(want, got, q.Ordered)
}

// absTolerance is the absolute difference numbers may have (the TPC-DS
// checker's, for answers rounded to cents); SLUICE_DIFF_ABS_TOL overrides
// it, e.g. 1e-9 to see small differences in doubles such as percent_rank.
var absTolerance = func() float64 {
	if v, err := strconv.ParseFloat(os.Getenv("SLUICE_DIFF_ABS_TOL"), 64); err == nil {
		return v
	}
	return 0.011
}()

// cellEqual compares DuckDB's value a with sluice's b.
func cellEqual(a, b value) bool {
	if a.num && math.IsNaN(a.f) && b.null {
		// DuckDB's corr is NaN where a variance is zero; PostgreSQL's
		// (and sluice's) is NULL.
		return true
	}
	if a.null || b.null {
		return a.null && b.null
	}
	if a.num != b.num {
		return false
	}
	if !a.num {
		return a.s == b.s
	}
	if math.IsNaN(a.f) || math.IsNaN(b.f) {
		return math.IsNaN(a.f) && math.IsNaN(b.f)
	}
	d := math.Abs(a.f - b.f)
	return d <= absTolerance || d <= 1e-6*math.Max(math.Abs(a.f), math.Abs(b.f))
}

func rowEqual(a, b []value) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !cellEqual(a[i], b[i]) {
			return false
		}
	}
	return true
}

func rowString(r []value) string {
	parts := make([]string, len(r))
	for i, v := range r {
		parts[i] = v.String()
	}
	return strings.Join(parts, " | ")
}

// sortKey orders rows for the multiset comparison; numbers keep 9
// significant digits, so that values computed in a different order (avg,
// stddev) almost always sort alike; matchRows catches the rest.
func sortKey(r []value) string {
	parts := make([]string, len(r))
	for i, v := range r {
		if v.num {
			parts[i] = strconv.FormatFloat(v.f, 'g', 9, 64)
		} else {
			parts[i] = v.String()
		}
	}
	return strings.Join(parts, "\x00")
}

func compareRows(want, got [][]value, ordered bool) string {
	if len(want) != len(got) {
		return fmt.Sprintf("%d rows, DuckDB %d%s", len(got), len(want), firstDiff(want, got))
	}
	if ordered {
		for i := range want {
			if !rowEqual(want[i], got[i]) {
				return fmt.Sprintf("row %d (ordered): got %s, DuckDB %s", i+1, rowString(got[i]), rowString(want[i]))
			}
		}
		return ""
	}
	w, g := sortedRows(want), sortedRows(got)
	for i := range w {
		if !rowEqual(w[i], g[i]) {
			if len(w) <= 4000 && matchRows(w, g) {
				return ""
			}
			return fmt.Sprintf("row %d (sorted): got %s, DuckDB %s", i+1, rowString(g[i]), rowString(w[i]))
		}
	}
	return ""
}

func sortedRows(rs [][]value) [][]value {
	type keyed struct {
		k string
		r []value
	}
	ks := make([]keyed, len(rs))
	for i, r := range rs {
		ks[i] = keyed{sortKey(r), r}
	}
	slices.SortStableFunc(ks, func(a, b keyed) int { return strings.Compare(a.k, b.k) })
	out := make([][]value, len(rs))
	for i, k := range ks {
		out[i] = k.r
	}
	return out
}

// matchRows pairs every row of want with an equal unused row of got.
func matchRows(want, got [][]value) bool {
	used := make([]bool, len(got))
	for _, w := range want {
		found := false
		for j, g := range got {
			if !used[j] && rowEqual(w, g) {
				used[j], found = true, true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// firstDiff shows a few rows that are in one answer and not the other.
func firstDiff(want, got [][]value) string {
	var b strings.Builder
	show := func(label string, a, other [][]value) {
		n := 0
		for _, r := range a {
			if n == 3 {
				break
			}
			if !slices.ContainsFunc(other, func(o []value) bool { return rowEqual(r, o) }) {
				fmt.Fprintf(&b, "\n  only in %s: %s", label, rowString(r))
				n++
			}
		}
	}
	if len(want) <= 20000 && len(got) <= 20000 {
		show("sluice", got, want)
		show("DuckDB", want, got)
	}
	return b.String()
}

// TestCompareRows checks the comparison itself: tolerance, NULLs, order.
func TestCompareRows(t *testing.T) {
	r := func(vs ...value) []value { return vs }
	n := numValue
	null := value{null: true}
	s := func(x string) value { return value{s: x} }
	a := [][]value{r(n(1), s("x")), r(n(2.5), null)}
	b := [][]value{r(n(2.5000001), null), r(n(1), s("x"))}
	if msg := compareRows(a, b, false); msg != "" {
		t.Errorf("multiset within tolerance: %s", msg)
	}
	if msg := compareRows(a, b, true); msg == "" {
		t.Error("ordered comparison ignored the order")
	}
	if msg := compareRows(a, [][]value{r(n(1), s("x")), r(n(2.6), null)}, false); msg == "" {
		t.Error("2.5 and 2.6 compared equal")
	}
	if msg := compareRows(a, [][]value{r(n(1), s("x")), r(n(2.5), s(""))}, false); msg == "" {
		t.Error("NULL and '' compared equal")
	}
	if msg := compareRows(a, a[:1], false); msg == "" {
		t.Error("a missing row went unnoticed")
	}
	if msg := compareRows([][]value{r(n(math.NaN()))}, [][]value{r(null)}, false); msg != "" {
		t.Errorf("DuckDB's NaN against sluice's NULL: %s", msg)
	}
	if msg := compareRows([][]value{r(null)}, [][]value{r(n(math.NaN()))}, false); msg == "" {
		t.Error("sluice's NaN compared equal to DuckDB's NULL")
	}
	if msg := compareRows([][]value{r(n(0.04)), r(n(0.06))}, [][]value{r(n(0.055)), r(n(0.045))}, false); msg != "" {
		t.Errorf("rows within tolerance across a rounding boundary: %s", msg)
	}
}
