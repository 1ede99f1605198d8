package engine_test

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"sluice/catalog"
	"sluice/engine"
	"sluice/physical"
	"sluice/physical/mempool"
	"sluice/rpc"
	"sluice/scheduler/dplan"
	"sluice/sql"
)

// FuzzPlan takes arbitrary text through everything a scheduler does with
// a statement before any executor sees it: parse, bind, optimize, plan
// physically, cut into stages, and encode each stage for the wire; then
// what an executor does on receipt, unmarshal and decode. Any of these may
// refuse the input with an error; none may panic, hang or overflow the
// stack (a scheduler serves every session of its cluster), and a stage
// that encodes must decode to the same schema. The tables are those the
// sqllogictest files create, so the seeds, the files' own statements, bind.
func FuzzPlan(f *testing.F) {
	e := engine.New(catalog.New())
	settings := engine.NewSettings()
	for _, st := range sltStatements(f) {
		f.Add(st)
		if u := strings.ToUpper(st); strings.HasPrefix(u, "CREATE EXTERNAL TABLE") || strings.HasPrefix(u, "CREATE VIEW") {
			// Some files create the same table, or one that is missing;
			// the first creation that works is enough.
			_, _ = e.Prepare(st, settings)
		}
	}
	for _, s := range []string{
		"", ";", ";;", "SELECT;", "SELECT", "select from", "select 1 from", "--", "/*", "/* */;",
		"select " + strings.Repeat("(", 5000) + "1" + strings.Repeat(")", 5000),
		"select 1 where " + strings.Repeat("true or ", 2000) + "true",
		strings.Repeat("select 1 union all ", 2000) + "select 1",
		strings.Repeat("select 1 union ", 500) + "select 1",
		"select " + strings.Repeat("9", 100000),
		"select '" + strings.Repeat("x", 100000) + "'",
		"select 1e999999, -1e-999999, 0x, 1_000, .e1",
		"select 'a\x00b'", "select '\xff\xfe'", "select \"\xc3\x28\"",
		"select 1::int::text::bigint::numeric(38,37)::smallint",
		"select cast(1 as numeric(1000, 2))", "select cast(1 as numeric(2, 5))", "select cast(1 as decimal(0))",
		"select cast('1' as varchar(0))", "select cast(null as int[][][])", "select 1::\"unknown type\"",
		"select \"ñame\" from (select 1 as \"ñame\") as \"tåble\"", "select 1 as \"\"",
		"select 9223372036854775807 + 1", "select -9223372036854775808", "select 2147483648::int",
		"select interval '1 year 2 months -3 days 04:05:06.789'", "select interval '99999999999 years'",
		"select interval '1' day to second", "select interval 'P1Y2M'", "select interval ''", "select interval '-'",
		"select date '1999-01-08' + interval '1 month' * 1e20", "select date '99999-01-01'", "select date '-1-01-01'",
		"select timestamp '294277-01-01'", "select timestamp 'infinity'", "select date 'epoch'",
		"with recursive r(n) as (select 1 union all select n + 1 from r where n < 3) select * from r",
		"with recursive r(n) as (select n from r) select * from r",
		"with recursive r(n) as (select 1 union all select n from r, r r2) select * from r",
		"with a as (select * from a) select * from a",
		"with a as (select 1), a as (select 2) select * from a",
		"create view v as select * from v", "select * from v",
		"select * from generate_series(1, 10, 0)", "select * from generate_series(1, 9223372036854775807)",
		"select * from unnest(array[1,2]) with ordinality as u(a, b, c)",
		"select 1 order by 2", "select 1 group by 2", "select 1 limit -1", "select 1 limit 'x'", "select 1 offset -1",
		"select 1 limit 9223372036854775807 offset 9223372036854775807",
		"select sum(sum(1))", "select row_number() over (order by row_number() over ())", "select max(1) filter (where max(1) > 0)",
		"select * from (select 1) a natural join (select 2) b", "select * from (select 1 a) x join (select 1 a) y using (a, a)",
		"select (select 1, 2)", "select 1 in (select 1, 2)", "select array[1, 'a']", "select array[]", "select array[[1],[2,3]]",
		"select 'a' similar to '('", "select 'a' ~ '('", "select regexp_replace('a', '(', 'b')",
		"select $1", "select ?", "prepare p as select 1", "execute p", "select 1 \\g",
		"select x'ff', b'101', e'\\x00', u&'\\0000'",
		"select lpad('a', 2147483647)", "select repeat('a', -1)", "select repeat('ab', 1000000000)",
		"select substr('abc', -9223372036854775808, 9223372036854775807)",
		"select round(1.5, 2147483647)", "select round(1.5::numeric, -2147483648)", "select 10::numeric(38,0) ^ 1000",
		"select to_char(now(), repeat('Y', 10000))", "select date_trunc('century', date '0001-01-01')",
		"select extract(epoch from interval '1 year')", "select extract(foo from date '2000-01-01')",
		"select make_date(2000, 13, 40)", "select to_date('2000-13-40', 'YYYY-MM-DD')",
		"select coalesce()", "select greatest()", "select nullif(1)", "select concat()",
		"select percentile_cont(2) within group (order by 1)", "select ntile(0) over ()", "select lag(1, -1) over ()",
		"select nth_value(1, 0) over ()", "select 1 from (values (1)) v(a) window w as (w)",
		"explain explain select 1", "explain analyze explain select 1", "describe nonexistent", "show nonexistent",
		"set execution.batch_size = 0", "set execution.mode = 'weird'", "reset all", "drop table if exists nonexistent",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		stmts, err := sql.Parse(text)
		if err != nil {
			return
		}
		for _, st := range stmts {
			bound, err := (&sql.Binder{Catalog: e.Catalog}).Bind(st)
			if err != nil {
				continue
			}
			var q *sql.Query
			switch b := bound.(type) {
			case *sql.Query:
				q = b
			case *sql.Explain:
				q = b.Query
			}
			if q == nil {
				continue
			}
			planned, err := e.PlanQuery(q, settings)
			if err != nil {
				continue
			}
			g, err := dplan.Plan(planned.Physical)
			if err != nil {
				continue
			}
			for _, s := range g.Stages {
				shipStage(t, st.SQL, s.Body)
			}
		}
	})
}

// shipStage encodes body as the scheduler does, marshals and unmarshals it
// as gRPC does, and decodes it as an executor does: a stage the scheduler
// could encode must decode, with the same schema.
func shipStage(t *testing.T, text string, body physical.Operator) {
	t.Helper()
	msg, err := physical.EncodePlan(body, nil)
	if err != nil {
		return
	}
	wire, err := proto.Marshal(msg)
	if err != nil {
		t.Fatalf("%q: marshal a stage: %v", text, err)
	}
	var back rpc.PhysicalPlan
	if err := proto.Unmarshal(wire, &back); err != nil {
		t.Fatalf("%q: unmarshal a stage: %v", text, err)
	}
	op, err := physical.DecodePlan(&back, nil, physical.NewTableCache())
	if err != nil {
		t.Fatalf("%q: a stage encoded but does not decode: %v\n%s", text, err, physical.Format(body))
	}
	if !op.Schema().Equal(body.Schema()) {
		t.Fatalf("%q: decoded stage schema %s, planned %s", text, op.Schema(), body.Schema())
	}
}

// sltStatements returns the SQL of every record of the sqllogictest files,
// with their data folder's placeholder resolved.
func sltStatements(f *testing.F) []string {
	files, err := filepath.Glob("../testdata/slt/*.slt")
	if err != nil || len(files) == 0 {
		f.Fatalf("no .slt files: %v", err)
	}
	dir, err := filepath.Abs("../testdata/slt")
	if err != nil {
		f.Fatal(err)
	}
	tmp := f.TempDir()
	var out []string
	for _, name := range files {
		file, err := os.Open(name)
		if err != nil {
			f.Fatal(err)
		}
		sc := bufio.NewScanner(file)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		var cur []string
		in := false
		flush := func() {
			if len(cur) > 0 {
				s := strings.Join(cur, "\n")
				s = strings.ReplaceAll(s, "${SLT_DIR}", dir)
				s = strings.ReplaceAll(s, "${SLT_TMPDIR}", tmp)
				out = append(out, s)
			}
			cur, in = nil, false
		}
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "statement ") || strings.HasPrefix(line, "query "):
				flush()
				in = true
			case strings.TrimSpace(line) == "" || line == "----":
				flush()
			case in:
				cur = append(cur, line)
			}
		}
		flush()
		file.Close()
		if err := sc.Err(); err != nil {
			f.Fatal(err)
		}
	}
	return out
}

// FuzzDecodePlan sends arbitrary bytes to what an executor does with a
// task's plan: unmarshal, decode, and run the first partition (bounded
// by a deadline and a batch count, for a plan may be valid and endless,
// as generate_series(1, 1e18) is). Decoding checks what the operators'
// constructors take on trust; whatever it accepts must run to an error
// or an end, never a panic. Seeds are the stages of the sqllogictest
// queries as the scheduler encodes them.
func FuzzDecodePlan(f *testing.F) {
	e := engine.New(catalog.New())
	settings := engine.NewSettings()
	for _, st := range sltStatements(f) {
		if u := strings.ToUpper(st); strings.HasPrefix(u, "CREATE EXTERNAL TABLE") || strings.HasPrefix(u, "CREATE VIEW") {
			_, _ = e.Prepare(st, settings)
			continue
		}
		out, err := e.Prepare(st, settings)
		if err != nil || out.Query == nil {
			continue
		}
		g, err := dplan.Plan(out.Query.Physical)
		if err != nil {
			continue
		}
		for _, s := range g.Stages {
			if msg, err := physical.EncodePlan(s.Body, nil); err == nil {
				if b, err := proto.Marshal(msg); err == nil {
					f.Add(b)
				}
			}
		}
	}
	tables := physical.NewTableCache()
	f.Fuzz(func(t *testing.T, wire []byte) {
		var msg rpc.PhysicalPlan
		if err := proto.Unmarshal(wire, &msg); err != nil {
			return
		}
		op, err := physical.DecodePlan(&msg, nil, tables)
		if err != nil {
			return
		}
		_ = physical.Format(op)
		if op.OutputPartitioning().Count < 1 {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		tc := physical.NewTaskContext()
		tc.Memory = mempool.NewPool("fuzz", 64<<20, nil)
		s, err := op.Execute(ctx, 0, tc)
		if err != nil {
			return
		}
		defer s.Close()
		for range 100 {
			b, err := s.Next(ctx)
			if err != nil {
				return
			}
			b.Release()
		}
	})
}
