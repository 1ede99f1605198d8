package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	afsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"sluice/rpc"
)

// sluiceBin builds the sluice binary once per test run.
var sluiceBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "sluice-cli")
	if err != nil {
		panic(err)
	}
	sluiceBin = filepath.Join(dir, "sluice")
	out, err := exec.Command("go", "build", "-o", sluiceBin, ".").CombinedOutput()
	if err != nil {
		panic("building sluice: " + err.Error() + "\n" + string(out))
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// runCLI runs sluice with args and stdin; HOME points at an empty folder so
// no ~/.sluicerc or history interferes.
func runCLI(t *testing.T, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(sluiceBin, args...)
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "SLUICE_HISTORY=")
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	code = 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return o.String(), e.String(), code
}

func TestScriptFromStdin(t *testing.T) {
	out, errOut, code := runCLI(t, "SELECT 1 AS a;\nSELECT 'x' AS b; SELECT 2 AS c\n")
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	if want := "a\n1\nb\nx\nc\n2\n"; out != want {
		t.Errorf("stdout = %q, want %q", out, want)
	}
}

func TestCommandAndFileOrder(t *testing.T) {
	dir := t.TempDir()
	f1 := filepath.Join(dir, "one.sql")
	os.WriteFile(f1, []byte("CREATE VIEW v AS SELECT 41 + 1 AS answer;\n"), 0o644)
	f2 := filepath.Join(dir, "two.sql")
	os.WriteFile(f2, []byte("SELECT answer * 2 AS doubled FROM w;"), 0o644)
	out, errOut, code := runCLI(t, "", "-c", "SELECT 0 AS first", "-f", f1, "-c", "CREATE VIEW w AS SELECT answer FROM v", "-f", f2)
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	if want := "first\n0\ndoubled\n84\n"; out != want {
		t.Errorf("stdout = %q, want %q (DDL prints nothing in csv)", out, want)
	}
}

func TestExitCodesAndErrors(t *testing.T) {
	out, errOut, code := runCLI(t, "SELECT 1 AS a;\nSELEC 2;\nSELECT 3 AS c;\n")
	if code != 1 {
		t.Errorf("exit code %d, want 1", code)
	}
	if out != "a\n1\n" {
		t.Errorf("the script must stop at the error: stdout %q", out)
	}
	for _, want := range []string{"Error:", "line 2", "SELEC 2", "^"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr %q lacks %q", errOut, want)
		}
	}
	out, _, code = runCLI(t, "SELECT 1 AS a;\nSELECT nope FROM nowhere;\nSELECT 3 AS c;\n", "--continue-on-error")
	if code != 1 || out != "a\n1\nc\n3\n" {
		t.Errorf("--continue-on-error: exit %d stdout %q, want 1 and both results", code, out)
	}
	_, errOut, code = runCLI(t, "", "--format", "xml", "-c", "SELECT 1")
	if code != 2 || !strings.Contains(errOut, "csv") {
		t.Errorf("bad --format: exit %d stderr %q", code, errOut)
	}
}

func TestEcho(t *testing.T) {
	out, _, code := runCLI(t, "SELECT 1 AS a;", "--echo")
	if code != 0 || out != "SELECT 1 AS a;\na\n1\n" {
		t.Errorf("--echo: exit %d stdout %q", code, out)
	}
}

// TestFormatsGolden runs one query in every format; the golden files are
// under testdata/cli (REWRITE=1 regenerates them).
func TestFormatsGolden(t *testing.T) {
	query := "SELECT * FROM (VALUES (1, 'apple', 1.50), (2, NULL, 20.25), (3, 'a much longer fruit name than the others', NULL)) AS t(id, name, price) ORDER BY id"
	for _, f := range []string{"table", "csv", "tsv", "json", "ndjson", "markdown", "line"} {
		t.Run(f, func(t *testing.T) {
			out, errOut, code := runCLI(t, "", "--format", f, "-c", query)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			golden := filepath.Join("testdata", "cli", f+".golden")
			if os.Getenv("REWRITE") != "" {
				os.MkdirAll(filepath.Dir(golden), 0o755)
				os.WriteFile(golden, []byte(out), 0o644)
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (REWRITE=1 creates it)", err)
			}
			if out != string(want) {
				t.Errorf("--format %s:\n%s\n--- want\n%s", f, out, want)
			}
		})
	}
}

func TestDotCommandsInScripts(t *testing.T) {
	script := ".format csv\nSELECT 1 AS a;\n.nope\n"
	out, errOut, code := runCLI(t, script, "--format", "table")
	if code != 1 || out != "a\n1\n" {
		t.Errorf("exit %d stdout %q", code, out)
	}
	if !strings.Contains(errOut, "unknown command .nope") || !strings.Contains(errOut, ".help") {
		t.Errorf("unknown dot command should list the commands: %q", errOut)
	}
}

func TestOverlongValueIsMarked(t *testing.T) {
	// One batch; .maxwidth caps the pinned width at 8 cells.
	script := ".maxwidth 8\nSELECT s FROM (VALUES ('much longer than eight'), ('short')) AS t(s) ORDER BY s;\n"
	out, errOut, code := runCLI(t, script, "--format", "table")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "much lo…") || strings.Contains(out, "much longer than eight") {
		t.Errorf("an over-long value must be cut with a visible …:\n%s", out)
	}
}

func TestModeCompare(t *testing.T) {
	abs, _ := filepath.Abs("testdata/slt/data/emp.csv")
	script := fmt.Sprintf(`CREATE EXTERNAL TABLE emp (id INT, name VARCHAR, dept VARCHAR, salary DECIMAL(10,2), hired DATE, manager INT) STORED AS CSV WITH HEADER ROW LOCATION '%s';
.mode compare
SELECT dept, count(*) AS n FROM emp GROUP BY dept ORDER BY dept NULLS LAST;
.mode compare off
.mode
`, abs)
	out, errOut, code := runCLI(t, script)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if want := "dept,n\neng,2\nhr,1\nsales,2\n,1\n"; out != want {
		t.Errorf("stdout = %q, want the pipelined result %q", out, want)
	}
	for _, want := range []string{"blocking", "pipelined", "time to first row", "total time", "rows", "stages", "tasks", "results agree (in order)", "auto would run it "} {
		if !strings.Contains(errOut, want) {
			t.Errorf("comparison lacks %q:\n%s", want, errOut)
		}
	}
	if !strings.HasSuffix(errOut, "pipelined\n") {
		t.Errorf(".mode after compare off should print the mode: %q", errOut)
	}
}

// TestModeAuto: --mode auto starts the shell in auto mode, .mode switches
// to it, and EXPLAIN says which mode auto chooses and why.
func TestModeAuto(t *testing.T) {
	abs, _ := filepath.Abs("testdata/slt/data/emp.csv")
	script := fmt.Sprintf(`CREATE EXTERNAL TABLE emp (id INT, name VARCHAR, dept VARCHAR, salary DECIMAL(10,2), hired DATE, manager INT) STORED AS CSV WITH HEADER ROW LOCATION '%s';
.mode
SELECT count(*) AS n FROM emp;
EXPLAIN SELECT dept, count(*) AS n FROM emp GROUP BY dept;
.mode blocking
.mode
.mode auto
.mode
`, abs)
	out, errOut, code := runCLI(t, script, "--mode", "auto")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.HasPrefix(out, "n\n6\n") || !strings.Contains(out, "auto: pipelined (needs ") {
		t.Errorf("stdout lacks the count or the EXPLAIN's auto line:\n%s", out)
	}
	if errOut != "auto\nblocking\nauto\n" {
		t.Errorf(".mode printed %q", errOut)
	}
}

// TestExplainIsPlainText prints EXPLAIN's plans whole, as titled plain
// text, in the table format (not cells cut to 40 characters with literal
// \n), and as those lines, one row each, in CSV.
func TestExplainIsPlainText(t *testing.T) {
	q := "EXPLAIN SELECT a, count(*) AS n FROM (VALUES (1), (2), (1)) AS t(a) WHERE a > 0 GROUP BY a ORDER BY a;\n"
	out, errOut, code := runCLI(t, "-- a leading comment\n"+q, "--format", "table")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"logical plan:\n", "physical plan:\n", "distributed plan:\n", "\n  "} {
		if !strings.Contains(out, want) {
			t.Errorf("table EXPLAIN lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, `\n`) || strings.Contains(out, "…") || strings.Contains(out, "│") {
		t.Errorf("table EXPLAIN should be plain text lines, not a cut table:\n%s", out)
	}
	out, errOut, code = runCLI(t, q, "--format", "csv")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.HasPrefix(out, "plan\nlogical plan:\nSort: ") || !strings.Contains(out, "\nphysical plan:\n") {
		t.Errorf("CSV EXPLAIN should be its plain text lines, one row each:\n%s", out)
	}
}

// TestExplainAnalyzeIsPlainText prints EXPLAIN ANALYZE as EXPLAIN: titled
// plain text in the table format, every operator line with its metrics,
// on the cluster and in process; CSV keeps the rows.
func TestExplainAnalyzeIsPlainText(t *testing.T) {
	q := "EXPLAIN ANALYZE SELECT a, count(*) AS n FROM (VALUES (1), (2), (1)) AS t(a) WHERE a > 0 GROUP BY a ORDER BY a;\n"
	for _, mode := range [][]string{{"--mode", "pipelined"}, {"--mode", "blocking"}, {"--in-process"}} {
		out, errOut, code := runCLI(t, q, append([]string{"--format", "table"}, mode...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", mode, code, errOut)
		}
		plan, summary, ok := strings.Cut(out, "\n\nsummary:\n")
		if !strings.HasPrefix(plan, "analyzed plan:\n") || !ok || !strings.HasPrefix(summary, "rows=2, time=") {
			t.Fatalf("%v: table EXPLAIN ANALYZE is not an analyzed plan and a summary:\n%s", mode, out)
		}
		for _, l := range strings.Split(plan, "\n")[1:] {
			if !strings.Contains(l, " metrics=[") {
				t.Errorf("%v: line without metrics: %q", mode, l)
			}
		}
		if strings.Contains(out, `\n`) || strings.Contains(out, "…") || strings.Contains(out, "│") {
			t.Errorf("%v: table EXPLAIN ANALYZE should be plain text lines, not a cut table:\n%s", mode, out)
		}
	}
	out, errOut, code := runCLI(t, q, "--format", "csv")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.HasPrefix(out, "plan\nanalyzed plan:\n\"Stage 1: ") || !strings.Contains(out, "\nsummary:\n\"rows=2, time=") {
		t.Errorf("CSV EXPLAIN ANALYZE should be its plain text lines, one row each:\n%s", out)
	}
}

// TestPsqlHabits takes psql's \x, \timing and \q, a bare quit, and
// sqlite3's .mode csv, in a script as at the prompt.
func TestPsqlHabits(t *testing.T) {
	out, errOut, code := runCLI(t, "\\x\nSELECT 1 AS a, 2 AS b;\n\\x off\n.mode csv\nSELECT 3 AS c;\n\\timing on\n\\q\nSELECT 4 AS never;\n", "--format", "table")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if want := "a = 1\nb = 2\n\nc\n3\n"; !strings.HasPrefix(out, "a = 1\nb = 2\n") || !strings.Contains(out, "c\n3\n") || strings.Contains(out, "never") {
		t.Errorf("stdout = %q, want expanded a and b, then csv c and nothing after \\q (%q)", out, want)
	}
	for _, want := range []string{"Expanded display is on.", "Expanded display is off.", "output format csv", "Timing is on."} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	for _, quit := range []string{"quit", "exit;", "EXIT"} {
		out, errOut, code := runCLI(t, "SELECT 1 AS a;\n"+quit+"\nSELECT 2 AS never;\n")
		if code != 0 || strings.Contains(out, "never") {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit 0 before the second query", quit, code, out, errOut)
		}
	}
	// \d, \dt, \o and \i: psql's describe, list, output and include.
	dir := t.TempDir()
	script := filepath.Join(dir, "inc.sql")
	if err := os.WriteFile(script, []byte("SELECT 'included' AS inc;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	outFile := filepath.Join(dir, "out.csv")
	out, errOut, code = runCLI(t, "CREATE VIEW v AS SELECT 1 AS one;\n\\d\n\\dt\n\\d v\n\\o "+outFile+"\nSELECT 7 AS seven;\n\\o\n\\i "+script+"\n", "--format", "csv")
	if code != 0 {
		t.Fatalf("\\d, \\dt, \\o, \\i: exit %d: %s", code, errOut)
	}
	if strings.Count(out, "v,view") != 2 || !strings.Contains(out, "one,BIGINT,NO") || !strings.Contains(out, "inc\nincluded") || strings.Contains(out, "seven") {
		t.Errorf("\\d, \\dt, \\o, \\i: stdout %q", out)
	}
	if b, err := os.ReadFile(outFile); err != nil || string(b) != "seven\n7\n" {
		t.Errorf("\\o file holds %q (%v), want the one query's result", b, err)
	}
	_, errOut, code = runCLI(t, "\\dx\n")
	if code == 0 || !strings.Contains(errOut, `unknown command \dx`) || !strings.Contains(errOut, `\timing`) {
		t.Errorf("an unknown backslash command: exit %d, stderr %q; want an error naming it", code, errOut)
	}
}

// TestHelpAndVersion: --help goes to stdout, exits 0 and lists the
// subcommands, each of which takes --help too; --version names the build.
func TestHelpAndVersion(t *testing.T) {
	out, errOut, code := runCLI(t, "", "--help")
	if code != 0 || errOut != "" {
		t.Fatalf("--help: exit %d, stderr %q", code, errOut)
	}
	for _, want := range []string{"sluice scheduler", "sluice executor", "sluice tpch gen", "sluice bench", "--command", "--format"} {
		if !strings.Contains(out, want) {
			t.Errorf("--help lacks %q:\n%s", want, out)
		}
	}
	for _, sub := range []string{"scheduler", "executor", "bench", "tpch"} {
		out, errOut, code := runCLI(t, "", sub, "--help")
		if code != 0 || errOut != "" || !strings.Contains(strings.ToLower(out), "usage: sluice "+sub) {
			t.Errorf("%s --help: exit %d, stdout %q, stderr %q", sub, code, out, errOut)
		}
	}
	out, _, code = runCLI(t, "", "--version")
	if code != 0 || !strings.HasPrefix(out, "sluice ") || !strings.Contains(out, "go1.") {
		t.Errorf("--version: exit %d, %q", code, out)
	}
}

// TestReadReportsAnErrorOnce: a failing statement in a .read file is
// reported once, at its place in that file, and fails the script.
func TestReadReportsAnErrorOnce(t *testing.T) {
	f := filepath.Join(t.TempDir(), "bad.sql")
	if err := os.WriteFile(f, []byte("SELECT 1 AS fine;\nSELECT nope;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := runCLI(t, ".read "+f+"\nSELECT 2 AS never;\n")
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	if n := strings.Count(errOut, `column "nope" does not exist`); n != 1 || !strings.Contains(errOut, f+" line 2, column 8") {
		t.Errorf("stderr reports the error %d times (want once, at %s line 2):\n%s", n, f, errOut)
	}
}

// TestMaxWidthZeroAndTimerState: .maxwidth 0 draws values whole, and
// .timer and .fit with no argument show their state.
func TestMaxWidthZeroAndTimerState(t *testing.T) {
	long := strings.Repeat("x", 70)
	out, errOut, code := runCLI(t, ".maxwidth 0\n.maxwidth\nSELECT '"+long+"' AS s;\n.timer\n.fit off\n.fit\n", "--format", "table")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, long) {
		t.Errorf(".maxwidth 0 cut the value:\n%s", out)
	}
	if !strings.Contains(errOut, "0 (no limit)\n") || !strings.Contains(errOut, "off\n") {
		t.Errorf("stderr %q: want .maxwidth, .timer and .fit to show their state", errOut)
	}
}

// TestErrorDetailOnDemand: an error of the query itself shows only what
// went wrong; --verbose adds where (stage, task, executor), and so does
// .explain after the failure.
func TestErrorDetailOnDemand(t *testing.T) {
	_, errOut, _ := runCLI(t, "", "--mode", "blocking", "-c", "SELECT 1/0")
	if !strings.Contains(errOut, "Error: division by zero in (1 / 0)") || strings.Contains(errOut, "stage") {
		t.Errorf("plain: %q", errOut)
	}
	_, errOut, _ = runCLI(t, "", "--verbose", "--mode", "blocking", "-c", "SELECT 1/0")
	if !strings.Contains(errOut, "Detail: stage 1 task") {
		t.Errorf("--verbose: %q, want the stage and task", errOut)
	}
	out, _, _ := runCLI(t, "SELECT 1/0;\n.explain\n", "--continue-on-error")
	if !strings.Contains(out, "the last query failed: stage 1 task") {
		t.Errorf(".explain after the failure: %q", out)
	}
}

// TestDataFileArguments checks that sluice FILE... registers each Parquet
// or CSV file as a table named after it, with -c, piped scripts and every
// engine, and that other arguments are still refused.
func TestDataFileArguments(t *testing.T) {
	data, err := filepath.Abs("testdata/slt/data")
	if err != nil {
		t.Fatal(err)
	}
	trips, pipe := filepath.Join(data, "files_trips.parquet"), filepath.Join(data, "files_pipe.csv")
	for _, engine := range [][]string{{"--in-process"}, {"--mode", "blocking"}, {"--mode", "pipelined"}} {
		args := append(append([]string{}, engine...), trips, pipe, "-c", "SELECT count(*) AS n, sum(q.qty) AS q FROM files_trips, (SELECT sum(qty) AS qty FROM files_pipe) q")
		out, errOut, code := runCLI(t, "", args...)
		if code != 0 {
			t.Fatalf("%v: exit %d, stderr %q", engine, code, errOut)
		}
		if want := "n,q\n5,50\n"; out != want {
			t.Errorf("%v: stdout %q, want %q", engine, out, want)
		}
		if !strings.Contains(errOut, trips+" is table files_trips.") || !strings.Contains(errOut, "is table files_pipe.") {
			t.Errorf("%v: stderr %q does not say which tables were registered", engine, errOut)
		}
	}
	out, errOut, code := runCLI(t, "SELECT city FROM files_trips WHERE id = 2;\n", "-q", "--in-process", trips)
	if code != 0 || out != "city\noslo\n" || errOut != "" {
		t.Errorf("piped: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	_, errOut, code = runCLI(t, "", "--in-process", filepath.Join(data, "files_gone.parquet"), "-c", "SELECT 1")
	if code == 0 || !strings.Contains(errOut, "files_gone.parquet: no such file") {
		t.Errorf("missing file: exit %d, stderr %q", code, errOut)
	}
	_, errOut, code = runCLI(t, "", "--in-process", "script.sql")
	if code != 2 || !strings.Contains(errOut, `unexpected argument "script.sql"`) {
		t.Errorf("a non-data argument: exit %d, stderr %q", code, errOut)
	}
}

// TestServeFlightSQL runs sluice serve with a data file and a token, and
// queries it over Flight SQL with arrow-go's client: the command wires the
// embedded cluster, the file's table and the endpoint's authentication.
func TestServeFlightSQL(t *testing.T) {
	data, err := filepath.Abs("testdata/slt/data")
	if err != nil {
		t.Fatal(err)
	}
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("serve-test-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, sluiceBin, "serve", "--flight-sql-bind", "127.0.0.1:0", "--executors", "2",
		"--auth-token-file", tokenFile, filepath.Join(data, "files_trips.parquet"))
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	}()
	addrRe := regexp.MustCompile(`msg="flight sql listening" addr=(\S+)`)
	sc := bufio.NewScanner(stderr)
	var addr string
	var log strings.Builder
	for addr == "" && sc.Scan() {
		log.WriteString(sc.Text() + "\n")
		if m := addrRe.FindStringSubmatch(sc.Text()); m != nil {
			addr = m[1]
		}
	}
	if addr == "" {
		t.Fatalf("sluice serve did not report its Flight SQL address:\n%s", log.String())
	}
	go func() {
		for sc.Scan() {
		}
	}()
	if !strings.Contains(log.String(), "files_trips.parquet is table files_trips.") {
		t.Errorf("no notice of the registered file:\n%s", log.String())
	}

	run := func(token string) ([]string, error) {
		sec := &rpc.Security{Token: token}
		c, err := afsql.NewClient(addr, nil, nil, sec.DialOptions()...)
		if err != nil {
			return nil, err
		}
		defer c.Close()
		// A managed table goes to serve's temporary warehouse, which its
		// restricted locations allow.
		if _, err := c.ExecuteUpdate(ctx, "CREATE OR REPLACE TABLE trips_copy AS SELECT * FROM files_trips"); err != nil {
			return nil, err
		}
		info, err := c.Execute(ctx, "SELECT city, count(*) FROM trips_copy GROUP BY city ORDER BY city NULLS LAST")
		if err != nil {
			return nil, err
		}
		rdr, err := c.DoGet(ctx, info.Endpoint[0].Ticket)
		if err != nil {
			return nil, err
		}
		defer rdr.Release()
		var rows []string
		for rdr.Next() {
			b := rdr.RecordBatch()
			for r := 0; r < int(b.NumRows()); r++ {
				city := "NULL"
				if !b.Column(0).IsNull(r) {
					city = b.Column(0).ValueStr(r)
				}
				rows = append(rows, city+" "+b.Column(1).ValueStr(r))
			}
		}
		return rows, rdr.Err()
	}
	rows, err := run("serve-test-token")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"oslo 1", "paris 2", "rome 1", "NULL 1"}; !slices.Equal(rows, want) {
		t.Errorf("rows %q, want %q", rows, want)
	}
	if _, err := run("wrong"); status.Code(err) != codes.Unauthenticated {
		t.Errorf("a wrong token: %v", err)
	}
}
