package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"sluice/bench"
	"sluice/catalog"
	"sluice/cluster"
	"sluice/session"
)

const benchUsage = `usage: sluice bench tpch [--sf N] [--data DIR] [--modes blocking,pipelined] [--runs R] [--executors K] [--queries 1,3,s2,...] [--streaming=false] [--latency N] [--interleave=false] [--out DIR]
       sluice bench tpcds --data DIR --queries DIR [--modes blocking,pipelined,in-process] [--only 1,3,...] [--runs R] [--executors K] [--interleave=false] [--out DIR]
       sluice bench merge RESULTS.json PEER.json... [--out DIR]`

// runBench is `sluice bench`: the TPC-H suite on an embedded cluster, or
// merging a peer's results (DuckDB) into a report.
func runBench(args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, benchUsage)
		return 2
	}
	switch args[0] {
	case "-h", "--help", "help":
		fmt.Println(benchUsage)
		return 0
	case "tpch":
		return runBenchTPCH(args[1:])
	case "tpcds":
		return runBenchTPCDS(args[1:])
	case "merge":
		return runBenchMerge(args[1:])
	}
	fmt.Fprintf(os.Stderr, "Error: unknown bench command %q\n%s\n", args[0], benchUsage)
	return 2
}

func runBenchTPCH(args []string) int {
	fs := pflag.NewFlagSet("bench tpch", pflag.ContinueOnError)
	sf := fs.Int("sf", 1, "TPC-H scale factor (generated once into the user cache, as --tpch does)")
	modes := fs.String("modes", "blocking,pipelined", "execution modes to compare, in the order they run (pipelined-lazy: pipelined with execution.lazy_producers; pipelined-mux and pipelined-nomux: pipelined with exchange.multiplex on and off)")
	runs := fs.Int("runs", 3, "timed runs per query and mode, after one warm-up run")
	executors := fs.Int("executors", 2, "executors in the embedded cluster")
	vcores := fs.Int("vcores", 0, "vcores of each executor (default: the CPUs shared out among the executors, at least 2); the queries run on as many partitions as the cluster has vcores")
	queries := fs.String("queries", "", "queries to run: TPC-H numbers and streaming ones, e.g. 1,3,s2 (default: all 22, and the streaming ones)")
	streaming := fs.Bool("streaming", true, "with the default queries, also run the streaming ones (s1 ...: scans, joins and a LIMIT whose rows reach the client while they run)")
	latency := fs.Int("latency", 200, "round trips per latency microbenchmark (0 skips it)")
	out := fs.String("out", "bench-results", "directory for results.json, table.md and chart.svg")
	data := fs.String("data", "", "read the TPC-H tables from this folder (one sub-folder of Parquet files per table, as another writer left them) instead of the generated files; --sf is then only recorded")
	interleave := fs.Bool("interleave", true, "time each query's modes in turn (its warm-ups, then run 1 in every mode, run 2 in every mode, ..., each round starting one mode further on), so that modes are compared in the same minute of the machine's drift; false runs one mode's whole suite after another's")
	answers := fs.String("answers", "", "check each TPC-H query's warm-up run in every mode against the answers in this folder (qN.out in the TPC-H kit's format, e.g. testdata/tpch/answers-sf1, or what sluice-bench-duckdb --answers wrote) and report the verdicts")
	if err := fs.Parse(args); err != nil {
		fmt.Fprintln(os.Stderr, benchUsage)
		return 2
	}
	if *sf <= 0 || *runs <= 0 || *executors <= 0 || *latency < 0 || *vcores < 0 {
		fmt.Fprintln(os.Stderr, "Error: --sf, --runs and --executors must be positive and --latency not negative")
		return 2
	}
	qs, err := benchQueries(*queries, *streaming)
	if err != nil {
		fmt.Fprintf(os.Stderr, "Error: --queries: %v\n", err)
		return 2
	}
	modeList := strings.Split(*modes, ",")
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	emb, sess, err := startBenchCluster(ctx, *out, *executors, *vcores)
	if err != nil {
		fmt.Fprintf(os.Stderr, "Error: %v\n", err)
		return 1
	}
	defer emb.Close()
	defer sess.Close()
	dataDir := *data
	if dataDir == "" {
		err = registerTPCH(ctx, sess, *sf)
		dataDir, _ = tpchDir(*sf)
	} else {
		err = registerTPCHFrom(ctx, sess, dataDir)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "Error: %v\n", err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "TPC-H SF %d from %s; %d executors; modes %s; %d runs each after a warm-up\n", *sf, dataDir, *executors, *modes, *runs)

	rep := &bench.Report{Suite: "tpch", ScaleFact: *sf, Executors: *executors, Machine: bench.ThisMachine(), ModesOrder: modeList}
	suite := &bench.Suite{Session: sess, Queries: qs, Modes: modeList, Runs: *runs, Progress: os.Stderr,
		QueuePeak: func() int64 {
			var n int64
			for _, e := range emb.Executors() {
				n += e.PeakQueuedBytes()
			}
			return n
		},
		ResetQueuePeak: func() {
			for _, e := range emb.Executors() {
				e.ResetQueuedPeak()
			}
		},
	}
	suite.ReservedPeaks, suite.ResetReservedPeaks = reservedPeaks(emb)
	suite.Answers = *answers
	suite.Interleave = *interleave
	rep.Runs, rep.Memory, err = suite.Run(ctx)
	if err != nil {
		fmt.Fprintf(os.Stderr, "Error: %v\n", err)
		return 1
	}
	rep.Answers, rep.Checks = *answers, suite.Checks
	if *latency > 0 {
		for _, mode := range modeList {
			for _, l := range []struct{ name, sql string }{
				{"SELECT 1", "SELECT 1"},
				{"point query", "SELECT * FROM nation WHERE n_nationkey = 7"},
			} {
				m, err := bench.MeasureLatency(ctx, sess, l.name, mode, l.sql, *latency)
				if err != nil {
					fmt.Fprintf(os.Stderr, "Error: %v\n", err)
					return 1
				}
				rep.Latency = append(rep.Latency, m)
			}
		}
	}
	if *data != "" {
		rep.Notes = append(rep.Notes, fmt.Sprintf("tables read from %s, not the files sluice generates", dataDir))
	}
	rep.Notes = append(rep.Notes,
		peakRSSNote(*interleave))
	return writeBenchOutputs(*out, rep)
}

// peakRSSNote says what the report's peak RSS per mode means.
func peakRSSNote(interleaved bool) string {
	if interleaved {
		return "modes were timed in turn, query by query (warm-ups, then run 1 in every mode, run 2 in every mode, ...); peak RSS is the process-wide high-water mark (VmHWM) at the end, the same for every mode"
	}
	return "peak RSS is the process-wide high-water mark (VmHWM) read after each mode's suite, so a mode run later includes the earlier modes' peak"
}

// reservedPeaks returns the suite's functions reading and restarting each
// executor's peak reserved memory.
func reservedPeaks(emb *cluster.Embedded) (func() []int64, func()) {
	read := func() []int64 {
		var out []int64
		for _, e := range emb.Executors() {
			out = append(out, e.PeakReservedBytes())
		}
		return out
	}
	reset := func() {
		for _, e := range emb.Executors() {
			e.ResetReservedPeak()
		}
	}
	return read, reset
}

// startBenchCluster makes the output folder and starts an embedded
// cluster of executors with a session connected to it.
func startBenchCluster(ctx context.Context, out string, executors, vcores int) (*cluster.Embedded, *session.Session, error) {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, nil, err
	}
	emb, err := cluster.StartEmbedded(ctx, cluster.EmbeddedConfig{Executors: executors, VcoresPerExecutor: vcores})
	if err != nil {
		return nil, nil, err
	}
	sess, err := session.ConnectInProcess(emb)
	if err != nil {
		emb.Close()
		return nil, nil, err
	}
	return emb, sess, nil
}

// writeBenchOutputs writes results.json, table.md and chart.svg into dir and
// prints the table.
func writeBenchOutputs(dir string, rep *bench.Report) int {
	if err := bench.WriteJSON(filepath.Join(dir, "results.json"), rep); err != nil {
		fmt.Fprintf(os.Stderr, "Error: %v\n", err)
		return 1
	}
	set, suiteName := bench.SetTPCH, fmt.Sprintf("TPC-H SF %d", rep.ScaleFact)
	if rep.Suite == "tpcds" {
		set, suiteName = bench.SetTPCDS, "TPC-DS"
	}
	s := bench.Summarize(rep, set)
	var table strings.Builder
	m := rep.Machine
	fmt.Fprintf(&table, "%s, %d executors, %d runs per query and mode (medians, ms). Machine: %d CPUs %s, %s/%s, %s, %s.\n\n",
		suiteName, rep.Executors, maxRun(rep), m.CPUs, m.Host, m.GOOS, m.GOARCH, m.GoVersion, m.Date)
	if err := s.WriteTable(&table); err != nil {
		fmt.Fprintf(os.Stderr, "Error: %v\n", err)
		return 1
	}
	ss := bench.Summarize(rep, bench.SetStreaming)
	if len(ss.Queries) > 0 && set == bench.SetTPCH {
		table.WriteString("\nStreaming queries on the same tables (no final sort or aggregate, so rows can reach the client while the query runs):\n\n")
		if err := ss.WriteTable(&table); err != nil {
			fmt.Fprintf(os.Stderr, "Error: %v\n", err)
			return 1
		}
		table.WriteString("\n")
		for _, q := range ss.Queries {
			fmt.Fprintf(&table, "- %s\n", streamingTitle(q))
		}
	}
	if err := bench.WriteExtras(&table, rep); err != nil {
		fmt.Fprintf(os.Stderr, "Error: %v\n", err)
		return 1
	}
	fmt.Print(table.String())
	if err := os.WriteFile(filepath.Join(dir, "table.md"), []byte(table.String()), 0o644); err != nil {
		fmt.Fprintf(os.Stderr, "Error: writing the table: %v\n", err)
		return 1
	}
	title := fmt.Sprintf("%s: median time to first row and total per query (%s)", suiteName, strings.Join(s.Modes, ", "))
	if err := writeChart(filepath.Join(dir, "chart.svg"), s, title); err != nil {
		fmt.Fprintf(os.Stderr, "Error: writing the chart: %v\n", err)
		return 1
	}
	charts := "chart.svg"
	if len(ss.Queries) > 0 && set == bench.SetTPCH {
		title := fmt.Sprintf("Streaming queries, TPC-H SF %d tables: median time to first row and total (%s)", rep.ScaleFact, strings.Join(ss.Modes, ", "))
		if err := writeChart(filepath.Join(dir, "streaming.svg"), ss, title); err != nil {
			fmt.Fprintf(os.Stderr, "Error: writing the chart: %v\n", err)
			return 1
		}
		charts += " and streaming.svg"
	}
	fmt.Fprintf(os.Stderr, "Wrote results.json, table.md, %s in %s\n", charts, dir)
	return 0
}

// writeChart writes s as an SVG bar chart into path.
func writeChart(path string, s *bench.Summary, title string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	err = bench.WriteSVG(f, s, title)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func maxRun(rep *bench.Report) int {
	n := 0
	for _, r := range rep.Runs {
		n = max(n, r.Run)
	}
	return n
}

// runBenchMerge adds peers' runs (DuckDB) to a sluice report and rewrites
// the table and the chart.
func runBenchMerge(args []string) int {
	fs := pflag.NewFlagSet("bench merge", pflag.ContinueOnError)
	out := fs.String("out", "", "directory for the merged results.json, table.md and chart.svg (default: the first report's)")
	if err := fs.Parse(args); err != nil || fs.NArg() < 2 {
		fmt.Fprintln(os.Stderr, benchUsage)
		return 2
	}
	rep, err := bench.ReadJSON(fs.Arg(0))
	if err != nil {
		fmt.Fprintf(os.Stderr, "Error: %v\n", err)
		return 1
	}
	for _, p := range fs.Args()[1:] {
		peer, err := bench.ReadJSON(p)
		if err != nil {
			fmt.Fprintf(os.Stderr, "Error: %v\n", err)
			return 1
		}
		rep.Merge(peer)
	}
	dir := *out
	if dir == "" {
		dir = filepath.Dir(fs.Arg(0))
	}
	return writeBenchOutputs(dir, rep)
}

// benchQueries reads the embedded scripts of the queries list names:
// TPC-H numbers (6 or q6) and streaming ones (s2); "" is all 22 TPC-H
// queries, and every streaming one when streaming is set.
func benchQueries(list string, streaming bool) ([]bench.Query, error) {
	var qs []bench.Query
	add := func(set string, n int) error {
		path := fmt.Sprintf("testdata/tpch/q%d.sql", n)
		if set == bench.SetStreaming {
			path = fmt.Sprintf("testdata/streaming/s%d.sql", n)
		}
		b, err := tpchQueries.ReadFile(path)
		if err != nil {
			return err
		}
		qs = append(qs, bench.Query{Set: set, N: n, Text: string(b)})
		return nil
	}
	if list == "" {
		for n := 1; n <= 22; n++ {
			if err := add(bench.SetTPCH, n); err != nil {
				return nil, err
			}
		}
		if streaming {
			for n := 1; n <= streamingCount(); n++ {
				if err := add(bench.SetStreaming, n); err != nil {
					return nil, err
				}
			}
		}
		return qs, nil
	}
	for _, f := range strings.Split(list, ",") {
		f = strings.ToLower(strings.TrimSpace(f))
		if rest, ok := strings.CutPrefix(f, "s"); ok {
			n, err := strconv.Atoi(rest)
			if err == nil && n >= 1 {
				if err := add(bench.SetStreaming, n); err == nil {
					continue
				}
			}
			return nil, fmt.Errorf("%q is not a streaming query (s1 to s%d)", f, streamingCount())
		}
		n, err := strconv.Atoi(strings.TrimPrefix(f, "q"))
		if err != nil || n < 1 || n > 22 {
			return nil, fmt.Errorf("%q is not a TPC-H query number (1 to 22) or a streaming query (s1 to s%d)", f, streamingCount())
		}
		if err := add(bench.SetTPCH, n); err != nil {
			return nil, err
		}
	}
	return qs, nil
}

// streamingCount is how many streaming queries are embedded.
func streamingCount() int {
	n := 0
	for {
		if _, err := tpchQueries.ReadFile(fmt.Sprintf("testdata/streaming/s%d.sql", n+1)); err != nil {
			return n
		}
		n++
	}
}

// streamingTitle is the first line of streaming query n's script, its
// leading "-- " cut ("s1: filter scan: ..."), or its label alone.
func streamingTitle(n int) string {
	b, err := tpchQueries.ReadFile(fmt.Sprintf("testdata/streaming/s%d.sql", n))
	line, _, _ := strings.Cut(string(b), "\n")
	if err != nil || !strings.HasPrefix(line, "-- ") {
		return bench.Label(bench.SetStreaming, n)
	}
	return strings.TrimPrefix(line, "-- ")
}

// runBenchTPCDS is `sluice bench tpcds`: the TPC-DS queries on any folder
// holding the 24 tables as <table>.parquet, in each mode of an embedded
// cluster and in process. A query a mode does not take (its warm-up fails)
// is listed as skipped for that mode; scripts of several queries are timed
// whole.
func runBenchTPCDS(args []string) int {
	fs := pflag.NewFlagSet("bench tpcds", pflag.ContinueOnError)
	data := fs.String("data", "", "folder holding the TPC-DS tables, one <table>.parquet (file or folder of files) each")
	queriesDir := fs.String("queries", "", "folder holding q1.sql ... q99.sql")
	only := fs.String("only", "", "query numbers to run, e.g. 1,3,6 (default: every qN.sql in --queries)")
	modes := fs.String("modes", "blocking,pipelined,"+bench.ModeInProcess, "modes to compare, in the order they run")
	runs := fs.Int("runs", 3, "timed runs per query and mode, after one warm-up run")
	executors := fs.Int("executors", 2, "executors in the embedded cluster")
	out := fs.String("out", "bench-results/tpcds", "directory for results.json, table.md and chart.svg")
	interleave := fs.Bool("interleave", true, "time each query's modes in turn (its warm-ups, then run 1 in every mode, run 2 in every mode, ..., each round starting one mode further on), so that modes are compared in the same minute of the machine's drift; false runs one mode's whole suite after another's")
	if err := fs.Parse(args); err != nil {
		fmt.Fprintln(os.Stderr, benchUsage)
		return 2
	}
	if *data == "" || *queriesDir == "" {
		fmt.Fprintln(os.Stderr, "Error: --data and --queries are required\n"+benchUsage)
		return 2
	}
	if *runs <= 0 || *executors <= 0 {
		fmt.Fprintln(os.Stderr, "Error: --runs and --executors must be positive")
		return 2
	}
	qs, err := bench.QueryFiles(*queriesDir, *only, bench.SetTPCDS)
	if err != nil {
		fmt.Fprintf(os.Stderr, "Error: %v\n", err)
		return 2
	}
	tables, err := filepath.Glob(filepath.Join(*data, "*.parquet"))
	if err != nil || len(tables) == 0 {
		fmt.Fprintf(os.Stderr, "Error: no <table>.parquet in %s\n", *data)
		return 1
	}
	modeList := strings.Split(*modes, ",")
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	emb, sess, err := startBenchCluster(ctx, *out, *executors, 0)
	if err != nil {
		fmt.Fprintf(os.Stderr, "Error: %v\n", err)
		return 1
	}
	defer emb.Close()
	defer sess.Close()
	local := session.New(catalog.New())
	defer local.Close()
	for _, s := range []*session.Session{sess, local} {
		if err := registerParquetTables(ctx, s, tables); err != nil {
			fmt.Fprintf(os.Stderr, "Error: %v\n", err)
			return 1
		}
	}
	fmt.Fprintf(os.Stderr, "TPC-DS from %s, %d queries; %d executors; modes %s; %d runs each after a warm-up\n", *data, len(qs), *executors, *modes, *runs)
	rep := &bench.Report{Suite: "tpcds", ScaleFact: 1, Executors: *executors, Machine: bench.ThisMachine(), ModesOrder: modeList}
	suite := &bench.Suite{Session: sess, InProcess: local, Queries: qs, Modes: modeList, Runs: *runs,
		Whole: true, SkipFailing: true, Progress: os.Stderr, Interleave: *interleave}
	suite.ReservedPeaks, suite.ResetReservedPeaks = reservedPeaks(emb)
	rep.Runs, rep.Memory, rep.Skipped, err = suite.RunSkipping(ctx)
	if err != nil {
		fmt.Fprintf(os.Stderr, "Error: %v\n", err)
		return 1
	}
	rep.Notes = append(rep.Notes,
		"each query's script is timed whole (q14, q23, q24 and q39 hold two queries); ratios of sums count only the queries both modes ran",
		peakRSSNote(*interleave))
	return writeBenchOutputs(*out, rep)
}

// registerParquetTables registers each <table>.parquet path as a table
// named after it.
func registerParquetTables(ctx context.Context, s *session.Session, paths []string) error {
	for _, p := range paths {
		abs, err := filepath.Abs(p)
		if err != nil {
			return err
		}
		name := strings.TrimSuffix(filepath.Base(p), ".parquet")
		res, err := s.Execute(ctx, fmt.Sprintf("CREATE EXTERNAL TABLE %s STORED AS PARQUET LOCATION '%s'", name, strings.ReplaceAll(abs, "'", "''")))
		if err != nil {
			return fmt.Errorf("registering %s: %w", p, err)
		}
		res.Close()
	}
	return nil
}
