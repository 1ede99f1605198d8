package session_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"sluice/catalog"
	"sluice/catalog/s3fake"
	"sluice/cluster"
	"sluice/session"
	"sluice/tpch"
)

// s3Rows is the row count of the generated table; s3RowGroup its row
// group size, so that the file has several row groups and its columns
// several chunks.
const (
	s3Rows     = 40000
	s3RowGroup = 10000
)

// s3Table writes the generated table (id, name, amount, day; a wide
// string column so that one column is a small part of the file) as
// Parquet and returns its bytes.
func s3Table(t *testing.T) []byte {
	t.Helper()
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "amount", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "day", Type: arrow.FixedWidthTypes.Date32},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for i := range s3Rows {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		if i%97 == 0 {
			b.Field(1).AppendNull()
			b.Field(2).AppendNull()
		} else {
			b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("customer-%07d-%s", i*7919%s3Rows, strings.Repeat("x", i%23)))
			b.Field(2).(*array.Float64Builder).Append(float64(i%1000) / 4)
		}
		b.Field(3).(*array.Date32Builder).Append(arrow.Date32(18000 + i%365))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	var buf bytes.Buffer
	props := parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(s3RowGroup), parquet.WithDictionaryDefault(false))
	w, err := pqarrow.NewFileWriter(sc, &buf, props, pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// s3Fixture starts the fake store and puts the same files in a local
// folder and in bucket "lake": the generated table (split in two objects
// under a prefix), the two Parquet files of the files-by-path tests, and
// the emp and dept CSV files.
func s3Fixture(t *testing.T) (*s3fake.Server, string) {
	t.Helper()
	srv := s3fake.Start(t)
	srv.CreateBucket(t, "lake")
	dir := t.TempDir()
	put := func(key string, data []byte) {
		srv.Put(t, "lake", key, data)
		p := filepath.Join(dir, filepath.FromSlash(key))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gen := s3Table(t)
	put("gen/part-0.parquet", gen)
	put("gen/part-1.parquet", gen)
	for _, f := range []string{"files_part_1.parquet", "files_part_2.parquet", "emp.csv", "dept.csv"} {
		data, err := os.ReadFile(filepath.Join("../testdata/slt/data", f))
		if err != nil {
			t.Fatal(err)
		}
		put("ref/"+f, data)
	}
	// A stray object of another format, which a Parquet prefix skips.
	put("gen/_SUCCESS", nil)
	return srv, dir
}

// s3Queries register the tables at root (a local folder or s3://lake)
// and query them; each query's rows are compared between the two.
func s3Queries(root string) (ddl, queries []string) {
	ddl = []string{
		fmt.Sprintf("CREATE EXTERNAL TABLE gen STORED AS PARQUET LOCATION '%s/gen/'", root),
		fmt.Sprintf("CREATE EXTERNAL TABLE one STORED AS PARQUET LOCATION '%s/gen/part-1.parquet'", root),
		fmt.Sprintf("CREATE EXTERNAL TABLE emp (id INT, name VARCHAR, dept VARCHAR, salary DECIMAL(10,2), hired DATE, manager INT) STORED AS CSV WITH HEADER ROW LOCATION '%s/ref/emp.csv'", root),
		fmt.Sprintf("CREATE EXTERNAL TABLE dept STORED AS CSV WITH HEADER ROW LOCATION '%s/ref/dept.csv'", root),
	}
	queries = []string{
		"SELECT count(*), count(name), sum(amount), min(day), max(day) FROM gen",
		"SELECT day, count(*), sum(amount) FROM gen WHERE id % 3 = 0 GROUP BY day ORDER BY day LIMIT 20",
		"SELECT name FROM one WHERE id BETWEEN 17000 AND 17010 ORDER BY id",
		"SELECT e.name, d.floor, e.salary FROM emp e JOIN dept d ON e.dept = d.name ORDER BY e.id",
		"SELECT d.name, count(g.id) FROM dept d LEFT JOIN gen g ON g.id = d.floor GROUP BY d.name ORDER BY d.name",
		fmt.Sprintf("SELECT count(*), sum(amount) FROM '%s/gen/*.parquet'", root),
		fmt.Sprintf("SELECT count(*), max(name) FROM '%s/gen/'", root),
		fmt.Sprintf("SELECT * FROM read_parquet('%s/ref/files_part_1.parquet') ORDER BY 1", root),
		fmt.Sprintf("SELECT * FROM '%s/ref/emp.csv' ORDER BY id", root),
		fmt.Sprintf("SELECT count(*) FROM read_csv('%s/ref/dept.csv', header => true)", root),
	}
	return ddl, queries
}

// s3Sessions are an in-process session and sessions on embedded clusters
// in both modes.
func s3Sessions(t *testing.T) map[string]*session.Session {
	t.Helper()
	out := map[string]*session.Session{"in-process": session.New(catalog.New())}
	for _, mode := range []string{"blocking", "pipelined"} {
		_, s := startClusterWith(t, cluster.EmbeddedConfig{Executors: 2, Policy: cluster.PolicyPush})
		if err := s.Settings.Set("execution.mode", mode); err != nil {
			t.Fatal(err)
		}
		out[mode] = s
	}
	return out
}

// TestS3TablesMatchLocalFiles registers the same files from a local folder
// and from the S3 fake and checks every query answers the same, in
// process and on clusters in both modes.
func TestS3TablesMatchLocalFiles(t *testing.T) {
	ctx := context.Background()
	_, dir := s3Fixture(t)
	want := map[string][]string{}
	{
		s := session.New(catalog.New())
		ddl, queries := s3Queries(dir)
		for _, q := range ddl {
			if err := drain(ctx, s, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		for i, q := range queries {
			rows, err := sltRun(ctx, s, q)
			if err != nil {
				t.Fatalf("local %s: %v", q, err)
			}
			if len(rows) == 0 {
				t.Fatalf("local %s: no rows", q)
			}
			want[fmt.Sprint(i)] = rows
		}
	}
	for mode, s := range s3Sessions(t) {
		t.Run(mode, func(t *testing.T) {
			ddl, queries := s3Queries("s3://lake")
			for _, q := range ddl {
				if err := drain(ctx, s, q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			for i, q := range queries {
				got, err := sltRun(ctx, s, q)
				if err != nil {
					t.Errorf("%s: %v", q, err)
					continue
				}
				if w := want[fmt.Sprint(i)]; strings.Join(got, "\n") != strings.Join(w, "\n") {
					t.Errorf("%s:\ngot  %q\nwant %q", q, head(got), head(w))
				}
			}
		})
	}
}

func head(rows []string) []string {
	if len(rows) > 5 {
		return append(rows[:5:5], "...")
	}
	return rows
}

// TestS3ProjectionReadsOneColumn checks that a query of one column fetches
// that column's chunks and the footer by range requests, not the file:
// the bytes served stay well under the file's size, in process and on a
// cluster (whose executors read the footer once more each).
func TestS3ProjectionReadsOneColumn(t *testing.T) {
	ctx := context.Background()
	srv, _ := s3Fixture(t)
	file := int64(len(s3Table(t)))
	for mode, s := range s3Sessions(t) {
		t.Run(mode, func(t *testing.T) {
			if err := drain(ctx, s, "CREATE EXTERNAL TABLE one STORED AS PARQUET LOCATION 's3://lake/gen/part-0.parquet'"); err != nil {
				t.Fatal(err)
			}
			srv.Reset()
			rows, err := sltRun(ctx, s, "SELECT sum(id) FROM one")
			if err != nil {
				t.Fatal(err)
			}
			if want := fmt.Sprint(int64(s3Rows) * (s3Rows - 1) / 2); len(rows) != 1 || rows[0] != want {
				t.Fatalf("sum(id) = %v, want %s", rows, want)
			}
			// id is 8 bytes a row of about 40: a fifth of the file, plus
			// footers.
			if got := srv.GetBytes(); got == 0 || got > file/3 {
				t.Errorf("served %d bytes of a %d-byte file for one column:\n%s", got, file, strings.Join(srv.Log(), "\n"))
			}
			t.Logf("%d requests, %d bytes of a %d-byte file", srv.Gets(), srv.GetBytes(), file)
			// One request per column chunk (4 row groups), plus the
			// footer per process that opens the file.
			if got := srv.Gets(); got < s3Rows/s3RowGroup || got > s3Rows/s3RowGroup+8 {
				t.Errorf("%d object requests for %d chunks:\n%s", got, s3Rows/s3RowGroup, strings.Join(srv.Log(), "\n"))
			}
		})
	}
}

// TestS3Errors: a missing key, prefix or bucket, bad or missing
// credentials, and an object changed after the table was opened each fail
// with an error saying so, in every mode.
func TestS3Errors(t *testing.T) {
	ctx := context.Background()
	srv, _ := s3Fixture(t)
	sessions := s3Sessions(t)
	cases := []struct{ sql, want string }{
		{"CREATE EXTERNAL TABLE t STORED AS PARQUET LOCATION 's3://lake/nope.parquet'", "object s3://lake/nope.parquet does not exist, and no objects are under s3://lake/nope.parquet/"},
		{"CREATE EXTERNAL TABLE t STORED AS PARQUET LOCATION 's3://lake/nope/'", "no *.parquet objects under s3://lake/nope/"},
		{"CREATE EXTERNAL TABLE t STORED AS PARQUET LOCATION 's3://missing/x.parquet'", `bucket "missing" does not exist`},
		{"CREATE EXTERNAL TABLE t STORED AS PARQUET LOCATION 's3://lake/ref/emp.csv'", "not a Parquet file"},
		{"SELECT * FROM 's3://lake/nope.parquet'", "object s3://lake/nope.parquet does not exist"},
		{"SELECT * FROM 'gs://lake/x.parquet'", "the gs:// scheme is not supported"},
	}
	for mode, s := range sessions {
		for _, c := range cases {
			if err := drain(ctx, s, c.sql); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s: %s: error %v, want %q", mode, c.sql, err, c.want)
			}
		}
	}

	// An object written again after CREATE: the scan refuses the new
	// bytes instead of mixing footers and chunks of two files.
	for mode, s := range sessions {
		srv.Put(t, "lake", "changing/x.parquet", s3Table(t))
		if err := drain(ctx, s, "CREATE EXTERNAL TABLE ch STORED AS PARQUET LOCATION 's3://lake/changing/'"); err != nil {
			t.Fatal(err)
		}
		srv.Put(t, "lake", "changing/x.parquet", append(s3Table(t), 0))
		err := drain(ctx, s, "SELECT sum(id) FROM ch")
		if err == nil || !strings.Contains(err.Error(), "files changed") {
			t.Errorf("%s: query of a changed object: error %v, want files changed", mode, err)
		}
	}

	// Credentials the store does not know, and none at all.
	t.Setenv("AWS_ACCESS_KEY_ID", "someoneelse")
	s := sessions["in-process"]
	if err := drain(ctx, s, "SELECT * FROM 's3://lake/ref/emp.csv'"); err == nil || !strings.Contains(err.Error(), "access denied (check AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)") {
		t.Errorf("wrong key: error %v", err)
	}
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	if err := drain(ctx, s, "SELECT * FROM 's3://lake/ref/emp.csv'"); err == nil || !strings.Contains(err.Error(), "no credentials were found: set AWS_ACCESS_KEY_ID") {
		t.Errorf("no credentials: error %v", err)
	}
}

// TestS3AllowedLocations: a server allowing one s3:// prefix reads tables
// there and refuses other prefixes and buckets before any request.
func TestS3AllowedLocations(t *testing.T) {
	ctx := context.Background()
	srv, _ := s3Fixture(t)
	srv.CreateBucket(t, "other")
	srv.Put(t, "other", "gen/part-0.parquet", s3Table(t))
	l, err := catalog.NewLocations([]string{"s3://lake/gen"})
	if err != nil {
		t.Fatal(err)
	}
	catalog.RestrictLocations(l)
	t.Cleanup(func() { catalog.RestrictLocations(nil) })
	s := session.New(catalog.New())
	if err := drain(ctx, s, "CREATE EXTERNAL TABLE ok STORED AS PARQUET LOCATION 's3://lake/gen/'"); err != nil {
		t.Fatal(err)
	}
	for _, loc := range []string{"s3://lake/ref/emp.csv", "s3://other/gen/part-0.parquet", "s3://lake/generated/x.parquet", "s3://lake/gen/../ref/emp.csv"} {
		srv.Reset()
		err := drain(ctx, s, fmt.Sprintf("SELECT * FROM '%s'", loc))
		if err == nil || !strings.Contains(err.Error(), "location not allowed") {
			t.Errorf("%s: error %v, want location not allowed", loc, err)
		}
		if n := len(srv.Log()); n != 0 {
			t.Errorf("%s: %d requests made before refusing", loc, n)
		}
	}
}

// TestTPCHFromS3 runs the 22 TPC-H queries at SF 1 on tables in the S3
// fake, in both cluster modes, against the official answers. It uploads
// the whole data set into the fake's memory, so it runs only when
// SLUICE_TEST_S3_TPCH is set (make test sets it).
func TestTPCHFromS3(t *testing.T) {
	if testing.Short() || os.Getenv("SLUICE_TEST_S3_TPCH") == "" {
		t.Skip("set SLUICE_TEST_S3_TPCH=1 to run TPC-H SF 1 from the S3 fake")
	}
	dir := tpchData(t)
	srv := s3fake.Start(t)
	srv.CreateBucket(t, "tpch")
	for _, name := range tpch.TableNames {
		files, err := filepath.Glob(filepath.Join(dir, name, "*.parquet"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: %v %v", name, files, err)
		}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			srv.Put(t, "tpch", "sf1/"+name+"/"+filepath.Base(f), data)
		}
	}
	ctx := context.Background()
	for _, mode := range []string{"blocking", "pipelined"} {
		t.Run(mode, func(t *testing.T) {
			_, s := startClusterWith(t, cluster.EmbeddedConfig{Executors: 2, Policy: cluster.PolicyPush})
			if err := s.Settings.Set("execution.mode", mode); err != nil {
				t.Fatal(err)
			}
			for _, name := range tpch.TableNames {
				if err := drain(ctx, s, fmt.Sprintf("CREATE EXTERNAL TABLE %s STORED AS PARQUET LOCATION 's3://tpch/sf1/%s/'", name, name)); err != nil {
					t.Fatal(err)
				}
			}
			srv.Reset()
			start := time.Now()
			for n := 1; n <= 22; n++ {
				checkTPCH(t, ctx, s, n)
			}
			t.Logf("22 queries in %v: %d object requests, %d bytes", time.Since(start), srv.Gets(), srv.GetBytes())
		})
	}
}
