package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/mattn/go-runewidth"

	"sluice/tpch"
)

// term is sluice running on a pseudo-terminal.
type term struct {
	t    *testing.T
	f    *os.File
	cmd  *exec.Cmd
	mu   sync.Mutex
	out  bytes.Buffer
	seen int // bytes of out already matched
	done chan struct{}
}

// startTerm runs sluice on a pty with HOME in a temp dir holding rc as
// ~/.sluicerc; extra env may set SLUICE_HISTORY.
func startTerm(t *testing.T, rc string, env ...string) (*term, string) {
	t.Helper()
	home := t.TempDir()
	if rc != "" {
		os.WriteFile(filepath.Join(home, ".sluicerc"), []byte(rc), 0o644)
	}
	cmd := exec.Command(sluiceBin)
	cmd.Env = append(append(os.Environ(), "HOME="+home, "TERM=xterm"), env...)
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 50, Cols: 160})
	if err != nil {
		t.Fatal(err)
	}
	tm := &term{t: t, f: f, cmd: cmd, done: make(chan struct{})}
	go func() {
		defer close(tm.done)
		buf := make([]byte, 4096)
		for {
			n, err := f.Read(buf)
			tm.mu.Lock()
			tm.out.Write(buf[:n])
			tm.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		f.Close()
		<-tm.done
	})
	return tm, home
}

func (tm *term) send(s string) {
	if _, err := tm.f.Write([]byte(s)); err != nil {
		tm.t.Fatal(err)
	}
}

// expect waits until the output after the last match matches re.
func (tm *term) expect(re string, timeout time.Duration) string {
	tm.t.Helper()
	rx := regexp.MustCompile(re)
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		tm.mu.Lock()
		rest := tm.out.String()[tm.seen:]
		if loc := rx.FindStringIndex(rest); loc != nil {
			tm.seen += loc[1]
			tm.mu.Unlock()
			return rest[:loc[1]]
		}
		tm.mu.Unlock()
		time.Sleep(20 * time.Millisecond)
	}
	tm.mu.Lock()
	defer tm.mu.Unlock()
	tm.t.Fatalf("timed out waiting for %q; screen so far:\n%s", re, tm.out.String())
	return ""
}

func empRC(t *testing.T) string {
	abs, err := filepath.Abs("testdata/slt/data/emp.csv")
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("CREATE EXTERNAL TABLE emp (id INT, name VARCHAR, dept VARCHAR, salary DECIMAL(10,2), hired DATE, manager INT) STORED AS CSV WITH HEADER ROW LOCATION '%s';\n", abs)
}

func TestShellMultiLineQueryAndHistory(t *testing.T) {
	dir := t.TempDir()
	hist := filepath.Join(dir, "history")
	tm, _ := startTerm(t, "", "SLUICE_HISTORY="+hist)
	tm.expect(`\.help`, 10*time.Second) // the banner says how to get help
	tm.expect(`sluice> `, 5*time.Second)
	tm.send("SELECT 40 +\r")
	tm.expect(`\.\.\.> `, 5*time.Second)
	tm.send("2 AS answer;\r")
	tm.expect(`│\s+42 │`, 10*time.Second)
	tm.expect(`1 row`, 5*time.Second)
	tm.expect(`sluice> `, 5*time.Second)
	// Up recalls the statement, both lines, and Enter runs it again.
	tm.send("\x1b[A\r")
	tm.expect(`│\s+42 │`, 10*time.Second)
	tm.expect(`sluice> `, 5*time.Second)
	tm.send(".quit\r")
	if err := waitExit(tm, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(hist)
	if err != nil {
		t.Fatalf("history not written: %v", err)
	}
	if !strings.Contains(string(b), "SELECT 40 +\uE00A2 AS answer;\n") {
		t.Errorf("history %q lacks the statement as one entry with its line break", b)
	}
}

// TestShellErrorPositionCountsFromTheStatement: after other input, a
// mistake in a statement is placed by the statement's own lines.
func TestShellErrorPositionCountsFromTheStatement(t *testing.T) {
	tm, _ := startTerm(t, "")
	tm.expect(`sluice> `, 10*time.Second)
	tm.send("SELECT 1;\r")
	tm.expect(`1 row`, 10*time.Second)
	tm.send("SELECT 2;\r")
	tm.expect(`1 row`, 10*time.Second)
	tm.send("SELECT\r")
	tm.expect(`\.\.\.> `, 5*time.Second)
	tm.send("  nope;\r")
	tm.expect(`at line 2, column 3`, 10*time.Second)
	tm.send(".quit\r")
	if err := waitExit(tm, 10*time.Second); err != nil {
		t.Fatal(err)
	}
}

func waitExit(tm *term, timeout time.Duration) error {
	ch := make(chan error, 1)
	go func() { ch <- tm.cmd.Wait() }()
	select {
	case err := <-ch:
		return err
	case <-time.After(timeout):
		return fmt.Errorf("sluice did not exit within %v", timeout)
	}
}

func TestShellTabCompletion(t *testing.T) {
	tm, _ := startTerm(t, empRC(t), "SLUICE_HISTORY=")
	tm.expect(`sluice> `, 10*time.Second)
	// "sala" completes to the column salary, "em" to the table emp.
	tm.send("SELECT max(sala\t) FROM em\t;\r")
	tm.expect(`│\s+120\.50 │`, 10*time.Second)
	tm.expect(`sluice> `, 5*time.Second) // keys sent before the prompt may be read before it
	tm.send("\x04")                      // Ctrl-D exits
	if err := waitExit(tm, 10*time.Second); err != nil {
		t.Fatal(err)
	}
}

func TestShellCtrlCCancelsQuery(t *testing.T) {
	tm, _ := startTerm(t, empRC(t), "SLUICE_HISTORY=")
	tm.expect(`sluice> `, 10*time.Second)
	// Fourteen-way cross product of a 6-row table: effectively endless.
	var from []string
	for i := 0; i < 14; i++ {
		from = append(from, fmt.Sprintf("emp e%d", i))
	}
	tm.send("SELECT count(*) FROM " + strings.Join(from, ", ") + ";\r")
	// After a second the running query shows a progress line.
	tm.expect(`\[\d+\.\ds\] stages \d+/\d+, tasks running \d+`, 10*time.Second)
	tm.send("\x03")
	tm.expect(`query cancelled`, 10*time.Second)
	tm.expect(`sluice> `, 5*time.Second)
	tm.send("SELECT 7 AS seven;\r")
	tm.expect(`│\s+7 │`, 10*time.Second)
	// Ctrl-C at the prompt drops the pending statement.
	tm.send("SELECT 1 +\r")
	tm.expect(`\.\.\.> `, 5*time.Second)
	tm.send("\x03")
	tm.expect(`sluice> `, 5*time.Second)
	tm.send("SELECT 8 AS eight;\r")
	tm.expect(`│\s+8 │`, 10*time.Second)
}

// tpchSF1 returns the TPC-H SF 1 data shared by the test suites, generating
// it once into the git-ignored .cache folder.
func tpchSF1(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("needs TPC-H SF 1")
	}
	dir, _ := filepath.Abs(".cache/tpch-sf1")
	if _, err := tpch.EnsureCached(context.Background(), 1, dir, nil, nil); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestShellStreamsPipelinedRows(t *testing.T) {
	dir := tpchSF1(t)
	rc := fmt.Sprintf("CREATE EXTERNAL TABLE lineitem STORED AS PARQUET LOCATION '%s';\n", filepath.Join(dir, "lineitem"))
	tm, _ := startTerm(t, rc, "SLUICE_HISTORY=")
	tm.expect(`sluice> `, 20*time.Second)
	// Six million rows: the table shows the first rows (widths pinned from
	// the first batch) long before the last one is counted in the footer.
	tm.send("SELECT l_orderkey, l_comment FROM lineitem;\r")
	tm.expect(`│ l_orderkey │`, 20*time.Second)
	tm.expect(`│\s+\d+ │`, 20*time.Second)
	tm.mu.Lock()
	early := tm.out.String()
	tm.mu.Unlock()
	if strings.Contains(early, "6001215 rows") {
		t.Fatal("the first rows appeared only after the query had finished")
	}
	tm.expect(`6001215 rows \(40 shown\)`, 60*time.Second)
}

// TestShellPsqlQuitAndCtrlDRunsPending: \q and quit exit at the prompt, and
// Ctrl-D on a continuation line runs the pending statement before exiting
// instead of dropping it.
func TestShellPsqlQuitAndCtrlDRunsPending(t *testing.T) {
	for _, quit := range []string{`\q`, "quit", "exit"} {
		tm, _ := startTerm(t, "", "SLUICE_HISTORY=")
		tm.expect(`sluice> `, 10*time.Second)
		tm.send(quit + "\r")
		if err := waitExit(tm, 10*time.Second); err != nil {
			t.Fatalf("%s: %v", quit, err)
		}
	}
	tm, _ := startTerm(t, "", "SLUICE_HISTORY=")
	tm.expect(`sluice> `, 10*time.Second)
	tm.send("SELECT 6 * 7 AS pending\r")
	tm.expect(`\.\.\.> `, 5*time.Second)
	tm.send("\x04")
	tm.expect(`│\s+42 │`, 10*time.Second)
	if err := waitExit(tm, 10*time.Second); err != nil {
		t.Fatal(err)
	}
}

// TestShellWideTableFits80Columns: on an 80-column terminal a 16-column
// result hides its middle columns instead of wrapping, and says so.
func TestShellWideTableFits80Columns(t *testing.T) {
	tm, _ := startTerm(t, "", "SLUICE_HISTORY=")
	if err := pty.Setsize(tm.f, &pty.Winsize{Rows: 50, Cols: 80}); err != nil {
		t.Fatal(err)
	}
	tm.expect(`sluice> `, 10*time.Second)
	var cols []string
	for i := range 16 {
		cols = append(cols, fmt.Sprintf("'value %02d' AS column_%02d", i, i))
	}
	tm.send("SELECT " + strings.Join(cols, ", ") + ";\r")
	out := tm.expect(`1 row, 16 columns \(\d+ shown\)`, 10*time.Second)
	drawn := 0
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimRight(line, "\r")
		if !strings.ContainsAny(line, "│┌└├") {
			continue
		}
		drawn++
		if w := runewidth.StringWidth(line); w > 80 {
			t.Errorf("a table line of %d cells on an 80-column terminal: %q", w, line)
		}
	}
	if drawn == 0 || !strings.Contains(out, "column_00") || !strings.Contains(out, "column_15") {
		t.Errorf("want the first and last columns drawn:\n%s", out)
	}
	tm.expect(`sluice> `, 5*time.Second)
	tm.send(".quit\r")
	if err := waitExit(tm, 10*time.Second); err != nil {
		t.Fatal(err)
	}
}

// TestShellBracketedPaste: pasted SQL keeps its tabs and line breaks (a
// tab does not complete, a newline does not submit) and runs on Enter.
func TestShellBracketedPaste(t *testing.T) {
	tm, _ := startTerm(t, ".format csv\n", "SLUICE_HISTORY=")
	tm.expect(`\x1b\[\?2004h`, 10*time.Second) // the shell asks for marked pastes
	tm.expect(`sluice> `, 10*time.Second)
	tm.send("\x1b[200~SELECT\t'a\tb' AS x,\n  count(*) AS n\nFROM\t(VALUES (1), (2)) t(v);\x1b[201~")
	tm.send("\r")
	out := tm.expect(`a\tb,2`, 10*time.Second)
	if strings.Contains(out, "Error") {
		t.Errorf("the paste failed:\n%s", out)
	}
	tm.expect(`sluice> `, 5*time.Second)
	tm.send(".quit\r")
	if err := waitExit(tm, 10*time.Second); err != nil {
		t.Fatal(err)
	}
}

// TestShellCountsRowsPastMaxRows: once the table has drawn .maxrows rows,
// a line on stderr keeps counting the rows that still arrive, and Ctrl-C
// stops the query and closes the table.
func TestShellCountsRowsPastMaxRows(t *testing.T) {
	tm, _ := startTerm(t, "", "SLUICE_HISTORY=")
	tm.expect(`sluice> `, 10*time.Second)
	tm.send("SELECT x FROM generate_series(1, 2000000000) AS g(x);\r")
	tm.expect(`\d+ rows so far \(40 shown\); Ctrl-C stops`, 15*time.Second)
	tm.send("\x03")
	tm.expect(`query cancelled`, 10*time.Second)
	tm.expect(`sluice> `, 5*time.Second)
	tm.send(".quit\r")
	if err := waitExit(tm, 10*time.Second); err != nil {
		t.Fatal(err)
	}
}

// TestShellNewUserHabits drives the shell through what a new user tries:
// a bare NULL in CSV and JSON, a division by zero in every mode (only the
// clean message, no cluster detail), EXPLAIN as plain text, .mode csv as a
// format, and .timer alone showing its state.
func TestShellNewUserHabits(t *testing.T) {
	tm, _ := startTerm(t, "", "SLUICE_HISTORY=")
	tm.expect(`sluice> `, 10*time.Second)
	step := func(input, want string) string {
		t.Helper()
		tm.send(input + "\r")
		out := ""
		if want != "" {
			out = tm.expect(want, 10*time.Second)
		}
		return out + tm.expect(`sluice> `, 5*time.Second)
	}
	step(".mode csv", `output format csv`)
	step("SELECT NULL AS a, 1 AS b;", `a,b\r?\n,1`)
	step(".format json", "")
	step("SELECT NULL AS a;", `\{"a":null\}`)
	step(".format table", "")
	for _, mode := range []string{"blocking", "pipelined", "auto"} {
		step(".mode "+mode, "")
		out := step("SELECT 1/0;", `Error: division by zero in \(1 / 0\)`)
		for _, internal := range []string{"stage", "task", "executor", "retried", "rpc error"} {
			if strings.Contains(out, internal) {
				t.Errorf("%s: the error shows %q:\n%s", mode, internal, out)
			}
		}
	}
	out := step("EXPLAIN SELECT 1;", `physical plan:`)
	if strings.Contains(out, `\n`) {
		t.Errorf("EXPLAIN shows literal \\n:\n%s", out)
	}
	step(".timer", `off`)
	tm.send(".quit\r")
	if err := waitExit(tm, 10*time.Second); err != nil {
		t.Fatal(err)
	}
}
