//go:build duckdb_arrow

// Command duckdb is the DuckDB peer of sluice bench: it runs the same
// TPC-H (or, with --suite tpcds, TPC-DS) query texts on the same Parquet
// files with DuckDB and writes the same JSON shape (mode "duckdb"), to be
// merged with `sluice bench merge`.
//
// It is its own module so that the sluice binary does not link DuckDB.
// Results are read through DuckDB's Arrow interface (build tag
// duckdb_arrow), one record batch per DuckDB chunk, as sluice's client
// reads Arrow batches: row-at-a-time database/sql scanning would charge
// DuckDB for the client instead. Run it from this directory:
//
//	go run -tags duckdb_arrow . --data ~/.cache/sluice/tpch-sf1 --runs 3 --out duckdb.json
package main

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/duckdb/duckdb-go/v2"
	"github.com/spf13/pflag"

	"sluice/bench"
	"sluice/repl"
	"sluice/tpch"
)

func main() { os.Exit(run(os.Args[1:])) }

func run(args []string) int {
	fs := pflag.NewFlagSet("duckdb", pflag.ContinueOnError)
	suite := fs.String("suite", "tpch", "tpch, or tpcds: --data holds <table>.parquet per table and --queries q1.sql ... q99.sql; scripts are timed whole")
	data := fs.String("data", "", "TPC-H Parquet directory, one sub-directory per table (default: where sluice --tpch caches --sf)")
	queriesDir := fs.String("queries", "../../testdata/tpch", "directory of q1.sql ... q22.sql")
	list := fs.String("only", "", "query numbers to run, e.g. 1,3,6 (default: all 22, or every qN.sql for tpcds)")
	streamingDir := fs.String("streaming", "", "directory of the streaming queries s1.sql, s2.sql, ... to run too (default: none)")
	runs := fs.Int("runs", 3, "timed runs per query, after one warm-up run")
	sf := fs.Int("sf", 1, "scale factor of the data (recorded in the report)")
	out := fs.String("out", "duckdb.json", "report to write")
	rewrite := fs.String("rewrite", "", "instead of timing queries, rewrite the TPC-H tables of --data with DuckDB's Parquet writer at its defaults into this directory (<table>/<table>.parquet each), for measuring sluice on a foreign writer's files")
	answers := fs.String("answers", "", "instead of timing queries, run each TPC-H query once and write its result into this directory as qN.out in the TPC-H kit's answer format, for checking sluice at scale factors the kit has no answers for (sluice bench tpch --answers DIR)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *runs <= 0 || *sf <= 0 {
		fmt.Fprintln(os.Stderr, "Error: --runs and --sf must be positive")
		return 2
	}
	if *suite == "tpcds" {
		if *data == "" {
			fmt.Fprintln(os.Stderr, "Error: --suite tpcds needs --data")
			return 2
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
		defer stop()
		if err := benchTPCDS(ctx, *data, *queriesDir, *list, *runs, *out); err != nil {
			fmt.Fprintf(os.Stderr, "Error: %v\n", err)
			return 1
		}
		return 0
	}
	if *suite != "tpch" {
		fmt.Fprintf(os.Stderr, "Error: --suite %q: want tpch or tpcds\n", *suite)
		return 2
	}
	if *data == "" {
		// The same place as sluice's tpchDir (main.go), so that the
		// peer reads the very files sluice bench measured.
		base, err := os.UserCacheDir()
		if err != nil {
			fmt.Fprintf(os.Stderr, "Error: no --data and no user cache dir: %v\n", err)
			return 2
		}
		*data = filepath.Join(base, "sluice", "tpch-sf"+strconv.Itoa(*sf))
	}
	if _, err := os.Stat(filepath.Join(*data, tpch.CompleteMarker)); err != nil {
		fmt.Fprintf(os.Stderr, "Error: no complete TPC-H data in %s (run sluice bench tpch --sf %d first, or sluice tpch gen)\n", *data, *sf)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if *answers != "" {
		if err := writeAnswers(ctx, *data, *queriesDir, *list, *answers); err != nil {
			fmt.Fprintf(os.Stderr, "Error: %v\n", err)
			return 1
		}
		return 0
	}
	if *rewrite != "" {
		if err := rewriteTPCH(ctx, *data, *rewrite); err != nil {
			fmt.Fprintf(os.Stderr, "Error: %v\n", err)
			return 1
		}
		return 0
	}
	if err := bench1(ctx, *data, *queriesDir, *streamingDir, *list, *runs, *sf, *out); err != nil {
		fmt.Fprintf(os.Stderr, "Error: %v\n", err)
		return 1
	}
	return 0
}

func bench1(ctx context.Context, data, queriesDir, streamingDir, list string, runs, sf int, out string) error {
	ns, err := queryNumbers(list)
	if err != nil {
		return err
	}
	var qs []bench.Query
	for _, n := range ns {
		b, err := os.ReadFile(filepath.Join(queriesDir, fmt.Sprintf("q%d.sql", n)))
		if err != nil {
			return err
		}
		qs = append(qs, bench.Query{Set: bench.SetTPCH, N: n, Text: string(b)})
	}
	if streamingDir != "" {
		for n := 1; ; n++ {
			b, err := os.ReadFile(filepath.Join(streamingDir, fmt.Sprintf("s%d.sql", n)))
			if errors.Is(err, os.ErrNotExist) && n > 1 {
				break
			}
			if err != nil {
				return fmt.Errorf("--streaming: %w", err)
			}
			qs = append(qs, bench.Query{Set: bench.SetStreaming, N: n, Text: string(b)})
		}
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		return fmt.Errorf("opening DuckDB: %w", err)
	}
	defer db.Close()
	// One connection, so the views (and q15's) are visible to every
	// statement.
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("opening DuckDB: %w", err)
	}
	defer conn.Close()
	if err := registerTPCH(ctx, conn, data); err != nil {
		return err
	}
	var version string
	if err := conn.QueryRowContext(ctx, "SELECT version()").Scan(&version); err != nil {
		return fmt.Errorf("DuckDB version: %w", err)
	}
	rep := &bench.Report{Suite: "tpch", ScaleFact: sf, Machine: bench.ThisMachine(), ModesOrder: []string{"duckdb"},
		Notes: []string{fmt.Sprintf("DuckDB %s, in process, its default threads, Parquet read through views over read_parquet, results read as Arrow record batches", version)}}
	cpuStart, cpuErr := bench.SampleCPU()
	for _, q := range qs {
		label := bench.Label(q.Set, q.N)
		if _, err := runScript(ctx, conn, q.Text); err != nil {
			return fmt.Errorf("%s (warm-up): %w", label, err)
		}
		var totals []float64
		for i := 1; i <= runs; i++ {
			m, err := runScript(ctx, conn, q.Text)
			if err != nil {
				return fmt.Errorf("%s (run %d): %w", label, i, err)
			}
			rep.Runs = append(rep.Runs, bench.Run{Set: q.Set, Query: q.N, Mode: "duckdb", Run: i, TTFRMs: ms(m.TTFR), TotalMs: ms(m.Total), Rows: m.Rows})
			totals = append(totals, ms(m.Total))
		}
		fmt.Fprintf(os.Stderr, "%-3s duckdb     median %8.1f ms\n", label, bench.Median(totals))
	}
	if rss, err := bench.PeakRSS(); err == nil {
		m := bench.Memory{Mode: "duckdb", PeakRSSBytes: rss}
		if cpuEnd, err := bench.SampleCPU(); err == nil && cpuErr == nil {
			m.OtherCPUs = cpuStart.OtherCPUs(cpuEnd)
		}
		rep.Memory = append(rep.Memory, m)
	}
	return bench.WriteJSON(out, rep)
}

// registerTPCH creates a view over the Parquet files of each TPC-H table
// of data.
func registerTPCH(ctx context.Context, conn *sql.Conn, data string) error {
	abs, err := filepath.Abs(data)
	if err != nil {
		return err
	}
	for _, t := range tpch.TableNames {
		glob := filepath.Join(abs, t, "*.parquet")
		stmt := fmt.Sprintf("CREATE VIEW %s AS SELECT * FROM read_parquet('%s')", t, strings.ReplaceAll(glob, "'", "''"))
		if _, err := conn.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("registering %s from %s: %w", t, glob, err)
		}
	}
	return nil
}

// rewriteTPCH copies each TPC-H table of data into out/<table>/<table>.parquet
// through DuckDB's own Parquet writer at its defaults, so that sluice can be
// measured on files it did not write (every column OPTIONAL, DuckDB's row
// groups, encodings and codec). The copy is written under a temporary name
// and renamed, and out gets sluice's completion marker only when every table
// is there, so an interrupted rewrite is never taken for a finished one.
func rewriteTPCH(ctx context.Context, data, out string) error {
	db, err := sql.Open("duckdb", "")
	if err != nil {
		return fmt.Errorf("opening DuckDB: %w", err)
	}
	defer db.Close()
	src, err := filepath.Abs(data)
	if err != nil {
		return err
	}
	dst, err := filepath.Abs(out)
	if err != nil {
		return err
	}
	for _, t := range tpch.TableNames {
		dir := filepath.Join(dst, t)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		tmp := filepath.Join(dir, t+".parquet.tmp")
		stmt := fmt.Sprintf("COPY (SELECT * FROM read_parquet('%s')) TO '%s' (FORMAT parquet)",
			strings.ReplaceAll(filepath.Join(src, t, "*.parquet"), "'", "''"), strings.ReplaceAll(tmp, "'", "''"))
		start := time.Now()
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("rewriting %s: %w", t, err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, t+".parquet")); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "%-8s rewritten in %v\n", t, time.Since(start).Round(time.Millisecond))
	}
	marker, err := os.ReadFile(filepath.Join(src, tpch.CompleteMarker))
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dst, tpch.CompleteMarker), marker, 0o644)
}

// benchTPCDS times the TPC-DS scripts of queriesDir on the tables of data
// (<table>.parquet each), with PostgreSQL's semantics switched on where
// DuckDB differs by default, as sluice answers; each script is timed whole.
func benchTPCDS(ctx context.Context, data, queriesDir, list string, runs int, out string) error {
	qs, err := bench.QueryFiles(queriesDir, list, bench.SetTPCDS)
	if err != nil {
		return err
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		return fmt.Errorf("opening DuckDB: %w", err)
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("opening DuckDB: %w", err)
	}
	defer conn.Close()
	tables, err := filepath.Glob(filepath.Join(data, "*.parquet"))
	if err != nil || len(tables) == 0 {
		return fmt.Errorf("no <table>.parquet in %s", data)
	}
	for _, t := range tables {
		abs, err := filepath.Abs(t)
		if err != nil {
			return err
		}
		src := abs
		if st, err := os.Stat(abs); err == nil && st.IsDir() {
			src = filepath.Join(abs, "*.parquet")
		}
		name := strings.TrimSuffix(filepath.Base(t), ".parquet")
		stmt := fmt.Sprintf("CREATE VIEW %s AS SELECT * FROM read_parquet('%s')", name, strings.ReplaceAll(src, "'", "''"))
		if _, err := conn.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("registering %s: %w", t, err)
		}
	}
	for _, set := range []string{"SET integer_division = true", "SET default_null_order = 'nulls_last_on_asc_first_on_desc'"} {
		if _, err := conn.ExecContext(ctx, set); err != nil {
			return fmt.Errorf("%s: %w", set, err)
		}
	}
	var version string
	if err := conn.QueryRowContext(ctx, "SELECT version()").Scan(&version); err != nil {
		return fmt.Errorf("DuckDB version: %w", err)
	}
	rep := &bench.Report{Suite: "tpcds", ScaleFact: 1, Machine: bench.ThisMachine(), ModesOrder: []string{"duckdb"},
		Notes: []string{fmt.Sprintf("DuckDB %s, in process, its default threads, integer division and NULL order as PostgreSQL, Parquet read through views over read_parquet, results read as Arrow record batches", version)}}
	cpuStart, cpuErr := bench.SampleCPU()
	for _, q := range qs {
		n := q.N
		label := bench.Label(bench.SetTPCDS, n)
		if _, err := runScriptWhole(ctx, conn, q.Text); err != nil {
			rep.Skipped = append(rep.Skipped, bench.Skip{Set: bench.SetTPCDS, Query: n, Mode: "duckdb", Error: err.Error()})
			fmt.Fprintf(os.Stderr, "%-3s duckdb     skipped: %v\n", label, err)
			continue
		}
		var totals []float64
		for i := 1; i <= runs; i++ {
			m, err := runScriptWhole(ctx, conn, q.Text)
			if err != nil {
				return fmt.Errorf("%s (run %d): %w", label, i, err)
			}
			rep.Runs = append(rep.Runs, bench.Run{Set: bench.SetTPCDS, Query: n, Mode: "duckdb", Run: i, TTFRMs: ms(m.TTFR), TotalMs: ms(m.Total), Rows: m.Rows})
			totals = append(totals, ms(m.Total))
		}
		fmt.Fprintf(os.Stderr, "%-3s duckdb     median %8.1f ms\n", label, bench.Median(totals))
	}
	if rss, err := bench.PeakRSS(); err == nil {
		m := bench.Memory{Mode: "duckdb", PeakRSSBytes: rss}
		if cpuEnd, err := bench.SampleCPU(); err == nil && cpuErr == nil {
			m.OtherCPUs = cpuStart.OtherCPUs(cpuEnd)
		}
		rep.Memory = append(rep.Memory, m)
	}
	return bench.WriteJSON(out, rep)
}

// runScriptWhole runs every statement of text and times them all: the
// first query's time to first row and the total from the start to the end
// of the last, as sluice bench tpcds times a script.
func runScriptWhole(ctx context.Context, conn *sql.Conn, text string) (bench.Measurement, error) {
	return runStatements(ctx, conn, text, true)
}

// runScript runs each statement of text and times the last query (a
// statement starting with SELECT or WITH); the others run untimed.
func runScript(ctx context.Context, conn *sql.Conn, text string) (bench.Measurement, error) {
	return runStatements(ctx, conn, text, false)
}

func runStatements(ctx context.Context, conn *sql.Conn, text string, whole bool) (bench.Measurement, error) {
	sp := repl.NewSplitter()
	pieces, err := sp.Feed(text)
	if err != nil {
		return bench.Measurement{}, err
	}
	if p, ok := sp.Pending(); ok {
		pieces = append(pieces, p)
	}
	var m bench.Measurement
	timed := false
	start := time.Now()
	for _, p := range pieces {
		if !isQuery(p.SQL) {
			if _, err := conn.ExecContext(ctx, p.SQL); err != nil {
				return m, fmt.Errorf("line %d: %w", p.Line, err)
			}
			continue
		}
		got, err := timeQuery(ctx, conn, p.SQL)
		if err != nil {
			return m, fmt.Errorf("line %d: %w", p.Line, err)
		}
		switch {
		case !whole:
			m = got
		case !timed:
			m.TTFR = time.Since(start) - got.Total + got.TTFR
			m.Rows = got.Rows
		default:
			m.Rows += got.Rows
		}
		timed = true
	}
	if !timed {
		return m, errors.New("no query in the script")
	}
	if whole {
		m.Total = time.Since(start)
	}
	return m, nil
}

// timeQuery runs a query and reads every record batch of its result, as
// sluice's client does.
func timeQuery(ctx context.Context, conn *sql.Conn, q string) (bench.Measurement, error) {
	var m bench.Measurement
	err := conn.Raw(func(dc any) error {
		dconn, ok := dc.(driver.Conn)
		if !ok {
			return fmt.Errorf("DuckDB connection %T is not a driver connection", dc)
		}
		ar, err := duckdb.NewArrowFromConn(dconn)
		if err != nil {
			return err
		}
		start := time.Now()
		rr, err := ar.QueryContext(ctx, q)
		if err != nil {
			return err
		}
		defer rr.Release()
		for rr.Next() {
			n := rr.RecordBatch().NumRows()
			if m.Rows == 0 && n > 0 {
				m.TTFR = time.Since(start)
			}
			m.Rows += n
		}
		if err := rr.Err(); err != nil {
			return err
		}
		m.Total = time.Since(start)
		if m.Rows == 0 {
			m.TTFR = m.Total
		}
		return nil
	})
	return m, err
}

// isQuery reports whether a statement, past its leading comments, is a
// SELECT or WITH.
func isQuery(s string) bool {
	for {
		s = strings.TrimSpace(s)
		if !strings.HasPrefix(s, "--") {
			break
		}
		_, rest, ok := strings.Cut(s, "\n")
		if !ok {
			return false
		}
		s = rest
	}
	lower := strings.ToLower(s)
	return strings.HasPrefix(lower, "select") || strings.HasPrefix(lower, "with")
}

func queryNumbers(list string) ([]int, error) {
	if list == "" {
		ns := make([]int, 22)
		for i := range ns {
			ns[i] = i + 1
		}
		return ns, nil
	}
	var ns []int
	for _, f := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimPrefix(strings.TrimSpace(f), "q"))
		if err != nil || n < 1 || n > 22 {
			return nil, fmt.Errorf("--only: %q is not a TPC-H query number (1 to 22)", f)
		}
		ns = append(ns, n)
	}
	return ns, nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// writeAnswers runs each TPC-H query of queriesDir once on DuckDB over
// data and writes its result into out/qN.out in the TPC-H kit's answer
// format (a header line, then '|'-separated rows), so that sluice's
// answers at a scale factor the kit has no answers for can be checked
// against DuckDB's (`sluice bench tpch --answers out`, tpch.CompareAnswer).
func writeAnswers(ctx context.Context, data, queriesDir, list, out string) error {
	ns, err := queryNumbers(list)
	if err != nil {
		return err
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		return fmt.Errorf("opening DuckDB: %w", err)
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("opening DuckDB: %w", err)
	}
	defer conn.Close()
	if err := registerTPCH(ctx, conn, data); err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	for _, n := range ns {
		text, err := os.ReadFile(filepath.Join(queriesDir, fmt.Sprintf("q%d.sql", n)))
		if err != nil {
			return err
		}
		start := time.Now()
		answer, err := scriptAnswer(ctx, conn, string(text))
		if err != nil {
			return fmt.Errorf("q%d: %w", n, err)
		}
		// Written whole under a temporary name, so that an interrupted
		// run never leaves a truncated answer to compare with.
		path := filepath.Join(out, fmt.Sprintf("q%d.out", n))
		if err := os.WriteFile(path+".tmp", []byte(answer), 0o644); err != nil {
			return err
		}
		if err := os.Rename(path+".tmp", path); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "q%-2d answer in %v\n", n, time.Since(start).Round(time.Millisecond))
	}
	return nil
}

// scriptAnswer runs each statement of text and returns the last query's
// result in the kit's answer format.
func scriptAnswer(ctx context.Context, conn *sql.Conn, text string) (string, error) {
	sp := repl.NewSplitter()
	pieces, err := sp.Feed(text)
	if err != nil {
		return "", err
	}
	if p, ok := sp.Pending(); ok {
		pieces = append(pieces, p)
	}
	answer := ""
	for _, p := range pieces {
		if !isQuery(p.SQL) {
			if _, err := conn.ExecContext(ctx, p.SQL); err != nil {
				return "", fmt.Errorf("line %d: %w", p.Line, err)
			}
			continue
		}
		if answer, err = queryAnswer(ctx, conn, p.SQL); err != nil {
			return "", fmt.Errorf("line %d: %w", p.Line, err)
		}
	}
	if answer == "" {
		return "", errors.New("no query in the script")
	}
	return answer, nil
}

// queryAnswer runs q and formats its result: column names, then each row's
// values as Arrow prints them (decimals with their scale, dates as
// YYYY-MM-DD), '|'-separated; NULL is empty, as the kit's answers have no
// NULLs to show.
func queryAnswer(ctx context.Context, conn *sql.Conn, q string) (string, error) {
	var b strings.Builder
	err := conn.Raw(func(dc any) error {
		dconn, ok := dc.(driver.Conn)
		if !ok {
			return fmt.Errorf("DuckDB connection %T is not a driver connection", dc)
		}
		ar, err := duckdb.NewArrowFromConn(dconn)
		if err != nil {
			return err
		}
		rr, err := ar.QueryContext(ctx, q)
		if err != nil {
			return err
		}
		defer rr.Release()
		names := make([]string, rr.Schema().NumFields())
		for i, f := range rr.Schema().Fields() {
			names[i] = f.Name
		}
		b.WriteString(strings.Join(names, "|") + "\n")
		for rr.Next() {
			rec := rr.RecordBatch()
			for r := 0; r < int(rec.NumRows()); r++ {
				for c := 0; c < int(rec.NumCols()); c++ {
					if c > 0 {
						b.WriteByte('|')
					}
					if col := rec.Column(c); !col.IsNull(r) {
						b.WriteString(col.ValueStr(r))
					}
				}
				b.WriteByte('\n')
			}
		}
		return rr.Err()
	})
	return b.String(), err
}
