package repl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"

	"github.com/chzyer/readline"
)

// ShellOptions configure the interactive shell.
type ShellOptions struct {
	// HistoryFile is where statements are remembered ("" disables history).
	HistoryFile string
	// Banner is printed to Err at start (empty: none).
	Banner string
}

// DefaultHistoryFile returns $SLUICE_HISTORY when set (an empty value
// disables history), else ~/.sluice_history.
func DefaultHistoryFile() string {
	if v, ok := os.LookupEnv("SLUICE_HISTORY"); ok {
		return v
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".sluice_history")
}

const (
	prompt         = "sluice> "
	continuePrompt = "   ...> "
)

// Interactive runs the shell on a terminal until Ctrl-D or .quit. Ctrl-C
// while a statement runs cancels it; at the prompt it clears the pending
// statement.
func (r *Runner) Interactive(ctx context.Context, opts ShellOptions) error {
	rl, err := readline.NewEx(&readline.Config{
		Stdin:                  newPasteFilter(readline.NewCancelableStdin(os.Stdin)),
		Prompt:                 prompt,
		HistoryFile:            opts.HistoryFile,
		DisableAutoSaveHistory: true,
		HistorySearchFold:      true,
		AutoComplete:           &completer{r: r},
		InterruptPrompt:        "^C",
		EOFPrompt:              "",
		Stdout:                 r.Err,
		Stderr:                 r.Err,
	})
	if err != nil {
		return err
	}
	defer rl.Close()
	// Pasted text arrives marked, so that it lands on the input line whole
	// (tabs and line breaks included) and runs only on Enter.
	fmt.Fprint(r.Err, pasteOn)
	defer fmt.Fprint(r.Err, pasteOff)
	if opts.Banner != "" {
		fmt.Fprintln(r.Err, opts.Banner)
	}
	sp := NewSplitter()
	var entry strings.Builder // the statement being typed, for history
	for {
		if _, pending := sp.Pending(); pending {
			rl.SetPrompt(continuePrompt)
		} else {
			rl.SetPrompt(prompt)
		}
		r.pending = entry.String()
		line, err := rl.Readline()
		if errors.Is(err, readline.ErrInterrupt) {
			sp.Reset()
			entry.Reset()
			continue
		}
		if errors.Is(err, io.EOF) {
			// Ctrl-D on a continuation line runs the pending statement, as
			// the end of a script does, rather than dropping it unseen.
			if p, pending := sp.Pending(); pending {
				rl.SaveHistory(historyEntry(entry.String()))
				r.runInterruptible(ctx, p)
			}
			return nil
		}
		if err != nil {
			return err
		}
		// A paste may hold several lines: each goes as if typed.
		for _, l := range strings.Split(unpaste(line), "\n") {
			if r.interactiveLine(ctx, rl, sp, &entry, l) {
				return nil
			}
		}
	}
}

// interactiveLine runs one line typed (or pasted) at the prompt: a shell
// command outside a statement, or more of the statement being typed, whose
// complete statements run. It reports whether the shell should exit.
func (r *Runner) interactiveLine(ctx context.Context, rl *readline.Instance, sp *Splitter, entry *strings.Builder, line string) bool {
	if _, pending := sp.Pending(); !pending {
		if cmd, ok := shellCommand(line); ok {
			rl.SaveHistory(strings.TrimSpace(line))
			return r.runInterruptible(ctx, Piece{SQL: cmd, Line: 1})
		}
	}
	if entry.Len() > 0 {
		entry.WriteString("\n")
	}
	entry.WriteString(line)
	pieces, ferr := sp.Feed(line + "\n")
	if len(pieces) > 0 {
		if _, pending := sp.Pending(); !pending {
			// One history entry per statement, its lines kept.
			rl.SaveHistory(historyEntry(entry.String()))
			entry.Reset()
		}
	}
	for _, p := range pieces {
		if r.runInterruptible(ctx, p) {
			return true
		}
	}
	if ferr != nil {
		// What was typed cannot be sent whole: drop it, as Ctrl-C does.
		fmt.Fprintf(r.Err, "Error: %v\n", ferr)
		sp.Reset()
		entry.Reset()
	}
	return false
}

// runInterruptible runs one statement; Ctrl-C cancels it. It reports
// whether the shell should exit.
func (r *Runner) runInterruptible(ctx context.Context, p Piece) (exit bool) {
	qctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt)
	defer signal.Stop(sig)
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-sig:
			cancel()
		case <-done:
		}
	}()
	err := r.RunStatement(qctx, p)
	if errors.Is(err, ErrExit) {
		return true
	}
	if err != nil {
		if qctx.Err() != nil && ctx.Err() == nil {
			fmt.Fprintln(r.Err, "query cancelled")
			return false
		}
		// At the prompt a position counts from the statement's first line,
		// as psql and duckdb show it, not from the start of the session.
		p.Line = 1
		r.PrintError("", p, err)
	}
	return false
}
