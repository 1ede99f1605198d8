package repl

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	"sluice/render"
)

// dotCommand is one shell command starting with '.'.
type dotCommand struct {
	usage string
	help  string
	run   func(r *Runner, ctx context.Context, args []string) error
}

var dotCommands map[string]dotCommand

func init() {
	dotCommands = map[string]dotCommand{
		".help":      {".help", "show this help", (*Runner).dotHelp},
		".quit":      {".quit", "exit the shell", func(*Runner, context.Context, []string) error { return ErrExit }},
		".exit":      {".exit", "exit the shell", func(*Runner, context.Context, []string) error { return ErrExit }},
		".tables":    {".tables", "list tables and views", (*Runner).dotTables},
		".schema":    {".schema [TABLE]", "show the columns of a table, or of every table", (*Runner).dotSchema},
		".read":      {".read FILE", "run the statements in FILE", (*Runner).dotRead},
		".output":    {".output [FILE]", "send results to FILE, or back to stdout", (*Runner).dotOutput},
		".format":    {".format [NAME]", "show or set the output format: " + strings.Join(render.Formats, ", "), (*Runner).dotFormat},
		".maxrows":   {".maxrows [N]", "rows drawn by the table format (0: all)", (*Runner).dotMaxRows},
		".maxwidth":  {".maxwidth [N]", "widest a table column is drawn (0: no limit)", (*Runner).dotMaxWidth},
		".fit":       {".fit [on|off]", "fit tables to the terminal: hide middle columns, or one line per column", (*Runner).dotFit},
		".nullvalue": {".nullvalue [TEXT]", "text shown for NULL", (*Runner).dotNullValue},
		".timer":     {".timer [on|off]", "print time to first row and total time after each query", (*Runner).dotTimer},
		".cluster":   {".cluster", "show the scheduler, executors (vcores free/total) and running jobs", (*Runner).dotCluster},
		".explain":   {".explain [QUERY]", "show a query's logical, physical and stage plans; alone: the last query's stages and tasks", (*Runner).dotExplain},
		".mode":      {".mode [blocking|pipelined|auto|compare [off]]", "show or switch the execution mode; compare runs each query in both and says what auto would choose", (*Runner).dotMode},
	}
}

// DotCommandNames lists the dot commands, sorted.
func DotCommandNames() []string {
	out := make([]string, 0, len(dotCommands))
	for n := range dotCommands {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func (r *Runner) dot(ctx context.Context, line string) error {
	fields := strings.Fields(line)
	if strings.HasPrefix(fields[0], `\`) {
		return r.psql(ctx, fields[0], fields[1:])
	}
	name := strings.ToLower(fields[0])
	cmd, ok := dotCommands[name]
	if !ok {
		return fmt.Errorf("unknown command %s; the commands are: %s", fields[0], strings.Join(DotCommandNames(), " "))
	}
	return cmd.run(r, ctx, fields[1:])
}

func (r *Runner) dotHelp(context.Context, []string) error {
	fmt.Fprintln(r.Err, "Statements end with ';' and may span lines. Commands:")
	for _, n := range DotCommandNames() {
		c := dotCommands[n]
		fmt.Fprintf(r.Err, "  %-20s %s\n", c.usage, c.help)
	}
	fmt.Fprintf(r.Err, "psql's %s work too, and a bare exit or quit.\n", strings.Join(psqlCommandNames, " "))
	fmt.Fprintln(r.Err, "SQL: SELECT ..., EXPLAIN ..., CREATE TABLE t (col type, ...) | AS SELECT ..., INSERT INTO t ...,")
	fmt.Fprintln(r.Err, "     DELETE FROM t WHERE ..., UPDATE t SET col = expr WHERE ..., TRUNCATE t,")
	fmt.Fprintln(r.Err, "     CREATE EXTERNAL TABLE t STORED AS PARQUET|CSV LOCATION 'path', COPY (query) TO 'dir',")
	fmt.Fprintln(r.Err, "     CREATE VIEW, DROP TABLE|VIEW, SHOW TABLES, DESCRIBE t|query, SET key = value, SHOW ALL,\n     RESET key|ALL, SHOW FUNCTIONS.")
	return nil
}

func (r *Runner) dotTables(ctx context.Context, _ []string) error {
	return r.RunStatement(ctx, Piece{SQL: "SHOW TABLES", Line: 1})
}

func (r *Runner) dotSchema(ctx context.Context, args []string) error {
	if len(args) > 0 {
		return r.RunStatement(ctx, Piece{SQL: "DESCRIBE " + args[0], Line: 1})
	}
	names, err := r.Session.TableNames(ctx)
	if err != nil {
		return err
	}
	for _, n := range names {
		fmt.Fprintf(r.Out, "%s:\n", n)
		if err := r.RunStatement(ctx, Piece{SQL: "DESCRIBE " + n, Line: 1}); err != nil {
			return err
		}
	}
	return nil
}

func (r *Runner) dotRead(ctx context.Context, args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("usage: .read FILE")
	}
	f, err := os.Open(args[0])
	if err != nil {
		return err
	}
	defer f.Close()
	if err := r.RunReader(ctx, args[0], f); err != nil && !errors.Is(err, ErrExit) {
		// RunReader printed it, with its place in the file.
		return &reportedError{err}
	} else if err != nil {
		return err
	}
	return nil
}

func (r *Runner) dotOutput(_ context.Context, args []string) error {
	if r.stdout == nil {
		r.stdout = r.Out
	}
	if r.outFile != nil {
		r.outFile.Close()
		r.outFile = nil
	}
	if len(args) == 0 {
		r.Out = r.stdout
		return nil
	}
	f, err := os.Create(args[0])
	if err != nil {
		return err
	}
	r.outFile, r.Out = f, f
	return nil
}

// Close releases a file opened by .output.
func (r *Runner) Close() {
	if r.outFile != nil {
		r.outFile.Close()
		r.outFile = nil
	}
}

func (r *Runner) dotFormat(_ context.Context, args []string) error {
	if len(args) == 0 {
		fmt.Fprintln(r.Err, r.Format)
		return nil
	}
	if _, err := render.New(args[0], nil, render.Options{}); err != nil {
		return err
	}
	r.Format = strings.ToLower(args[0])
	return nil
}

func intArg(args []string, name string, cur *int) (bool, error) {
	if len(args) == 0 {
		return false, nil
	}
	n, err := strconv.Atoi(args[0])
	if err != nil || n < 0 {
		return false, fmt.Errorf("usage: %s N (a non-negative integer)", name)
	}
	*cur = n
	return true, nil
}

func (r *Runner) dotMaxRows(_ context.Context, args []string) error {
	set, err := intArg(args, ".maxrows", &r.MaxRows)
	if !set && err == nil {
		fmt.Fprintln(r.Err, r.MaxRows)
	}
	return err
}

func (r *Runner) dotMaxWidth(_ context.Context, args []string) error {
	set, err := intArg(args, ".maxwidth", &r.MaxWidth)
	switch {
	case err != nil:
	case set && r.MaxWidth == 0:
		r.MaxWidth = -1 // no limit
	case !set && r.MaxWidth < 0:
		fmt.Fprintln(r.Err, "0 (no limit)")
	case !set && r.MaxWidth == 0:
		fmt.Fprintln(r.Err, render.DefaultMaxWidth)
	case !set:
		fmt.Fprintln(r.Err, r.MaxWidth)
	}
	return err
}

func (r *Runner) dotFit(_ context.Context, args []string) error {
	if len(args) == 0 {
		fmt.Fprintln(r.Err, map[bool]string{true: "on", false: "off"}[r.Fit])
		return nil
	}
	on, err := onOff(args, r.Fit, ".fit [on|off]")
	r.Fit = on
	return err
}

func (r *Runner) dotNullValue(_ context.Context, args []string) error {
	if len(args) == 0 {
		fmt.Fprintln(r.Err, r.NullValue)
		return nil
	}
	r.NullValue = strings.Join(args, " ")
	return nil
}

func (r *Runner) dotTimer(_ context.Context, args []string) error {
	if len(args) == 0 {
		fmt.Fprintln(r.Err, map[bool]string{true: "on", false: "off"}[r.Timer])
		return nil
	}
	if len(args) != 1 || (args[0] != "on" && args[0] != "off") {
		return fmt.Errorf("usage: .timer [on|off]")
	}
	r.Timer = args[0] == "on"
	return nil
}
