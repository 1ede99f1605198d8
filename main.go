// Command sluice is an interactive SQL shell over Arrow. See README.md.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"

	"github.com/chzyer/readline"
	"github.com/mattn/go-isatty"
	"github.com/spf13/pflag"

	"sluice/catalog"
	"sluice/cluster"
	"sluice/physical/mempool"
	"sluice/render"
	"sluice/repl"
	"sluice/rpc"
	"sluice/session"
	"sluice/sql"
	"sluice/tpch"
)

func main() {
	if os.Getenv("GOGC") == "" {
		// Queries allocate many short-lived batches; collecting less often
		// than Go's default saves CPU. Column buffers are recycled
		// (mempool.Allocator), so letting garbage reach twice the live heap
		// runs the queries as fast as a larger multiple did, with about
		// half the peak memory (measured in commit 315e00a). The build
		// links the runtime to hand freed pages back with MADV_FREE
		// (Makefile, RUNTIME_LDFLAGS), so the heap regrows without faults.
		debug.SetGCPercent(200)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		// Queries reserve at most three quarters of the memory
		// (mempool.DefaultLimit); a soft limit a little above
		// makes the collector run harder near it rather than let garbage
		// grow the heap to GOGC's multiple of what is live and take the
		// process past the machine's memory.
		if m := mempool.ProcessMemory(); m > 0 {
			debug.SetMemoryLimit(m / 10 * 9)
		}
	}
	sql.Version = versionLine()
	os.Exit(run(os.Args[1:]))
}

// scriptFlag collects -c and -f in the order given, sharing one list.
type scriptFlag struct {
	kind  string
	items *[]scriptItem
}

type scriptItem struct{ kind, value string }

func (f scriptFlag) String() string { return "" }
func (f scriptFlag) Type() string   { return "string" }
func (f scriptFlag) Set(v string) error {
	*f.items = append(*f.items, scriptItem{f.kind, v})
	return nil
}

// version is set at build time with -ldflags "-X main.version=..." (make
// build and make install stamp git describe).
var version = "dev"

// commit is the git commit the binary was built from, set at build time
// with -ldflags "-X main.commit=..." where Go cannot record it itself: a
// build from a tree without .git (a container build context) or with
// -buildvcs=false. Go's own vcs.revision wins when present.
var commit = ""

// versionLine is what --version prints: the stamped version, and the
// commit the binary was built from (recorded by Go, or stamped).
func versionLine() string {
	line := "sluice " + version
	rev, modified, goVersion := commit, "", ""
	if info, ok := debug.ReadBuildInfo(); ok {
		goVersion = info.GoVersion
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				modified = s.Value
			}
		}
	}
	if rev != "" && !strings.Contains(version, rev[:min(len(rev), 7)]) {
		line += " (commit " + rev[:min(len(rev), 12)]
		if modified == "true" {
			line += ", modified"
		}
		line += ")"
	}
	if goVersion != "" {
		line += ", " + goVersion
	}
	return line
}

func run(args []string) int {
	if len(args) > 0 && args[0] == "bench" {
		return runBench(args[1:])
	}
	if len(args) > 0 && args[0] == "tpch" {
		return runTPCH(args[1:])
	}
	if len(args) > 0 && args[0] == "scheduler" {
		return runScheduler(args[1:])
	}
	if len(args) > 0 && args[0] == "executor" {
		return runExecutor(args[1:])
	}
	if len(args) > 0 && args[0] == "serve" {
		return runServe(args[1:])
	}
	fs := pflag.NewFlagSet("sluice", pflag.ContinueOnError)
	fs.SortFlags = false
	var items []scriptItem
	fs.VarP(scriptFlag{"c", &items}, "command", "c", "run SQL and exit (repeatable; runs in order with -f)")
	fs.VarP(scriptFlag{"f", &items}, "file", "f", "run a SQL script and exit (repeatable)")
	format := fs.String("format", "", "output format: table, csv, tsv, json, ndjson, markdown, line (default: table on a terminal, csv otherwise)")
	tpchSF := fs.Int("tpch", 0, "register the TPC-H tables at this scale factor (generated once, cached)")
	echo := fs.Bool("echo", false, "print each statement before its result")
	cont := fs.Bool("continue-on-error", false, "keep running a script after a failed statement")
	noRC := fs.Bool("no-rc", false, "do not run ~/.sluicerc at start")
	quiet := fs.BoolP("quiet", "q", false, "no banner, no footers")
	verbose := fs.Bool("verbose", false, "under an error of the query itself, print where it happened (stage, task, executor, operators)")
	schedulerAddr := fs.String("scheduler", "", "use the scheduler at HOST:PORT (default: start an embedded cluster in this process)")
	executors := fs.Int("executors", 2, "executors in the embedded cluster")
	vcores := fs.Int("vcores", 0, "vcores of each executor of the embedded cluster (default: the CPUs shared out among the executors, at least 2)")
	mode := fs.String("mode", "", "initial execution mode: blocking, pipelined or auto (default pipelined)")
	inProcess := fs.Bool("in-process", false, "run queries on the engine in this process, without a cluster")
	showVersion := fs.Bool("version", false, "print the version and exit")
	secFlags := addSecurityFlags(fs, true)
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole session to this file (for go tool pprof)")
	fs.Usage = func() {
		// Asked for, help goes to stdout (sluice --help | less).
		fmt.Fprintf(os.Stdout, `Usage: sluice [flags] [FILE...]     the shell: interactive on a terminal; reads a script from stdin otherwise
                                    (each FILE, .parquet or .csv, is registered as a table named after it)

Commands:
  sluice scheduler --bind ADDR --policy push|pull      run a cluster's scheduler
  sluice executor --scheduler ADDR ...                 run an executor of a cluster
  sluice serve --flight-sql-bind ADDR [FILE...]        an embedded cluster serving Arrow Flight SQL, no shell
  sluice tpch gen --sf N --out DIR                     write the TPC-H tables as Parquet
  sluice bench tpch|tpcds|merge ...                    time queries in each mode (and DuckDB)
Each command takes --help.

Flags:
%s`, fs.FlagUsages())
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(os.Stderr, "Error: %v (see sluice --help)\n", err)
		return 2
	}
	if *showVersion {
		fmt.Println(versionLine())
		return 0
	}
	dataFiles, bad := dataFileArgs(fs.Args())
	if bad != "" {
		fmt.Fprintf(os.Stderr, "Error: unexpected argument %q (SQL goes in -c, scripts in -f, data files end in .parquet or .csv; see sluice --help)\n", bad)
		return 2
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			fmt.Fprintf(os.Stderr, "Error: --cpuprofile: %v\n", err)
			return 2
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintf(os.Stderr, "Error: --cpuprofile: %v\n", err)
			f.Close()
			return 2
		}
		defer func() {
			pprof.StopCPUProfile()
			f.Close()
		}()
	}
	stdinTerminal := isatty.IsTerminal(os.Stdin.Fd())
	stdoutTerminal := isatty.IsTerminal(os.Stdout.Fd())
	interactive := len(items) == 0 && stdinTerminal
	if *format == "" {
		*format = "csv"
		if stdoutTerminal {
			*format = "table"
		}
	}
	if _, err := render.New(*format, io.Discard, render.Options{}); err != nil {
		fmt.Fprintf(os.Stderr, "Error: %v\n", err)
		return 2
	}
	ctx := context.Background()
	if !interactive {
		// In scripts Ctrl-C cancels the running statement and ends the run.
		var stop context.CancelFunc
		ctx, stop = signal.NotifyContext(ctx, os.Interrupt)
		defer stop()
	}

	sec, err := secFlags.load(os.Getenv("SLUICE_AUTH_TOKEN"))
	if err != nil {
		fmt.Fprintf(os.Stderr, "Error: %v\n", err)
		return 2
	}
	sess, shutdown, err := connect(ctx, *schedulerAddr, *executors, *vcores, *inProcess, sec)
	if err != nil {
		fmt.Fprintf(os.Stderr, "Error: %v\n", err)
		return 1
	}
	defer shutdown()
	if *mode != "" {
		if err := sess.Settings.SetDefault("execution.mode", *mode); err != nil {
			fmt.Fprintf(os.Stderr, "Error: --mode: %v\n", err)
			return 2
		}
	}
	if *tpchSF > 0 {
		if err := registerTPCH(ctx, sess, *tpchSF); err != nil {
			fmt.Fprintf(os.Stderr, "Error: %v\n", err)
			return 1
		}
	}
	if len(dataFiles) > 0 {
		notice := func(s string) {
			if !*quiet {
				fmt.Fprintln(os.Stderr, s)
			}
		}
		if err := registerFileArgs(ctx, sess, dataFiles, notice); err != nil {
			fmt.Fprintf(os.Stderr, "Error: %v\n", err)
			return 1
		}
	}
	r := &repl.Runner{
		Session: sess, Out: os.Stdout, Err: os.Stderr, Format: *format,
		Echo: *echo, ContinueOnError: *cont, Quiet: *quiet, Verbose: *verbose, NullValue: "NULL",
		Progress: interactive && isatty.IsTerminal(os.Stderr.Fd()),
		Fit:      true,
	}
	if stdoutTerminal {
		r.TermWidth = readline.GetScreenWidth
	}
	defer r.Close()
	if interactive && stdoutTerminal {
		r.MaxRows = 40
	}
	if !*noRC {
		if home, err := os.UserHomeDir(); err == nil {
			rc := filepath.Join(home, ".sluicerc")
			if b, err := os.ReadFile(rc); err == nil {
				if err := r.RunScript(ctx, rc, string(b)); err != nil && !interactive {
					return 1
				}
			}
		}
	}
	if len(items) > 0 {
		return runItems(ctx, r, items, *cont)
	}
	if interactive {
		banner := ""
		if !*quiet {
			banner = "sluice " + version + " — SQL over Arrow. Statements end with ';'. Type .help for commands, Ctrl-D to exit."
			if *tpchSF > 0 {
				banner += fmt.Sprintf("\nTPC-H SF %d tables are registered (.tables lists them).", *tpchSF)
			}
		}
		if err := r.Interactive(ctx, repl.ShellOptions{HistoryFile: repl.DefaultHistoryFile(), Banner: banner}); err != nil {
			fmt.Fprintf(os.Stderr, "Error: %v\n", err)
			return 1
		}
		return 0
	}
	if err := r.RunReader(ctx, "stdin", os.Stdin); err != nil && !errors.Is(err, repl.ErrExit) {
		return 1
	}
	return 0
}

// runFile runs the script at path, reading it as it runs.
func runFile(ctx context.Context, r *repl.Runner, path string) error {
	f, err := os.Open(path)
	if err != nil {
		fmt.Fprintf(os.Stderr, "Error: %v\n", err)
		return err
	}
	defer f.Close()
	return r.RunReader(ctx, path, f)
}

// runItems runs -c and -f in order; the exit code is 1 if any failed.
func runItems(ctx context.Context, r *repl.Runner, items []scriptItem, cont bool) int {
	failed := false
	for _, it := range items {
		var err error
		if it.kind == "f" {
			err = runFile(ctx, r, it.value)
		} else {
			err = r.RunScript(ctx, "-c", it.value)
		}
		if errors.Is(err, repl.ErrExit) {
			break
		}
		if err != nil {
			failed = true
			if !cont {
				return 1
			}
		}
	}
	if failed {
		return 1
	}
	return 0
}

// tpchDir is where TPC-H data at sf is cached.
func tpchDir(sf int) (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(base, "sluice", "tpch-sf"+strconv.Itoa(sf)), nil
}

// connect returns the session queries run in: on the scheduler at addr, on
// an embedded cluster of n executors of vcores each (0: the default)
// started here, or (inProcess) on the engine in this process. sec is the token and TLS for a scheduler at addr;
// an embedded cluster makes its own. shutdown closes whatever was started.
func connect(ctx context.Context, addr string, n, vcores int, inProcess bool, sec *rpc.Security) (*session.Session, func(), error) {
	if inProcess {
		sess := session.New(catalog.New())
		return sess, sess.Close, nil
	}
	var emb *cluster.Embedded
	if addr == "" {
		if n <= 0 {
			return nil, nil, fmt.Errorf("--executors must be at least 1")
		}
		if vcores < 0 {
			return nil, nil, fmt.Errorf("--vcores must be positive")
		}
		var err error
		emb, err = cluster.StartEmbedded(ctx, cluster.EmbeddedConfig{Executors: n, VcoresPerExecutor: vcores})
		if err != nil {
			return nil, nil, err
		}
	}
	var sess *session.Session
	var err error
	if emb != nil {
		sess, err = session.ConnectInProcess(emb)
	} else {
		sess, err = session.ConnectWith(addr, sec)
	}
	if err != nil {
		if emb != nil {
			emb.Close()
		}
		return nil, nil, err
	}
	return sess, func() {
		sess.Close()
		if emb != nil {
			emb.Close()
		}
	}, nil
}

// registerTPCH generates TPC-H at sf into the user cache once and registers
// its tables in the session's catalog.
func registerTPCH(ctx context.Context, sess *session.Session, sf int) error {
	dir, err := tpchDir(sf)
	if err != nil {
		return err
	}
	progress := func(string, int64, int64) {}
	if isatty.IsTerminal(os.Stderr.Fd()) {
		progress = tpch.NewProgressBar(os.Stderr)
	}
	notice := func(s string) { fmt.Fprintln(os.Stderr, s) }
	if _, err := tpch.EnsureCached(ctx, sf, dir, notice, progress); err != nil {
		return fmt.Errorf("generating TPC-H data: %w", err)
	}
	return registerTPCHFrom(ctx, sess, dir)
}

// registerTPCHFrom registers the TPC-H tables of dir, one sub-folder of
// Parquet files per table.
func registerTPCHFrom(ctx context.Context, sess *session.Session, dir string) error {
	for _, t := range tpch.TableNames {
		stmt := fmt.Sprintf("CREATE OR REPLACE EXTERNAL TABLE %s STORED AS PARQUET LOCATION '%s'", t, strings.ReplaceAll(filepath.Join(dir, t), "'", "''"))
		res, err := sess.Execute(ctx, stmt)
		if err != nil {
			return fmt.Errorf("registering TPC-H table %s: %w", t, err)
		}
		res.Close()
	}
	return nil
}

func runTPCH(args []string) int {
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
		fmt.Println("usage: sluice tpch gen --sf N --out DIR")
		return 0
	}
	if len(args) == 0 || args[0] != "gen" {
		fmt.Fprintln(os.Stderr, "usage: sluice tpch gen --sf N --out DIR")
		return 2
	}
	fs := pflag.NewFlagSet("tpch gen", pflag.ContinueOnError)
	sf := fs.Int("sf", 1, "scale factor (integer)")
	out := fs.String("out", "", "output directory")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	if *out == "" || *sf <= 0 {
		fmt.Fprintln(os.Stderr, "Error: --out DIR and a positive --sf are required")
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	progress := func(string, int64, int64) {}
	if isatty.IsTerminal(os.Stderr.Fd()) {
		progress = tpch.NewProgressBar(os.Stderr)
	}
	if err := tpch.Generate(ctx, *sf, *out, progress); err != nil {
		fmt.Fprintf(os.Stderr, "Error: %v\n", strings.TrimSpace(err.Error()))
		return 1
	}
	return 0
}
