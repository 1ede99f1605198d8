package adbc_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	_ "github.com/apache/arrow-adbc/go/adbc/sqldriver/flightsql"
	"github.com/apache/arrow-go/v18/arrow/decimal128"

	"sluice/repl"
	"sluice/tpch"
)

// TestTPCHThroughADBC is issue 21's acceptance test: a Go program using
// only database/sql and the ADBC Flight SQL driver connects to `sluice
// serve` (a process of its own, started as a user would start it, with a
// token), registers and lists the TPC-H SF 1 tables and runs the 22
// queries in both modes, comparing each answer with the official one.
func TestTPCHThroughADBC(t *testing.T) {
	if testing.Short() {
		t.Skip("TPC-H SF 1 skipped in -short mode")
	}
	ctx := context.Background()
	data, err := filepath.Abs("../../.cache/tpch-sf1")
	if err != nil {
		t.Fatal(err)
	}
	// Other packages' tests generate the same folder; when one of them
	// moves its copy into place first, this generation fails to, and the
	// second look finds the data.
	if _, err := tpch.EnsureCached(ctx, 1, data, nil, nil); err != nil {
		if _, err := tpch.EnsureCached(ctx, 1, data, nil, nil); err != nil {
			t.Fatalf("generating TPC-H SF 1: %v", err)
		}
	}
	addr, token := startServe(t, data)
	dsn := fmt.Sprintf("uri=grpc://%s;adbc.flight.sql.authorization_header=Bearer %s;adbc.flight.sql.rpc.with_cookie_middleware=true", addr, token)
	db, err := sql.Open("flightsql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// One connection, one sluice session: SET carries over to the
	// statements after it.
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	// A wrong token is refused.
	bad, err := sql.Open("flightsql", strings.Replace(dsn, token, "wrong", 1))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bad.QueryContext(ctx, "SELECT 1"); err == nil || !strings.Contains(strings.ToLower(err.Error()), "unauthenticated") {
		t.Errorf("a wrong token: %v, want Unauthenticated", err)
	}
	bad.Close()

	for _, name := range tpch.TableNames {
		if _, err := conn.ExecContext(ctx, fmt.Sprintf("CREATE EXTERNAL TABLE %s STORED AS PARQUET LOCATION '%s'", name, filepath.Join(data, name))); err != nil {
			t.Fatal(err)
		}
	}
	_, tables, err := query(ctx, conn, "SHOW TABLES")
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, r := range tables {
		listed = append(listed, r[0])
	}
	slices.Sort(listed)
	want := slices.Clone(tpch.TableNames)
	slices.Sort(want)
	if !slices.Equal(listed, want) {
		t.Fatalf("SHOW TABLES lists %q, want %q", listed, want)
	}
	// Bad SQL fails the statement, not the connection.
	if _, err := conn.QueryContext(ctx, "SELECT nope FROM lineitem"); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("a bad column: %v, want an error naming it", err)
	}
	for _, mode := range []string{"pipelined", "blocking"} {
		t.Run(mode, func(t *testing.T) {
			if _, err := conn.ExecContext(ctx, "SET execution.mode = '"+mode+"'"); err != nil {
				t.Fatal(err)
			}
			_, rows, err := query(ctx, conn, "SHOW execution.mode")
			if err != nil {
				t.Fatal(err)
			}
			if len(rows) != 1 || rows[0][len(rows[0])-1] != mode {
				t.Fatalf("SHOW execution.mode: %q, want %s", rows, mode)
			}
			start := time.Now()
			for n := 1; n <= 22; n++ {
				checkTPCH(t, ctx, conn, n)
			}
			t.Logf("22 queries in %v", time.Since(start))
		})
	}
}

// startServe starts `sluice serve` on a free loopback port with a token
// file, and returns its Flight SQL address and the token once it answers.
func startServe(t *testing.T, data string) (addr, token string) {
	t.Helper()
	bin := os.Getenv("SLUICE_BIN")
	if bin == "" {
		bin = filepath.Join(t.TempDir(), "sluice")
		build := exec.Command("go", "build", "-o", bin, ".")
		build.Dir = "../.."
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("go build: %v\n%s", err, out)
		}
	}
	secret := make([]byte, 16)
	if _, err := rand.Read(secret); err != nil {
		t.Fatal(err)
	}
	token = hex.EncodeToString(secret)
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr = l.Addr().String()
	l.Close()
	cmd := exec.Command(bin, "serve", "--flight-sql-bind", addr, "--auth-token-file", tokenFile,
		"--executors", "2", "--allowed-locations", data)
	var stderr strings.Builder
	cmd.Stdout, cmd.Stderr = os.Stderr, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case err := <-done:
			t.Fatalf("sluice serve exited: %v\n%s", err, stderr.String())
		default:
		}
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return addr, token
		}
		if time.Now().After(deadline) {
			t.Fatalf("sluice serve did not listen on %s within a minute\n%s", addr, stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// query runs q and returns its column names and rows as text.
func query(ctx context.Context, conn *sql.Conn, q string) (header []string, rows [][]string, err error) {
	rs, err := conn.QueryContext(ctx, q)
	if err != nil {
		return nil, nil, err
	}
	defer rs.Close()
	types, err := rs.ColumnTypes()
	if err != nil {
		return nil, nil, err
	}
	for _, ct := range types {
		header = append(header, ct.Name())
	}
	vals := make([]any, len(types))
	ptrs := make([]any, len(types))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rs.Next() {
		if err := rs.Scan(ptrs...); err != nil {
			return nil, nil, err
		}
		row := make([]string, len(vals))
		for i, v := range vals {
			row[i] = text(v, types[i])
		}
		rows = append(rows, row)
	}
	return header, rows, rs.Err()
}

// text renders a value as the answers write it.
func text(v any, ct *sql.ColumnType) string {
	switch v := v.(type) {
	case nil:
		return ""
	case decimal128.Num:
		_, scale, _ := ct.DecimalSize()
		return v.ToString(int32(scale))
	case time.Time:
		return v.Format("2006-01-02")
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case []byte:
		return string(v)
	}
	return fmt.Sprint(v)
}

// checkTPCH runs query n's script statement by statement and compares the
// last result with the official answer.
func checkTPCH(t *testing.T, ctx context.Context, conn *sql.Conn, n int) {
	t.Helper()
	script, err := os.ReadFile(fmt.Sprintf("../../testdata/tpch/q%d.sql", n))
	if err != nil {
		t.Fatal(err)
	}
	sp := repl.NewSplitter()
	pieces, err := sp.Feed(string(script))
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := sp.Pending(); ok {
		pieces = append(pieces, p)
	}
	var header []string
	var rows [][]string
	for _, p := range pieces {
		h, r, err := query(ctx, conn, p.SQL)
		if err != nil {
			t.Errorf("q%d line %d: %v", n, p.Line, err)
			return
		}
		if len(h) > 0 {
			header, rows = h, r
		}
	}
	ans, err := os.Open(fmt.Sprintf("../../testdata/tpch/answers-sf1/q%d.out", n))
	if err != nil {
		t.Fatal(err)
	}
	defer ans.Close()
	res, err := tpch.CompareAnswer(n, ans, header, rows)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Pass {
		t.Errorf("q%d: %s", n, res.Detail)
	}
}
