// Command sluice is an interactive SQL shell over Arrow. See README.md.
package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/mattn/go-isatty"
	"github.com/spf13/pflag"

	"sluice/catalog"
	"sluice/repl"
	"sluice/session"
	"sluice/tpch"
)

func main() {
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

func run(args []string) int {
	if len(args) > 0 && args[0] == "tpch" {
		return runTPCH(args[1:])
	}
	fs := pflag.NewFlagSet("sluice", pflag.ContinueOnError)
	var items []scriptItem
	fs.VarP(scriptFlag{"c", &items}, "command", "c", "run SQL and exit (repeatable)")
	fs.VarP(scriptFlag{"f", &items}, "file", "f", "run a SQL script and exit (repeatable)")
	format := fs.String("format", "", "output format: table or csv (default: table on a terminal, csv otherwise)")
	tpchSF := fs.Int("tpch", 0, "register the TPC-H tables at this scale factor (generated once, cached)")
	if err := fs.Parse(args); err != nil {
		if err == pflag.ErrHelp {
			return 0
		}
		return 2
	}
	interactive := len(items) == 0 && isatty.IsTerminal(os.Stdin.Fd())
	if *format == "" {
		*format = "csv"
		if isatty.IsTerminal(os.Stdout.Fd()) {
			*format = "table"
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	cat := catalog.New()
	if *tpchSF > 0 {
		if err := registerTPCH(ctx, cat, *tpchSF); err != nil {
			fmt.Fprintf(os.Stderr, "Error: %v\n", err)
			return 1
		}
	}
	r := &repl.Runner{Session: session.New(cat), Out: os.Stdout, Err: os.Stderr, Format: *format}
	for _, it := range items {
		source, text := "-c", it.value
		if it.kind == "f" {
			b, err := os.ReadFile(it.value)
			if err != nil {
				fmt.Fprintf(os.Stderr, "Error: %v\n", err)
				return 1
			}
			source, text = it.value, string(b)
		}
		if err := r.RunScript(ctx, source, text); err != nil {
			return 1
		}
	}
	if len(items) > 0 {
		return 0
	}
	if interactive {
		return interactiveLoop(ctx, r, *tpchSF > 0)
	}
	b, err := io.ReadAll(os.Stdin)
	if err != nil {
		fmt.Fprintf(os.Stderr, "Error: reading stdin: %v\n", err)
		return 1
	}
	if err := r.RunScript(ctx, "stdin", string(b)); err != nil {
		return 1
	}
	return 0
}

// interactiveLoop is a plain line-based prompt.
func interactiveLoop(ctx context.Context, r *repl.Runner, hasTPCH bool) int {
	fmt.Fprintln(os.Stderr, "sluice — end statements with ';', Ctrl-D to exit.")
	if hasTPCH {
		fmt.Fprintln(os.Stderr, "TPC-H tables are registered: try SHOW TABLES;")
	}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<26)
	sp := repl.NewSplitter()
	for {
		if _, ok := sp.Pending(); ok {
			fmt.Fprint(os.Stderr, "     -> ")
		} else {
			fmt.Fprint(os.Stderr, "sluice> ")
		}
		if !in.Scan() {
			fmt.Fprintln(os.Stderr)
			return 0
		}
		for _, p := range sp.Feed(in.Text() + "\n") {
			if err := r.RunStatement(ctx, p); err != nil {
				r.PrintError("input", p, err)
			}
		}
	}
}

// tpchDir is where TPC-H data at sf is cached.
func tpchDir(sf int) (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(base, "sluice", "tpch-sf"+strconv.Itoa(sf)), nil
}

func registerTPCH(ctx context.Context, cat *catalog.Catalog, sf int) error {
	dir, err := tpchDir(sf)
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(dir, ".complete")); err != nil {
		fmt.Fprintf(os.Stderr, "Generating TPC-H SF %d into %s (once)...\n", sf, dir)
		progress := func(string, int64, int64) {}
		if isatty.IsTerminal(os.Stderr.Fd()) {
			progress = tpch.NewProgressBar(os.Stderr)
		}
		if err := tpch.Generate(ctx, sf, dir, progress); err != nil {
			return fmt.Errorf("generating TPC-H data: %w", err)
		}
	}
	for _, t := range tpch.TableNames {
		pt, err := catalog.OpenParquet(filepath.Join(dir, t))
		if err != nil {
			return err
		}
		if err := cat.RegisterTable(t, pt, true); err != nil {
			return err
		}
	}
	return nil
}

func runTPCH(args []string) int {
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
