package repl

import (
	"context"
	"fmt"
	"strings"
)

// shellCommand reports whether line, typed outside a pending statement, is
// a shell command rather than SQL, and returns it as the command to run:
// dot commands as they are, psql's backslash commands (psqlCommands) as
// they are, and a bare exit or quit as .quit, as psql and duckdb
// take them. No SQL statement starts with '.' or '\' or is a bare word.
func shellCommand(line string) (string, bool) {
	s := strings.TrimSpace(line)
	switch {
	case strings.HasPrefix(s, "."), strings.HasPrefix(s, `\`):
		return s, true
	}
	switch strings.ToLower(strings.TrimSpace(strings.TrimSuffix(s, ";"))) {
	case "exit", "quit":
		return ".quit", true
	}
	return "", false
}

// psqlCommand is one of psql's backslash commands.
type psqlCommand struct {
	usage, help string
	run         func(r *Runner, ctx context.Context, args []string) error
}

// psqlCommands are psql's backslash commands that sluice's shell takes
// (set in init: they run statements, which run commands).
var psqlCommands map[string]psqlCommand

func init() {
	psqlCommands = map[string]psqlCommand{
		`\q`:      {`\q`, "exit the shell (.quit)", func(*Runner, context.Context, []string) error { return ErrExit }},
		`\?`:      {`\?`, "show this help (.help)", (*Runner).dotHelp},
		`\timing`: {`\timing [on|off]`, "toggle or set the timer (.timer)", (*Runner).psqlTiming},
		`\x`:      {`\x [on|off]`, "toggle or set expanded display, one line per column (.format line)", (*Runner).psqlExpanded},
		`\d`:      {`\d [NAME]`, "list tables and views, or show one's columns (.tables, .schema NAME)", (*Runner).psqlDescribe},
		`\dt`:     {`\dt`, "list tables and views (.tables)", (*Runner).dotTables},
		`\i`:      {`\i FILE`, "run the statements in FILE (.read)", (*Runner).dotRead},
		`\o`:      {`\o [FILE]`, "send results to FILE, or back to stdout (.output)", (*Runner).dotOutput},
	}
}

// psqlCommandNames are psqlCommands' names, in the order help lists
// them (a list of its own: the commands' functions print it).
var psqlCommandNames = []string{`\q`, `\?`, `\timing`, `\x`, `\d`, `\dt`, `\i`, `\o`}

// psqlDescribe is psql's \d: with a name, that table's or view's columns;
// without, the list of tables and views.
func (r *Runner) psqlDescribe(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return r.dotTables(ctx, nil)
	}
	return r.dotSchema(ctx, args[:1])
}

// psql runs a backslash command.
func (r *Runner) psql(ctx context.Context, name string, args []string) error {
	cmd, ok := psqlCommands[strings.ToLower(name)]
	if !ok {
		return fmt.Errorf(`unknown command %s; of psql's backslash commands sluice takes %s; .help lists the shell's commands`, name, strings.Join(psqlCommandNames, " "))
	}
	return cmd.run(r, ctx, args)
}

// onOff reads an optional on|off argument; with none it toggles cur.
func onOff(args []string, cur bool, usage string) (bool, error) {
	switch {
	case len(args) == 0:
		return !cur, nil
	case len(args) == 1 && strings.EqualFold(args[0], "on"):
		return true, nil
	case len(args) == 1 && strings.EqualFold(args[0], "off"):
		return false, nil
	}
	return cur, fmt.Errorf("usage: %s", usage)
}

func (r *Runner) psqlTiming(_ context.Context, args []string) error {
	on, err := onOff(args, r.Timer, `\timing [on|off]`)
	if err != nil {
		return err
	}
	r.Timer = on
	fmt.Fprintf(r.Err, "Timing is %s.\n", map[bool]string{true: "on", false: "off"}[on])
	return nil
}

// psqlExpanded switches to the line format (one line per column), or back
// to the format in use before.
func (r *Runner) psqlExpanded(_ context.Context, args []string) error {
	on, err := onOff(args, r.Format == "line", `\x [on|off]`)
	if err != nil {
		return err
	}
	switch {
	case on && r.Format != "line":
		r.formatBeforeExpanded, r.Format = r.Format, "line"
	case !on && r.Format == "line":
		r.Format = r.formatBeforeExpanded
		if r.Format == "" || r.Format == "line" {
			r.Format = "table"
		}
	}
	fmt.Fprintf(r.Err, "Expanded display is %s.\n", map[bool]string{true: "on", false: "off"}[on])
	return nil
}
