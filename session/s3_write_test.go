package session_test

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"sluice/catalog/s3fake"
	"sluice/session"
)

// s3Store lists what the fake store holds, through a client of its own:
// object keys and the keys of multipart uploads still open.
type s3Store struct{ core *minio.Core }

func newS3Store(t *testing.T, srv *s3fake.Server) s3Store {
	t.Helper()
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	c, err := minio.NewCore(u.Host, &minio.Options{
		Creds: credentials.NewStaticV4(s3fake.KeyID, s3fake.Secret, ""), Region: "us-east-1",
		BucketLookup: minio.BucketLookupPath,
	})
	if err != nil {
		t.Fatal(err)
	}
	return s3Store{core: c}
}

// objects returns the keys under prefix, sorted.
func (s s3Store) objects(t *testing.T, prefix string) []string {
	t.Helper()
	var keys []string
	for o := range s.core.Client.ListObjects(context.Background(), "lake", minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if o.Err != nil {
			t.Fatal(o.Err)
		}
		keys = append(keys, o.Key)
	}
	slices.Sort(keys)
	return keys
}

// uploads returns the keys of open multipart uploads under prefix.
func (s s3Store) uploads(t *testing.T, prefix string) []string {
	t.Helper()
	res, err := s.core.ListMultipartUploads(context.Background(), "lake", prefix, "", "", "", 1000)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, u := range res.Uploads {
		keys = append(keys, u.Key)
	}
	return keys
}

// one runs a statement answering one row and returns it.
func one(t *testing.T, s *session.Session, q string) string {
	t.Helper()
	rows, err := sltRun(context.Background(), s, q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	if len(rows) != 1 {
		t.Fatalf("%s: %d rows, want 1: %q", q, len(rows), head(rows))
	}
	return rows[0]
}

// TestS3Writes writes to the fake store with COPY (partitioned), CREATE
// TABLE AS and INSERT in Parquet and CSV, reads every write back, and
// checks OVERWRITE and that a failed write leaves nothing: in process and
// on clusters in both modes.
func TestS3Writes(t *testing.T) {
	ctx := context.Background()
	srv, _ := s3Fixture(t)
	store := newS3Store(t, srv)
	for mode, s := range s3Sessions(t) {
		t.Run(mode, func(t *testing.T) {
			root := "s3://lake/" + mode
			for _, q := range []string{"CREATE EXTERNAL TABLE gen STORED AS PARQUET LOCATION 's3://lake/gen/'"} {
				if err := drain(ctx, s, q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			src := one(t, s, "SELECT count(*), count(name), sum(amount), min(day), max(id) FROM gen WHERE id % 10 < 3")

			// COPY with PARTITION_BY: one folder per value, every row back.
			copyTo := root + "/copy"
			q := fmt.Sprintf("COPY (SELECT id, name, amount, day, id %% 10 AS k FROM gen WHERE id %% 10 < 3) TO '%s' (FORMAT parquet, PARTITION_BY (k))", copyTo)
			if got := one(t, s, q); got != "24000" {
				t.Fatalf("COPY answered %s, want 24000", got)
			}
			keys := store.objects(t, mode+"/copy/")
			for _, k := range keys {
				if !strings.HasPrefix(k, mode+"/copy/k=0/") && !strings.HasPrefix(k, mode+"/copy/k=1/") && !strings.HasPrefix(k, mode+"/copy/k=2/") || !strings.HasSuffix(k, ".parquet") {
					t.Errorf("unexpected object %s", k)
				}
			}
			if len(keys) < 3 {
				t.Errorf("objects %q: want a folder per partition value", keys)
			}
			if got := one(t, s, fmt.Sprintf("SELECT count(*), count(name), sum(amount), min(day), max(id) FROM '%s/'", copyTo)); got != src {
				t.Errorf("read back %s, want %s", got, src)
			}
			if got := one(t, s, fmt.Sprintf("SELECT count(*) FROM '%s/k=2/*.parquet'", copyTo)); got != "8000" {
				t.Errorf("k=2 holds %s rows, want 8000", got)
			}

			// INSERT into a table over the partitioned folder keeps its
			// layout: the new rows go under k=value/.
			if err := drain(ctx, s, fmt.Sprintf("CREATE EXTERNAL TABLE parts STORED AS PARQUET LOCATION '%s/'", copyTo)); err != nil {
				t.Fatal(err)
			}
			if got := one(t, s, "INSERT INTO parts SELECT id + 100000, name, amount, day, 7 FROM gen WHERE id < 3"); got != "6" {
				t.Fatalf("INSERT into the partitioned table answered %s, want 6", got)
			}
			if keys := store.objects(t, mode+"/copy/k=7/"); len(keys) == 0 {
				t.Errorf("INSERT did not write under k=7/: %q", store.objects(t, mode+"/copy/"))
			}
			if got := one(t, s, "SELECT count(*), max(k) FROM parts"); got != "24006 7" {
				t.Errorf("parts after INSERT: %s, want 24006 7", got)
			}

			// Without OVERWRITE a folder that holds objects is refused;
			// with it, only the new write's objects remain.
			if err := drain(ctx, s, fmt.Sprintf("COPY (SELECT 1 AS x) TO '%s' (FORMAT parquet)", copyTo)); err == nil || !strings.Contains(err.Error(), "not empty") {
				t.Errorf("COPY into a non-empty folder: %v, want a not empty error", err)
			}
			// CSV would leave the Parquet table over the folder no files.
			overwrite := fmt.Sprintf("COPY (SELECT id FROM gen WHERE id < 5) TO '%s' (FORMAT csv, OVERWRITE true)", copyTo)
			if err := drain(ctx, s, overwrite); err == nil || !strings.Contains(err.Error(), `table "parts"`) {
				t.Errorf("OVERWRITE of a Parquet table's folder with CSV: %v, want a refusal naming parts", err)
			}
			if err := drain(ctx, s, "DROP TABLE parts"); err != nil {
				t.Fatal(err)
			}
			if got := one(t, s, overwrite); got != "10" {
				t.Errorf("COPY OVERWRITE answered %s, want 10", got)
			}
			after := store.objects(t, mode+"/copy/")
			for _, k := range after {
				if !strings.HasSuffix(k, ".csv") || strings.Contains(k, "k=") {
					t.Errorf("after OVERWRITE: object %s of the old contents remains", k)
				}
			}
			if got := one(t, s, fmt.Sprintf("SELECT count(*), sum(id) FROM read_csv('%s/', header => true)", copyTo)); got != "10 20" {
				t.Errorf("overwritten folder reads %s, want 10 20", got)
			}

			// CREATE TABLE AS, then INSERT, in both formats.
			for _, format := range []string{"parquet", "csv"} {
				name := "w_" + format
				loc := root + "/" + name
				q := fmt.Sprintf("CREATE TABLE %s STORED AS %s LOCATION '%s' AS SELECT id, name, amount FROM gen WHERE id < 1000", name, strings.ToUpper(format), loc)
				if err := drain(ctx, s, q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
				if got := one(t, s, "SELECT count(*), count(name), sum(id) FROM "+name); got != "2000 1978 999000" {
					t.Errorf("%s: %s, want 2000 1978 999000", name, got)
				}
				if got := one(t, s, fmt.Sprintf("INSERT INTO %s SELECT id + 100000, name, amount FROM gen WHERE id < 10", name)); got != "20" {
					t.Errorf("INSERT INTO %s answered %s, want 20", name, got)
				}
				if got := one(t, s, "SELECT count(*), max(id) FROM "+name); got != "2020 100009" {
					t.Errorf("%s after INSERT: %s, want 2020 100009", name, got)
				}
			}

			// A failing write: its tasks have uploaded parts (some may
			// have finished) when another fails; nothing may remain.
			failTo := root + "/fail"
			err := drain(ctx, s, fmt.Sprintf("COPY (SELECT id, 1 / (id - 39999) AS d FROM gen) TO '%s' (FORMAT parquet)", failTo))
			if err == nil || !strings.Contains(err.Error(), "division by zero") {
				t.Fatalf("failing COPY: %v, want division by zero", err)
			}
			// Cluster jobs remove a failed write's files in the
			// background, after the client saw the error.
			deadline := time.Now().Add(20 * time.Second)
			for {
				objs, ups := store.objects(t, mode+"/fail/"), store.uploads(t, mode+"/fail/")
				if len(objs) == 0 && len(ups) == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("a failed write left objects %q and open uploads %q", objs, ups)
				}
				time.Sleep(50 * time.Millisecond)
			}
			// Successful writes leave no upload open either.
			if ups := store.uploads(t, mode+"/"); len(ups) != 0 {
				t.Errorf("open uploads after successful writes: %q", ups)
			}
		})
	}
}
