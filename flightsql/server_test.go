package flightsql

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	afsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"sluice/catalog"
	"sluice/cluster"
	"sluice/render"
	"sluice/rpc"
)

const testToken = "flight-sql-test-token"

// startServer starts an embedded cluster (as sluice serve does) with a
// Flight SQL endpoint requiring testToken.
func startServer(t *testing.T) *Server {
	t.Helper()
	cat := catalog.New()
	emb, err := cluster.StartEmbedded(context.Background(), cluster.EmbeddedConfig{Executors: 2, Catalog: cat})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(emb.Close)
	srv, err := Start(Config{
		Bind: "127.0.0.1:0", SchedulerAddr: emb.SchedulerAddr(), SchedulerSecurity: emb.Security(),
		Security: &rpc.Security{Token: testToken}, Catalog: cat, Version: "test",
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return srv
}

// newClient connects with the token (if given) and a cookie jar, so that
// its calls share one session.
func newClient(t *testing.T, srv *Server, token string) *afsql.Client {
	t.Helper()
	var sec *rpc.Security
	if token != "" {
		sec = &rpc.Security{Token: token}
	}
	c, err := afsql.NewClient(srv.Addr(), nil, []flight.ClientMiddleware{flight.NewClientCookieMiddleware()}, sec.DialOptions()...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// fetch reads every endpoint of info and returns the rows as text, one
// string per row with values separated by '|'.
func fetch(ctx context.Context, c *afsql.Client, info *flight.FlightInfo) ([]string, *arrow.Schema, error) {
	var rows []string
	var schema *arrow.Schema
	for _, ep := range info.Endpoint {
		rdr, err := c.DoGet(ctx, ep.Ticket)
		if err != nil {
			return nil, nil, err
		}
		schema = rdr.Schema()
		for rdr.Next() {
			b := rdr.RecordBatch()
			for r := 0; r < int(b.NumRows()); r++ {
				vals := make([]string, b.NumCols())
				for i := range vals {
					vals[i], _ = render.FormatValue(b.Column(i), r)
					if b.Column(i).IsNull(r) {
						vals[i] = "NULL"
					}
				}
				rows = append(rows, strings.Join(vals, "|"))
			}
		}
		err = rdr.Err()
		rdr.Release()
		if err != nil {
			return nil, nil, err
		}
	}
	return rows, schema, nil
}

// query executes a statement and fetches its rows.
func query(ctx context.Context, c *afsql.Client, q string) ([]string, error) {
	info, err := c.Execute(ctx, q)
	if err != nil {
		return nil, err
	}
	rows, _, err := fetch(ctx, c, info)
	return rows, err
}

func mustQuery(t *testing.T, c *afsql.Client, q string, want ...string) {
	t.Helper()
	got, err := query(context.Background(), c, q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("%s:\n got %q\nwant %q", q, got, want)
	}
}

func writeEmp(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "emp.csv")
	body := "id,name,dept,salary\n1,ann,eng,120.5\n2,bob,eng,95\n3,cid,hr,60\n4,dan,,88\n"
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestFlightSQL(t *testing.T) {
	srv := startServer(t)
	ctx := context.Background()
	c := newClient(t, srv, testToken)
	// The first call, unary, hands the client its session cookie (see
	// the sessions subtest).
	mustQuery(t, c, "SELECT 1", "1")
	emp := writeEmp(t)
	if _, err := c.ExecuteUpdate(ctx, "CREATE EXTERNAL TABLE emp STORED AS CSV WITH HEADER ROW LOCATION '"+emp+"'"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ExecuteUpdate(ctx, "CREATE VIEW eng AS SELECT id, upper(name) AS who FROM emp WHERE dept = 'eng'"); err != nil {
		t.Fatal(err)
	}

	for _, mode := range []string{"pipelined", "blocking"} {
		t.Run(mode, func(t *testing.T) {
			if _, err := c.ExecuteUpdate(ctx, "SET execution.mode = '"+mode+"'"); err != nil {
				t.Fatal(err)
			}
			mustQuery(t, c, "SHOW execution.mode", "execution.mode|"+mode)
			mustQuery(t, c, "SELECT dept, count(*), sum(salary) FROM emp GROUP BY dept ORDER BY dept",
				"eng|2|215.5", "hr|1|60", "NULL|1|88")
			mustQuery(t, c, "SELECT * FROM eng ORDER BY id", "1|ANN", "2|BOB")
			// An empty result still has its schema.
			info, err := c.Execute(ctx, "SELECT id, name FROM emp WHERE id > 10")
			if err != nil {
				t.Fatal(err)
			}
			rows, schema, err := fetch(ctx, c, info)
			if err != nil || len(rows) != 0 || schema.NumFields() != 2 || schema.Field(1).Name != "name" {
				t.Errorf("empty result: rows %q, schema %v, %v", rows, schema, err)
			}

			// An error of the query's data arrives as a gRPC error
			// carrying the message, whether at GetFlightInfo or in the
			// stream.
			_, err = query(ctx, c, "SELECT id / (id - id) FROM emp")
			if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "division by zero") {
				t.Errorf("division by zero: got %v (code %s)", err, status.Code(err))
			}
			_, err = query(ctx, c, "SELECT nope FROM emp")
			if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), `column "nope" does not exist`) {
				t.Errorf("unknown column: got %v", err)
			}
		})
	}

	t.Run("prepared", func(t *testing.T) {
		stmt, err := c.Prepare(ctx, "SELECT name FROM emp WHERE salary > ? AND name <> ? ORDER BY name")
		if err != nil {
			t.Fatal(err)
		}
		defer stmt.Close(ctx)
		bind := func(min float64, not string) {
			b := array.NewRecordBuilder(memory.DefaultAllocator, arrow.NewSchema([]arrow.Field{
				{Name: "p1", Type: arrow.PrimitiveTypes.Float64}, {Name: "p2", Type: arrow.BinaryTypes.String}}, nil))
			defer b.Release()
			b.Field(0).(*array.Float64Builder).Append(min)
			b.Field(1).(*array.StringBuilder).Append(not)
			rec := b.NewRecordBatch()
			stmt.SetParameters(rec)
			rec.Release()
		}
		run := func() []string {
			t.Helper()
			info, err := stmt.Execute(ctx)
			if err != nil {
				t.Fatal(err)
			}
			rows, _, err := fetch(ctx, c, info)
			if err != nil {
				t.Fatal(err)
			}
			return rows
		}
		bind(80, "bob")
		if got := run(); !slices.Equal(got, []string{"ann", "dan"}) {
			t.Errorf("salary > 80, not bob: %q", got)
		}
		// A quote in a value stays a value.
		bind(0, "x' OR '1'='1")
		if got := run(); !slices.Equal(got, []string{"ann", "bob", "cid", "dan"}) {
			t.Errorf("salary > 0, quote in the value: %q", got)
		}

		unbound, err := c.Prepare(ctx, "SELECT name FROM emp WHERE id = $1")
		if err != nil {
			t.Fatal(err)
		}
		defer unbound.Close(ctx)
		if _, err := unbound.Execute(ctx); err == nil || !strings.Contains(err.Error(), "no values were bound") {
			t.Errorf("executing without values: %v", err)
		}
		plain, err := c.Prepare(ctx, "SELECT count(*) FROM emp")
		if err != nil {
			t.Fatal(err)
		}
		info, err := plain.Execute(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if rows, _, err := fetch(ctx, c, info); err != nil || !slices.Equal(rows, []string{"4"}) {
			t.Errorf("prepared without parameters: %q, %v", rows, err)
		}
		if err := plain.Close(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := plain.Execute(ctx); err == nil {
			t.Error("a closed prepared statement executed")
		}
	})

	t.Run("metadata", func(t *testing.T) {
		info, err := c.GetTables(ctx, &afsql.GetTablesOpts{})
		if err != nil {
			t.Fatal(err)
		}
		rows, _, err := fetch(ctx, c, info)
		if err != nil || !slices.Equal(rows, []string{"sluice|public|emp|TABLE", "sluice|public|eng|VIEW"}) {
			t.Errorf("GetTables: %q, %v", rows, err)
		}
		pattern := "e_p"
		info, err = c.GetTables(ctx, &afsql.GetTablesOpts{TableNameFilterPattern: &pattern, IncludeSchema: true})
		if err != nil {
			t.Fatal(err)
		}
		rdr, err := c.DoGet(ctx, info.Endpoint[0].Ticket)
		if err != nil {
			t.Fatal(err)
		}
		defer rdr.Release()
		if !rdr.Next() {
			t.Fatalf("GetTables with schema: no batch (%v)", rdr.Err())
		}
		b := rdr.RecordBatch()
		if b.NumRows() != 1 || b.Column(2).(*array.String).Value(0) != "emp" {
			t.Fatalf("GetTables e_p: %d rows", b.NumRows())
		}
		ts, err := flight.DeserializeSchema(b.Column(4).(*array.Binary).Value(0), memory.DefaultAllocator)
		if err != nil || ts.NumFields() != 4 || ts.Field(3).Name != "salary" || ts.Field(0).Type.ID() != arrow.INT64 {
			t.Errorf("emp's schema: %v, %v", ts, err)
		}
		views := []string{"VIEW"}
		info, err = c.GetTables(ctx, &afsql.GetTablesOpts{TableTypes: views, IncludeSchema: true})
		if err != nil {
			t.Fatal(err)
		}
		rows, _, err = fetch(ctx, c, info)
		if err != nil || len(rows) != 1 || !strings.HasPrefix(rows[0], "sluice|public|eng|VIEW|") {
			t.Errorf("GetTables VIEW: %q, %v", rows, err)
		}
		other := "other"
		info, err = c.GetTables(ctx, &afsql.GetTablesOpts{Catalog: &other})
		if err != nil {
			t.Fatal(err)
		}
		if rows, _, err := fetch(ctx, c, info); err != nil || len(rows) != 0 {
			t.Errorf("GetTables of another catalog: %q, %v", rows, err)
		}

		info, err = c.GetTableTypes(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if rows, _, err := fetch(ctx, c, info); err != nil || !slices.Equal(rows, []string{"TABLE", "VIEW"}) {
			t.Errorf("GetTableTypes: %q, %v", rows, err)
		}
		info, err = c.GetCatalogs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if rows, _, err := fetch(ctx, c, info); err != nil || !slices.Equal(rows, []string{"sluice"}) {
			t.Errorf("GetCatalogs: %q, %v", rows, err)
		}
		info, err = c.GetDBSchemas(ctx, &afsql.GetDBSchemasOpts{})
		if err != nil {
			t.Fatal(err)
		}
		if rows, _, err := fetch(ctx, c, info); err != nil || !slices.Equal(rows, []string{"sluice|public"}) {
			t.Errorf("GetDBSchemas: %q, %v", rows, err)
		}

		// An id the server does not know is left out, not an error.
		info, err = c.GetSqlInfo(ctx, []afsql.SqlInfo{afsql.SqlInfoFlightSqlServerName, afsql.SqlInfoFlightSqlServerVersion,
			afsql.SqlInfoFlightSqlServerReadOnly, afsql.SqlInfoKeywords})
		if err != nil {
			t.Fatal(err)
		}
		rdr2, err := c.DoGet(ctx, info.Endpoint[0].Ticket)
		if err != nil {
			t.Fatal(err)
		}
		defer rdr2.Release()
		got := map[uint32]string{}
		for rdr2.Next() {
			b := rdr2.RecordBatch()
			names := b.Column(0).(*array.Uint32)
			vals := b.Column(1).(*array.DenseUnion)
			for i := 0; i < int(b.NumRows()); i++ {
				child := vals.Field(vals.ChildID(i))
				got[names.Value(i)] = child.ValueStr(int(vals.ValueOffset(i)))
			}
		}
		if got[uint32(afsql.SqlInfoFlightSqlServerName)] != "sluice" || got[uint32(afsql.SqlInfoFlightSqlServerVersion)] != "test" ||
			got[uint32(afsql.SqlInfoFlightSqlServerReadOnly)] != "true" || len(got) != 3 || rdr2.Err() != nil {
			t.Errorf("GetSqlInfo: %v, %v", got, rdr2.Err())
		}
		info, err = c.GetSqlInfo(ctx, []afsql.SqlInfo{afsql.SqlInfoKeywords})
		if err != nil {
			t.Fatal(err)
		}
		if rows, _, err := fetch(ctx, c, info); err != nil || len(rows) != 0 {
			t.Errorf("GetSqlInfo of an unknown id: %q, %v", rows, err)
		}
	})

	t.Run("sessions", func(t *testing.T) {
		a, b := newClient(t, srv, testToken), newClient(t, srv, testToken)
		// arrow-go's client keeps the session cookie from a unary call's
		// headers; from a DoPut (ExecuteUpdate) only once the stream is
		// finished, which ExecuteUpdate never observes. So a session
		// starts with a query or a metadata call, as drivers' connects do.
		mustQuery(t, a, "SHOW execution.mode", "execution.mode|pipelined")
		mustQuery(t, b, "SHOW execution.mode", "execution.mode|pipelined")
		if _, err := a.ExecuteUpdate(ctx, "SET execution.mode = 'blocking'"); err != nil {
			t.Fatal(err)
		}
		if _, err := b.ExecuteUpdate(ctx, "SET execution.mode = 'pipelined'"); err != nil {
			t.Fatal(err)
		}
		mustQuery(t, a, "SHOW execution.mode", "execution.mode|blocking")
		mustQuery(t, b, "SHOW execution.mode", "execution.mode|pipelined")
		opts, err := a.GetSessionOptions(ctx, &flight.GetSessionOptionsRequest{})
		if err != nil || opts.SessionOptions["execution.mode"].GetStringValue() != "blocking" {
			t.Errorf("GetSessionOptions: %v, %v", opts, err)
		}
		set, err := flight.NewSessionOptionValues(map[string]any{"execution.mode": "pipelined", "no.such": "x"})
		if err != nil {
			t.Fatal(err)
		}
		res, err := a.SetSessionOptions(ctx, &flight.SetSessionOptionsRequest{SessionOptions: set})
		if err != nil || res.Errors["no.such"].GetValue() != flight.SetSessionOptionsResultErrorInvalidName || len(res.Errors) != 1 {
			t.Errorf("SetSessionOptions: %v, %v", res, err)
		}
		mustQuery(t, a, "SHOW execution.mode", "execution.mode|pipelined")
		if _, err := a.ExecuteUpdate(ctx, "SET execution.mode = 'sideways'"); status.Code(err) != codes.InvalidArgument {
			t.Errorf("a bad SET: %v", err)
		}
		if _, err := a.CloseSession(ctx, &flight.CloseSessionRequest{}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("cancel", func(t *testing.T) {
		// Pipelined, so that GetFlightInfo returns while the job runs.
		if _, err := c.ExecuteUpdate(ctx, "SET execution.mode = 'pipelined'"); err != nil {
			t.Fatal(err)
		}
		info, err := c.Execute(ctx, "SELECT count(*) FROM emp, generate_series(1, 100000) g")
		if err != nil {
			t.Fatal(err)
		}
		res, err := c.CancelFlightInfo(ctx, &flight.CancelFlightInfoRequest{Info: info})
		if err != nil || res.Status != flight.CancelStatusCancelled {
			t.Fatalf("cancel: %v, %v", res, err)
		}
		if _, _, err := fetch(ctx, c, info); status.Code(err) != codes.NotFound {
			t.Errorf("fetching a cancelled result: %v", err)
		}
		res, err = c.CancelFlightInfo(ctx, &flight.CancelFlightInfoRequest{Info: info})
		if err != nil || res.Status != flight.CancelStatusNotCancellable {
			t.Errorf("cancelling twice: %v, %v", res, err)
		}
		// Cancelling a result being read ends its stream with Canceled.
		info, err = c.Execute(ctx, "SELECT * FROM generate_series(1, 1000000000) g")
		if err != nil {
			t.Fatal(err)
		}
		rdr, err := c.DoGet(ctx, info.Endpoint[0].Ticket)
		if err != nil {
			t.Fatal(err)
		}
		if !rdr.Next() {
			t.Fatalf("no first batch: %v", rdr.Err())
		}
		res, err = c.CancelFlightInfo(ctx, &flight.CancelFlightInfoRequest{Info: info})
		if err != nil || res.Status != flight.CancelStatusCancelled {
			t.Fatalf("cancel while reading: %v, %v", res, err)
		}
		for rdr.Next() {
		}
		if status.Code(rdr.Err()) != codes.Canceled {
			t.Errorf("reading a cancelled result: %v", rdr.Err())
		}
		rdr.Release()
		// A result is read once.
		info, err = c.Execute(ctx, "SELECT 1")
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := fetch(ctx, c, info); err != nil {
			t.Fatal(err)
		}
		if _, _, err := fetch(ctx, c, info); status.Code(err) != codes.NotFound {
			t.Errorf("reading a result twice: %v", err)
		}
	})
}

// TestFlightSQLAuth checks that the endpoint refuses calls without the
// token, or with another one, before doing anything.
func TestFlightSQLAuth(t *testing.T) {
	srv := startServer(t)
	ctx := context.Background()
	for _, tok := range []string{"", "wrong"} {
		c := newClient(t, srv, tok)
		_, err := c.Execute(ctx, "SELECT 1")
		if status.Code(err) != codes.Unauthenticated {
			t.Errorf("token %q: got %v, want Unauthenticated", tok, err)
		}
		if _, err := c.GetTables(ctx, &afsql.GetTablesOpts{}); status.Code(err) != codes.Unauthenticated {
			t.Errorf("token %q, GetTables: got %v", tok, err)
		}
	}
	if n := len(srv.sessions.byID); n != 0 {
		t.Errorf("%d sessions made for refused calls", n)
	}
}

// TestResultsExpire checks that a result nobody fetches is dropped (its
// job cancelled) after ResultIdle, and an idle session closed.
func TestResultsExpire(t *testing.T) {
	cat := catalog.New()
	emb, err := cluster.StartEmbedded(context.Background(), cluster.EmbeddedConfig{Executors: 1, Catalog: cat})
	if err != nil {
		t.Fatal(err)
	}
	defer emb.Close()
	srv, err := Start(Config{Bind: "127.0.0.1:0", SchedulerAddr: emb.SchedulerAddr(), SchedulerSecurity: emb.Security(),
		Catalog: cat, ResultIdle: 100 * time.Millisecond, SessionIdle: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	c := newClient(t, srv, "")
	ctx := context.Background()
	info, err := c.Execute(ctx, "SELECT 1")
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		srv.sessions.mu.Lock()
		n := len(srv.sessions.byID)
		srv.sessions.mu.Unlock()
		if len(srv.results.snapshot()) == 0 && n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 10 s: %d results, %d sessions left", len(srv.results.snapshot()), n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, _, err := fetch(ctx, c, info); status.Code(err) != codes.NotFound {
		t.Errorf("fetching an expired result: %v", err)
	}
}

func TestLikeMatches(t *testing.T) {
	for _, c := range []struct {
		pattern, s string
		want       bool
	}{
		{"", "x", true}, {"%", "x", true}, {"e_p", "emp", true}, {"e_p", "emmp", false},
		{"em%", "emp", true}, {`em\%`, "em%", true}, {`em\%`, "emp", false}, {"EMP", "emp", false}, {"a.c", "abc", false},
	} {
		p := c.pattern
		if got := likeMatches(&p, c.s); got != c.want {
			t.Errorf("%q LIKE %q = %v", c.s, c.pattern, got)
		}
	}
}

func TestParameterLiterals(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	build := func(dt arrow.DataType, js string) arrow.Array {
		a, _, err := array.FromJSON(mem, dt, strings.NewReader(js))
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	for _, c := range []struct {
		dt   arrow.DataType
		js   string
		want []string
	}{
		{arrow.PrimitiveTypes.Int64, `[1, -5, 5000000000, null]`, []string{"1", "-5", "CAST(5000000000 AS BIGINT)", "NULL"}},
		{arrow.PrimitiveTypes.Float64, `[1.5, -0.25]`, []string{"CAST('1.5' AS DOUBLE)", "CAST('-0.25' AS DOUBLE)"}},
		{arrow.BinaryTypes.String, `["it's", ""]`, []string{"'it''s'", "''"}},
		{arrow.FixedWidthTypes.Boolean, `[true, false]`, []string{"TRUE", "FALSE"}},
		{arrow.FixedWidthTypes.Date32, `["2024-02-29"]`, []string{"DATE '2024-02-29'"}},
		{&arrow.Decimal128Type{Precision: 10, Scale: 2}, `["12.30"]`, []string{"CAST('12.30' AS DECIMAL(10, 2))"}},
	} {
		a := build(c.dt, c.js)
		for i, want := range c.want {
			if got, err := literal(a, i); err != nil || got != want {
				t.Errorf("%s[%d]: %q, %v; want %q", c.dt, i, got, err, want)
			}
		}
		a.Release()
	}
	l := build(arrow.ListOf(arrow.PrimitiveTypes.Int32), `[[1]]`)
	defer l.Release()
	if _, err := literal(l, 0); err == nil {
		t.Error("a list parameter was accepted")
	}
	if _, err := quote("a\x00b"); err == nil {
		t.Error("a NUL in a string parameter was accepted")
	}
}
